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

// Cost is the estimated resource use of a run (EstimateCost): what it needs before it starts,
// so that a run that would exhaust the machine is refused with its cost instead of failing
// hours later. The memory is an upper estimate (within ~2x of the measured peak for the
// shipped scenarios and for the stress cases of docs: 10^6 steps, 10^5-node rings, 10^4
// sweep points).
type Cost struct {
	Points int // sweep points
	Runs   int // episodes per point
	// MemoryBytes is the estimated peak memory of the run: the engine's per-episode buffers
	// (grow with steps x nodes x links, one set per worker), every point's metrics.Results (bounded per
	// point: MaxSeriesPoints per series, plus one entry per link) and summary.json built in
	// memory.
	MemoryBytes int64
	// SummaryBytes is the estimated size of summary.json.
	SummaryBytes int64
	// Seconds is the estimated CPU time of the fast engine (the NATS engine takes longer).
	Seconds float64
}

// The constants of the estimate, in bytes, measured on linux/amd64 (Go 1.26) and rounded up.
const (
	costBase        = 96 << 20 // the process, the report's figures
	costPerLinkStep = 17       // a receiver's digests of a sender's copies: 2 x 8 bytes a step, 1 bit seen
	costPerNode     = 10 << 10 // an agent's core, node, inputs, link counters
	costPerElemJSON = 170      // a Series element in summary.json: n, mean, se, ci_lo, ci_hi, step
	costPerLinkJSON = 330      // a fault.LinkStats in summary.json
	costPerPoint    = 96 << 10 // a point's plan, metadata and the rest of its summary entry
	costSecPerStep  = 4e-6     // CPU seconds per step of a cloud-control episode
	costSecPerLink  = 1.5e-6   // CPU seconds per message (link) and step of a consensus episode
	costSecPerPoint = 0.1      // CPU seconds per sweep point: its plan (sensitivity, calibration), its report entry
)

// pointCost is the estimate of one sweep point.
type pointCost struct {
	engine  int64 // per worker
	results int64 // metrics.Results in memory
	json    int64 // its metrics in summary.json
	seconds float64
}

// EstimateCost estimates the memory, summary.json size and CPU time of running the points
// (scenario.Expand) for runs episodes each on workers goroutines (<= 0: GOMAXPROCS) with
// agentsPerHost agents per consensus core (<= 1: one core per agent). It reads only the
// scenarios (no plan is built), so it is cheap even for 10^4 points.
func EstimateCost(points []*scenario.Scenario, runs, workers, agentsPerHost int) (Cost, error) {
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	workers = max(1, min(workers, runs))
	c := Cost{Points: len(points), Runs: runs, MemoryBytes: costBase}
	var engine int64
	graphs := map[string][2]int{} // graph spec -> nodes, edges (a sweep shares its graph)
	for _, pt := range points {
		pc, err := estimatePoint(pt, agentsPerHost, graphs)
		if err != nil {
			return Cost{}, err
		}
		engine = max(engine, pc.engine)
		c.MemoryBytes += pc.results + costPerPoint
		c.SummaryBytes += pc.json
		c.Seconds += pc.seconds*float64(runs) + costSecPerPoint
	}
	c.SummaryBytes *= 2 // summary.json holds every point's metrics twice: at the top and in points
	// summary.json is built in memory (its encoding, the buffer it grows in) while the
	// metrics.Results are alive.
	c.MemoryBytes += int64(workers)*engine + 2*c.SummaryBytes
	c.Seconds /= float64(workers)
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
			return pc, fmt.Errorf("sim: cost: scenario %s: no plant", s.Name)
		}
		nx, nu := int64(s.Plant.B.Rows()), int64(s.Plant.B.Cols())
		ny := int64(s.Plant.C.Rows())
		// the join (trace.ControlJoin): x, xhat, eve (nx each), yhat, u; 8 flags, a counter and
		// the list of roles down; 4 links
		perStep := 8*(3*nx+ny+nu) + 40 + 4*costPerLinkStep
		pc.engine = (T+1)*perStep + 64*kx*nx
		elems := (2*nx)*kx + ke
		pc.results, pc.json = 48*elems, costPerElemJSON*elems+4*costPerLinkJSON
		pc.seconds = float64(T) * costSecPerStep
	case scenario.Consensus:
		if s.Network == nil {
			return pc, fmt.Errorf("sim: cost: scenario %s: no graph", s.Name)
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
		elems := int64(len(metrics.TrackedAgents(n))+2)*kx + ke
		pc.results = 48*elems + 160*links
		pc.json = costPerElemJSON*elems + costPerLinkJSON*links
		pc.seconds = float64(T) * float64(links+N) * costSecPerLink
	default:
		return pc, fmt.Errorf("sim: cost: scenario %s: unknown kind %q", s.Name, s.Kind)
	}
	return pc, nil
}

// graphSize returns the nodes and (undirected) edges of the scenario's graph, built once per
// distinct graph spec.
func graphSize(s *scenario.Scenario, graphs map[string][2]int) (int, int, error) {
	key := fmt.Sprintf("%+v", *s.Network)
	if ne, ok := graphs[key]; ok {
		return ne[0], ne[1], nil
	}
	g, err := s.Graph()
	if err != nil {
		return 0, 0, fmt.Errorf("sim: cost: %w", err)
	}
	edges := 0
	for i := 0; i < g.N; i++ {
		edges += len(g.Neighbors(i))
	}
	graphs[key] = [2]int{g.N, edges / 2}
	return g.N, edges / 2, nil
}

// String is the estimate in words, e.g. "memory ~1.2 GiB, summary.json ~30 MiB, ~2 min CPU
// (3 points x 500 runs)".
func (c Cost) String() string {
	return fmt.Sprintf("memory ~%s, summary.json ~%s, ~%s of CPU (%d point(s) x %d run(s))",
		FormatBytes(c.MemoryBytes), FormatBytes(c.SummaryBytes), formatSeconds(c.Seconds), c.Points, c.Runs)
}

// CheckCost returns an error naming the estimate when its memory exceeds budget (<= 0:
// DefaultMemoryBudget) or its summary.json exceeds budget / SummaryShare; the caller refuses
// the run with it.
func CheckCost(c Cost, budget int64) error {
	if budget <= 0 {
		budget = DefaultMemoryBudget
	}
	var over string
	switch {
	case c.MemoryBytes > budget:
		over = "the memory budget " + FormatBytes(budget)
	case c.SummaryBytes > budget/SummaryShare:
		over = fmt.Sprintf("the summary.json bound %s (1/%d of the memory budget %s)", FormatBytes(budget/SummaryShare), SummaryShare, FormatBytes(budget))
	default:
		return nil
	}
	need := roundUpBudget(max(c.MemoryBytes, c.SummaryBytes*SummaryShare))
	return fmt.Errorf("estimated cost %s exceeds %s: fewer steps, nodes or sweep points "+
		"(or --agents-per-process for a large graph) make it smaller; to run it anyway, confirm with --budget %s",
		c, over, FormatBytes(need))
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
