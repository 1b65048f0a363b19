package busrec

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"time"

	"github.com/rs/zerolog"

	"github.com/dpsim/dpsim/internal/launch"
	"github.com/dpsim/dpsim/pkg/bus"
	"github.com/dpsim/dpsim/pkg/contract"
	"github.com/dpsim/dpsim/pkg/endpoint"
	"github.com/dpsim/dpsim/pkg/plan"
	"github.com/dpsim/dpsim/pkg/scenario"
	"github.com/dpsim/dpsim/pkg/sim"
	"github.com/dpsim/dpsim/pkg/wire"
)

// The re-run of a recording (dpsim replay --check): for each point of the recorded run, a
// fresh eavesdropper process - dpsim's own, spawned by the launcher's session
// (launch.StartSession with SessionConfig.Roles: its plan file, its account on an embedded
// server of the run's accounts, its flags) - hears the recorded traffic of the point minus
// what the recorded eavesdropper published, and its metrics must be the recorded run's bit
// for bit. The recording stands alone: its scenario attachment, seed and run ids give the
// eavesdropper's plan file, whose digest must be the one the recorded eavesdropper's
// ctl.ready announced.
//
// The traffic is published as fast as the fresh eavesdropper takes it: where the recorded
// eavesdropper said ctl.done for an episode, the replay waits for the fresh one's (what was
// published after it in the recorded run was published after the eavesdropper finished the
// episode, and is published after the fresh one finished it). In lockstep a process's results
// do not depend on when messages arrive, only on which arrive (docs/protocol.md), so the
// metrics must agree exactly; a realtime recording is not re-run (its eavesdropper's clock is
// the wall clock).

// RerunOptions configure Rerun.
type RerunOptions struct {
	Exe string // the dpsim binary whose eavesdropper runs (os.Executable())
	// Dir receives the eavesdropper's files, a folder per point (private: its trace holds
	// its estimates).
	Dir string
	Log zerolog.Logger
}

// PointRerun is the verdict of one point's re-run.
type PointRerun struct {
	Point    int
	Run      string // the point's run id
	Episodes int    // the episodes of the recorded run's metrics
	// Mismatches are the first differences from the recorded run (empty: bit for bit);
	// Differences counts them all.
	Mismatches  []string
	Differences int
}

// RerunResult is what Rerun found.
type RerunResult struct {
	// Skipped says why the recording was not re-run ("": it was).
	Skipped string
	Points  []PointRerun
}

// Same reports whether every point re-ran to the recorded metrics bit for bit.
func (r *RerunResult) Same() bool {
	for _, p := range r.Points {
		if p.Differences > 0 {
			return false
		}
	}
	return r.Skipped == "" && len(r.Points) > 0
}

// rerunSetup is what the recording says of the run to re-run.
type rerunSetup struct {
	md    map[string]string
	plans []*plan.Plan
	runs  []string // run id of each point
	seed  uint64
	mode  wire.Mode
	// per is the agents per process, episodes the run's episodes per point
	per, episodes   int
	timeout, period time.Duration
}

// Rerun re-runs the eavesdropper of the recording at path (c: what Scan found in it) point by
// point. A recording that cannot be re-run returns a result that says why in Skipped, and no
// error: one not closed or past its size limit (its traffic incomplete); one without its
// scenario attachment, point results or eavesdropper (an older dpsim; a run that ended before
// its points did, or was resumed); realtime; server restarts or proxies (outages the recording
// does not hold). An error is a failure of the re-run itself.
func Rerun(ctx context.Context, path string, c *Contents, o RerunOptions) (*RerunResult, error) {
	if !c.Complete { // a killed writer: the traffic after its last complete chunk is lost
		return &RerunResult{Skipped: "the recording was not closed (its writer was killed): the end of its traffic is lost"}, nil
	}
	if d := c.Metadata[MetadataName+"/counts"]["dropped"]; d != "" && d != "0" {
		return &RerunResult{Skipped: "the recording dropped " + d + " messages past its size limit (--record-limit): its traffic is incomplete"}, nil
	}
	st, why := setupRerun(c)
	if why != "" {
		return &RerunResult{Skipped: why}, nil
	}
	recs, err := recordedEavesdroppers(path, st.runs)
	if err != nil {
		return nil, err
	}
	for k, run := range st.runs {
		if c.Metadata[PointMetadataName(k)] == nil {
			return &RerunResult{Skipped: fmt.Sprintf("point %d (run %s) has no recorded results: the run ended before the point did, or was resumed (its results cover episodes played before the recording began)", k, run)}, nil
		}
		if recs[run] == nil {
			return &RerunResult{Skipped: fmt.Sprintf("the recording has no ctl.ready of the eavesdropper of point %d (run %s): no eavesdropper process ran it", k, run)}, nil
		}
	}
	replayer, err := bus.NewUser("dpsim-replay", nil, nil) // publishes every process's subjects
	if err != nil {
		return nil, err
	}
	srv, err := launch.StartServer(launch.ServerConfig{Plans: st.plans, RunIDs: st.runs, AgentsPerProcess: st.per, Users: []bus.User{replayer}})
	if err != nil {
		return nil, fmt.Errorf("re-run: %w", err)
	}
	defer srv.Close()
	conn, err := bus.Connect(srv.URL, "dpsim-replay", bus.WithUser(replayer.Name, replayer.Password))
	if err != nil {
		return nil, fmt.Errorf("re-run: %w", err)
	}
	defer conn.Close()
	res := &RerunResult{}
	for k, run := range st.runs {
		pr, err := rerunPoint(ctx, path, st, k, c.Metadata[PointMetadataName(k)], recs[run], srv, conn, o)
		if err != nil {
			return res, fmt.Errorf("re-run of point %d (run %s): %w", k, run, err)
		}
		res.Points = append(res.Points, *pr)
	}
	return res, nil
}

