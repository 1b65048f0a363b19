package plan

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"

	"gonum.org/v1/gonum/mat"

	"github.com/dpsim/dpsim/internal/rowmajor"
	"github.com/dpsim/dpsim/pkg/dynamics"
	"github.com/dpsim/dpsim/pkg/endpoint"
	"github.com/dpsim/dpsim/pkg/noise"
	"github.com/dpsim/dpsim/pkg/privacy"
	"github.com/dpsim/dpsim/pkg/scenario"
)

// FileFormat names the layout of a plan file (the "format" key).
//
// Version 2 names every key in lower case (the scenario's fields in snake_case, durations in
// nanoseconds with a _ns suffix) and states the run, not the scenario file: its runs and, for
// the plant and the agents, its seed. docs/protocol.md describes it; a version-1 file is refused.
const FileFormat = "dpsim-plan/2"

// MaxFileSize bounds a plan file read by ReadFile (bytes).
const MaxFileSize = 256 << 20

// Keep selects the private values a plan file carries; everything else private is left out
// of the file and read back as NaN (an initial state) or 0 (the seed), so that a process can
// neither learn nor silently use what is not its own.
type Keep struct {
	// Seed keeps the run seed (scenario.Seed) of the noise streams: the plant and the agents.
	Seed bool
	// PlantX0 keeps the plant's x(0) (the plant process).
	PlantX0 bool
	// Agents keeps x_i(0) of agents First..Last (an agent host); Last < First keeps none.
	First, Last int
}

// KeepNothing keeps no private value: the cloud, the eavesdropper.
var KeepNothing = Keep{First: 0, Last: -1}

// KeepFor is what the process of role hosting ids first..last (an agent host; first == last
// otherwise) owns: the plant its x(0), agents their x_i(0), both the seed of their noise; the
// cloud and the eavesdropper nothing.
func KeepFor(role endpoint.Role, first, last int) Keep {
	switch role {
	case endpoint.Plant:
		return Keep{Seed: true, PlantX0: true, Last: -1}
	case endpoint.Agent:
		return Keep{Seed: true, First: first, Last: last}
	}
	return KeepNothing
}

// Redact overwrites in s the private values k leaves out: the seed with 0, an initial state
// with NaN - what a process reads of a plan file written with k - so that a process can neither
// learn nor silently use what is not its own (a NaN would poison, and so expose, any use).
func (k Keep) Redact(s *scenario.Scenario) {
	if !k.Seed {
		s.Seed = 0
	}
	if s.Plant != nil && !k.PlantX0 {
		for i := range s.Plant.X0 {
			s.Plant.X0[i] = math.NaN()
		}
	}
	for i := range s.X0 {
		if i < k.First || i > k.Last {
			s.X0[i] = math.NaN()
		}
	}
}

// planFile is the JSON form of a plan: the scenario point (fields named as in
// scenario.Scenario, without the private values Keep leaves out) and the results of New that
// cost time to compute: the consensus rate, the gains, the calibrated noise.
type planFile struct {
	Format        string             `json:"format"`
	Scenario      *scenario.Scenario `json:"scenario"`
	Adjacency     privacy.Adjacency  `json:"adjacency"`
	Scale         float64            `json:"scale"`
	KappaInv      float64            `json:"kappa_inv"`
	NoiseMatrix   [][]float64        `json:"noise_matrix,omitempty"`
	RankError     string             `json:"rank_error,omitempty"`
	K             [][]float64        `json:"k,omitempty"`
	L             [][]float64        `json:"l,omitempty"`
	Alpha         float64            `json:"alpha"`
	GraphWarnings []string           `json:"graph_warnings,omitempty"`
	// Warnings are the plan's (Plan.Warnings): what its dynamics checks found suspicious.
	Warnings []string `json:"warnings,omitempty"`
	// Edges is the consensus graph resolved (a named graph's edges, random-regular's drawn
	// ones): an outside agent need not rebuild it.
	Edges    []scenario.Edge `json:"edges,omitempty"`
	PlantX0  []float64       `json:"plant_x0,omitempty"`
	AgentsX0 *agentsX0       `json:"agents_x0,omitempty"`
}

type agentsX0 struct {
	First  int       `json:"first"`
	Values []float64 `json:"values"`
}

func dense(name string, v [][]float64, r, c int) (*mat.Dense, error) {
	if len(v) != r {
		return nil, fmt.Errorf("%s: %d rows, want %d", name, len(v), r)
	}
	m := mat.NewDense(r, c, nil)
	for i, row := range v {
		if len(row) != c {
			return nil, fmt.Errorf("%s: row %d has %d values, want %d", name, i, len(row), c)
		}
		for j, x := range row {
			if math.IsNaN(x) || math.IsInf(x, 0) {
				return nil, fmt.Errorf("%s[%d][%d] = %v is not finite", name, i, j, x)
			}
		}
		m.SetRow(i, row)
	}
	return m, nil
}

