package scenario

import (
	"math"
	"strings"
	"testing"

	"github.com/dpsim/dpsim/pkg/privacy"
)

const runBudgetDoc = `
name: t
kind: cloud-control
steps: 10
episodes: 16
plant: {A: 1, B: 1, C: 1}
controller: {K: 0.5, L: 0.5}
privacy: {PRIVACY}
`

func parsePrivacy(t *testing.T, privacyBody string) (*Scenario, error) {
	t.Helper()
	return Parse([]byte(strings.Replace(runBudgetDoc, "PRIVACY", privacyBody, 1)), "t.yaml")
}

// TestRunBudgetGaussian: privacy.run_epsilon with privacy.episodes calibrates each episode so that the k
// episodes together are (run_epsilon, delta)-DP: composing the per-episode budget gives it back.
func TestRunBudgetGaussian(t *testing.T) {
	s, err := parsePrivacy(t, "run_epsilon: 2, episodes: 16, delta: 1e-3")
	if err != nil {
		t.Fatal(err)
	}
	p := s.Privacy
	if p.Episodes != 16 || p.RunEpsilon != 2 || p.RunDelta != 1e-3 || p.Delta != 1e-3 {
		t.Fatalf("spec %+v", p)
	}
	y, err := privacy.KappaInverse(p.Epsilon, p.Delta)
	if err != nil {
		t.Fatal(err)
	}
	_, eps, err := privacy.GaussianRunEpsilon(y, 16, 1e-3)
	if err != nil || eps > 2*(1+1e-14) || math.Abs(eps-2) > 2e-9 {
		t.Errorf("per-episode eps %v composes to %v (%v), want 2", p.Epsilon, eps, err)
	}
	if len(s.Warnings) != 0 {
		t.Errorf("warnings %v", s.Warnings)
	}
}

func TestRunBudgetLaplaceAndSweep(t *testing.T) {
	s, err := parsePrivacy(t, "mechanism: laplace, run_epsilon: 1.6, episodes: 16")
	if err != nil {
		t.Fatal(err)
	}
	if p := s.Privacy; p.Delta != 0 || p.RunDelta != 0 || math.Abs(p.Epsilon-0.1) > 1e-15 {
		t.Errorf("laplace at delta 0: %+v, want eps 0.1 per episode", p)
	}
	s, err = parsePrivacy(t, "mechanism: laplace, run_epsilon: 1.6, episodes: 16, delta: 1e-3")
	if err != nil {
		t.Fatal(err)
	}
	if p := s.Privacy; p.Delta != 0 || p.RunDelta != 1e-3 || !(p.Epsilon > 0.1) {
		t.Errorf("laplace at run delta 1e-3: %+v, want per-episode eps above 1.6/16", p)
	}
	doc := strings.Replace(runBudgetDoc, "PRIVACY", "run_epsilon: 1, episodes: 4", 1) + "sweep: [{param: delta, values: [1e-2, 1e-5]}]\n"
	s, err = Parse([]byte(doc), "t.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, pt := range s.Expand() {
		p := pt.Privacy
		y, _ := privacy.KappaInverse(p.Epsilon, p.Delta)
		_, eps, _ := privacy.GaussianRunEpsilon(y, 4, p.RunDelta)
		if p.Delta != p.RunDelta || math.Abs(eps-1) > 1e-9 {
			t.Errorf("%s: %+v composes to %v", pt.Name, p, eps)
		}
	}
}

func TestRunBudgetWarnsWhenRunsExceedEpisodes(t *testing.T) {
	s, err := parsePrivacy(t, "run_epsilon: 1, episodes: 4, delta: 1e-2")
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Warnings) != 1 || !strings.Contains(s.Warnings[0], "privacy.episodes is 4 but episodes (top level) is 16") {
		t.Errorf("warnings %v", s.Warnings)
	}
}

// TestRunBudgetErrorsNameTheField: every misuse is reported on the field it concerns.
func TestRunBudgetErrorsNameTheField(t *testing.T) {
	for _, c := range []struct{ body, want string }{
		{"run_epsilon: 1, delta: 1e-2", "privacy.run_epsilon: needs privacy.episodes"},
		{"epsilon: 1, episodes: 4, delta: 1e-2", "privacy.episodes: needs privacy.run_epsilon"},
		{"epsilon: 1, run_epsilon: 1, episodes: 4, delta: 1e-2", "privacy.run_epsilon: give either epsilon"},
		{"run_epsilon: -1, episodes: 4, delta: 1e-2", "privacy.run_epsilon: -1 must be > 0"},
		{"run_epsilon: 1, episodes: 0, delta: 1e-2", "privacy.episodes: 0 must be >= 1"},
		{"run_epsilon: 1, episodes: 2.5, delta: 1e-2", "privacy.episodes: want an integer"},
		{"run_epsilon: 1, episodes: 4", "privacy.delta: missing"},
		{"mechanism: laplace, run_epsilon: 1, episodes: 4, delta: 1.5", "privacy.delta: 1.5 out of range: with run_epsilon"},
		{"delta: 1e-2", "privacy.epsilon: missing"},
		{"run_epsilon: 4, episodes: 2, delta: 1e-2, calibration: classic", "privacy.calibration: classic is valid only for epsilon < 1, but the per-episode epsilon from run_epsilon = 4"},
	} {
		_, err := parsePrivacy(t, c.body)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want %q", c.body, err, c.want)
		}
	}
	doc := strings.Replace(runBudgetDoc, "PRIVACY", "run_epsilon: 1, episodes: 4, delta: 1e-2", 1) + "sweep: [{param: epsilon, values: [1, 2]}]\n"
	if _, err := Parse([]byte(doc), "t.yaml"); err == nil || !strings.Contains(err.Error(), "give either epsilon") {
		t.Errorf("epsilon sweep with run_epsilon: %v", err)
	}
}
