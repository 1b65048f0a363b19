package engine

import (
	"fmt"
	"math"
	"runtime"
	"strconv"
	"strings"

	"github.com/dpsim/dpsim/pkg/metrics"
	"github.com/dpsim/dpsim/pkg/scenario"
)

// DefaultMemoryBudget is the memory a run may be estimated to need before `dpsim run` refuses
// it (its --budget raises the bound): 2 GiB.
const DefaultMemoryBudget = 2 << 30

// SummaryShare is the share of the memory budget summary.json may be estimated to take: 1/16
// (128 MiB at the default budget). The file is read whole by its readers (the report, jq, a
// notebook), so an entry per link of a 10^5-node graph is refused unless confirmed.
const SummaryShare = 16

// Cost is the estimated resource use of a run (EstimateCost) or an audit (EstimateAuditCost):
// what it needs before it starts, so that a run that would exhaust the machine is refused with
// its cost instead of failing hours later. The memory is an upper estimate of the peak RSS
// (within ~2.5x of the measured peak for the shipped scenarios and for the stress cases of docs:
// 10^6 steps with a traced episode, 10^5-node rings, 10^4 sweep points, 10^6 audit trials).
type Cost struct {
	Points int // sweep points
	Runs   int // episodes per point (an audit: 2 x trials x episodes per trial)
	// MemoryBytes is the estimated peak memory: the process, the engine's per-episode buffers
	// (grow with steps x nodes x links, one set per worker), the traced episodes' records (the
	// fast engine holds an episode's records whole until it ends), every point's
	// metrics.Results and summary.json built in memory; an audit's game (its matrices) and its
	// trials' scores.
	MemoryBytes int64
	// SummaryBytes is the estimated size of summary.json (an audit: audit.json).
	SummaryBytes int64
	// Seconds is the estimated CPU time of the fast engine (the NATS engine takes longer).
	Seconds float64
	// audit: the estimate is of dpsim audit (its output file and advice differ).
	audit bool
}

// The constants of the estimates, in bytes, measured on linux/amd64 (Go 1.26) and rounded up:
// the one table of what costs what, for both dpsim run (EstimateCost) and dpsim audit
// (EstimateAuditCost).
const (
	costBase        = 96 << 20 // the process, the report's figures
	costPerLinkStep = 17       // a receiver's digests of a sender's copies: 2 x 8 bytes a step, 1 bit seen
	costPerNode     = 10 << 10 // an agent's core, node, inputs, link counters
	costPerElemJSON = 170      // a Series element in summary.json: n, mean, se, ci_lo, ci_hi, step
	costPerLinkJSON = 330      // a fault.LinkStats in summary.json
	costPerPoint    = 96 << 10 // a point's plan, metadata and the rest of its summary entry
	// A traced episode's records (trace.Traces, engine records.put): per step one record (its
	// struct, ControlRecord 192 bytes, ConsensusRecord 128) and its slices (each rounded up to
	// 16 bytes), times costRecordPeak: the slice of records grows by append (the old array and
	// the new one are alive during the copy) and the collector lets the heap reach twice what
	// is live (GOGC=100). Measured: the vehicle at 10^6 steps peaks at 840 bytes a step above
	// the run without a trace, 3.1 x its 272 bytes of records.
	costControlRecord   = 192
	costConsensusRecord = 128
	costRecordPeak      = 4
	// The audit's game and players (pkg/audit NewGame, newTrialPlayer), cloud control: the
	// observability matrices O_T of the plant and the private model, the least-squares map P,
	// the sensitivity and each player's estimator, built transiently while the game is set up:
	// 128 bytes a step per state and output (measured: 187 bytes a step above the process for
	// the vehicle, nx + ny = 3, at 10^6 steps).
	costAuditPerStepDim = 128
	// Each fast-engine worker of an audit plays AuditBatchWidth episodes at once (audit.AuditBatch,
	// engine.NewBatchPlayer) beside a one-episode player: each eavesdropper's estimator keeps the
	// inputs u(t) of its episode (8 nu bytes a step) and each player's cores their inputs' digests
	// (costPerLinkStep a step per link).
	AuditBatchWidth = 64
	// AuditChunk is the consecutive trials a fast-engine worker of an audit takes at a time
	// (audit's fastChunk): fewer trials keep fewer workers busy.
	AuditChunk = 1024
	// Consensus: the estimate's noise map M, its covariance M M', the Gaussian scorer's
	// eigen-decomposition and the Laplace pseudo-inverse are dense N x N: 4 of them at a time
	// (measured: 26 bytes x N^2 for rings of 1000 and 2000 agents).
	costAuditDenseN2 = 4 * 8
	// An audit trial's scores (audit.Trials: 8 bytes and a split tag per score) and what the
	// analysis copies of them (the halves, sorted and merged): per trial and score (measured:
	// 125 bytes a trial with 3 scores at 6 x 10^5 trials).
	costPerTrialScore = 64
	// An audit trial's number (audit.Outcome: 8 bytes a trial, whatever its scores), which
	// --write-scores exports beside the scores.
	costPerTrialNumber = 8
	costAuditJSONDim   = 80     // audit.json: x0, x0prime, dx (and z) per state value or agent
	costSecPerStep     = 4e-6   // CPU seconds per step of a cloud-control episode
	costSecPerLink     = 1.5e-6 // CPU seconds per message (link) and step of a consensus episode
	costSecPerPoint    = 0.1    // CPU seconds per sweep point: its plan (sensitivity, calibration), its report entry
	costSecDenseN3     = 2e-9   // CPU seconds per N^3 of an audit's consensus game (its eigen-decomposition)
	costSecAuditStep   = 5e-7   // CPU seconds per step of an audit's cloud-control episode (the batch player)
)

