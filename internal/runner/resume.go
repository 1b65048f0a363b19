package runner

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/dpsim/dpsim/internal/atomicfile"
	"github.com/dpsim/dpsim/internal/cli"
	"github.com/dpsim/dpsim/internal/finitejson"
	"github.com/dpsim/dpsim/internal/launch"
	"github.com/dpsim/dpsim/pkg/engine"
	"github.com/dpsim/dpsim/pkg/fault"
	"github.com/dpsim/dpsim/pkg/metrics"
	"github.com/dpsim/dpsim/pkg/plan"
	"github.com/dpsim/dpsim/pkg/record"
	"github.com/dpsim/dpsim/pkg/report"
	"github.com/dpsim/dpsim/pkg/sim"
	"github.com/dpsim/dpsim/pkg/trace"
	"github.com/dpsim/dpsim/pkg/wire"
)

// ResumeFile is the resume state of a run in progress, in OUT (mode 0600). While it exists the
// outputs in OUT are partial: a run that is going on, or one that was killed, failed or
// interrupted before every episode completed; `dpsim run --resume OUT` continues it. A run that
// completes every episode removes it. The bytes of a trace file (trace.jsonl,
// trace-pNN.jsonl) beyond the offset it records, and the trace files of the points it does
// not list as done, are partial: --resume cuts them off.
//
// It holds the scenario file's digest, the seed, the options that decide the results (the plain
// values of resumeFlags; the sha256 of a command's), the Results of every completed point
// (with its processes' summaries) and, for the point in progress, the number of episodes
// folded, the digest of their metrics, the trace offset after them and the digest of the trace
// up to there; last, the HMAC of all that (resumecheck.go). No command, no path (SCENARIO,
// --role and --attach are given again: the file holds their sha256), no credential (the NATS
// URL, TLS files and run id are given again, or drawn again, when resuming) and nothing the
// traces and summary.json do not hold already.
const ResumeFile = "resume.json"

// resumeVersion is the format of ResumeFile (2: flags limited to resumeFlags' values, given_sha256,
// trace_sha256 and the digest; no scenario path).
const resumeVersion = 2

// resumeCheckpointEvery bounds how often the state is written while a point runs (it is
// always written when a point completes): at most one atomic write per this interval.
const resumeCheckpointEvery = 500 * time.Millisecond

// resumeState is ResumeFile.
type resumeState struct {
	Version int `json:"version"`
	// ScenarioSHA256 is the digest of the scenario file's bytes (the file is given again).
	ScenarioSHA256 string `json:"scenario_sha256"`
	Seed           uint64 `json:"seed"`
	SeedString     string `json:"seed_string"`
	SeedSource     string `json:"seed_source"`
	// Flags are the flags the run was started with that decide its results and are plain
	// values (resumeFlags: resumeValue; name: value). Given are the sha256 of the resumeGiven
	// flags' values (givenDigest), given or not: a command is never recorded.
	Flags  map[string]string `json:"flags"`
	Given  map[string]string `json:"given_sha256"`
	Engine string            `json:"engine"`
	Runs   int               `json:"runs"`
	Points int               `json:"points"`
	// Done are the completed points, in order; Current the point in progress (nil: none yet).
	Done    []resumePoint   `json:"done"`
	Current *resumeProgress `json:"current,omitempty"`
	// Connections and LauncherCtlInvalid are the summary's totals over the Done points.
	Connections        record.ConnectionSummary `json:"connections"`
	LauncherCtlInvalid wire.CountersSnapshot    `json:"launcher_ctl_invalid"`
	// Digest is the HMAC-SHA256 of the file's bytes before it ("hmac-sha256:HEX"), keyed by
	// ResumeKeyFile; written last (signResume), so empty when the state is marshalled.
	Digest string `json:"digest,omitempty"`
}

// resumePoint is a completed point: what summary.json has of it.
type resumePoint struct {
	Summary   record.PointSummary     `json:"summary"`
	Processes []record.ProcessSummary `json:"processes"`
	Traces    []string                `json:"traces,omitempty"`
}

