package main

import (
	"encoding/json"
	"os"
	"testing"
)

// The committed vectors still say what dpsim's plant makes of each x0 message: the x(0) it
// opens or the reason it drops it (pkg/contract OpenX0, pkg/bus CurveKey.Open and the plant's check of
// nx finite values) - a change to the sealed x(0) of docs/protocol.md section 7 shows here,
// without Node.js. The boxes' nonces and keys are random: if the change is intended, regenerate
// the file (go run ./examples/js-plant/vectors/sealed > examples/js-plant/vectors/sealed.json),
// change the JavaScript plant and run node --test examples/js-plant/test/.
func TestSealedVectorsOpen(t *testing.T) {
	data, err := os.ReadFile("../sealed.json")
	if err != nil {
		t.Fatal(err)
	}
	var v Vectors
	if err := json.Unmarshal(data, &v); err != nil {
		t.Fatal(err)
	}
	if len(v.Cases) < 20 {
		t.Fatalf("sealed.json holds %d cases", len(v.Cases))
	}
	opened := 0
	for _, c := range v.Cases {
		x0, reason, err := Open(c)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, x := range x0 {
			got = append(got, hexf(x))
		}
		if reason != c.Reason || len(got) != len(c.X0) {
			t.Fatalf("case %q: dpsim gives x0 %v reason %q, the file says %v %q", c.Name, got, reason, c.X0, c.Reason)
		}
		for i := range got {
			if got[i] != c.X0[i] {
				t.Fatalf("case %q: dpsim gives x0 %v, the file says %v", c.Name, got, c.X0)
			}
		}
		if reason == "" {
			opened++
		}
	}
	if opened < 3 {
		t.Fatalf("only %d cases open", opened)
	}
}