// CostOptions say how the points of a run are played (EstimateCost).
type CostOptions struct {
	Runs int // episodes per point
	// Workers is the goroutines playing episodes at once (<= 0: GOMAXPROCS); the NATS
	// launcher's processes hold one set of buffers: 1.
	Workers int
	// AgentsPerBlock is the agents per consensus core (<= 1: one core per agent).
	AgentsPerBlock int
	// Traced is the episodes whose records are kept in memory whole until the episode ends:
	// the fast engine's traced episodes (--trace-episodes; -1: every one). The NATS launcher
	// streams the processes' traces to the file: 0.
	Traced int
}

// pointCost is the estimate of one sweep point.
type pointCost struct {
	engine  int64 // per worker
	records int64 // one traced episode's records
	results int64 // metrics.Results in memory
	json    int64 // its metrics in summary.json
	seconds float64
	// the point's shape, for the audit's estimate
	dim, nodes, links, stepDims, inputs, steps int64
}

// EstimateCost estimates the memory, summary.json size and CPU time of running the points
// (scenario.Expand) as o says. It reads only the scenarios (no plan is built), so it is cheap
// even for 10^4 points.
func EstimateCost(points []*scenario.Scenario, o CostOptions) (Cost, error) {
	runs, workers := o.Runs, o.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	workers = max(1, min(workers, runs))
	// the traced episodes held at once: one per worker in progress, and as many finished out
	// of order waiting for an earlier one to reach the sink
	held := int64(0)
	if o.Traced != 0 {
		held = int64(min(runs, 2*workers))
		if o.Traced > 0 {
			held = min(held, int64(o.Traced))
		}
	}
	c := Cost{Points: len(points), Runs: runs, MemoryBytes: costBase}
	var engine int64
	graphs := map[string][2]int{} // graph spec -> nodes, edges (a sweep shares its graph)
	for _, pt := range points {
		pc, err := estimatePoint(pt, o.AgentsPerBlock, graphs)
		if err != nil {
			return Cost{}, err
		}
		engine = max(engine, int64(workers)*pc.engine+held*pc.records)
		c.MemoryBytes += pc.results + costPerPoint
		c.SummaryBytes += pc.json
		c.Seconds += pc.seconds*float64(runs) + costSecPerPoint
	}
	c.SummaryBytes *= 2 // summary.json holds every point's metrics twice: at the top and in points
	// summary.json is built in memory (its encoding, the buffer it grows in) while the
	// metrics.Results are alive.
	c.MemoryBytes += engine + 2*c.SummaryBytes
	c.Seconds /= float64(workers)
	return c, nil
}

