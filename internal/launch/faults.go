package launch

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/dpsim/dpsim/internal/proxy"
	"github.com/dpsim/dpsim/pkg/contract"
	"github.com/dpsim/dpsim/pkg/endpoint"
	"github.com/dpsim/dpsim/pkg/record"
	"github.com/dpsim/dpsim/pkg/scenario"
	"github.com/dpsim/dpsim/pkg/wire"
)

// processFaults is the state of the scenario's process faults in a session: the proxies in
// front of the server, the crashes done, and the server restart in progress.
type processFaults struct {
	// proxies are the toxiproxies in front of the server (faults.proxies), by sender.
	proxies map[string]*proxy.Proxy
	crashed map[string]bool // "<sender>/<episode>": the scheduled crash happened
	// A server restart in progress or done: restartDone is closed when the server is back;
	// pendingReady are the processes not heard from (ctl.ready) since it went down - an
	// episode starts only when every process is back on the bus.
	restartMu    sync.Mutex
	restartDone  chan struct{}
	restartErr   error
	pendingReady map[string]bool
	// live are the faults as live interventions left them (nil: the scenario's); read and
	// written by the goroutine that plays the episodes only (interventions.go).
	live *scenario.FaultsSpec
}

// FaultCounts count the process faults done in a session: ServerRestarts the restarts of the
// embedded server, Crashes the processes killed by the scenario (faults.crashes), Restarts
// those started again from their checkpoint.
type FaultCounts struct {
	ServerRestarts int
	Crashes        int
	Restarts       int
}

// startProxies starts the toxiproxy of every faults.proxies entry (none in attach mode, whose
// processes connect on their own).
func (s *Session) startProxies() error {
	cfg := s.cfg
	for _, x := range cfg.Plan.Scenario.Faults.Proxies {
		if cfg.Attach {
			break
		}
		// in front of the first server of a list: the process reaches the bus through the
		// proxy only
		first, _, _ := strings.Cut(cfg.URL, ",")
		px, err := proxy.Start(cfg.Run+"-"+x.Proc, first, x)
		if err != nil {
			return err
		}
		if s.faults.proxies == nil {
			s.faults.proxies = map[string]*proxy.Proxy{}
		}
		s.faults.proxies[x.Proc] = px
		cfg.Log.Info().Str("proc", x.Proc).Str("proxy", px.URL()).Dur("latency", x.Latency).Dur("jitter", x.Jitter).
			Int64("bandwidth_kBps", x.Bandwidth).Msg("faults: toxiproxy in front of the server")
	}
	return nil
}

// trigger is a fault the launcher fires when it sees a step on the bus.
type trigger struct {
	at    scenario.StepPoint
	fired bool
	fire  func(step int)
}

// watchServer arms the scenario's server restarts and proxy resets: the launcher listens to
// one data stream (the plant's yhat, or agent 0's y) and fires each when it sees its step.
func (s *Session) watchServer() error {
	f := &s.cfg.Plan.Scenario.Faults
	var ts []*trigger
	for _, r := range f.ServerRestarts {
		if s.cfg.Server == nil {
			return errors.New("faults.server_restarts: the run uses an external NATS server (--nats-url); only the embedded server can be restarted")
		}
		if n := 1; r.Server > 0 {
			if s.cfg.Cluster != nil {
				n = len(s.cfg.Cluster.Members)
			}
			if r.Server >= n {
				return fmt.Errorf("faults.server_restarts: server %d, but the run has %d embedded server(s) (dpsim run --cluster N)", r.Server, n)
			}
		}
		r := r
		ts = append(ts, &trigger{at: scenario.StepPoint{Episode: r.Episode, Step: r.Step}, fire: func(step int) { s.restartServer(r, step) }})
	}
	for _, x := range f.Proxies {
		px := s.faults.proxies[x.Proc]
		if px == nil {
			continue
		}
		for _, at := range x.Resets {
			proc, at := x.Proc, at
			ts = append(ts, &trigger{at: at, fire: func(step int) {
				err := px.Reset()
				detail := "toxiproxy closed the connection; the client reconnects"
				if err != nil {
					detail = err.Error()
				}
				s.cfg.Log.Warn().Str("proc", proc).Int("episode", at.Episode).Int("step", step).Msg("faults: connection reset")
				s.cfg.Timeline.Add(time.Now(), record.TimelineEvent{Point: s.cfg.PointIndex, Episode: at.Episode, Step: step, Proc: contract.ProcName(procRole(proc)), Event: EvReset, Detail: detail})
			}})
		}
	}
	if len(ts) == 0 {
		return nil
	}
	subject := s.subj.AgentY(0)
	if s.cfg.Plan.Scenario.Kind == scenario.CloudControl {
		subject = s.subj.PlantYhat(0)
	}
	sub, err := s.conn.SubscribeDocuments(subject, nil, func(_ string, data []byte) {
		var m wire.Message
		if wire.Decode(data, &m) != nil || m.Run != s.cfg.Run {
			return
		}
		for _, t := range ts {
			if !t.fired && m.Episode == t.at.Episode && m.Step >= t.at.Step {
				t.fired = true
				t.fire(m.Step)
			}
		}
	})
	if err != nil {
		return err
	}
	s.ctl.subs = append(s.ctl.subs, sub)
	return nil
}

