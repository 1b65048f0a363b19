package run

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"time"

	"github.com/dpsim/dpsim/internal/atomicfile"
	"github.com/dpsim/dpsim/internal/cli"
	"github.com/dpsim/dpsim/internal/launch"
	"github.com/dpsim/dpsim/pkg/bus"
	"github.com/dpsim/dpsim/pkg/fault"
	"github.com/dpsim/dpsim/pkg/metrics"
	"github.com/dpsim/dpsim/pkg/plan"
	"github.com/dpsim/dpsim/pkg/report"
)

// ResumeFile is the resume state of a run in progress, in OUT (mode 0600). While it exists the
// outputs in OUT are partial: a run that is going on, or one that was killed, failed or
// interrupted before every episode completed; `dpsim run --resume OUT` continues it. A run that
// completes every episode removes it. The bytes of a trace file (trace.jsonl,
// trace-pNN.jsonl) beyond the offset it records, and the trace files of the points it does
// not list as done, are partial: --resume cuts them off.
//
// It holds the scenario file's digest, the seed, the options that decide the results, the
// Results of every completed point (with its processes' summaries) and, for the point in
// progress, the number of episodes folded, the digest of their metrics and the trace offset
// after them. No credential (the NATS URL, TLS files and run id are not recorded: they are
// given again, or drawn again, when resuming) and nothing the traces and summary.json do not
// hold already.
const ResumeFile = "resume.json"

// resumeVersion is the format of ResumeFile.
const resumeVersion = 1

// resumeCheckpointEvery bounds how often the state is written while a point runs (it is
// always written when a point completes): at most one atomic write per this interval.
const resumeCheckpointEvery = 500 * time.Millisecond

// resumeState is ResumeFile.
type resumeState struct {
	Version int `json:"version"`
	// ScenarioFile is the scenario's absolute path and ScenarioSHA256 the digest of its bytes.
	ScenarioFile   string `json:"scenario_file"`
	ScenarioSHA256 string `json:"scenario_sha256"`
	Seed           uint64 `json:"seed"`
	SeedString     string `json:"seed_string"`
	SeedSource     string `json:"seed_source"`
	// Flags are the flags the run was started with that decide its results (name: value);
	// the transport's (resumeFreeFlags) are not recorded.
	Flags  map[string]string `json:"flags"`
	Engine string            `json:"engine"`
	Runs   int               `json:"runs"`
	Points int               `json:"points"`
	// Done are the completed points, in order; Current the point in progress (nil: none yet).
	Done    []resumePoint   `json:"done"`
	Current *resumeProgress `json:"current,omitempty"`
	// Connections and LauncherCtlInvalid are the summary's totals over the Done points.
	Connections        ConnectionSummary    `json:"connections"`
	LauncherCtlInvalid bus.CountersSnapshot `json:"launcher_ctl_invalid"`
}

// resumePoint is a completed point: what summary.json has of it.
type resumePoint struct {
	Summary   PointSummary     `json:"summary"`
	Processes []ProcessSummary `json:"processes"`
	Traces    []string         `json:"traces,omitempty"`
}

// resumeProgress is the point in progress.
type resumeProgress struct {
	Point int `json:"point"`
	// Episodes 0..Episodes-1 are folded into the metrics, whose digest is MetricsSHA256 (the
	// sha256 of the JSON of the Results without links).
	Episodes      int    `json:"episodes"`
	MetricsSHA256 string `json:"metrics_sha256"`
	// TraceFile holds the merged records of those episodes up to TraceOffset bytes.
	TraceFile   string `json:"trace_file,omitempty"`
	TraceOffset int64  `json:"trace_offset"`
}

// resumeFreeFlags may differ between a run and its resumption: they say how to reach the
// processes (--no-sign goes with an external server, given again with it), what to print or
// how much memory to allow or how many episodes to keep in flight, not what is computed.
var resumeFreeFlags = []string{"resume", "out", "nats-url", "tls", "tls-ca", "tls-cert", "tls-key", "connect-retry", "listen",
	"cluster", "run-id", "log-level", "progress", "json", "child-gomaxprocs", "attach-timeout", "no-sign", "budget", "inflight", "keep-secrets",
	"ui", "ui-hold", "ui-public", "nats-monitor"}