// AuditCostOptions say how the points of an audit are played (EstimateAuditCost).
type AuditCostOptions struct {
	Trials           int // trials per value of the secret bit
	EpisodesPerTrial int // episodes each trial plays (<= 1: one)
	// Scores is the scores kept per trial (projection, llr, precision: <= 0 counts 3).
	Scores int
	// Workers is the fast engine's goroutines (<= 0: GOMAXPROCS).
	Workers int
	// Wire: the wire engine (its launcher holds the game and the trials; the role processes
	// one set of an episode's buffers, as dpsim run's NATS engine).
	Wire bool
	// OneRun: dpsim audit --one-run (one episode; of the game only the estimate's noise map
	// is built: one dense N x N matrix for consensus).
	OneRun bool
}

// EstimateAuditCost estimates the memory, audit.json size and CPU time of auditing the points
// (scenario.Expand) as o says, from the same table as EstimateCost: the game of each point (its
// matrices: for consensus dense N x N, for cloud control a few T x (nx + ny)), its players (one
// per worker), the trials' scores and their analysis. Like EstimateCost it builds no plan.
func EstimateAuditCost(points []*scenario.Scenario, o AuditCostOptions) (Cost, error) {
	k := int64(max(1, o.EpisodesPerTrial))
	scores := int64(o.Scores)
	if scores <= 0 {
		scores = 3
	}
	trials := 2 * int64(o.Trials) // both values of the secret bit
	workers := int64(o.Workers)
	if workers <= 0 {
		workers = int64(runtime.GOMAXPROCS(0))
	}
	if o.Wire {
		workers = 1
	}
	workers = max(1, min(workers, (trials+AuditChunk-1)/AuditChunk))
	c := Cost{Points: len(points), Runs: int(min(trials*k, math.MaxInt32)), MemoryBytes: costBase, audit: true}
	var peak int64 // the points are played in turn; each game is kept for the report
	graphs := map[string][2]int{}
	for _, pt := range points {
		pc, err := estimatePoint(pt, 1, graphs)
		if err != nil {
			return Cost{}, err
		}
		var game, player int64
		var secs float64
		if pt.Kind == scenario.Consensus {
			// the game's dense N x N matrices; a player's cores (records off: no per-step join)
			game = costAuditDenseN2 * pc.nodes * pc.nodes
			if o.OneRun {
				game = 8 * pc.nodes * pc.nodes
			}
			player = costPerNode*pc.nodes + 32*pc.links + costPerLinkStep*pc.links*pc.steps
			secs = costSecDenseN3 * float64(pc.nodes) * float64(pc.nodes) * float64(pc.nodes)
		} else {
			// the game's setup, a few T x (nx + ny) matrices at a time; a worker's players
			// (records off): the batch's and the single player's estimators and inputs
			game = costAuditPerStepDim * pc.stepDims
			player = (AuditBatchWidth+1)*8*pc.inputs*pc.steps + 2*4*costPerLinkStep*pc.steps
		}
		if o.Wire {
			player = pc.engine // a role process's buffers of one episode, as dpsim run's NATS engine
		}
		trialMem := trials * (scores*costPerTrialScore + costPerTrialNumber)
		peak = max(peak, game+workers*player+trialMem)
		c.MemoryBytes += costPerPoint + trials*(scores*9+costPerTrialNumber) // a played point keeps its trials
		c.SummaryBytes += costAuditJSONDim*pc.dim + costPerPoint
		perEpisode := pc.seconds
		if pt.Kind == scenario.CloudControl && k == 1 && !o.Wire {
			perEpisode = float64(pc.steps) * costSecAuditStep
		}
		c.Seconds += perEpisode*float64(trials*k)/float64(workers) + secs + costSecPerPoint
	}
	c.MemoryBytes += peak + 2*c.SummaryBytes
	return c, nil
}

