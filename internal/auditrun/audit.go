package auditrun

import (
	"fmt"
	"slices"

	"github.com/rs/zerolog"

	"github.com/dpsim/dpsim/internal/cli"
	"github.com/dpsim/dpsim/pkg/audit"
	"github.com/dpsim/dpsim/pkg/engine"
	"github.com/dpsim/dpsim/pkg/plan"
	"github.com/dpsim/dpsim/pkg/report"
	"github.com/dpsim/dpsim/pkg/scenario"
)

// Audit is one audit in progress: the games of a scenario's points and the settings they share.
type Audit struct {
	Opts      *Options
	Name      string               // the scenario's name
	Points    []*scenario.Scenario // the sweep's points (one without a sweep)
	Games     []*audit.Game        // Games[k] audits Points[k]
	Seed      uint64
	Trials    int               // trials per secret bit and point
	Conf      float64           // joint confidence of the verdict over all points
	PointConf float64           // confidence of each point: 1 - (1 - Conf)/K (Bonferroni)
	GameOpts  audit.GameOptions // what every point's game was built with (a worker builds the same)
	Log       zerolog.Logger
	// Warnings are the scenario's and its points' plans' (what plan.New's dynamics checks
	// found), each once: the command shows them before it plays.
	Warnings []string
}

// Load checks and loads the scenario of o and resolves the run seed: the flag's, else the
// scenario's, else one drawn from crypto/rand (logged; the outputs report it).
func Load(o *Options, log zerolog.Logger) (*scenario.Scenario, uint64, error) {
	if err := cli.CheckScenarioFile(o.ScenarioPath); err != nil {
		return nil, 0, err
	}
	s, err := scenario.Load(o.ScenarioPath)
	if err != nil {
		return nil, 0, err
	}
	seed, seedSource := cli.ResolveSeed(o.Seed, o.SeedSet, s.Seed)
	if seedSource == cli.SeedFromCrypto {
		log.Info().Uint64("seed", seed).Msg("no seed given: drew one (reported in the output)")
	}
	return s, seed, nil
}

// CheckCost refuses an audit whose estimated memory exceeds --budget, or its audit.json 1/16
// of it (engine.EstimateAuditCost, engine.CheckCost: the table dpsim run's estimate uses), before
// any plan, game or process is made: a game of 10^5 agents would allocate dense N x N matrices
// (80 GB each) and a cloud-control game of 10^7 steps its T x n observability matrices.
func CheckCost(o *Options, s *scenario.Scenario) error {
	spec := s.Audit
	if spec == nil {
		spec = &scenario.AuditSpec{}
	}
	trials, _ := EffectiveTrials(o, spec)
	points, k := s.Expand(), o.EpisodesPerTrial
	if o.OneRun {
		trials = 1 // one episode; the estimate counts its game as the trials' game
	}
	if len(o.EpisodesSweep) > 0 {
		k = slices.Max(o.EpisodesSweep)
		points = slices.Repeat(points, len(o.EpisodesSweep)) // every K is a point of its own
	}
	scores := 2 // projection, llr
	if o.Precision {
		scores++
	}
	if o.Sequential {
		// the sequential test keeps its own copy of every pair's scores in order and one sorted,
		// and the monitor the trials it weighed: three more copies of the scores
		scores *= 4
	}
	c, err := engine.EstimateAuditCost(points, engine.AuditCostOptions{Trials: trials, EpisodesPerTrial: k,
		Scores: scores, Workers: o.Workers, Wire: o.Engine == audit.EngineWire, OneRun: o.OneRun})
	if err != nil {
		return err
	}
	return engine.CheckCost(c, o.Budget)
}

