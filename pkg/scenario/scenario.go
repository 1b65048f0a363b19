package scenario

import (
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"gonum.org/v1/gonum/mat"

	"github.com/dpsim/dpsim/pkg/dynamics"
	"github.com/dpsim/dpsim/pkg/noise"
	"github.com/dpsim/dpsim/pkg/privacy"
)

// MaxFileSize bounds the scenario files Load and Parse accept: 1 MiB, which holds an x0 or an
// edge list of about 10^5 entries. Decoding YAML takes about 60 times the file's size in
// memory (a 14.9 MB file took 1.5 GB), so a larger file is refused before it is read.
const MaxFileSize = 1 << 20

// Bounds on the sizes a scenario may ask for.
const (
	MaxSteps = 10_000_000
	MaxRuns  = 1_000_000_000
	MaxNodes = 100_000
	MaxEdges = 1_000_000
	// RateCheckNodes is the largest graph whose consensus rate alpha is computed from the
	// Laplacian's whole spectrum (dense, O(n^3)): dynamics.MaxDenseRateNodes. Parse computes
	// no rate; plan.New checks every graph's, above this size with the sparse rate (Lanczos)
	// or, when every weight sum is below 1, the Gershgorin bound (dynamics.Graph.Validate).
	RateCheckNodes = dynamics.MaxDenseRateNodes
)

// Kind is the kind of system a scenario simulates.
type Kind string

const (
	// CloudControl is the cloud-based observer controller of Section 5 (eq. 24).
	CloudControl Kind = "cloud-control"
	// Consensus is the private average consensus of Section 6 (eq. 25).
	Consensus Kind = "consensus"
)

// ParseKind accepts "cloud-control" or "consensus".
func ParseKind(s string) (Kind, error) {
	for _, k := range Kinds {
		if string(k) == s {
			return k, nil
		}
	}
	return "", fmt.Errorf("unknown kind %q (allowed: %s)", s, joinNames(Kinds))
}

// Matrix is a dense matrix as a list of rows, all of the same length.
type Matrix [][]float64

// Rows returns the number of rows.
func (m Matrix) Rows() int { return len(m) }

// Cols returns the number of columns (0 for an empty matrix).
func (m Matrix) Cols() int {
	if len(m) == 0 {
		return 0
	}
	return len(m[0])
}

// Dense returns a fresh gonum copy of m, or nil when m is empty.
func (m Matrix) Dense() *mat.Dense {
	r, c := m.Rows(), m.Cols()
	if r == 0 || c == 0 {
		return nil
	}
	d := mat.NewDense(r, c, nil)
	for i, row := range m {
		d.SetRow(i, row)
	}
	return d
}

func (m Matrix) clone() Matrix {
	if m == nil {
		return nil
	}
	out := make(Matrix, len(m))
	for i, row := range m {
		out[i] = slices.Clone(row)
	}
	return out
}

func (m Matrix) dims() string { return fmt.Sprintf("%dx%d", m.Rows(), m.Cols()) }

// Scenario is a validated scenario file with every default filled in.
type Scenario struct {
	Source      string `json:"source,omitempty"` // the path (or label) it was read from
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	Kind        Kind   `json:"kind"`
	Steps       int    `json:"steps"` // T, the horizon of one run (>= 1)
	// Runs is the number of Monte Carlo episodes (>= 1): the scenario file's key episodes (or
	// its old name runs). The Go field and its JSON name keep the old name.
	Runs int    `json:"runs"`
	Seed uint64 `json:"seed"` // run seed; 0 = not fixed in the file (see cli.ResolveSeed)

	Plant      *PlantSpec      `json:"plant,omitempty"`      // cloud-control only
	Controller *ControllerSpec `json:"controller,omitempty"` // cloud-control only
	Network    *GraphSpec      `json:"graph,omitempty"`      // consensus only (the file's "graph")
	X0         []float64       `json:"x0,omitempty"`         // consensus only: the agents' initial states, len = Network.N

	Privacy   PrivacySpec   `json:"privacy"`
	Transport TransportSpec `json:"transport"`
	// Faults is the faults: section: missing-input rules and per-link faults (zero value: no
	// link faults, default rules).
	Faults FaultsSpec `json:"faults"`
	// Audit holds the defaults of `dpsim audit` (the file's "audit"); nil when absent.
	Audit *AuditSpec `json:"audit,omitempty"`

	// Sweeps are the swept parameters (outer first); nil when the scenario does not sweep.
	Sweeps []Sweep `json:"sweeps,omitempty"`
	// Point records, on a scenario produced by Expand, the sweep values it was built from.
	Point []SweepPoint `json:"point,omitempty"`

	// Warnings are things in the file that are allowed but suspicious (an old key name,
	// more episodes than the whole-run budget covers); commands should show them. What the dynamics make suspicious (an
	// unstable closed loop, a graph node whose weights sum to 1 or more) is found by
	// plan.New: Plan.Warnings.
	Warnings []string `json:"warnings,omitempty"`

	// lines is the line of the fields the dynamics checks of plan.New name (Line), in the
	// file Parse read. Not serialized.
	lines map[string]int
}