// estimatePoint estimates one point: see the constants and newAssembler / newInputs for what
// grows per step.
func estimatePoint(s *scenario.Scenario, agentsPerHost int, graphs map[string][2]int) (pointCost, error) {
	T := int64(s.Steps)
	kx, ke := int64(metrics.SeriesPoints(s.Steps+1)), int64(metrics.SeriesPoints(s.Steps))
	var pc pointCost
	switch s.Kind {
	case scenario.CloudControl:
		if s.Plant == nil {
			return pc, fmt.Errorf("engine: cost: scenario %s: no plant", s.Name)
		}
		nx, nu := int64(s.Plant.B.Rows()), int64(s.Plant.B.Cols())
		ny := int64(s.Plant.C.Rows())
		// the join (trace.ControlJoin): x, xhat, eve (nx each), yhat, u; 8 flags, a counter and
		// the list of roles down; 4 links
		perStep := 8*(3*nx+ny+nu) + 40 + 4*costPerLinkStep
		pc.engine = (T+1)*perStep + 64*kx*nx
		// a record: x, ref, xhat, eve_x0 (nx each), yhat, u
		pc.records = (T + 1) * costRecordPeak * (costControlRecord + 4*slot(nx) + slot(ny) + slot(nu))
		elems := (2*nx)*kx + ke
		pc.results, pc.json = 48*elems, costPerElemJSON*elems+4*costPerLinkJSON
		pc.seconds = float64(T) * costSecPerStep
		pc.dim, pc.stepDims, pc.inputs, pc.steps = nx, (T+1)*(nx+ny), nu, T+1
	case scenario.Consensus:
		if s.Network == nil {
			return pc, fmt.Errorf("engine: cost: scenario %s: no graph", s.Name)
		}
		n, e, err := graphSize(s, graphs)
		if err != nil {
			return pc, err
		}
		N, E := int64(n), int64(e)
		links := 2*E + N // every agent hears its neighbours; the eavesdropper hears every agent
		if agentsPerHost > 1 && !s.Faults.Active() && len(s.Faults.Crashes) == 0 {
			h := (N + int64(agentsPerHost) - 1) / int64(agentsPerHost)
			links = min(links, h*h+h)
		}
		// the join (trace.ConsensusJoin): a slot per step of x, y, eve (N each) and 3 flags per
		// agent; receivers' digests per link
		perStep := 27*N + 160 + links*costPerLinkStep
		pc.engine = (T+1)*perStep + costPerNode*N + 32*links
		// a record: x, y, eve_x0 (N each)
		pc.records = (T + 1) * costRecordPeak * (costConsensusRecord + 3*slot(N))
		elems := int64(len(metrics.TrackedAgents(n))+2)*kx + ke
		pc.results = 48*elems + 160*links
		pc.json = costPerElemJSON*elems + costPerLinkJSON*links
		pc.seconds = float64(T) * float64(links+N) * costSecPerLink
		pc.dim, pc.nodes, pc.links, pc.steps = N, N, links, T+1
	default:
		return pc, fmt.Errorf("engine: cost: scenario %s: unknown kind %q", s.Name, s.Kind)
	}
	return pc, nil
}

// slot is the heap size of a slice of n float64: at least 16 bytes, rounded up to 16.
func slot(n int64) int64 { return max(16, (8*n+15)/16*16) }

// graphSize returns the nodes and (undirected) edges of the scenario's graph, built once per
// distinct graph spec.
func graphSize(s *scenario.Scenario, graphs map[string][2]int) (int, int, error) {
	key := fmt.Sprintf("%+v", *s.Network)
	if ne, ok := graphs[key]; ok {
		return ne[0], ne[1], nil
	}
	g, err := s.Graph()
	if err != nil {
		return 0, 0, fmt.Errorf("engine: cost: %w", err)
	}
	edges := 0
	for i := 0; i < g.N; i++ {
		edges += len(g.Neighbors(i))
	}
	graphs[key] = [2]int{g.N, edges / 2}
	return g.N, edges / 2, nil
}