// New resolves the trials, adjacency and confidence (flags first, then the scenario's audit
// section, then the defaults) and builds the game of every point of s.
func New(o *Options, s *scenario.Scenario, seed uint64, log zerolog.Logger) (*Audit, error) {
	spec := s.Audit
	if spec == nil {
		spec = &scenario.AuditSpec{}
	}
	trials, capped := EffectiveTrials(o, spec)
	adj := o.Adjacency
	if adj == "" {
		adj = spec.Adjacency
	}
	conf := o.Confidence
	if conf == 0 {
		conf = spec.Confidence
	}
	if conf == 0 {
		conf = 0.95
	}
	points := s.Expand()
	gameOpts := audit.GameOptions{Adjacency: adj, Pair: spec.Pair, EpisodesPerTrial: o.EpisodesPerTrial, NoPrecision: !o.Precision}
	var games []*audit.Game
	var err error
	if len(o.EpisodesSweep) > 0 {
		points, games, err = episodeSweep(points, gameOpts, o.EpisodesSweep)
	} else {
		games, err = newGames(points, gameOpts)
	}
	if err != nil {
		return nil, err
	}
	for k, g := range games {
		if err := o.Roles.Check(g.Plan, 1); err != nil { // the wire engine runs one agent per process
			return nil, cli.UsageError("%v", PointErr(len(points), k, points[k], err))
		}
	}
	if capped {
		// The wire engine plays every episode through real processes (~50 episodes/s here): a
		// scenario's fast-engine count would take hours. Only an explicit --trials goes higher.
		log.Warn().Int("trials", trials).Msg("wire engine: default trial count capped; pass --trials to play more")
	}
	warnings := s.Warnings
	for _, g := range games {
		warnings = report.MergePlanWarnings(warnings, g.Plan)
	}
	return &Audit{
		Opts: o, Name: s.Name, Points: points, Games: games, Warnings: warnings, GameOpts: gameOpts, Seed: seed, Trials: trials, Conf: conf,
		// Every point is one more chance of a false violation: a sweep's points are analysed at
		// 1 - (1 - conf)/K each (Bonferroni), so its overall verdict holds at the stated conf.
		PointConf: 1 - (1-conf)/float64(len(points)),
		Log:       log,
	}, nil
}

// newGames plans every point and builds its audit game; an error names the point.
func newGames(points []*scenario.Scenario, opts audit.GameOptions) ([]*audit.Game, error) {
	games := make([]*audit.Game, len(points))
	for k, pt := range points {
		p, err := plan.New(pt, plan.Options{})
		if err != nil {
			return nil, PointErr(len(points), k, pt, err)
		}
		if games[k], err = audit.NewGame(p, opts); err != nil {
			return nil, PointErr(len(points), k, pt, err)
		}
	}
	return games, nil
}

// episodeSweep returns the points and games of --episodes-per-trial-sweep: the scenario's one
// point once per k, named NAME@k=K, each game playing k episodes per trial.
func episodeSweep(points []*scenario.Scenario, opts audit.GameOptions, ks []int) ([]*scenario.Scenario, []*audit.Game, error) {
	if len(points) != 1 {
		return nil, nil, cli.UsageError("--episodes-per-trial-sweep: the scenario %s already sweeps %d points; give a scenario without a sweep", points[0].Name, len(points))
	}
	var pts []*scenario.Scenario
	var games []*audit.Game
	for _, k := range ks {
		pt := *points[0]
		pt.Name = fmt.Sprintf("%s@k=%d", points[0].Name, k)
		o := opts
		o.EpisodesPerTrial = k
		g, err := newGames([]*scenario.Scenario{&pt}, o)
		if err != nil {
			return nil, nil, err
		}
		pts, games = append(pts, &pt), append(games, g[0])
	}
	return pts, games, nil
}

// ReportOptions are the options of every analysis of a point: the audit's result and the live
// view's bounds of the trials so far are the same function of the trials.
func (a *Audit) ReportOptions() audit.ReportOptions {
	return audit.ReportOptions{Confidence: a.PointConf, Selection: a.Opts.Selection}
}

// PointErr names sweep point k of n (of scenario pt) in err; a single point's error is left as is.
func PointErr(n, k int, pt *scenario.Scenario, err error) error {
	if n > 1 {
		return fmt.Errorf("sweep point %d (%s): %w", k, pt.Name, err)
	}
	return err
}

// Suffix is the file-name suffix of point k of n: "" for a single point, else -pNN.
func Suffix(n, k int) string {
	if n == 1 {
		return ""
	}
	return fmt.Sprintf("-p%02d", k)
}