// PlantSpec is the LTI plant x(t+1) = A x + B u, y = C x (eq. 23).
type PlantSpec struct {
	A  Matrix    `json:"a"`            // nx x nx
	B  Matrix    `json:"b"`            // nx x nu
	C  Matrix    `json:"c"`            // ny x nx
	X0 []float64 `json:"x0,omitempty"` // initial state, default zeros
}

// Nx, Nu and Ny are the state, input and output dimensions.
func (p *PlantSpec) Nx() int { return p.A.Rows() }
func (p *PlantSpec) Nu() int { return p.B.Cols() }
func (p *PlantSpec) Ny() int { return p.C.Rows() }

// ControllerSpec is the observer-based controller of eq. (24):
// u = -K (xhat - r(t)), xhat+ = A xhat + B u + L (yhat - C xhat).
// Exactly one of K and LQR is set, and exactly one of L and Observer.
type ControllerSpec struct {
	K         Matrix        `json:"k,omitempty"`        // nu x nx; nil when derived from LQR
	L         Matrix        `json:"l,omitempty"`        // nx x ny; nil when derived from Observer
	LQR       *LQRSpec      `json:"lqr,omitempty"`      // K = dlqr(A, B, Q, R)
	Observer  *LQRSpec      `json:"observer,omitempty"` // L = dlqr(A', C', Q, R)'
	Reference ReferenceSpec `json:"reference"`
	Xhat0     []float64     `json:"xhat0,omitempty"` // the observer's initial estimate, default zeros
}

// LQRSpec holds the weights of a discrete LQR design (already expanded to full matrices).
type LQRSpec struct {
	Q Matrix `json:"q"`
	R Matrix `json:"r"`
}

// ReferenceKind names a reference trajectory.
type ReferenceKind string

const (
	// RefTanh is the paper's profile x_r(t) = (tanh(t), 1 - |tanh(t-9)|), t the step index (Section 5.3).
	RefTanh ReferenceKind = "tanh"
	// RefZero is x_r(t) = 0 (regulation).
	RefZero ReferenceKind = "zero"
	// RefConstant is x_r(t) = Value.
	RefConstant ReferenceKind = "constant"
	// RefStep is x_r(t) = Before for t < At, After for t >= At.
	RefStep ReferenceKind = "step"
)

// ReferenceSpec is the reference trajectory x_r(t) the controller tracks.
type ReferenceSpec struct {
	Kind   ReferenceKind `json:"kind"`
	Value  []float64     `json:"value,omitempty"`  // RefConstant
	Before []float64     `json:"before,omitempty"` // RefStep
	After  []float64     `json:"after,omitempty"`  // RefStep
	At     int           `json:"at,omitempty"`     // RefStep: the first step with After
}

// GraphSpec is the consensus communication graph. A named graph has Name set (and the
// parameters its generator uses); an edge list has Name "" and Edges. Nodes are 0-based
// here (the file counts from 1, as the paper does).
type GraphSpec struct {
	Name   string  `json:"name,omitempty"`   // paper10, ring, path, complete, grid, random-regular; "" for an edge list
	N      int     `json:"n"`                // number of nodes (always set)
	Degree int     `json:"degree,omitempty"` // random-regular
	Rows   int     `json:"rows,omitempty"`   // grid
	Cols   int     `json:"cols,omitempty"`   // grid
	Weight float64 `json:"weight,omitempty"` // edge weight of a named graph; default weight of an edge list's edges
	Seed   uint64  `json:"seed,omitempty"`   // random-regular: the graph's own seed (default 1)
	Edges  []Edge  `json:"edges,omitempty"`  // edge list only, 0-based, each undirected edge once
}

// Edge is an undirected edge of weight W between the 0-based nodes I and J (I != J), in
// the order the file lists them.
type Edge struct {
	I int     `json:"i"`
	J int     `json:"j"`
	W float64 `json:"w"`
}

