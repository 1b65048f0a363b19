package plan

import (
	"math"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/dpsim/dpsim/pkg/noise"
	"github.com/dpsim/dpsim/pkg/privacy"
	"github.com/dpsim/dpsim/pkg/rng"
	"github.com/dpsim/dpsim/pkg/scenario"
)

// load returns the scenario's first point (a sweep's first value: eps = 1 for the consensus files).
func load(t *testing.T, name string) *scenario.Scenario {
	t.Helper()
	s, err := scenario.Load(filepath.Join("..", "..", "scenarios", name))
	require.NoError(t, err)
	return s.Expand()[0]
}

func TestEveryShippedScenarioResolves(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("..", "..", "scenarios", "*.yaml"))
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, f := range files {
		s, err := scenario.Load(f)
		require.NoError(t, err, f)
		for _, pt := range s.Expand() {
			p, err := New(pt, Options{})
			require.NoError(t, err, pt.Name)
			st, err := p.NewNoise()
			require.NoError(t, err, pt.Name)
			st.Reset(rng.New(1))
			dst := make([]float64, p.OutputDim())
			st.Next(dst)
			if p.Noise != noise.None {
				require.NoError(t, p.RankErr, pt.Name)
				require.Greater(t, p.Scale, 0.0, pt.Name)
			}
		}
	}
}

// The calibrated sigma satisfies Theorem 1's inequality with the plan's sensitivity, and 0.999 sigma does not.
func TestStructuredGaussianIsTight(t *testing.T) {
	for _, name := range []string{"cloud-vehicle.yaml", "cloud-vehicle-fullstate.yaml", "consensus-gaussian.yaml"} {
		s := load(t, name)
		p, err := New(s, Options{})
		require.NoError(t, err)
		pr := s.Privacy
		require.Equal(t, privacy.Tight, pr.Calibration)
		require.True(t, privacy.GaussianSatisfies(pr.Epsilon, pr.Delta, pr.Mu, p.Sensitivity.Value, p.Scale), name)
		require.False(t, privacy.GaussianSatisfies(pr.Epsilon, pr.Delta, pr.Mu, p.Sensitivity.Value, 0.999*p.Scale), name)
		require.NotNil(t, p.Gaussian)
		require.LessOrEqual(t, p.Gaussian.TraceOptimal, p.Gaussian.TraceScalar*(1+1e-12), name)
		require.Zero(t, p.Gaussian.MaxLMIViolation, name)
	}
}

// docs/math.md section 1: the full-state vehicle's manifold sensitivity exceeds the block one by about 1/Ts.
func TestFullStateManifoldVersusBlock(t *testing.T) {
	s := load(t, "cloud-vehicle-fullstate.yaml")
	man, err := New(s, Options{Adjacency: privacy.Manifold})
	require.NoError(t, err)
	blk, err := New(s, Options{Adjacency: privacy.Block})
	require.NoError(t, err)
	// T = 100, Ts = 0.1: block max_t ||A^{-t} e_2|| = sqrt(1 + 9.9^2); manifold sqrt(1 + 9.9^2)/Ts.
	require.InDelta(t, math.Sqrt(1+9.9*9.9), blk.Sensitivity.Value, 1e-9)
	require.InDelta(t, math.Sqrt(1+9.9*9.9)/0.1, man.Sensitivity.Value, 1e-7)
	require.InDelta(t, 10, man.Scale/blk.Scale, 1e-6)
}

// For the scalar private models both adjacencies agree (k = 1: one circuit).
func TestScalarModelsAdjacenciesAgree(t *testing.T) {
	for _, name := range []string{"cloud-vehicle.yaml", "consensus-gaussian.yaml", "consensus-laplace.yaml"} {
		s := load(t, name)
		man, err := New(s, Options{Adjacency: privacy.Manifold})
		require.NoError(t, err)
		blk, err := New(s, Options{Adjacency: privacy.Block})
		require.NoError(t, err)
		require.InDelta(t, 1, man.Sensitivity.Value, 1e-12, name)
		require.Equal(t, man.Sensitivity.Value, blk.Sensitivity.Value, name)
		require.Equal(t, man.Scale, blk.Scale, name)
	}
}