// WriteFile writes the plan as JSON to w for a role process: what the process needs to run
// without repeating New's work (the sensitivity enumeration, Algorithm 1's Sigma design, the
// graph's spectrum), and of the private values only those keep selects. ReadFile reads it.
func (p *Plan) WriteFile(w io.Writer, keep Keep) error {
	s := p.Scenario.Clone()
	f := planFile{Format: FileFormat, Scenario: s, Adjacency: p.Adjacency, Scale: p.Scale, KappaInv: p.KappaInv,
		NoiseMatrix: rowmajor.Rows(p.NoiseMatrix), K: rowmajor.Rows(p.K), L: rowmajor.Rows(p.L), Alpha: p.Alpha, GraphWarnings: p.GraphWarnings,
		Warnings: p.Warnings}
	if p.RankErr != nil {
		f.RankError = p.RankErr.Error()
	}
	if p.Graph != nil {
		f.Edges = make([]scenario.Edge, len(p.Graph.Edges))
		for i, e := range p.Graph.Edges {
			f.Edges[i] = scenario.Edge{I: e.I, J: e.J, W: e.W}
		}
	}
	keep.Redact(s) // the seed; the initial states kept are moved to their own fields below
	if s.Plant != nil {
		if keep.PlantX0 {
			f.PlantX0 = make([]float64, s.Plant.Nx()) // an absent x(0) is zeros
			copy(f.PlantX0, s.Plant.X0)
		}
		s.Plant.X0 = nil
	}
	if keep.Last >= keep.First && len(s.X0) > 0 {
		if keep.First < 0 || keep.Last >= len(s.X0) {
			return fmt.Errorf("plan file: agents %d..%d outside 0..%d", keep.First, keep.Last, len(s.X0)-1)
		}
		f.AgentsX0 = &agentsX0{First: keep.First, Values: slices.Clone(s.X0[keep.First : keep.Last+1])}
	}
	s.X0 = nil
	b, err := json.Marshal(&f)
	if err != nil {
		return fmt.Errorf("plan file: %w", err)
	}
	if _, err := w.Write(append(b, '\n')); err != nil {
		return fmt.Errorf("plan file: %w", err)
	}
	return nil
}

// FileDigest identifies the bytes of a plan file: the first 48 bits of their SHA-256, never 0
// (exact in a float64, so a process can report it in its ctl.ready and the launcher tell a
// stale plan file from the one it wrote).
func FileDigest(b []byte) uint64 {
	h := sha256.Sum256(b)
	d := binary.BigEndian.Uint64(h[:8]) >> 16
	return max(d, 1)
}

// ReadFile reads a plan written by WriteFile. The plan has everything New computes except the
// calibration's working (Sensitivity, Gaussian, Laplace are zero): the noise (Scale,
// NoiseMatrix, KappaInv), the rank condition's verdict, the gains, the graph and its rate.
// Private values the file left out are NaN (x(0)) or 0 (the seed). Building it costs O(N + E)
// for a graph of N nodes and E edges: the graph's structure is checked, not its spectrum.
func ReadFile(r io.Reader) (*Plan, error) {
	data, err := io.ReadAll(io.LimitReader(r, MaxFileSize+1))
	if err != nil {
		return nil, fmt.Errorf("plan file: %w", err)
	}
	return ParseFile(data)
}