// resumeProgress is the point in progress.
type resumeProgress struct {
	Point int `json:"point"`
	// Episodes 0..Episodes-1 are folded into the metrics, whose digest is MetricsSHA256 (the
	// sha256 of the JSON of the Results without links).
	Episodes      int    `json:"episodes"`
	MetricsSHA256 string `json:"metrics_sha256"`
	// TraceFile (a bare name in OUT) holds the merged records of those episodes up to
	// TraceOffset bytes, whose sha256 is TraceSHA256.
	TraceFile   string `json:"trace_file,omitempty"`
	TraceOffset int64  `json:"trace_offset"`
	TraceSHA256 string `json:"trace_sha256,omitempty"`
}

// resumer is the launcher's resume bookkeeping.
type resumer struct {
	state *resumeState
	// from is the state a --resume started from (nil: a fresh run).
	from      *resumeState
	lastSave  time.Time
	replayed  map[int][]fault.LinkStats // links of the episodes replayed for a point
	saveFails int
	key       []byte // of the state's digest (ResumeKeyFile)
}

// applyResume turns the options of `dpsim run SCENARIO --resume OUT [flags]` into those of the
// run being resumed: the command line parsed again after the recorded values of the flags that
// decide the results (resumeFlags: resumeValue) it leaves out, and the run's seed. SCENARIO must
// be given (resume.json names no file) and have the recorded bytes; a result-deciding flag given
// must have the recorded value; --role and --attach (resumeGiven) must be given again as the
// run had them: otherwise a usage error (exit 2) names the difference. Nothing else is taken
// from the file (resumecheck.go).
func (l *launcher) applyResume() error {
	o := l.o
	if o.Resume == "" {
		return nil
	}
	if o.Out != "" && filepath.Clean(o.Out) != filepath.Clean(o.Resume) {
		return cli.UsageError("--out %s and --resume %s: a resumed run writes where it ran (leave --out out)", o.Out, o.Resume)
	}
	o.Out = o.Resume // the caller's options name where the outputs are, as a fresh run's do
	st, key, err := readResumeState(o.Resume, o.Flags)
	if err != nil {
		return err
	}
	if o.ScenarioPath == "" {
		return cli.UsageError("--resume %s: give the run's SCENARIO again (%s names no file, only its sha256): dpsim run SCENARIO --resume %s", o.Resume, ResumeFile, o.Resume)
	}
	if err := st.checkScenario(o.ScenarioPath); err != nil {
		return err
	}
	given, typed := map[string]bool{}, map[string]string{} // typed: the name the command line used
	o.Flags.Visit(func(f *flag.Flag) { given[canonicalFlag(f.Name)], typed[canonicalFlag(f.Name)] = true, f.Name })
	for old, name := range resumeOldNames { // a state recorded under a flag's old name
		if v, ok := st.Flags[old]; ok {
			if _, has := st.Flags[name]; !has {
				st.Flags[name] = v
			}
			delete(st.Flags, old)
		}
	}
	var args, diffs []string
	o.Flags.VisitAll(func(f *flag.Flag) {
		if canonicalFlag(f.Name) != f.Name {
			return // an old name: its value is its flag's (the same variable)
		}
		switch resumeClassOf(f.Name) {
		case resumeValue:
			want, recorded := st.Flags[f.Name]
			if f.Name == "seed" {
				want, recorded = st.SeedString, true // given, drawn or the scenario's: the run's seed
			}
			if !given[f.Name] {
				if recorded {
					args = append(args, "--"+f.Name+"="+want)
				}
				return
			}
			if !recorded {
				want = f.DefValue
			}
			if f.Value.String() != want {
				if want == "" {
					want = "the default"
				}
				diffs = append(diffs, fmt.Sprintf("--%s %s (the run has %s)", typed[f.Name], f.Value.String(), want))
			}
		case resumeGiven:
			if givenDigest(o, f) != st.Given[f.Name] {
				diffs = append(diffs, fmt.Sprintf("--%s is not the run's (%s keeps only its sha256: give --%s again exactly as the run was started, or leave it out if the run had none)", f.Name, ResumeFile, f.Name))
			}
		}
	})
	if len(diffs) > 0 {
		return cli.UsageError("--resume %s: the run being resumed was started with other options: %s", o.Resume, strings.Join(diffs, "; "))
	}
	args = append(args, o.Args...)
	if !given["out"] { // o.Out is set above, the flag was not given
		args = append(args, "--out="+o.Resume)
	}
	if o.Reparse == nil {
		return fmt.Errorf("--resume %s: the options have no parser to read the recorded command line again", o.Resume)
	}
	ro, err := o.Reparse(args)
	if err != nil {
		return fmt.Errorf("--resume %s: the recorded options: %w", o.Resume, err)
	}
	ro.Resume, ro.observers = o.Resume, o.observers // the caller's observers watch the resumed run
	l.o = ro
	l.resume.from, l.resume.key = st, key
	return nil
}