func TestBaselines(t *testing.T) {
	s := load(t, "cloud-vehicle.yaml")
	structured, err := New(s, Options{})
	require.NoError(t, err)
	for _, c := range []struct {
		kind  noise.Kind
		ratio float64 // sigma relative to structured
	}{
		{noise.IIDCalibrated, math.Sqrt(float64(s.Steps))}, // position model: ||1_T|| = sqrt(T)
		{noise.IIDNaive, 1},
	} {
		s2 := s.Clone()
		s2.Privacy.Noise = c.kind
		p, err := New(s2, Options{})
		require.NoError(t, err)
		require.InDelta(t, c.ratio, p.Scale/structured.Scale, 1e-9, c.kind)
		require.NoError(t, p.RankErr)
	}
	s3 := s.Clone()
	s3.Privacy.Noise = noise.None
	p, err := New(s3, Options{})
	require.NoError(t, err)
	require.ErrorContains(t, p.RankErr, "rank condition (8)")
}

// Theorem 4 / eq. (31): Laplace consensus offsets need sigma_i = mu/eps.
func TestConsensusLaplaceScale(t *testing.T) {
	s := load(t, "consensus-laplace.yaml")
	for _, eps := range []float64{1, 0.1, 0.01} {
		s2 := s.Clone()
		s2.Privacy.Epsilon = eps
		p, err := New(s2, Options{})
		require.NoError(t, err)
		require.InDelta(t, s.Privacy.Mu/eps, p.Scale, 1e-12*p.Scale)
		require.InDelta(t, 2*p.Scale*p.Scale, p.NoiseVariance(), 1e-9*p.Scale*p.Scale)
	}
}

func TestSweepNeedsExpand(t *testing.T) {
	s, err := scenario.Load(filepath.Join("..", "..", "scenarios", "cloud-vehicle-sweep.yaml"))
	require.NoError(t, err)
	_, err = New(s, Options{})
	require.ErrorContains(t, err, "Expand")
}

// The noise achieves exactly the claimed eps against its own sensitivity, and iid-naive noise
// achieves much less than claimed over T releases (sqrt(T) times the single-release sensitivity).
func TestAchievedEpsilon(t *testing.T) {
	for _, name := range []string{"cloud-vehicle.yaml", "cloud-vehicle-fullstate.yaml", "consensus-gaussian.yaml", "consensus-laplace.yaml"} {
		s := load(t, name)
		p, err := New(s, Options{})
		require.NoError(t, err)
		eps, err := p.AchievedEpsilon(p.Sensitivity)
		require.NoError(t, err)
		require.InDelta(t, s.Privacy.Epsilon, eps, 1e-6*s.Privacy.Epsilon, name)
	}
	s := load(t, "cloud-vehicle.yaml").Clone()
	s.Privacy.Noise = noise.IIDNaive
	p, err := New(s, Options{})
	require.NoError(t, err)
	sensT, eps, err := p.NaiveOverT()
	require.NoError(t, err)
	require.InDelta(t, math.Sqrt(float64(s.Steps)), sensT, 1e-9)
	require.Greater(t, eps, 10*s.Privacy.Epsilon)
}

// Long horizons must not build the (T ny) x (T nx) stacked F: T = 1e5 on the full-state vehicle
// resolves (block adjacency: O(T) sensitivity) with the rank condition checked algebraically.
func TestLongHorizonRankCheck(t *testing.T) {
	s := load(t, "cloud-vehicle-fullstate.yaml").Clone()
	s.Steps = 100_000
	p, err := New(s, Options{Adjacency: privacy.Block})
	require.NoError(t, err)
	require.NoError(t, p.RankErr)
	// The numeric and the algebraic form agree where both run.
	s.Steps = 1000
	p, err = New(s, Options{Adjacency: privacy.Block})
	require.NoError(t, err)
	require.NoError(t, p.RankErr)
}