// resumer is the launcher's resume bookkeeping.
type resumer struct {
	state *resumeState
	// from is the state a --resume started from (nil: a fresh run).
	from      *resumeState
	lastSave  time.Time
	replayed  map[int][]fault.LinkStats // links of the episodes replayed for a point
	saveFails int
}

// scenarioArg is cli.ParseScenarioArgs, except that with --resume the SCENARIO may be left out:
// the resume state names it.
func scenarioArg(fs *flag.FlagSet, args []string, o *Options) (string, error) {
	path, err := cli.ParseScenarioArgs(fs, args, "scenarios/cloud-vehicle.yaml")
	if errors.Is(err, cli.ErrMissingScenario) && o.Resume != "" {
		return "", nil
	}
	return path, err
}

// applyResume turns the options of `dpsim run --resume OUT [flags]` into those of the run
// being resumed: its recorded flags, the flags of resumeFreeFlags given now, and its seed. A
// flag given now that decides the results must have the recorded value, and a SCENARIO given
// now must be the recorded file with the same bytes: otherwise a usage error (exit 2) names
// the difference.
func (l *launcher) applyResume() error {
	o := l.o
	if o.Resume == "" {
		return nil
	}
	if o.Out != "" && filepath.Clean(o.Out) != filepath.Clean(o.Resume) {
		return cli.UsageError("--out %s and --resume %s: a resumed run writes where it ran (leave --out out)", o.Out, o.Resume)
	}
	o.Out = o.Resume // the caller's options name where the outputs are, as a fresh run's do
	st, err := readResumeState(o.Resume)
	if err != nil {
		return err
	}
	if err := st.checkScenario(o.ScenarioPath); err != nil {
		return err
	}
	args := []string{}
	for _, name := range sortedKeys(st.Flags) {
		args = append(args, "--"+name+"="+st.Flags[name])
	}
	var diffs []string
	o.flags.Visit(func(f *flag.Flag) {
		if slices.Contains(resumeFreeFlags, f.Name) {
			if f.Name != "resume" && f.Name != "out" {
				args = append(args, "--"+f.Name+"="+f.Value.String())
			}
			return
		}
		want, ok := st.Flags[f.Name]
		switch {
		case f.Name == "seed":
			want = st.SeedString // given, drawn or the scenario's: the run's seed
		case !ok:
			want = f.DefValue
		}
		if f.Value.String() != want {
			if want == "" {
				want = "the default"
			}
			diffs = append(diffs, fmt.Sprintf("--%s %s (the run has %s)", f.Name, f.Value.String(), want))
		}
	})
	if len(diffs) > 0 {
		return cli.UsageError("--resume %s: the run being resumed was started with other options: %v; resume it with its own (or leave them out)", o.Resume, diffs)
	}
	args = append(args, "--seed="+strconv.FormatUint(st.Seed, 10), "--out="+o.Resume, st.ScenarioFile)
	ro, err := parseOptions(args, io.Discard, io.Discard)
	if err != nil {
		return fmt.Errorf("--resume %s: the recorded options: %w", o.Resume, err)
	}
	ro.Resume, ro.Progress, ro.JSON = o.Resume, o.Progress, o.JSON
	l.o = ro
	l.resume.from = st
	return nil
}

// readResumeState reads OUT/resume.json; a missing or unreadable state is a usage error.
func readResumeState(dir string) (*resumeState, error) {
	data, err := os.ReadFile(filepath.Join(dir, ResumeFile))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, cli.UsageError("--resume %s: no %s there: nothing to resume (the run completed, or it was not started by dpsim run)", dir, ResumeFile)
	}
	if err != nil {
		return nil, cli.UsageError("--resume %s: %v", dir, err)
	}
	var st resumeState
	if err := json.Unmarshal(data, &st); err != nil {
		return nil, cli.UsageError("--resume %s: %s: %v", dir, ResumeFile, err)
	}
	if st.Version != resumeVersion {
		return nil, cli.UsageError("--resume %s: %s has format version %d, this dpsim reads %d", dir, ResumeFile, st.Version, resumeVersion)
	}
	return &st, nil
}