// procRole splits an endpoint "<role>.<id>" into what contract.ProcName takes.
func procRole(e string) (endpoint.Role, int, int) {
	ep, _ := endpoint.Parse(e) // the scenario's crashes name valid endpoints
	return ep.Role, ep.ID, ep.ID
}

// restartServer stops the embedded server, keeps it down, starts it again, and puts both on
// the timeline; the next episode waits until every process is back.
func (s *Session) restartServer(r scenario.ServerRestart, step int) {
	s.faults.restartMu.Lock()
	prev := s.faults.restartDone
	done := make(chan struct{})
	s.faults.restartDone = done
	s.faults.pendingReady = map[string]bool{}
	for k := range s.byKey {
		s.faults.pendingReady[k] = true
	}
	member := s.cfg.Server
	if s.cfg.Cluster != nil {
		// a cluster member: only its clients lose the bus (and come back through another)
		member = s.cfg.Cluster.Members[r.Server]
		on := member.ClientNames()
		for k, p := range s.byKey {
			if !on["dpsim-"+p.Name] {
				delete(s.faults.pendingReady, k)
			}
		}
	}
	s.ServerRestarts++
	s.faults.restartMu.Unlock()
	tl, pt := s.cfg.Timeline, s.cfg.PointIndex
	go func() {
		if prev != nil {
			<-prev
		}
		what := "the NATS server"
		if s.cfg.Cluster != nil {
			what = fmt.Sprintf("cluster member %d", r.Server)
		}
		s.cfg.Log.Warn().Int("episode", r.Episode).Int("step", step).Dur("down", r.Down).Str("server", what).Msg("faults: stopping the NATS server")
		tl.Add(time.Now(), record.TimelineEvent{Point: pt, Episode: r.Episode, Step: step, Event: EvServerStopped, Detail: fmt.Sprintf("%s down for %v", what, r.Down)})
		err := member.Restart(r.Down)
		if err != nil {
			tl.Add(time.Now(), record.TimelineEvent{Point: pt, Episode: r.Episode, Step: -1, Event: EvServerFailed, Detail: err.Error()})
		} else {
			tl.Add(time.Now(), record.TimelineEvent{Point: pt, Episode: r.Episode, Step: -1, Event: EvServerStarted, Detail: "same port"})
			s.cfg.Log.Warn().Msg("faults: the NATS server is back")
		}
		s.faults.restartMu.Lock()
		if err != nil && s.faults.restartErr == nil {
			s.faults.restartErr = err
		}
		s.faults.restartMu.Unlock()
		close(done)
	}()
}