// setupRerun reads the run to re-run from the recording's metadata and scenario attachment
// ("" and the setup), or says why it cannot be re-run.
func setupRerun(c *Contents) (*rerunSetup, string) {
	md := c.Metadata[MetadataName]
	att, ok := c.Attachments[ScenarioAttachment]
	if md == nil || !ok {
		return nil, "the recording has no " + ScenarioAttachment + " attachment or no run metadata (a recording of an older dpsim)"
	}
	st := &rerunSetup{md: md, per: 1}
	var errs []error
	num := func(key string, dst *int) {
		if v, ok := md[key]; ok {
			n, err := strconv.Atoi(v)
			errs = append(errs, err)
			*dst = n
		}
	}
	dur := func(key string, dst *time.Duration) {
		d, err := time.ParseDuration(md[key])
		errs = append(errs, err)
		*dst = d
	}
	seed, err := strconv.ParseUint(md["seed"], 10, 64)
	st.seed = seed
	errs = append(errs, err)
	num("runs", &st.episodes)
	num("agents_per_process", &st.per)
	dur("timeout", &st.timeout)
	dur("period", &st.period)
	st.mode, err = wire.ParseMode(md["mode"])
	errs = append(errs, err)
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Sprintf("the recording's metadata: %v", err)
	}
	if st.mode != wire.Lockstep {
		return nil, fmt.Sprintf("a %s recording: its eavesdropper's steps follow the wall clock, which a re-run does not reproduce (lockstep recordings re-run bit for bit)", st.mode)
	}
	sc, err := scenario.Parse(att.Data, md["scenario_file"])
	if err != nil {
		return nil, fmt.Sprintf("the recorded scenario: %v", err)
	}
	if f := sc.Faults; len(f.ServerRestarts) > 0 || len(f.Proxies) > 0 {
		return nil, "the scenario restarts the server or puts proxies in front of it: outages the recording does not hold"
	}
	for k, pt := range sc.Expand() {
		p, err := plan.New(pt, plan.Options{})
		if err != nil {
			return nil, fmt.Sprintf("the recorded scenario, point %d: %v", k, err)
		}
		run := md["run_id_p"+strconv.Itoa(k)]
		if run == "" {
			return nil, fmt.Sprintf("the recording's metadata has no run id of point %d", k)
		}
		st.plans, st.runs = append(st.plans, p), append(st.runs, run)
	}
	return st, ""
}

// rerunPoint re-runs point k: its fresh eavesdropper, the recorded traffic, the comparison.
func rerunPoint(ctx context.Context, path string, st *rerunSetup, k int, md map[string]string, rec *recorded, srv *launch.Server, conn *bus.Conn,
	o RerunOptions) (*PointRerun, error) {
	run := st.runs[k]
	want, runs, err := recordedEve(md)
	if err != nil {
		return nil, fmt.Errorf("the recorded results: %w", err)
	}
	cfg := launch.SessionConfig{
		Exe: o.Exe, Point: k, Plan: st.plans[k], Seeds: sim.NewSeeds(st.seed), Runs: st.episodes, Run: run,
		Dir: filepath.Join(o.Dir, fmt.Sprintf("p%02d", k)), Mode: st.mode, Period: st.period, Timeout: st.timeout,
		AgentsPerProcess: st.per, Encoding: st.md["encoding"], LogLevel: "warn", Log: o.Log,
		Roles: []endpoint.Role{endpoint.Eavesdropper},
		// the recorded ctl.episode says each group's size (the processes need no flag); the
		// session's buffer of ctl events must hold the ctl.done of the largest group at once
		Inflight: contract.MaxInflight,
	}
	srv.Configure(&cfg, k)
	cfg.Server, cfg.Cluster = nil, nil // nothing to restart: the scenarios that would are not re-run
	sess, err := launch.StartSession(ctx, cfg)
	if err != nil {
		return nil, err
	}
	pr := &PointRerun{Point: k, Run: run, Episodes: runs}
	diff := func(format string, args ...any) {
		pr.Differences++
		if len(pr.Mismatches) < maxMismatches {
			pr.Mismatches = append(pr.Mismatches, fmt.Sprintf(format, args...))
		}
	}
	eve := endpoint.Endpoint{Role: endpoint.Eavesdropper}.String()
	if got := sess.PlanDigest(eve); got != rec.plan {
		diff("the eavesdropper's plan file: digest %012x, the recorded eavesdropper's ctl.ready says %012x (the recorded scenario and seed do not give its plan)", got, rec.plan)
	}
	perr := publishPoint(ctx, path, run, conn, sess)
	serr := sess.Stop()
	if err := errors.Join(perr, serr); err != nil {
		return nil, err
	}
	p := sess.Procs()[0]
	fresh := sess.Result(p)
	compareResults(rec.result, fresh, diff)
	got, err := foldEve(st.plans[k], st.seed, st.episodes, launch.TracePath(cfg.Dir, p.Role, p.ID, p.LastAgent))
	if err != nil {
		return nil, err
	}
	ms, n := compareSeries("eve_sq_error", want, got)
	for _, m := range ms {
		diff("%s", m)
	}
	pr.Differences += n - len(ms)
	return pr, nil
}

