package roleproc

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"time"

	"github.com/dpsim/dpsim/internal/cli"
	"github.com/dpsim/dpsim/pkg/bus"
	"github.com/dpsim/dpsim/pkg/contract"
	"github.com/dpsim/dpsim/pkg/endpoint"
	"github.com/dpsim/dpsim/pkg/plan"
	"github.com/dpsim/dpsim/pkg/scenario"
	"github.com/dpsim/dpsim/pkg/sim"
	"github.com/dpsim/dpsim/pkg/trace"
	"github.com/dpsim/dpsim/pkg/wire"
)

// DefaultIdleTimeout is the longest wait for the next ctl.episode (--idle-timeout); the
// step timeout's default and minimum are the contract's (contract.DefaultTimeout, MinTimeout).
const DefaultIdleTimeout = 2 * time.Minute

// Config is a role process's configuration: the command (internal/cmd/role) fills it from
// the flags and the environment; Serve fills in what the scenario decides.
type Config struct {
	Role         endpoint.Role
	NATSURL      string
	Run          string
	ScenarioPath string
	// PlanPath is the plan file the launcher wrote for this process (--plan): the scenario
	// point resolved once (plan.WriteFile), with only this process's private values. Without
	// it the process resolves --scenario itself.
	PlanPath     string
	Point        int
	Seed         uint64
	SeedSet      bool
	FaultSeed    uint64 // the seed of the link faults' fates (sim.Seeds.Fault: the launcher passes it)
	FaultSeedSet bool
	ID           int
	LastAgent    int // agent hosts: the last agent hosted (= ID for one agent)
	// Batch: the run's agents publish in blocks of Batch (--batch; sim.Blocks), when the
	// scenario allows it (sim.Batchable); <= 1: one message per agent.
	Batch       int
	Out         string
	Mode        wire.Mode
	ModeSet     bool
	Period      time.Duration
	Timeout     time.Duration
	IdleTimeout time.Duration
	LogLevel    string
	Encoding    wire.Encoding
	ParentPID   int
	Transcript  bool
	// KeepEpisodes bounds the disk use of the trace, transcript and fault log: the records of
	// the traced episodes stay (the first N); a later episode's records replace the previous
	// one's (the launcher folds each episode into its metrics before the next starts). The
	// zero value keeps every episode.
	KeepEpisodes trace.Episodes
	// Resume continues from the process's checkpoint after a crash (faults.crashes).
	Resume bool
	// TLS files (the CA to trust; a client certificate and key for mutual TLS)
	TLS bus.TLSFiles
	// SignKeys is the file of every sender's public signing key (--sign-keys): data messages
	// are signed (with the seed of $DPSIM_SIGN_SEED) and verified.
	SignKeys string
	// Credentials is the file of this process's credentials (--credentials; dpsim run
	// --attach writes one per process), read before connecting; never logged.
	Credentials string
	// ConnectRetry is how long an unreachable server is retried at start (--connect-retry).
	ConnectRetry time.Duration
	// Secrets are the process's credentials and keys (never logged, never in argv).
	Secrets Secrets
}

// Secrets are a role process's credentials and keys. They print as "[redacted]", so a
// Config logged or printed whole does not give them away.
type Secrets struct {
	// NATSUser and NATSPassword: found in --nats-url / $NATS_URL (taken out of NATSURL),
	// $DPSIM_NATS_USER and $DPSIM_NATS_PASSWORD, or the --credentials file (which wins)
	NATSUser, NATSPassword string
	// SignSeed is the signing seed of the --credentials file ("": $DPSIM_SIGN_SEED's, if any)
	SignSeed string
	// X0Seed opens the challenger's sealed x(0) (the plant, the agents), sealed by the holder
	// of the public curve key X0Sender (the launcher): from $DPSIM_X0_SEED and
	// $DPSIM_X0_SENDER, or the --credentials file (which wins)
	X0Seed, X0Sender string
}

// String hides the secrets from fmt (also as a field of a Config printed with %v or %+v).
func (Secrets) String() string { return "[redacted]" }

// GoString hides the secrets from fmt's %#v.
func (Secrets) GoString() string { return "[redacted]" }

