package scenario

import (
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dpsim/dpsim/pkg/noise"
	"github.com/dpsim/dpsim/pkg/privacy"
)

// shipped returns every scenario file shipped in scenarios/ (so new files are covered).
func shipped(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("..", "..", "scenarios", "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 6 {
		t.Fatalf("found %d scenario files in scenarios/, want at least 6", len(files))
	}
	return files
}

func TestShippedScenariosValidate(t *testing.T) {
	for _, path := range shipped(t) {
		t.Run(filepath.Base(path), func(t *testing.T) {
			s, err := Load(path)
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			base := strings.TrimSuffix(filepath.Base(path), ".yaml")
			if s.Name != base {
				t.Errorf("name %q, want the file's base name %q", s.Name, base)
			}
			if s.Description == "" {
				t.Error("no description")
			}
			if s.Seed == 0 {
				t.Error("shipped scenarios fix their seed so that results reproduce")
			}
			for _, e := range s.Expand() {
				if e.Privacy.Epsilon <= 0 {
					t.Errorf("%s: epsilon %v", e.Name, e.Privacy.Epsilon)
				}
			}
		})
	}
}

func TestCloudVehicle(t *testing.T) {
	s, err := Load("../../scenarios/cloud-vehicle.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if s.Kind != CloudControl || s.Steps != 100 || s.Runs != 500 {
		t.Fatalf("kind %s steps %d runs %d", s.Kind, s.Steps, s.Runs)
	}
	p := s.Plant
	if p.Nx() != 2 || p.Nu() != 1 || p.Ny() != 1 {
		t.Fatalf("dims nx=%d nu=%d ny=%d, want 2 1 1", p.Nx(), p.Nu(), p.Ny())
	}
	wantA := Matrix{{1, 0.1}, {0, 1}}
	for i := range wantA {
		for j := range wantA[i] {
			if p.A[i][j] != wantA[i][j] {
				t.Fatalf("A = %v", p.A)
			}
		}
	}
	if p.B[0][0] != 0.005 || p.B[1][0] != 0.1 {
		t.Errorf("B = %v, want [[Ts^2/2], [Ts]]", p.B)
	}
	c := s.Controller
	if c.K.Rows() != 1 || c.K.Cols() != 2 || c.K[0][1] != 4.3095 {
		t.Errorf("K = %v, want one row [3.4240 4.3095]", c.K)
	}
	if c.L.Rows() != 2 || c.L.Cols() != 1 || c.L[0][0] != 0.8266 {
		t.Errorf("L = %v, want one column [0.8266; 0.6973]", c.L)
	}
	if c.Reference.Kind != RefTanh {
		t.Errorf("reference %s", c.Reference.Kind)
	}
	pr := s.Privacy
	if pr.Mechanism != privacy.Gaussian || pr.Epsilon != 1 || pr.Delta != 0.01 || pr.Mu != 1 ||
		pr.Noise != noise.Structured || pr.Calibration != privacy.Tight || pr.Adjacency != privacy.Manifold {
		t.Errorf("privacy %+v", pr)
	}
	A, C := s.PrivateModel()
	if r, cc := A.Dims(); r != 1 || cc != 1 || A.At(0, 0) != 1 || C.At(0, 0) != 1 {
		t.Errorf("private model A=%v C=%v, want the scalar position model", A, C)
	}
	if d := s.Plant.A.Dense(); d.At(0, 1) != 0.1 {
		t.Errorf("Dense: %v", d)
	}
}

func TestConsensusScenarios(t *testing.T) {
	for _, tc := range []struct {
		file  string
		mech  privacy.Mechanism
		delta float64
	}{
		{"consensus-gaussian.yaml", privacy.Gaussian, 0.01},
		{"consensus-laplace.yaml", privacy.Laplace, 0},
	} {
		s, err := Load(filepath.Join("..", "..", "scenarios", tc.file))
		if err != nil {
			t.Fatal(err)
		}
		if s.Kind != Consensus || s.Steps != 30 || s.Runs != 500 || s.Network.Name != "paper10" || s.Network.N != 10 || s.Network.Weight != 0.25 {
			t.Errorf("%s: %+v %+v", tc.file, s, s.Network)
		}
		sum := 0.0
		for _, v := range s.X0 {
			sum += v
		}
		if avg := sum / float64(len(s.X0)); avg != 15 {
			t.Errorf("%s: x0 averages %v, want 15 (the paper's text says 10)", tc.file, avg)
		}
		if s.Privacy.Mechanism != tc.mech || s.Privacy.Delta != tc.delta || s.Privacy.Epsilon != 1 {
			t.Errorf("%s: privacy %+v", tc.file, s.Privacy)
		}
		if s.Plant != nil || s.Controller != nil {
			t.Errorf("%s: consensus with a plant", tc.file)
		}
	}
}