// checkScenario checks that the recorded scenario file still has the recorded bytes, and that
// a SCENARIO given with --resume is that file.
func (st *resumeState) checkScenario(given string) error {
	sum, err := fileSHA256(st.ScenarioFile)
	if err != nil {
		return cli.UsageError("--resume: the run's scenario %s: %v", st.ScenarioFile, err)
	}
	if sum != st.ScenarioSHA256 {
		return cli.UsageError("--resume: the run's scenario %s changed since the run started (sha256 %s, was %s): its results would not be those of one run",
			st.ScenarioFile, sum[:12], st.ScenarioSHA256[:12])
	}
	if given == "" {
		return nil
	}
	g, err := fileSHA256(given)
	if err != nil {
		return cli.UsageError("--resume: scenario %s: %v", given, err)
	}
	if g != st.ScenarioSHA256 {
		return cli.UsageError("--resume: scenario %s is not the run's (%s): another file or other contents", given, st.ScenarioFile)
	}
	return nil
}

func fileSHA256(path string) (string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	h := sha256.Sum256(data)
	return hex.EncodeToString(h[:]), nil
}

func sortedKeys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// prepareOutputs readies OUT: a fresh run removes what an earlier run wrote (cleanOutputs);
// a resumed one keeps the traces of its completed points and of the episodes it folded, cuts
// off what followed them, and removes the earlier attempt's summary.json and report.md.
func (l *launcher) prepareOutputs() error {
	o := l.o
	st := l.resume.from
	if st == nil {
		if err := cleanOutputs(o.Out); err != nil {
			return fmt.Errorf("--out %s: removing the files of an earlier run: %w", o.Out, err)
		}
		return nil
	}
	for _, f := range []string{"summary.json", report.FileName} {
		if err := os.Remove(filepath.Join(o.Out, f)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("--resume %s: %w", o.Out, err)
		}
	}
	if c := st.Current; c != nil && c.TraceFile != "" {
		if err := os.Truncate(filepath.Join(o.Out, c.TraceFile), c.TraceOffset); err != nil {
			return fmt.Errorf("--resume %s: cutting the trace back to its last folded episode: %w", o.Out, err)
		}
	}
	return nil
}

// resumeBegin starts the bookkeeping of a run: a resumed run takes back its completed
// points and seed source; every run writes its state before the first episode.
func (l *launcher) resumeBegin() {
	l.resume.replayed = map[int][]fault.LinkStats{}
	if l.o.flags == nil {
		return // Options not parsed from a command line (a caller of Execute): nothing to record
	}
	flags := map[string]string{}
	l.o.flags.Visit(func(f *flag.Flag) {
		if !slices.Contains(resumeFreeFlags, f.Name) {
			flags[f.Name] = f.Value.String()
		}
	})
	abs, _ := filepath.Abs(l.o.ScenarioPath)
	sum, _ := fileSHA256(l.o.ScenarioPath)
	st := &resumeState{Version: resumeVersion, ScenarioFile: abs, ScenarioSHA256: sum, Seed: l.sum.Seed, SeedString: l.sum.SeedString,
		SeedSource: l.sum.SeedSource, Flags: flags, Engine: l.o.Engine, Runs: l.runs, Points: len(l.points), Done: []resumePoint{}}
	if from := l.resume.from; from != nil {
		st.Flags, st.SeedSource, st.Done, st.Current = from.Flags, from.SeedSource, from.Done, from.Current
		st.Connections, st.LauncherCtlInvalid = from.Connections, from.LauncherCtlInvalid
		l.sum.SeedSource = from.SeedSource
		l.sum.Connections, l.sum.LauncherCtlInvalid = from.Connections, from.LauncherCtlInvalid
		for _, d := range st.Done {
			l.addPoint(d.Summary, d.Summary.Metrics)
			l.sum.Processes = append(l.sum.Processes, d.Processes...)
			for _, p := range d.Processes {
				l.sum.Invalid[l.processKey(p)] = p.Invalid
				l.sum.Timing.add(p)
			}
			l.sum.Files.Traces = append(l.sum.Files.Traces, d.Traces...)
			l.tick(l.runs)
		}
		l.log.Info().Int("points_done", len(st.Done)).Int("episodes_done", st.currentEpisodes()).Msg("resuming")
	}
	l.resume.state = st
	l.saveResume(true)
}

func (st *resumeState) currentEpisodes() int {
	if st.Current == nil {
		return 0
	}
	return st.Current.Episodes
}

// pointDone reports whether point k was completed before the run was resumed (it is in the
// summary already).
func (l *launcher) pointDone(k int) bool {
	return l.resume.state != nil && k < len(l.resume.state.Done)
}

