// Package metrics computes the metrics of a dpsim run from its per-step records (pkg/trace):
// one implementation, the Accumulator, for the fast engine and the NATS launcher alike
// (AggregateControl and AggregateConsensus wrap it for slices).
//
// It streams: O(T d) memory per episode in flight, whatever the number of episodes, and records
// may arrive in any order. It folds episodes in episode order, so the Results are bit-identical
// whatever the arrival order or the number of workers; an engine that reduces episodes on its
// own workers hands them over whole (NewEpisode, PutControl / PutConsensus, AddEpisode).
// Results is the JSON shape of summary.json "metrics" (see its field docs); every interval is
// the normal 95% interval mean +- Z95 SE over independent runs, per-step series keep at most
// MaxSeriesPoints steps, and the consensus deviation series at most MaxDeviationAgents agents.
// SetEpisodeSink hands out each aggregated episode's per-run values (EpisodeColumns: the rows
// of dpsim run --parquet's episodes.parquet).
package metrics