// ParseFile is ReadFile on the file's bytes (at most MaxFileSize).
func ParseFile(data []byte) (*Plan, error) {
	if len(data) > MaxFileSize {
		return nil, fmt.Errorf("plan file: larger than the %d bytes allowed", MaxFileSize)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var f planFile
	if err := dec.Decode(&f); err != nil {
		return nil, fmt.Errorf("plan file: %w", err)
	}
	p, err := f.plan()
	if err != nil {
		return nil, fmt.Errorf("plan file: %w", err)
	}
	return p, nil
}

// plan checks the file and builds the plan it holds.
func (f *planFile) plan() (*Plan, error) {
	if err := f.checkHeader(); err != nil {
		return nil, err
	}
	s := f.Scenario
	p := &Plan{Scenario: s, Steps: s.Steps, Adjacency: f.Adjacency, Mechanism: s.Privacy.Mechanism, Noise: s.Privacy.Noise,
		Scale: f.Scale, KappaInv: f.KappaInv, Alpha: f.Alpha, GraphWarnings: f.GraphWarnings,
		Warnings: f.Warnings}
	if f.RankError != "" {
		p.RankErr = errors.New(f.RankError)
	}
	if err := f.setNoise(p); err != nil {
		return nil, err
	}
	switch s.Kind {
	case scenario.CloudControl:
		if err := f.cloudControl(p); err != nil {
			return nil, err
		}
	case scenario.Consensus:
		if err := f.consensus(p); err != nil {
			return nil, err
		}
	default:
		return nil, fmt.Errorf("scenario: unknown kind %q", s.Kind)
	}
	if err := p.resolveSampler(); err != nil { // cheap: the sampler's grid and embedding
		return nil, err
	}
	return p, nil
}

// checkHeader checks the format, that the file holds one point of a scenario, and the noise
// numbers.
func (f *planFile) checkHeader() error {
	if f.Format != FileFormat {
		return fmt.Errorf("format %q, want %q", f.Format, FileFormat)
	}
	s := f.Scenario
	if s == nil {
		return errors.New("no scenario")
	}
	if s.Steps < 1 {
		return fmt.Errorf("scenario.Steps %d < 1", s.Steps)
	}
	if len(s.Sweeps) > 0 {
		return errors.New("scenario: has a sweep: a plan file holds one point")
	}
	for _, v := range []struct {
		name string
		x    float64
	}{{"scale", f.Scale}, {"kappa_inv", f.KappaInv}, {"alpha", f.Alpha}} {
		if !(v.x >= 0) || math.IsInf(v.x, 0) {
			return fmt.Errorf("%s %v: want a finite value >= 0", v.name, v.x)
		}
	}
	return nil
}

// setNoise checks the noise kind and the mechanism and sets the private model and the noise matrix.
func (f *planFile) setNoise(p *Plan) error {
	switch p.Noise {
	case noise.Structured, noise.IIDCalibrated, noise.IIDNaive, noise.None:
	default:
		return fmt.Errorf("scenario: unknown noise kind %q", p.Noise)
	}
	if p.Mechanism != privacy.Gaussian && p.Mechanism != privacy.Laplace {
		return fmt.Errorf("scenario: unknown mechanism %q", p.Mechanism)
	}
	p.ModelA, p.ModelC = f.Scenario.PrivateModel()
	if p.ModelA == nil {
		return errors.New("scenario: no private model")
	}
	if f.NoiseMatrix != nil {
		n, _ := p.ModelA.Dims()
		var err error
		if p.NoiseMatrix, err = dense("noise_matrix", f.NoiseMatrix, n, n); err != nil {
			return err
		}
	} else if p.Noise == noise.Structured {
		return errors.New("noise_matrix: missing for structured noise")
	}
	return nil
}

// cloudControl sets the plant, the gains and the reference of a cloud-control plan; the plant's
// x(0) is the file's, or NaN where the file left it out.
func (f *planFile) cloudControl(p *Plan) error {
	s := f.Scenario
	if s.Plant == nil || s.Controller == nil {
		return errors.New("scenario: a cloud-control plan without plant or controller")
	}
	if f.AgentsX0 != nil {
		return errors.New("agents_x0 in a cloud-control plan")
	}
	sys, err := s.System()
	if err != nil {
		return fmt.Errorf("scenario.Plant: %w", err)
	}
	p.System = sys
	if p.K, err = dense("k", f.K, sys.Nu(), sys.Nx()); err != nil {
		return err
	}
	if p.L, err = dense("l", f.L, sys.Nx(), sys.Ny()); err != nil {
		return err
	}
	if p.Reference, err = s.Reference(); err != nil {
		return fmt.Errorf("scenario.Controller.Reference: %w", err)
	}
	s.Plant.X0 = nans(sys.Nx())
	if f.PlantX0 != nil {
		if len(f.PlantX0) != sys.Nx() {
			return fmt.Errorf("plant_x0: %d values, the plant has %d states", len(f.PlantX0), sys.Nx())
		}
		s.Plant.X0 = f.PlantX0
	}
	return nil
}

// consensus sets the graph of a consensus plan, checked against the file's edges; the agents'
// x(0) are the file's, or NaN where the file left them out.
func (f *planFile) consensus(p *Plan) error {
	s := f.Scenario
	if s.Network == nil {
		return errors.New("scenario: a consensus plan without a graph")
	}
	if f.PlantX0 != nil || f.K != nil || f.L != nil {
		return errors.New("plant_x0, k or l in a consensus plan")
	}
	g, err := s.BuildGraph()
	if err != nil {
		return fmt.Errorf("scenario.Network: %w", err)
	}
	if err := sameEdges(f.Edges, g); err != nil {
		return err
	}
	p.Graph = g
	s.X0 = nans(g.N)
	if a := f.AgentsX0; a != nil {
		if a.First < 0 || a.First+len(a.Values) > g.N {
			return fmt.Errorf("agents_x0: agents %d..%d outside 0..%d", a.First, a.First+len(a.Values)-1, g.N-1)
		}
		copy(s.X0[a.First:], a.Values)
	}
	return nil
}

func nans(n int) []float64 {
	v := make([]float64, n)
	for i := range v {
		v[i] = math.NaN()
	}
	return v
}

// sameEdges checks a plan file's resolved edges against the graph its scenario builds: both
// say the same, or the file was edited (an older file without edges is taken as it is).
func sameEdges(edges []scenario.Edge, g *dynamics.Graph) error {
	if edges == nil {
		return nil
	}
	if len(edges) != len(g.Edges) {
		return fmt.Errorf("edges: %d, the scenario's graph has %d", len(edges), len(g.Edges))
	}
	for i, e := range edges {
		if w := g.Edges[i]; e.I != w.I || e.J != w.J || e.W != w.W {
			return fmt.Errorf("edges[%d] = {%d, %d, %v}, the scenario's graph has {%d, %d, %v}", i, e.I, e.J, e.W, w.I, w.J, w.W)
		}
	}
	return nil
}
