package schema_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/dpsim/dpsim/pkg/endpoint"
	"github.com/dpsim/dpsim/pkg/plan"
	"github.com/dpsim/dpsim/pkg/scenario"
)

// The plan files pkg/plan writes for every role, cloud control and consensus, are valid
// against plan.json; a plan file with a key of the old format is not.
func TestPlanFilesValid(t *testing.T) {
	set := load(t)
	for _, name := range []string{"cloud-vehicle", "consensus-gaussian", "faults-agent-crash"} {
		s, err := scenario.Load("../../scenarios/" + name + ".yaml")
		if err != nil {
			t.Fatal(err)
		}
		pt := s.Expand()[0]
		p, err := plan.New(pt, plan.Options{})
		if err != nil {
			t.Fatal(err)
		}
		keeps := map[string]plan.Keep{
			"eavesdropper": plan.KeepNothing,
			"plant":        plan.KeepFor(endpoint.Plant, 0, 0),
			"agents 2..4":  plan.KeepFor(endpoint.Agent, 2, 4),
		}
		for who, k := range keeps {
			if pt.Kind == scenario.CloudControl && who == "agents 2..4" {
				continue
			}
			var buf bytes.Buffer
			if err := p.WriteFile(&buf, k); err != nil {
				t.Fatal(err)
			}
			if err := set.Validate("plan.json", buf.Bytes()); err != nil {
				t.Errorf("%s, %s's plan file: %v", name, who, err)
			}
			if _, err := plan.ParseFile(buf.Bytes()); err != nil {
				t.Errorf("%s, %s's plan file does not read back: %v", name, who, err)
			}
			if who == "plant" {
				bad := strings.Replace(buf.String(), `"format":"`+plan.FileFormat+`"`, `"format":"dpsim-plan/1"`, 1)
				if err := set.Validate("plan.json", []byte(bad)); err == nil {
					t.Errorf("%s: a plan file of another format is valid", name)
				}
				bad = strings.Replace(buf.String(), `"kappa_inv"`, `"KappaInv"`, 1)
				if err := set.Validate("plan.json", []byte(bad)); err == nil {
					t.Errorf("%s: a plan file with the key KappaInv is valid", name)
				}
			}
		}
	}
}