// PrivacySpec is the privacy requirement and the noise design.
type PrivacySpec struct {
	Mechanism   privacy.Mechanism   `json:"mechanism"`             // default gaussian
	Epsilon     float64             `json:"epsilon"`               // > 0
	Delta       float64             `json:"delta"`                 // gaussian: in (0, 1); laplace: 0
	Mu          float64             `json:"mu"`                    // adjacency level, default 1
	Adjacency   privacy.Adjacency   `json:"adjacency"`             // default manifold
	Noise       noise.Kind          `json:"noise"`                 // default structured
	Calibration privacy.Calibration `json:"calibration,omitempty"` // default tight (gaussian only)
	// Sampler is how the noise becomes float64 values (docs/math.md section 10): secure (the
	// default: exact samplers, the published values rounded exactly to a grid) or float (the
	// textbook float64 samplers, for demonstrations: their bits give the secret away).
	Sampler noise.Sampler `json:"sampler,omitempty"`
	Model   *ModelSpec    `json:"model,omitempty"` // private subsystem (cloud-control); nil = the plant itself

	// Episodes > 0 means the file gives the budget of a whole run (docs/math.md section 9): k = Episodes
	// episodes of one secret are together (RunEpsilon, RunDelta)-DP (privacy.episodes, privacy.run_epsilon
	// and privacy.delta), and Epsilon and Delta above are the per-episode share each episode is
	// calibrated for (Gaussian: mu_episode = mu_run/sqrt(k), exact GDP composition; Laplace: the
	// largest eps whose optimal k-fold composition is RunEpsilon). 0: Epsilon and Delta are the
	// per-episode budget as written.
	Episodes int `json:"episodes,omitempty"`
	// RunEpsilon is privacy.run_epsilon: the whole run's epsilon (Episodes > 0 only).
	RunEpsilon float64 `json:"run_epsilon,omitempty"`
	// RunDelta is privacy.delta as written when the file gives a whole-run budget: the whole run's delta.
	RunDelta float64 `json:"run_delta,omitempty"`
}

// resolveRun derives the per-episode (Epsilon, Delta) from the whole run's budget (Episodes > 0);
// it does nothing for a per-episode budget.
func (p *PrivacySpec) resolveRun() error {
	if p.Episodes == 0 {
		return nil
	}
	if p.Mechanism == privacy.Laplace {
		e, err := privacy.LaplaceEpisodeEpsilon(p.RunEpsilon, p.RunDelta, p.Episodes)
		p.Epsilon, p.Delta = e, 0
		return err
	}
	e, d, _, err := privacy.GaussianEpisodeBudget(p.RunEpsilon, p.RunDelta, p.Episodes)
	p.Epsilon, p.Delta = e, d
	return err
}

// ModelSpec is the private subsystem z(t+1) = A z, y = C z whose trajectory is protected
// (the paper's vehicle protects the position only: A = 1, C = 1).
type ModelSpec struct {
	A Matrix `json:"a"`
	C Matrix `json:"c"`
}

// TransportMode is how processes pace their steps.
type TransportMode string

const (
	// Lockstep: each step proceeds when its messages arrived, as fast as possible.
	Lockstep TransportMode = "lockstep"
	// Realtime: one step per Period on the wall clock.
	Realtime TransportMode = "realtime"
)

// TransportSpec is how the processes are paced.
type TransportSpec struct {
	Mode   TransportMode `json:"mode"`                // default lockstep
	Period time.Duration `json:"period_ns,omitempty"` // step period; required for realtime, 0 = unset
	// Timeout is the processes' longest wait for one step's messages (0: the launcher's
	// --timeout default); a fault scenario where messages are lost sets it short.
	Timeout time.Duration `json:"timeout_ns,omitempty"`
}

// SweepParam names a privacy parameter a scenario may sweep.
type SweepParam string

// The sweepable parameters.
const (
	SweepEpsilon     SweepParam = "epsilon"
	SweepDelta       SweepParam = "delta"
	SweepMu          SweepParam = "mu"
	SweepNoise       SweepParam = "noise"
	SweepCalibration SweepParam = "calibration"
	SweepAdjacency   SweepParam = "adjacency"
)

// SweepParams lists the sweepable parameters: the privacy parameters, then the fault
// parameters (faults.go).
var SweepParams = append([]SweepParam{SweepEpsilon, SweepDelta, SweepMu, SweepNoise, SweepCalibration, SweepAdjacency},
	faultSweepParams...)