func TestSweepExpand(t *testing.T) {
	s, err := Load("../../scenarios/cloud-vehicle-sweep.yaml")
	if err != nil {
		t.Fatal(err)
	}
	eps := []float64{1e-2, 5e-2, 1e-1, 5e-1, 1, 5, 10}
	kinds := []noise.Kind{noise.Structured, noise.IIDCalibrated, noise.IIDNaive}
	pts := s.Expand()
	if len(pts) != len(eps)*len(kinds) {
		t.Fatalf("%d points, want %d", len(pts), len(eps)*len(kinds))
	}
	names := map[string]bool{}
	for i, p := range pts {
		wantEps, wantKind := eps[i/len(kinds)], kinds[i%len(kinds)]
		if p.Privacy.Epsilon != wantEps || p.Privacy.Noise != wantKind {
			t.Errorf("point %d: eps %v noise %s, want %v %s", i, p.Privacy.Epsilon, p.Privacy.Noise, wantEps, wantKind)
		}
		if p.Sweeps != nil || len(p.Point) != 2 || p.Point[0].Param != SweepEpsilon || p.Point[1].Index != i%len(kinds) {
			t.Errorf("point %d: sweeps %v point %v", i, p.Sweeps, p.Point)
		}
		if names[p.Name] {
			t.Errorf("duplicate name %s", p.Name)
		}
		names[p.Name] = true
		if p.Seed != s.Seed || p.Privacy.Delta != 0.01 {
			t.Errorf("point %d: seed %d delta %v", i, p.Seed, p.Privacy.Delta)
		}
	}
	if pts[0].Name != "cloud-vehicle-sweep@epsilon=0.01,noise=structured" {
		t.Errorf("first name %q", pts[0].Name)
	}
	// points are independent copies
	pts[0].Plant.A[0][0] = 42
	pts[0].Controller.K[0][0] = 42
	if s.Plant.A[0][0] != 1 || pts[1].Plant.A[0][0] != 1 || s.Controller.K[0][0] != 3.4240 {
		t.Error("Expand shares matrices between points")
	}
	if got := (&Scenario{Name: "x"}).Expand(); len(got) != 1 || got[0].Name != "x" {
		t.Errorf("no sweep: %v", got)
	}
}

const minimal = `
name: t
kind: cloud-control
steps: 10
episodes: 2
plant: {A: 1, B: 1, C: 1}
controller: {K: 0.5, L: 0.5}
privacy: {epsilon: 1, delta: 0.01}
`

func TestDefaults(t *testing.T) {
	s, err := Parse([]byte(minimal), "t.yaml")
	if err != nil {
		t.Fatal(err)
	}
	p := s.Privacy
	if p.Mechanism != privacy.Gaussian || p.Mu != 1 || p.Adjacency != privacy.Manifold || p.Noise != noise.Structured || p.Calibration != privacy.Tight || p.Model != nil {
		t.Errorf("defaults %+v", p)
	}
	if s.Controller.Reference.Kind != RefZero || len(s.Controller.Xhat0) != 1 || len(s.Plant.X0) != 1 {
		t.Errorf("controller defaults %+v, x0 %v", s.Controller, s.Plant.X0)
	}
	if s.Transport.Mode != Lockstep || s.Seed != 0 {
		t.Errorf("transport %+v seed %d", s.Transport, s.Seed)
	}
}

func TestForms(t *testing.T) {
	doc := `
kind: cloud-control
steps: 1e3
episodes: 1
seed: 18446744073709551615
plant:
  A: [[1, 0.1, 0], [0, 1, 0.1], [0, 0, 1]]
  B: [1, 2, 3]            # flat B: one column
  C: [1, 0, 0]            # flat C: one row
controller:
  lqr: {Q: [1, 2, 3], R: 2}   # diagonal Q, scalar R
  observer: {Q: [[2, 1, 0], [1, 2, 0], [0, 0, 1]], R: [[1]]}
  reference: {step: {before: [0, 0, 0], after: [1, 0, 0], at: 500}}
privacy:
  mechanism: laplace
  epsilon: 0.5
  model: {A: [[1, 0.1], [0, 1]], C: [1, 0]}
transport: {mode: realtime, period: 100ms}
`
	s, err := Parse([]byte(doc), "dir/forms.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if s.Name != "forms" || s.Steps != 1000 || s.Seed != math.MaxUint64 {
		t.Errorf("name %q steps %d seed %d", s.Name, s.Steps, s.Seed)
	}
	if s.Plant.B.Rows() != 3 || s.Plant.B.Cols() != 1 || s.Plant.C.Rows() != 1 || s.Plant.C.Cols() != 3 {
		t.Errorf("B %v C %v", s.Plant.B, s.Plant.C)
	}
	q := s.Controller.LQR.Q
	if q[0][0] != 1 || q[1][1] != 2 || q[2][2] != 3 || q[0][1] != 0 || s.Controller.LQR.R[0][0] != 2 {
		t.Errorf("lqr %v", s.Controller.LQR)
	}
	if r := s.Controller.Reference; r.Kind != RefStep || r.At != 500 || r.After[0] != 1 {
		t.Errorf("reference %+v", r)
	}
	if s.Privacy.Delta != 0 || s.Privacy.Model.C.Cols() != 2 {
		t.Errorf("privacy %+v", s.Privacy)
	}
	if s.Transport.Mode != Realtime || s.Transport.Period.Milliseconds() != 100 {
		t.Errorf("transport %+v", s.Transport)
	}
}

