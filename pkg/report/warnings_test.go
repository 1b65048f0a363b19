package report

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestNoiseDominatesWarning: a newcomer's 3-state plant whose noise swamps the control (final
// tracking MSE about 1e9 against a reference of scale 1) must be warned about, with the
// criterion stated, and its verdict must not read as an unqualified "all checks pass"; the
// paper's vehicle (MSE 3.5 against a reference of scale 1) gets no such warning.
func TestNoiseDominatesWarning(t *testing.T) {
	cases := []struct {
		name string
		path string
		warn bool
	}{
		{"noisy-3state", filepath.Join("testdata", "noisy-3state.yaml"), true},
		{"cloud-vehicle", shipped("cloud-vehicle"), false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rep, err := Build(fastInput(t, tc.path, 60))
			if err != nil {
				t.Fatal(err)
			}
			md := string(rep.Markdown)
			verdict := md[strings.Index(md, "**Verdict"):]
			verdict = verdict[:strings.Index(verdict, "\n")]
			warned := strings.Contains(md, "**the noise swamps the control**") && strings.Contains(md, "Criterion: the noise dominates the control when")
			if warned != tc.warn {
				t.Errorf("noise-dominance warning = %v, want %v:\n%s", warned, tc.warn, md[:min(len(md), 3000)])
			}
			if tc.warn && !strings.Contains(verdict, "warning: the noise swamps the control") {
				t.Errorf("the verdict hides the warning: %s", verdict)
			}
		})
	}
}