// readResumeState reads OUT/resume.json and its key (never through a link), checks what it
// holds (validate) and its digest. A missing, unreadable, edited or unacceptable state is a
// usage error naming why.
func readResumeState(dir string, fset *flag.FlagSet) (*resumeState, []byte, error) {
	data, err := readPrivate(dir, ResumeFile, false)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil, cli.UsageError("--resume %s: no %s there: nothing to resume (the run completed, or it was not started by dpsim run)", dir, ResumeFile)
	}
	if err != nil {
		return nil, nil, cli.UsageError("--resume %s: %v", dir, err)
	}
	var st resumeState
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&st); err != nil {
		return nil, nil, cli.UsageError("--resume %s: %s: %v", dir, ResumeFile, err)
	}
	if st.Version != resumeVersion {
		return nil, nil, cli.UsageError("--resume %s: %s has format version %d, this dpsim reads %d", dir, ResumeFile, st.Version, resumeVersion)
	}
	if err := st.validate(fset); err != nil {
		return nil, nil, cli.UsageError("--resume %s: %v", dir, err)
	}
	key, err := readPrivate(dir, ResumeKeyFile, true)
	if err != nil {
		return nil, nil, cli.UsageError("--resume %s: the key of %s's digest: %v", dir, ResumeFile, err)
	}
	if err := verifyResume(data, key); err != nil {
		return nil, nil, cli.UsageError("--resume %s: %v", dir, err)
	}
	return &st, key, nil
}