func (p SweepParam) numeric() bool {
	switch p {
	case SweepEpsilon, SweepDelta, SweepMu, SweepFaultDelay, SweepFaultJitter, SweepFaultDrop, SweepFaultDuplicate, SweepFaultReorder:
		return true
	}
	return false
}

// Sweep is one swept parameter and its values: numbers for epsilon, delta and mu, names
// for noise, calibration and adjacency.
type Sweep struct {
	Param   SweepParam `json:"param"`
	Numbers []float64  `json:"numbers,omitempty"`
	Names   []string   `json:"names,omitempty"`
}

// Len returns the number of values.
func (s Sweep) Len() int {
	if s.Param.numeric() {
		return len(s.Numbers)
	}
	return len(s.Names)
}

// Value returns value i as text (numbers in the shortest form that round-trips).
func (s Sweep) Value(i int) string {
	if s.Param.numeric() {
		return strconv.FormatFloat(s.Numbers[i], 'g', -1, 64)
	}
	return s.Names[i]
}

// SweepPoint is one swept parameter's value in an expanded scenario.
type SweepPoint struct {
	Param SweepParam `json:"param"`
	Index int        `json:"index"` // position in the sweep's values
	Value string     `json:"value"` // as Sweep.Value
}

// apply sets value i of the sweep on the scenario c (its privacy or its faults section).
func (s Sweep) apply(c *Scenario, i int) {
	if isFaultParam(s.Param) {
		s.applyFaults(&c.Faults, i)
		return
	}
	s.applyPrivacy(&c.Privacy, i)
}

// applyPrivacy sets value i of a privacy sweep on p (a fault sweep leaves p alone). The
// values were checked by Parse.
func (s Sweep) applyPrivacy(p *PrivacySpec, i int) {
	switch s.Param {
	case SweepEpsilon:
		p.Epsilon = s.Numbers[i]
	case SweepDelta:
		if p.Episodes > 0 {
			p.RunDelta = s.Numbers[i] // the whole run's delta; resolveRun derives the episode's
		} else {
			p.Delta = s.Numbers[i]
		}
	case SweepMu:
		p.Mu = s.Numbers[i]
	case SweepNoise:
		p.Noise = noise.Kind(s.Names[i])
	case SweepCalibration:
		p.Calibration = privacy.Calibration(s.Names[i])
	case SweepAdjacency:
		p.Adjacency = privacy.Adjacency(s.Names[i])
	}
}

// Load reads and validates a scenario file. Every problem found is reported, as a
// *ValidationError whose lines name the file, the field, the value and what is allowed.
func Load(path string) (*Scenario, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("scenario %s: %w", path, err)
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil && st.Mode().IsRegular() && st.Size() > MaxFileSize {
		return nil, tooLarge(path, st.Size())
	}
	data, err := io.ReadAll(io.LimitReader(f, MaxFileSize+1)) // a pipe or a file that grew: read at most the bound
	if err != nil {
		return nil, fmt.Errorf("scenario %s: %w", path, err)
	}
	if len(data) > MaxFileSize {
		return nil, tooLarge(path, int64(len(data)))
	}
	return Parse(data, path)
}

// tooLarge is the error for a scenario of size bytes (at least; more than MaxFileSize).
func tooLarge(source string, size int64) error {
	return fmt.Errorf("scenario %s: the file has %d bytes (%.1f MiB), more than the %d bytes (1 MiB) a scenario may have: "+
		"a graph this large is better given by name (graph: {name: ring, n: ...}) than as an edge list",
		source, size, float64(size)/(1<<20), MaxFileSize)
}

// Parse decodes and validates a scenario from YAML. source names it in messages (a file
// path) and, without a name field, gives the scenario its name (the base name without
// extension).
func Parse(data []byte, source string) (*Scenario, error) {
	if len(data) > MaxFileSize {
		return nil, tooLarge(source, int64(len(data)))
	}
	ps := &problems{}
	d := &decoder{ps: ps, lines: map[string]int{}}
	s := decodeScenario(data, source, d)
	if err := ps.err(source); err != nil {
		return nil, err
	}
	// What only the dynamics can refuse (a graph that does not converge, an LQR design
	// without a solution) is checked by plan.New, once per point: see Problem and Refuse.
	s.Source, s.lines = source, dynamicsLines(d.lines)
	return s, nil
}