// MarshalJSON hides the secrets from a log or file that encodes a Config as JSON.
func (Secrets) MarshalJSON() ([]byte, error) { return []byte(`"[redacted]"`), nil }

// Name returns the process name (see contract.ProcName).
func (c *Config) Name() string { return contract.ProcName(c.Role, c.ID, c.LastAgent) }

// LoadPoint loads the scenario file, expands its sweep and resolves point k into a plan: the
// same steps the launcher takes, so every process works on the same design.
func LoadPoint(path string, k int) (*scenario.Scenario, *plan.Plan, error) {
	if err := cli.CheckScenarioFile(path); err != nil {
		return nil, nil, err
	}
	s, err := scenario.Load(path)
	if err != nil {
		return nil, nil, err
	}
	points := s.Expand()
	if k < 0 || k >= len(points) {
		return nil, nil, fmt.Errorf("scenario %s: point %d out of range: it has %d point(s)", path, k, len(points))
	}
	p, err := plan.New(points[k], plan.Options{})
	if err != nil {
		return nil, nil, err
	}
	return points[k], p, nil
}

// LoadPlanFile reads a plan file written by the launcher (plan.ReadFile). A file that does not
// exist yet is waited for, every 0.5 s for up to wait: a process started before an attached
// launcher wrote it (docker-compose) goes on once it is there. The launcher writes it
// atomically, so what exists is whole.
// The digest (plan.FileDigest) goes into the process's ctl.ready.
func LoadPlanFile(path string, wait time.Duration) (*plan.Plan, uint64, error) {
	deadline := time.Now().Add(wait)
	f, err := os.Open(path)
	for errors.Is(err, fs.ErrNotExist) && time.Now().Before(deadline) {
		time.Sleep(min(500*time.Millisecond, time.Until(deadline)))
		f, err = os.Open(path)
	}
	if err != nil {
		return nil, 0, fmt.Errorf("--plan: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, plan.MaxFileSize+1))
	if err != nil {
		return nil, 0, fmt.Errorf("--plan %s: %w", path, err)
	}
	p, err := plan.ParseFile(data)
	if err != nil {
		return nil, 0, fmt.Errorf("--plan %s: %w", path, err)
	}
	return p, plan.FileDigest(data), nil
}

// resolveTiming applies the scenario's transport section where the flags left it open.
func (c *Config) resolveTiming(s *scenario.Scenario) error {
	if !c.ModeSet {
		c.Mode = wire.Lockstep
		if s.Transport.Mode == scenario.Realtime {
			c.Mode = wire.Realtime
		}
	}
	if c.Period == 0 {
		c.Period = s.Transport.Period
	}
	if c.Mode == wire.Realtime && c.Period <= 0 {
		return cli.UsageError("realtime mode needs a period: pass --period or set transport.period in the scenario")
	}
	return nil
}

// resolveSeed fills in the run seed of a plant or agents process with the one resolver:
// --seed, else the scenario's. A role never draws one (every process of a run must share the
// launcher's seed), so without either it is a usage error.
func (c *Config) resolveSeed(s *scenario.Scenario) error {
	if !c.SeedSet && s.Seed == 0 {
		return cli.UsageError("the scenario has no seed: pass --seed (the launcher passes the run's seed)")
	}
	c.Seed, _ = cli.ResolveSeed(c.Seed, c.SeedSet, s.Seed)
	return nil
}

// resolveFaultSeed fills in the fault seed: --fault-seed, else (plant, agents) derived from
// the run seed. A cloud or eavesdropper of a scenario with link faults needs it given.
func (c *Config) resolveFaultSeed(s *scenario.Scenario) error {
	switch {
	case c.FaultSeedSet:
	case c.Role.Private(): // the plant and the agents hold the run seed
		c.FaultSeed = sim.NewSeeds(c.Seed).Fault // a process started by hand: its run seed is decided here
	case s.Faults.Active():
		return cli.UsageError("the scenario has link faults: pass --fault-seed (the launcher passes the run's)")
	}
	return nil
}

func finite(v []float64) bool {
	for _, x := range v {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return false
		}
	}
	return true
}

func mkdirOut(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("--out %s: %w", dir, err)
	}
	return nil
}
