// Package trace is the record model of a dpsim run, its file format, and the one join of the
// role processes' partial records.
//
// # Records
//
// ControlRecord / ConsensusRecord are the per-step records of an episode. Every field comes
// from exactly one role (plant: X, Yhat; cloud: U, Xhat; eavesdropper: EveX0; Ref from the
// scenario; agent i: its entries of X and Y, written as AgentRecords, or a host's agents at once
// as a BlockRecord), so each process writes partial records, and a join puts them back together
// by (episode, step), reporting what is missing (Missing, MissingError).
//
// # Format
//
// One JSON line per record, written by Write / Writer and read by Read / Reader (nil fields are
// omitted; floats round-trip exactly):
//
//	{"episode":0,"step":2,"x":[0.0295,0.5896],"ref":[0.964,1.66e-06],"yhat":[-0.534],"u":[4.652],"xhat":[-0.556,0.1285],"eve_x0":[-0.5635,2.5e-15]}
//	{"episode":0,"step":100,"x":[1.5639,-0.000358],"ref":[1,0]}
//	{"episode":0,"step":3,"agent":4,"x":2,"y":1.5}
//
// (a control step, the terminal control record, an agent's record).
//
// encoding/json defines the format: Reader decodes the lines json.Encoder writes with a small
// scanner of flat objects (the same strconv calls, so the same bits, several times faster), and
// hands every line it does not positively recognise - escapes, null, keys in another case,
// malformed or odd lines - to encoding/json, the one source of records for those and of errors.
//
// # The join
//
// ControlJoin and ConsensusJoin are the one implementation of the join: partial records go in
// by role as they come, one episode at a time; full records come out in step order with the
// pieces no role supplied. The fast engine (pkg/engine) feeds them its cores' records as the
// cores produce them; the launcher feeds them the role processes' trace files through
// MergeControlStreams / MergeConsensusStreams (constant memory whatever the number of
// episodes); MergeControl / MergeConsensus are the same over slices. So a record joined from
// the NATS processes' files and the one the fast engine joined in memory are the same, bit for
// bit.
//
// # Horizon
//
// T = scenario steps is the number of releases (the privacy horizon of O_T): steps t = 0..T-1
// publish, and a terminal record at t = T carries only X = x(T) (and Ref = x_r(T)); the series
// of the state computed from records (pkg/metrics) have T+1 entries t = 0..T, those of the
// eavesdropper T entries t = 0..T-1. "Final" means t = T.
package trace