// Clone returns a deep copy of s.
func (s *Scenario) Clone() *Scenario {
	c := *s
	if s.Plant != nil {
		p := *s.Plant
		p.A, p.B, p.C, p.X0 = s.Plant.A.clone(), s.Plant.B.clone(), s.Plant.C.clone(), slices.Clone(s.Plant.X0)
		c.Plant = &p
	}
	if s.Controller != nil {
		k := *s.Controller
		k.K, k.L, k.Xhat0 = s.Controller.K.clone(), s.Controller.L.clone(), slices.Clone(s.Controller.Xhat0)
		k.LQR, k.Observer = s.Controller.LQR.clone(), s.Controller.Observer.clone()
		k.Reference.Value = slices.Clone(k.Reference.Value)
		k.Reference.Before = slices.Clone(k.Reference.Before)
		k.Reference.After = slices.Clone(k.Reference.After)
		c.Controller = &k
	}
	if s.Network != nil {
		g := *s.Network
		g.Edges = slices.Clone(s.Network.Edges)
		c.Network = &g
	}
	c.X0 = slices.Clone(s.X0)
	if s.Privacy.Model != nil {
		m := ModelSpec{A: s.Privacy.Model.A.clone(), C: s.Privacy.Model.C.clone()}
		c.Privacy.Model = &m
	}
	if s.Sweeps != nil {
		c.Sweeps = make([]Sweep, len(s.Sweeps))
		for i, sw := range s.Sweeps {
			c.Sweeps[i] = Sweep{Param: sw.Param, Numbers: slices.Clone(sw.Numbers), Names: slices.Clone(sw.Names)}
		}
	}
	c.Faults = s.Faults.Clone()
	c.Audit = s.Audit.clone()
	c.Point = slices.Clone(s.Point)
	c.Warnings = slices.Clone(s.Warnings)
	return &c
}

func (l *LQRSpec) clone() *LQRSpec {
	if l == nil {
		return nil
	}
	return &LQRSpec{Q: l.Q.clone(), R: l.R.clone()}
}

// Expand returns one scenario per point of the sweep (the Cartesian product of all swept
// parameters, the first one outermost), each with the values applied, Sweeps nil, Point
// set and the name suffixed "@param=value[,param=value]". Every point keeps the seed, so
// the points share their random streams (common random numbers). Without a sweep it
// returns []*Scenario{s}.
func (s *Scenario) Expand() []*Scenario {
	if len(s.Sweeps) == 0 {
		return []*Scenario{s}
	}
	total := 1
	for _, sw := range s.Sweeps {
		total *= sw.Len()
	}
	out := make([]*Scenario, 0, total)
	idx := make([]int, len(s.Sweeps))
	for range total {
		c := s.Clone()
		c.Sweeps = nil
		c.Point = make([]SweepPoint, 0, len(s.Point)+len(s.Sweeps))
		c.Point = append(c.Point, s.Point...)
		parts := make([]string, len(s.Sweeps))
		for k, sw := range s.Sweeps {
			sw.apply(c, idx[k])
			c.Point = append(c.Point, SweepPoint{Param: sw.Param, Index: idx[k], Value: sw.Value(idx[k])})
			parts[k] = string(sw.Param) + "=" + sw.Value(idx[k])
		}
		_ = c.Privacy.resolveRun() // checked at every point by Parse
		c.Name = s.Name + "@" + strings.Join(parts, ",")
		out = append(out, c)
		// advance the odometer, last sweep fastest
		for k := len(idx) - 1; k >= 0; k-- {
			idx[k]++
			if idx[k] < s.Sweeps[k].Len() {
				break
			}
			idx[k] = 0
		}
	}
	return out
}

// PrivateModel returns the private subsystem (A_m, C_m) the noise is designed for: the
// privacy model when given, else the plant's (A, C); for consensus the scalar agent
// model (1, 1) of Section 6 (ker D_i = span(1_T)).
func (s *Scenario) PrivateModel() (A, C *mat.Dense) {
	switch {
	case s.Kind == Consensus:
		return mat.NewDense(1, 1, []float64{1}), mat.NewDense(1, 1, []float64{1})
	case s.Privacy.Model != nil:
		return s.Privacy.Model.A.Dense(), s.Privacy.Model.C.Dense()
	case s.Plant != nil:
		return s.Plant.A.Dense(), s.Plant.C.Dense()
	}
	return nil, nil
}

func joinNames[T ~string](xs []T) string {
	parts := make([]string, len(xs))
	for i, x := range xs {
		parts[i] = string(x)
	}
	return strings.Join(parts, ", ")
}