// checkScenario checks that the SCENARIO given with --resume has the recorded bytes.
func (st *resumeState) checkScenario(given string) error {
	g, err := fileSHA256(given)
	if err != nil {
		return cli.UsageError("--resume: scenario %s: %v", given, err)
	}
	if g != st.ScenarioSHA256 {
		return cli.UsageError("--resume: scenario %s is not the run's (sha256 %s, the run's %s): another file, or the file changed since the run started; its results would not be those of one run",
			given, g[:12], st.ScenarioSHA256[:12])
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
	if st.Points != len(l.points) || st.Runs != l.runs {
		return cli.UsageError("--resume %s: %s: %d points of %d runs, the scenario has %d of %d", o.Out, ResumeFile, st.Points, st.Runs, len(l.points), l.runs)
	}
	for k, d := range st.Done {
		for _, tr := range append(d.Traces, d.Summary.TraceFile) {
			if tr != "" && tr != l.traceName(k) {
				return cli.UsageError("--resume %s: %s: done[%d] names trace %q, point %d's is %s", o.Out, ResumeFile, k, tr, k, l.traceName(k))
			}
		}
	}
	if c := st.Current; c != nil && c.TraceFile != "" {
		if c.TraceFile != l.traceName(c.Point) {
			return cli.UsageError("--resume %s: %s: current.trace_file %q: point %d's trace is %s", o.Out, ResumeFile, c.TraceFile, c.Point, l.traceName(c.Point))
		}
		if err := checkTrace(o.Out, c.TraceFile, c.TraceOffset, c.TraceSHA256); err != nil {
			if errors.Is(err, cli.ErrUsage) {
				return fmt.Errorf("--resume %s: %w", o.Out, err)
			}
			return cli.UsageError("--resume %s: %v", o.Out, err)
		}
	}
	if err := removeOutputLinks(o.Out); err != nil {
		return fmt.Errorf("--resume %s: %w", o.Out, err)
	}
	for _, f := range []string{"summary.json", report.FileName} {
		if err := os.Remove(filepath.Join(o.Out, f)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("--resume %s: %w", o.Out, err)
		}
	}
	return nil
}

// resumeBegin starts the bookkeeping of a run: a resumed run takes back its completed
// points and seed source; every run writes its state before the first episode.
func (l *launcher) resumeBegin() {
	l.resume.replayed = map[int][]fault.LinkStats{}
	if l.o.Flags == nil {
		return // Options not parsed from a command line (a caller of Execute): nothing to record
	}
	flags := map[string]string{}
	l.o.Flags.Visit(func(f *flag.Flag) {
		if resumeClassOf(f.Name) == resumeValue && f.Name != "seed" {
			flags[f.Name] = f.Value.String() // as given (an old name is read back as its flag's)
		}
	})
	sum, _ := fileSHA256(l.o.ScenarioPath)
	st := &resumeState{Version: resumeVersion, ScenarioSHA256: sum, Seed: l.sum.Seed, SeedString: l.sum.SeedString,
		SeedSource: l.sum.SeedSource, Flags: flags, Given: givenDigests(l.o), Engine: l.o.Engine, Runs: l.runs, Points: len(l.points), Done: []resumePoint{}}
	if l.resume.from == nil {
		key, err := newResumeKey(l.o.Out)
		if err != nil {
			l.log.Warn().Err(err).Msg("resume state not written: this run cannot be resumed with --resume")
			return
		}
		l.resume.key = key
	}
	if from := l.resume.from; from != nil {
		st.Flags, st.SeedSource, st.Done, st.Current = from.Flags, from.SeedSource, from.Done, from.Current
		st.Connections, st.LauncherCtlInvalid = from.Connections, from.LauncherCtlInvalid
		l.sum.SeedSource = from.SeedSource
		l.sum.Connections, l.sum.LauncherCtlInvalid = from.Connections, from.LauncherCtlInvalid
		for _, d := range st.Done {
			l.addPoint(d.Summary, d.Summary.Metrics)
			for _, p := range d.Processes {
				p.Program = l.o.Roles[p.Role+"."+strconv.Itoa(p.ID)] // given again, the run's (applyResume)
				l.sum.Processes = append(l.sum.Processes, p)
				l.sum.Invalid[l.processKey(p)] = p.Invalid
				l.sum.Timing.Add(p)
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
			p.Program = "" // a command: never in the file (given again with --role)
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
		c.TraceFile, c.TraceOffset, c.TraceSHA256 = out.Name(), off, out.Digest()
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
	st.Digest = ""
	if nf := finitejson.Find(st); nf != nil {
		// null would read back as 0: the last state that was finite stays the one to resume
		if l.resume.saveFails == 0 {
			l.log.Warn().Str("non_finite", nf.Brief(3)).Msg("resume state not updated: the metrics overflowed float64; --resume continues from the last finite state")
		}
		l.resume.saveFails++
		return
	}
	data, err := json.Marshal(st)
	if err == nil {
		data, err = signResume(data, l.resume.key)
	}
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
	if l.resume.state == nil || (l.sum.Status != "ok" && l.sum.Status != "degraded" && l.sum.Status != record.StatusIntervened) {
		return
	}
	for _, f := range []string{ResumeFile, ResumeKeyFile} {
		if err := os.Remove(filepath.Join(l.o.Out, f)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			l.log.Warn().Err(err).Msg("removing the resume state")
		}
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
	acc, links, err := replayEpisodes(ctx, p, l.seeds, c.Episodes, l.o.AgentsPerProcess)
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

// replayEpisodes runs episodes 0..n-1 of p with the fast engine and folds their records into a
// fresh Accumulator, as the collector folds the processes' records.
func replayEpisodes(ctx context.Context, p *plan.Plan, seeds sim.Seeds, n, perHost int) (*metrics.Accumulator, []fault.LinkStats, error) {
	acc, err := metrics.NewAccumulator(p, seeds.Run)
	if err != nil {
		return nil, nil, err
	}
	sink := func(tr *trace.Traces) error {
		for i := range tr.Control {
			if err := acc.AddControl(&tr.Control[i]); err != nil {
				return err
			}
		}
		for i := range tr.Consensus {
			if err := acc.AddConsensus(&tr.Consensus[i]); err != nil {
				return err
			}
		}
		return nil
	}
	res, _, err := engine.Run(ctx, p, seeds, engine.Options{Runs: n, AgentsPerBlock: perHost, TraceSink: sink})
	if err != nil {
		return nil, nil, err
	}
	return acc, res.Links, nil
}
