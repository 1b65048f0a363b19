package auditrun

import (
	"strings"
	"time"

	"github.com/dpsim/dpsim/internal/launch"
	"github.com/dpsim/dpsim/pkg/audit"
	"github.com/dpsim/dpsim/pkg/privacy"
	"github.com/dpsim/dpsim/pkg/scenario"
)

// DefaultWireTrials caps the default trial count of the wire engine (an explicit --trials is used as given).
const DefaultWireTrials = 1000

// DefaultTrials is the number of trials per value of the secret bit when neither --trials nor the
// scenario's audit.trials is given.
const DefaultTrials = 100_000

// ErrViolation is returned (wrapped) with --fail-on-violation when the verdict is violation.
var ErrViolation = &ViolationError{}

// ViolationError reports a violation verdict under --fail-on-violation; its exit code is 3.
type ViolationError struct{ Points []string }

func (e *ViolationError) Error() string {
	if len(e.Points) == 0 {
		return "privacy violation detected"
	}
	return "privacy violation detected: " + strings.Join(e.Points, ", ")
}

// Is makes errors.Is(err, ErrViolation) true for every ViolationError.
func (e *ViolationError) Is(target error) bool { _, ok := target.(*ViolationError); return ok }

// ExitCode is the process exit status dpsim should use: 3.
func (e *ViolationError) ExitCode() int { return 3 }

// Options are the settings of an audit: the flags of `dpsim audit` (internal/cmd/audit parses
// them), read by the point loop, the players and the outputs.
type Options struct {
	ScenarioPath    string
	Engine          string
	Trials          int // 0 = the scenario's audit.trials, else DefaultTrials
	Adjacency       privacy.Adjacency
	Confidence      float64 // 0 = the scenario's, else 0.95
	Seed            uint64
	SeedSet         bool
	Out             string
	JSON            bool
	Workers         int
	NATSURL         string
	FailOnViolation bool
	Selection       audit.Selection
	Timeout         time.Duration
	Encoding        string // wire engine: data message encoding (binary or json)
	LogLevel        string
	Progress        bool
	// Exe is the dpsim binary the wire engine spawns (default os.Executable()).
	Exe string
	// Roles are --role: the users' programs that play roles in place of dpsim's own in the
	// wire engine (launch.Programs, as dpsim run --role).
	Roles launch.Programs
	// Inflight is --inflight: the wire engine's trials kept in flight at once.
	Inflight int
	// KeepSecrets is --keep-secrets: the wire engine keeps the files holding secrets in
	// OUT/procs (else removed when the audit ends).
	KeepSecrets bool
	// ShareOutputs is --share-outputs: audit.json, report.md and the processes' traces 0644
	// (else 0600, OUT/procs 0700; launch.SecretOutputs).
	ShareOutputs bool
	// Farm is --dispatch, --spawn-workers, --worker-listen: the fast engine's trials played by
	// `dpsim worker` processes (internal/farm).
	Farm FarmFlags
	// EpisodesPerTrial is --episodes-per-trial (1: one episode per trial); EpisodesSweep is
	// --episodes-per-trial-sweep, one audit per value (nil: none).
	EpisodesPerTrial int
	EpisodesSweep    []int
	// OneRun is --one-run: one episode whose agents are the canaries; Guesses is
	// --guesses, the guesses per side (0: audit.OneRunGuesses' rule).
	OneRun  bool
	Guesses int
	// UI is --ui: the live view's address ("": none; live.DefaultAddr for --ui alone), and
	// UIHold --ui-hold: how long it stays up after the audit.
	UI     string
	UIHold time.Duration
	// UIPublic is --ui-public: the opt-in to a --ui address other than loopback.
	UIPublic bool
	// Precision is --precision (default true): the precision score, which reads the bits of the
	// published float64 values (docs/math.md section 6.3).
	Precision bool
	// Budget is --budget: the memory the audit may be estimated to need (bytes; 0:
	// engine.DefaultMemoryBudget); an audit estimated above it is refused with its estimate
	// (engine.EstimateAuditCost), before any plan or game is built.
	Budget int64
	// WriteScores is --write-scores FILE: every point's trials (secret bit and scores) written to
	// FILE, FILE-pNN.EXT for point NN of a sweep ("": none).
	WriteScores string
	// Parquet is --parquet: every point's trials also written to OUT/scores.parquet
	// (OUT/scores-pNN.parquet for point NN of a sweep), as --write-scores writes a .parquet file.
	Parquet bool
	// Sequential is --sequential: play until the anytime-valid test decides (a violation, or
	// with Target a lower bound >= Target eps), at most Trials per side (audit.Sequential).
	Sequential bool
	Target     float64
	// Scores is --scores FILE with its claim (--epsilon, --delta, --mechanism): the trials of the
	// file analysed instead of a scenario's game (Scores.Path "": none).
	Scores ScoresOptions
	// Shard is --shard I/N: play slice I of N of the trials and write them into --out, a part
	// that dpsim merge folds with the others (shard.go; zero: the whole audit).
	Shard Shard
}

// EffectiveTrials resolves the trials per secret bit: --trials, else the scenario's
// audit.trials, else DefaultTrials - capped at DefaultWireTrials for the wire engine unless
// --trials asked for more (capped reports that).
func EffectiveTrials(o *Options, spec *scenario.AuditSpec) (trials int, capped bool) {
	trials = o.Trials
	if trials == 0 {
		trials = spec.Trials
	}
	if trials == 0 {
		trials = DefaultTrials
	}
	if o.Trials == 0 && o.Engine == audit.EngineWire && trials > DefaultWireTrials {
		return DefaultWireTrials, true
	}
	return trials, false
}
