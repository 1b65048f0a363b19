package runner

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/dpsim/dpsim/internal/atomicfile"
	"github.com/dpsim/dpsim/internal/busrec"
	"github.com/dpsim/dpsim/internal/cli"
	"github.com/dpsim/dpsim/internal/launch"
	"github.com/dpsim/dpsim/pkg/bus"
	"github.com/dpsim/dpsim/pkg/metrics"
	"github.com/dpsim/dpsim/pkg/record"
	"github.com/dpsim/dpsim/pkg/sim"
)

// The MCAP recording of a run's bus traffic (--record, internal/busrec): an observer of the
// loop that subscribes to each point's dpsim.<run>.> as the point begins - before its
// processes start - and stops listening when it ends; the file is opened before the first
// point and closed (its summary section written) when the loop returns, however it ended:
// completed, failed or interrupted (Ctrl-C), before summary.json records it. With the fast
// engine there is no bus to listen to: the engine hands the messages its in-memory network's
// publishers put out, episode by episode in order (engine.Options.Bus), to a busrec.Tap that
// writes them as the NATS processes publish them, with the launcher's ctl.episode and ctl.stop.

// checkRecord refuses --record where the run's messages are not all in this process (the fast
// engine's episodes played by workers or in shards), and a negative --record-limit.
func (o *Options) checkRecord() error {
	switch {
	case o.Record == "":
		return nil
	case o.Engine == "fast" && (o.Farm.Enabled() || o.Shard.Enabled()):
		return cli.UsageError("--record with --engine fast records the episodes played in this process: not with --dispatch, --spawn-workers or --shard")
	case o.RecordLimit < 0:
		return cli.UsageError("--record-limit %d: want a size in bytes", o.RecordLimit)
	case !strings.HasSuffix(o.Record, ".mcap"):
		return cli.UsageError("--record %s: want a file name ending in .mcap", o.Record)
	}
	return nil
}

// recordPath is where --record writes: a bare file name in OUT, a path as given (the user
// named it).
func (l *launcher) recordPath() string {
	if filepath.Base(l.o.Record) == l.o.Record {
		return filepath.Join(l.o.Out, l.o.Record)
	}
	return l.o.Record
}

// startRecording creates the recording (nothing without --record; 0600 unless --share-outputs:
// the processes' results on ctl.result are computed from the true states) with the run's metadata: the
// scenario, the seed, the run ids of the points, the settings of the processes, and the scenario
// file as an attachment; each point adds its eavesdropper metrics as it ends (dpsim replay
// --check re-runs them). The digests of the processes' plan files travel on the bus in their
// ctl.ready messages, which the recording holds.
func (l *launcher) startRecording() error {
	if l.o.Record == "" {
		return nil
	}
	md := map[string]string{"scenario": l.sum.Scenario, "scenario_file": l.sum.ScenarioFile, "seed": l.sum.SeedString,
		"run_id": l.sum.RunID, "runs": strconv.Itoa(l.runs), "steps": strconv.Itoa(l.sum.Steps), "mode": l.sum.Mode,
		"encoding": l.sum.Encoding, "points": strconv.Itoa(len(l.plans)), "started": l.sum.Started, "engine": l.o.Engine,
		"agents_per_process": strconv.Itoa(l.o.AgentsPerProcess), "timeout": l.o.Timeout.String(), "period": l.o.Period.String()}
	if l.o.Engine == "fast" {
		md["clock"] = "simulated: " + busrec.StepClock.String() + " per step (busrec.Tap)"
	}
	for k := range l.plans {
		md["run_id_p"+strconv.Itoa(k)] = l.pointRunID(k)
	}
	path := l.recordPath()
	rec, err := busrec.Create(busrec.Options{Path: path, Perm: atomicfile.Mode(true, l.o.ShareOutputs), Limit: l.o.RecordLimit, Metadata: md})
	if err != nil {
		return fmt.Errorf("--record: %w", err)
	}
	l.rec = rec
	// the scenario file as read, so that the recording stands alone (dpsim replay --check)
	if data, err := os.ReadFile(l.o.ScenarioPath); err == nil {
		if err := rec.Attach(busrec.ScenarioAttachment, busrec.ScenarioMediaType, data, time.Now()); err != nil {
			l.log.Warn().Err(err).Msg("recording: the scenario file")
		}
	}
	if l.srv == nil { // the fast engine
		l.recTap = busrec.NewTap(rec, l.started)
	}
	l.sum.Recording = &record.Recording{File: path, LimitBytes: l.o.RecordLimit}
	if l.sum.Recording.LimitBytes == 0 {
		l.sum.Recording.LimitBytes = busrec.DefaultLimit
	}
	l.observers = append(l.observers, recordObserver{l})
	return nil
}