// recorded is what the recorded eavesdropper of a point said: the digest of its plan file
// (its first ctl.ready) and its result (ctl.result; nil: none recorded).
type recorded struct {
	plan   uint64
	result *contract.ProcessResult
}

// recordedEavesdroppers reads what the eavesdropper of each run (of runs) published in the
// recording: its first ctl.ready and its ctl.result (a run absent: not even its ctl.ready).
func recordedEavesdroppers(path string, runs []string) (map[string]*recorded, error) {
	ready, result := map[string]string{}, map[string]string{} // subject -> run
	for _, run := range runs {
		subj, err := wire.NewSubjects(run)
		if err != nil {
			return nil, err
		}
		ready[subj.CtlReady(endpoint.Eavesdropper, 0)] = run
		result[subj.CtlResult(endpoint.Eavesdropper, 0)] = run
	}
	out := map[string]*recorded{}
	_, err := Scan(path, func(m Message) error {
		if run, ok := ready[m.Topic]; ok && out[run] == nil {
			var w wire.Message
			if err := wire.Decode(m.Data, &w); err != nil {
				return fmt.Errorf("%s: %w", m.Topic, err)
			}
			rd, err := contract.ParseReady(&w)
			if err != nil {
				return fmt.Errorf("%s: %w", m.Topic, err)
			}
			out[run] = &recorded{plan: rd.Plan}
		}
		if run, ok := result[m.Topic]; ok && out[run] != nil {
			res, err := contract.DecodeResult(m.Data, run)
			if err != nil {
				return fmt.Errorf("%s: %w", m.Topic, err)
			}
			out[run].result = res
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("the recorded eavesdropper: %w", err)
	}
	return out, nil
}

// publishPoint publishes the recorded traffic of run with its headers, minus what the
// recorded eavesdropper published; at each of its ctl.done it waits for the fresh
// eavesdropper's ctl.done of that episode.
func publishPoint(ctx context.Context, path, run string, conn *bus.Conn, sess *launch.Session) error {
	_, err := Scan(path, func(m Message) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		sub, err := wire.ParseSubject(m.Topic)
		if err != nil || sub.Run != run {
			return nil // another point's, or no subject of a run
		}
		if !sub.IsCtl() || len(sub.Ctl) != 3 || sub.Ctl[1] != endpoint.Eavesdropper.String() {
			return conn.PublishRawHeaders(m.Topic, ReplayHeader(m.Header), m.Data)
		}
		if sub.Ctl[0] != wire.CtlDone {
			return nil // its ready, rejoin and result: the fresh one says its own
		}
		var w wire.Message
		if err := wire.Decode(m.Data, &w); err != nil {
			return fmt.Errorf("%s: %w", m.Topic, err)
		}
		if err := conn.Flush(time.Minute); err != nil {
			return err
		}
		return sess.WaitDone(ctx, launch.Group{First: w.Episode, Count: 1})
	})
	if err != nil {
		return err
	}
	return conn.Flush(time.Minute)
}

// compareResults compares what the fresh eavesdropper's result says it did with the recorded
// one's: the episodes and steps it completed (its timings, pids and counters of connections
// are the run's own).
func compareResults(want, got *contract.ProcessResult, diff func(string, ...any)) {
	switch {
	case want == nil:
		diff("the recording has no ctl.result of the eavesdropper")
		return
	case got == nil:
		diff("the fresh eavesdropper left no result")
		return
	}
	if got.Status != contract.StatusOK {
		diff("the fresh eavesdropper ended %s: %s", got.Status, got.Error)
	}
	if got.Episodes != want.Episodes || got.Steps != want.Steps {
		diff("the fresh eavesdropper completed %d episodes, %d steps; the recorded one %d episodes, %d steps", got.Episodes, got.Steps, want.Episodes, want.Steps)
	}
}