// String is the estimate in words, e.g. "memory ~1.2 GiB, summary.json ~30 MiB, ~2 min CPU
// (3 points x 500 runs)"; an audit's names audit.json and its episodes.
func (c Cost) String() string {
	out, runs := "summary.json", "run(s)"
	if c.audit {
		out, runs = "audit.json", "episode(s)"
	}
	return fmt.Sprintf("memory ~%s, %s ~%s, ~%s of CPU (%d point(s) x %d %s)",
		FormatBytes(c.MemoryBytes), out, FormatBytes(c.SummaryBytes), formatSeconds(c.Seconds), c.Points, c.Runs, runs)
}

// CheckCost returns an error naming the estimate when its memory exceeds budget (<= 0:
// DefaultMemoryBudget) or its summary.json (audit.json) exceeds budget / SummaryShare; the
// caller (dpsim run, dpsim audit) refuses the run with it.
func CheckCost(c Cost, budget int64) error {
	if budget <= 0 {
		budget = DefaultMemoryBudget
	}
	out, advice := "summary.json", "fewer steps, nodes or sweep points (or --agents-per-process for a large graph) make it smaller"
	if c.audit {
		out, advice = "audit.json", "fewer steps, nodes, trials or sweep points make it smaller"
	}
	var over string
	switch {
	case c.MemoryBytes > budget:
		over = "the memory budget " + FormatBytes(budget)
	case c.SummaryBytes > budget/SummaryShare:
		over = fmt.Sprintf("the %s bound %s (1/%d of the memory budget %s)", out, FormatBytes(budget/SummaryShare), SummaryShare, FormatBytes(budget))
	default:
		return nil
	}
	need := roundUpBudget(max(c.MemoryBytes, c.SummaryBytes*SummaryShare))
	return fmt.Errorf("estimated cost %s exceeds %s: %s; to run it anyway, confirm with --budget %s",
		c, over, advice, FormatBytes(need))
}

// roundUpBudget rounds b up to the next 256 MiB, a value the user can type.
func roundUpBudget(b int64) int64 {
	const q = 256 << 20
	return (b + q - 1) / q * q
}

// FormatBytes writes b with a binary unit and one decimal: 512 B, 1.5 KiB, 20 MiB, 1.2 GiB.
func FormatBytes(b int64) string {
	units := []string{"B", "KiB", "MiB", "GiB", "TiB"}
	v, k := float64(b), 0
	for v >= 1024 && k < len(units)-1 {
		v /= 1024
		k++
	}
	if k == 0 {
		return fmt.Sprintf("%d B", b)
	}
	return strings.TrimSuffix(strconv.FormatFloat(v, 'f', 1, 64), ".0") + " " + units[k]
}

func formatSeconds(s float64) string {
	switch {
	case s < 60:
		return fmt.Sprintf("%.0f s", math.Ceil(s))
	case s < 3600:
		return fmt.Sprintf("%.0f min", math.Ceil(s/60))
	default:
		return fmt.Sprintf("%.1f h", s/3600)
	}
}

// ParseBytes reads a size: a number of bytes (2147483648, 2e9) or a number with a unit B, KB,
// MB, GB, TB (powers of 1000) or KiB, MiB, GiB, TiB (powers of 1024), e.g. 4GiB, 1.5 GB.
func ParseBytes(s string) (int64, error) {
	t := strings.TrimSpace(s)
	mult := 1.0
	units := []struct {
		suffix string
		mult   float64
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"TiB", 1 << 40},
		{"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"TB", 1e12}, {"B", 1}}
	for _, u := range units {
		if strings.HasSuffix(strings.ToUpper(t), strings.ToUpper(u.suffix)) && (u.suffix != "B" || !strings.HasSuffix(strings.ToUpper(t), "IB")) {
			t, mult = strings.TrimSpace(t[:len(t)-len(u.suffix)]), u.mult
			break
		}
	}
	v, err := strconv.ParseFloat(t, 64)
	if err != nil || math.IsNaN(v) || v < 0 || v*mult > math.MaxInt64/2 {
		return 0, fmt.Errorf("size %q: want a number of bytes >= 0, optionally with a unit (512MiB, 4GiB, 2GB)", s)
	}
	return int64(math.Ceil(v * mult)), nil
}