func TestEdgeList(t *testing.T) {
	doc := `
kind: consensus
steps: 5
episodes: 1
graph:
  n: 4
  edges: [[1, 2], [2, 3, 0.1], [3, 4], [4, 1]]
x0: [1, 2, 3, 4]
privacy: {epsilon: 1, delta: 0.1}
`
	s, err := Parse([]byte(doc), "ring4.yaml")
	if err != nil {
		t.Fatal(err)
	}
	g := s.Network
	if g.N != 4 || len(g.Edges) != 4 || g.Weight != 1.0/3 {
		t.Fatalf("graph %+v", g)
	}
	if e := g.Edges[1]; e.I != 1 || e.J != 2 || e.W != 0.1 {
		t.Errorf("edge 1 = %+v, want 0-based 1-2 weight 0.1", e)
	}
	if e := g.Edges[3]; e.I != 3 || e.J != 0 || e.W != 1.0/3 {
		t.Errorf("edge 3 = %+v, want 0-based 3-0 with the default weight", e)
	}
}

func TestAllProblemsReported(t *testing.T) {
	doc := `
kind: cloud-control
steps: 0
episodes: -1
plant: {A: [[1, 0], [0, 1]], B: [1, 2, 3], C: [1, 0]}
controller: {K: [1, 2], L: [1, 2], reference: sine}
privacy: {epsilon: -1, delta: 2, noise: loud}
`
	_, err := Parse([]byte(doc), "many.yaml")
	var ve *ValidationError
	if !errors.As(err, &ve) {
		t.Fatalf("error %v is not a *ValidationError", err)
	}
	want := []string{
		"scenario many.yaml: steps: 0 must be >= 1 (the horizon T) (line 3)",
		"episodes: -1 must be >= 1",
		"plant.B: 3 rows, plant.A is 2x2 (line 5)",
		`controller.reference: unknown reference "sine"`,
		"privacy.epsilon: -1 must be > 0",
		"privacy.delta: 2 out of range",
		`privacy.noise: unknown noise kind "loud"`,
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error lacks %q:\n%v", w, err)
		}
	}
	if len(ve.Problems) != len(want) {
		t.Errorf("%d problems, want %d:\n%v", len(ve.Problems), len(want), err)
	}
	for i := 1; i < len(ve.Problems); i++ {
		if ve.Problems[i].Line < ve.Problems[i-1].Line {
			t.Errorf("problems out of file order:\n%v", err)
		}
	}
}

func TestSyntaxErrorLines(t *testing.T) {
	for _, tc := range []struct{ doc, want string }{
		{"kind: consensus\nsteps: [1, 2\nepisodes: 3\n", "(line 2)"}, // unclosed flow list
		{"kind: consensus\nsteps: 2\nepisodes: : 3\n", "(line 3)"},   // bad mapping value
		{"kind: consensus\nsteps: 2\n  episodes: 3\n", "(line 3)"},   // bad indentation
		{"kind: consensus\n\tsteps: 2\n", "(line 2)"},                // tab
		{"kind: consensus\nsteps: 2\nname: \"x\n", "invalid YAML: found unexpected end of stream"},
	} {
		_, err := Parse([]byte(tc.doc), "s.yaml")
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "invalid YAML") {
			t.Errorf("%q: error %v, want %q", tc.doc, err, tc.want)
		}
	}
}

func TestAliasBomb(t *testing.T) {
	var b strings.Builder
	b.WriteString("a0: &a0 [1, 1, 1, 1, 1, 1, 1, 1, 1, 1]\n")
	for i := 1; i < 9; i++ {
		fmt.Fprintf(&b, "a%d: &a%d [", i, i)
		for j := range 10 {
			if j > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(&b, "*a%d", i-1)
		}
		b.WriteString("]\n")
	}
	_, err := Parse([]byte(b.String()), "bomb.yaml")
	if err == nil || !strings.Contains(err.Error(), "expands to more than") {
		t.Errorf("alias bomb: %v", err)
	}
	// ordinary aliases work
	doc := strings.Replace(minimal, "plant: {A: 1, B: 1, C: 1}", "plant: {A: &one 1, B: *one, C: *one}", 1)
	if _, err := Parse([]byte(doc), "alias.yaml"); err != nil {
		t.Error(err)
	}
}