// stopRecording closes the recording and records its counts in the summary.
func (l *launcher) stopRecording() {
	if l.rec == nil {
		return
	}
	l.recListen.stop(l)
	st, err := l.rec.Close()
	r := l.sum.Recording
	r.Messages, r.Channels, r.Bytes, r.Dropped, r.Undecodable = st.Messages, st.Channels, st.Bytes, st.Dropped, st.Undecodable
	r.Published = st.Messages + st.Dropped + st.Undecodable
	if fi, serr := os.Stat(r.File); serr == nil {
		r.FileBytes = fi.Size()
	}
	r.Complete = err == nil
	if err != nil && r.Error == "" {
		r.Error = err.Error()
	}
	if r.Error != "" {
		l.log.Warn().Str("error", r.Error).Msg("recording")
	}
}

// recListener is the subscription of the point being recorded (nil: none).
type recListener struct{ ln *busrec.Listener }

func (rl *recListener) stop(l *launcher) {
	if rl.ln == nil {
		return
	}
	if err := rl.ln.Stop(); err != nil && l.sum.Recording.Error == "" {
		l.sum.Recording.Error = err.Error()
	}
	rl.ln = nil
}

// recordObserver listens to each point's subjects while it plays.
type recordObserver struct{ l *launcher }

func (o recordObserver) pointBegin(k int) {
	l := o.l
	if l.recTap != nil {
		if err := l.recTap.Point(l.pointRunID(k), l.plans[k].Steps); err != nil && l.sum.Recording.Error == "" {
			l.sum.Recording.Error = err.Error()
		}
		return
	}
	if l.srv == nil {
		return
	}
	var cfg launch.SessionConfig
	l.srv.Configure(&cfg, k) // the URL, the TLS files and point k's launcher account
	opts := []bus.Option{bus.WithTLS(cfg.TLS)}
	if cfg.Launcher != nil {
		opts = append(opts, bus.WithUser(cfg.Launcher.Name, cfg.Launcher.Password))
	}
	ln, err := l.rec.Listen(cfg.URL, "dpsim-recorder", l.pointRunID(k), opts...)
	if err != nil {
		if l.sum.Recording.Error == "" {
			l.sum.Recording.Error = err.Error()
		}
		l.log.Warn().Err(err).Int("point", k).Msg("recording: not listening")
		return
	}
	l.recListen.ln = ln
}

func (recordObserver) episodesDone(int) {}
func (o recordObserver) pointEnd(k int, _ record.PointSummary, res *metrics.Results, _ bool) {
	if o.l.recTap != nil {
		o.l.recTap.Stop()
	}
	o.l.recListen.stop(o.l)
	if o.l.resume.from != nil {
		return // a resumed run's results cover episodes played before this recording began
	}
	if md := busrec.PointMetadata(o.l.pointRunID(k), res); md != nil { // what dpsim replay --check compares
		if err := o.l.rec.WriteMetadata(busrec.PointMetadataName(k), md); err != nil {
			o.l.log.Warn().Err(err).Int("point", k).Msg("recording")
		}
	}
}

// recordBus is the fast engine's engine.Options.Bus with --record (nil: none): every episode's
// publications to the tap.
func (l *launcher) recordBus() func(ep int, pubs []sim.Publication) error {
	if l.recTap == nil {
		return nil
	}
	return func(ep int, pubs []sim.Publication) error {
		l.recTap.Episode(ep, pubs)
		return nil
	}
}

// recordingNote is report.md's line on the recording ("": none).
func (l *launcher) recordingNote() string {
	r := l.sum.Recording
	if r == nil {
		return ""
	}
	s := fmt.Sprintf("Recording: %d bus messages on %d subjects in %s (MCAP, %d bytes)", r.Messages, r.Channels, r.File, r.FileBytes)
	if r.Dropped > 0 {
		s += fmt.Sprintf("; %d messages dropped past --record-limit %d bytes", r.Dropped, r.LimitBytes)
	}
	if r.Error != "" {
		s += "; error: " + r.Error
	}
	return s + "."
}