// scheduledCrash returns the scenario's crash of p in episode ep when p's exit is that crash
// (killed by SIGKILL, the first time), else nil.
func (s *Session) scheduledCrash(p *Proc, ep int) *scenario.Crash {
	f := &s.cfg.Plan.Scenario.Faults
	if s.faults.live != nil {
		f = s.faults.live
	}
	c := f.CrashOf(endpoint.Endpoint{Role: p.Role, ID: p.ID}.String(), ep)
	if c == nil || p.state == nil || !killed(p.state) {
		return nil
	}
	key := fmt.Sprintf("%s/%d", c.Proc, ep)
	if s.faults.crashed[key] {
		return nil
	}
	if s.faults.crashed == nil {
		s.faults.crashed = map[string]bool{}
	}
	s.faults.crashed[key] = true
	return c
}

// restartCrashed starts a process killed by a crash of the scenario again, with --resume: it
// continues from its checkpoint and is back at the crash's restart step.
func (s *Session) restartCrashed(p *Proc, c *scenario.Crash, ep int) error {
	s.Crashes++
	tl, pt := s.cfg.Timeline, s.cfg.PointIndex
	tl.Add(time.Now(), record.TimelineEvent{Point: pt, Episode: ep, Step: c.Step, Proc: p.Name, Event: EvKilled,
		Detail: fmt.Sprintf("SIGKILL (pid %d, faults.crashes); checkpoint at step %d", p.PID(), c.Step)})
	s.cfg.Log.Warn().Str("proc", p.Name).Int("episode", ep).Int("step", c.Step).Msg("faults: process killed; restarting it from its checkpoint")
	if err := s.spawnWith(p, true); err != nil {
		return fmt.Errorf("restart %s after its crash: %w", p.Name, err)
	}
	s.Restarts++
	tl.Add(time.Now(), record.TimelineEvent{Point: pt, Episode: ep, Step: c.Restart, Proc: p.Name, Event: EvRestarted,
		Detail: fmt.Sprintf("pid %d resumes from its checkpoint, back at step %d (noise: %s)", p.PID(), c.Restart, c.Noise)})
	return nil
}

// noteEvent keeps track of the processes heard from since a server restart.
func (s *Session) noteEvent(ev ctlEvent) {
	if ev.word != wire.CtlReady {
		return
	}
	s.faults.restartMu.Lock()
	delete(s.faults.pendingReady, ev.sender)
	s.faults.restartMu.Unlock()
}

// awaitRejoin waits, before episode ep starts, until a server restart is over and every
// process announced itself again (what is published while a subscriber is away is lost: an
// episode started earlier would go unheard).
func (s *Session) awaitRejoin(ctx context.Context, ep int) error {
	s.faults.restartMu.Lock()
	done := s.faults.restartDone
	s.faults.restartMu.Unlock()
	if done == nil {
		return nil
	}
	timer := time.NewTimer(s.cfg.StartTimeout)
	defer timer.Stop()
	select {
	case <-done:
	case <-ctx.Done():
		return fmt.Errorf("episode %d: %w (%v)", ep, ErrInterrupted, context.Cause(ctx))
	case <-timer.C:
		return fmt.Errorf("episode %d: the NATS server restart did not finish within %v", ep, s.cfg.StartTimeout)
	}
	s.faults.restartMu.Lock()
	err := s.faults.restartErr
	s.faults.restartMu.Unlock()
	if err != nil {
		return fmt.Errorf("episode %d: %w", ep, err)
	}
	for {
		s.faults.restartMu.Lock()
		var left []string
		for k := range s.faults.pendingReady {
			left = append(left, k)
		}
		s.faults.restartMu.Unlock()
		if len(left) == 0 {
			return nil
		}
		select {
		case ev := <-s.ctl.events:
			s.noteEvent(ev)
		case p := <-s.exits:
			s.exits <- p
			return fmt.Errorf("episode %d: process %s exited after the NATS server restart: %s", ep, p.who(), p.Failure())
		case <-ctx.Done():
			return fmt.Errorf("episode %d: %w (%v)", ep, ErrInterrupted, context.Cause(ctx))
		case <-timer.C:
			return fmt.Errorf("episode %d: after the NATS server restart, not back on the bus within %v: %s", ep, s.cfg.StartTimeout, strings.Join(left, ", "))
		}
	}
}
