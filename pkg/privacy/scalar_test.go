package privacy

import (
	"math"
	"testing"
)

// CalibrateScalar agrees with GaussianSigma and meets eq. (9): kappa(eps, mu Delta/sigma) <= delta.
func TestCalibrateScalarGaussian(t *testing.T) {
	sn, err := CalibrateScalar(Gaussian, PaperBound, 1, 1e-2, 1, 1)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := GaussianSigma(PaperBound, 1, 1e-2, 1, 1)
	if sn.Scale != want || sn.Variance != want*want || sn.Calibration != string(PaperBound) {
		t.Fatalf("%+v, want sigma %g", sn, want)
	}
	if !(sn.KappaAtScale <= 1e-2) || sn.KappaInverse <= 0 {
		t.Errorf("kappa at sigma %g, kappa inverse %g", sn.KappaAtScale, sn.KappaInverse)
	}
	if sn.Alternatives[string(PaperBound)] != sn.Scale || sn.Alternatives[string(Tight)] > sn.Scale {
		t.Errorf("alternatives %v: tight is the least sufficient sigma", sn.Alternatives)
	}
}

// Laplace: b = mu Delta_L / eps (eq. (14)), variance 2 b^2, no Gaussian keys.
func TestCalibrateScalarLaplace(t *testing.T) {
	sn, err := CalibrateScalar(Laplace, Tight, 0.5, 0, 2, 3)
	if err != nil {
		t.Fatal(err)
	}
	if sn.Scale != 12 || sn.Variance != 288 || sn.Calibration != "exact" || sn.Alternatives != nil {
		t.Errorf("%+v", sn)
	}
}

// A whole run's budget split by EpisodeBudget and composed back by Run gives the run's epsilon.
func TestEpisodeBudgetComposesBack(t *testing.T) {
	for _, c := range []struct {
		mech       Mechanism
		eps, delta float64
		k          int
		gaussian   bool
	}{{Gaussian, 2, 1e-5, 9, true}, {Laplace, 3, 1e-6, 5, false}} {
		e, d, err := EpisodeBudget(c.mech, c.eps, c.delta, c.k)
		if err != nil {
			t.Fatal(err)
		}
		sn, err := CalibrateScalar(c.mech, Tight, e, d, 1, 1)
		if err != nil {
			t.Fatal(err)
		}
		g, err := sn.Run(c.k, c.delta, Tight)
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(g.EpsilonRun-c.eps) > 1e-6*c.eps {
			t.Errorf("%s: eps_run %g, want %g", c.mech, g.EpsilonRun, c.eps)
		}
		f := g.Fields(true)
		if f.CalibratedFor != "run" || f.Episodes != c.k || (f.MuRun != nil) != c.gaussian || (f.RunAlternatives != nil) == c.gaussian {
			t.Errorf("%s: fields %+v", c.mech, f)
		}
	}
}

// ScaleKeys names the scale: sigma for Gaussian, b for Laplace, exactly one of them.
func TestScaleKeys(t *testing.T) {
	if s, b := ScaleKeys(Gaussian, 2); s == nil || b != nil || *s != 2 {
		t.Error("gaussian")
	}
	if s, b := ScaleKeys(Laplace, 3); s != nil || b == nil || *b != 3 {
		t.Error("laplace")
	}
}