// TestRunGuarantee: a tight structured Gaussian plan is exactly kappa_eps^{-1}(delta)-GDP per episode and
// k episodes compose to sqrt(k) times that; a plan calibrated for a whole run (privacy.run_epsilon) gives
// the asked budget back for its episodes; Laplace at delta 0 gives k eps.
func TestRunGuarantee(t *testing.T) {
	s := load(t, "cloud-vehicle-fullstate.yaml")
	p, err := New(s, Options{})
	require.NoError(t, err)
	g, err := p.RunGuarantee(1)
	require.NoError(t, err)
	require.InDelta(t, 1, g.MuEpisode/p.KappaInv, 1e-6) // the optimal Sigma meets the LMIs with equality at the worst direction
	require.InDelta(t, s.Privacy.Epsilon, g.EpsilonRun, 1e-5*s.Privacy.Epsilon)
	g4, err := p.RunGuarantee(4)
	require.NoError(t, err)
	require.InDelta(t, 2*g.MuEpisode, g4.MuRun, 1e-12)
	require.LessOrEqual(t, privacy.Kappa(g4.EpsilonRun, g4.MuRun), s.Privacy.Delta)
	require.Equal(t, privacy.ComposeGDP, g4.Composition)

	run := *s
	run.Privacy.Episodes, run.Privacy.RunEpsilon, run.Privacy.RunDelta = 9, 1.5, s.Privacy.Delta
	e, d, _, err := privacy.GaussianEpisodeBudget(1.5, s.Privacy.Delta, 9)
	require.NoError(t, err)
	run.Privacy.Epsilon, run.Privacy.Delta = e, d
	pr, err := New(&run, Options{})
	require.NoError(t, err)
	gr, err := pr.RunGuarantee(9)
	require.NoError(t, err)
	require.InDelta(t, 1.5, gr.EpsilonRun, 1e-6) // the optimal Sigma's LMI tolerance, not the composition, limits this

	lp := *s
	lp.Privacy.Mechanism, lp.Privacy.Delta = privacy.Laplace, 0
	pl, err := New(&lp, Options{})
	require.NoError(t, err)
	gl, err := pl.RunGuarantee(10)
	require.NoError(t, err)
	require.InDelta(t, 10*s.Privacy.Epsilon, gl.EpsilonRun, 1e-9)
	require.Equal(t, privacy.ComposeKOV, gl.Composition)
}

// The secure sampler's embedding: the vehicle's position model is the plant's coordinate 0, the
// plant itself all of them; a model that is not a set of the plant's coordinates, i.i.d. noise
// whose output map is not exact in float64, and a plant crash with a moving private model are
// refused, each naming the way out (privacy.sampler: float); the float sampler takes them all.
func TestSecureSamplerPlans(t *testing.T) {
	plan := func(s *scenario.Scenario) (*Plan, error) { return New(s, Options{}) }
	p, err := plan(load(t, "cloud-vehicle.yaml"))
	require.NoError(t, err)
	require.Equal(t, noise.SamplerSecure, p.Sampler)
	require.Equal(t, []int{0}, p.Embedding)
	require.Equal(t, math.Ldexp(1, -20), p.Granularity)
	pf, err := plan(load(t, "cloud-vehicle-fullstate.yaml"))
	require.NoError(t, err)
	require.Equal(t, []int{0, 1}, pf.Embedding)
	pc, err := plan(load(t, "consensus-laplace.yaml"))
	require.NoError(t, err)
	require.Nil(t, pc.Embedding)
	require.Positive(t, pc.Granularity)

	refused := func(name string, edit func(*scenario.Scenario), want string) {
		s := load(t, "cloud-vehicle.yaml").Clone()
		edit(s)
		_, err := plan(s)
		require.ErrorContains(t, err, want, name)
		require.ErrorContains(t, err, "privacy.sampler: float", name)
		s.Privacy.Sampler = noise.SamplerFloat
		_, err = plan(s)
		require.NoError(t, err, name)
	}
	refused("a model outside the plant", func(s *scenario.Scenario) {
		s.Privacy.Model.A = scenario.Matrix{{0.5}}
	}, "not a set of the plant's state coordinates")
	refused("i.i.d. noise with an output map inexact in float64", func(s *scenario.Scenario) {
		s.Privacy.Noise, s.Privacy.Model = noise.IIDNaive, nil // the full-state model: C A^t = [1, t 0.1]
	}, "exact in float64")
	refused("a plant crash with a moving private model", func(s *scenario.Scenario) {
		s.Privacy.Model = nil
		s.Faults.Crashes = []scenario.Crash{{Proc: "plant.0", Step: 10, Restart: 20, Noise: scenario.NoiseResume}}
	}, "faults.crashes")
}