// completePoint records point k, just completed, in the state (the last entry of the summary's
// points and its processes) and writes it.
func (l *launcher) completePoint(k int) {
	st := l.resume.state
	if st == nil || len(st.Done) != k || len(l.sum.Points) == 0 {
		return
	}
	ps := l.sum.Points[len(l.sum.Points)-1]
	d := resumePoint{Summary: ps}
	for _, p := range l.sum.Processes {
		if p.Point == k {
			d.Processes = append(d.Processes, p)
		}
	}
	if ps.TraceFile != "" {
		d.Traces = []string{ps.TraceFile}
	}
	st.Done, st.Current = append(st.Done, d), nil
	st.Connections, st.LauncherCtlInvalid = l.sum.Connections, l.sum.LauncherCtlInvalid
	l.saveResume(true)
}

// checkpoint records that episodes 0..episodes-1 of point k are folded by col and that its
// trace out (nil: none) holds them; written at most every resumeCheckpointEvery unless force
// (the point stopped: a resumption then starts right after its last completed episode).
func (l *launcher) checkpoint(k, episodes int, col *launch.Collector, out *launch.TraceOut, force bool) {
	st := l.resume.state
	if st == nil || (!force && time.Since(l.resume.lastSave) < resumeCheckpointEvery) {
		return
	}
	digest, err := col.MetricsDigest()
	if err != nil {
		l.log.Warn().Err(err).Msg("resume state: metrics digest")
		return
	}
	c := &resumeProgress{Point: k, Episodes: episodes, MetricsSHA256: digest}
	if out != nil {
		off, err := out.Offset()
		if err != nil {
			l.log.Warn().Err(err).Msg("resume state: trace offset")
			return
		}
		c.TraceFile, c.TraceOffset = out.Name(), off
	}
	st.Current = c
	l.saveResume(force)
}

// saveResume writes the state (atomically, mode 0600); a failure is logged once, not fatal:
// the run goes on, only its resumption is lost.
func (l *launcher) saveResume(force bool) {
	st := l.resume.state
	if st == nil || (!force && time.Since(l.resume.lastSave) < resumeCheckpointEvery) {
		return
	}
	l.resume.lastSave = time.Now()
	data, err := json.Marshal(st)
	if err == nil {
		err = atomicfile.WriteFile(filepath.Join(l.o.Out, ResumeFile), data, 0o600)
	}
	if err != nil && l.resume.saveFails == 0 {
		l.log.Warn().Err(err).Msg("resume state not written: this run cannot be resumed with --resume")
	}
	if err != nil {
		l.resume.saveFails++
	}
}

// resumeEnd removes the state of a run whose every episode completed: nothing is partial.
func (l *launcher) resumeEnd() {
	if l.resume.state == nil || (l.sum.Status != "ok" && l.sum.Status != "degraded" && l.sum.Status != StatusIntervened) {
		return
	}
	if err := os.Remove(filepath.Join(l.o.Out, ResumeFile)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		l.log.Warn().Err(err).Msg("removing the resume state")
	}
}

// resumePoint returns the episode point k starts at: 0, or for the point a resumed run was
// in, the episodes folded before, whose metrics are rebuilt by the fast engine (the same role
// cores and per-episode random streams, so the same records bit for bit) and checked against
// the recorded digest. When they differ (a realtime run, or faults that depend on timing) the
// point starts again from episode 0 and its trace from its beginning.
func (l *launcher) resumePoint(ctx context.Context, k int, p *plan.Plan) (int, *metrics.Accumulator, error) {
	if l.resume.state == nil {
		return 0, nil, nil
	}
	c := l.resume.state.Current
	if c == nil || c.Point != k || c.Episodes == 0 {
		return 0, nil, nil
	}
	acc, links, err := launch.ReplayEpisodes(ctx, p, l.seeds, c.Episodes, l.o.AgentsPerProcess)
	if err != nil {
		return 0, nil, fmt.Errorf("resume: replaying episodes 0..%d of point %d: %w", c.Episodes-1, k, err)
	}
	digest, err := launch.MetricsDigest(acc)
	if err != nil {
		return 0, nil, err
	}
	if digest != c.MetricsSHA256 {
		l.log.Warn().Int("point", k).Int("episodes", c.Episodes).Msg("resume: the replayed episodes differ from those of the killed run (timing-dependent faults or realtime mode): the point starts again from episode 0")
		return 0, nil, nil
	}
	l.resume.replayed[k] = links
	l.tick(c.Episodes)
	return c.Episodes, acc, nil
}
