package main

import (
	"bytes"
	"os"
	"testing"
)

// The committed vectors are what dpsim's exact samplers and rounding (pkg/noise, pkg/rng)
// compute today: a change to the noise contract (docs/protocol.md section 12) shows here,
// without Node.js. If the change is intended, the document, these vectors (`go run
// ./examples/js-plant/vectors/exact > examples/js-plant/vectors/exact.json`) and the JavaScript
// plant change together.
func TestExactVectorsCurrent(t *testing.T) {
	var b bytes.Buffer
	if err := write(&b); err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile("../exact.json")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(b.Bytes(), want) {
		t.Fatal("exact.json is not what pkg/noise computes: the noise contract changed; regenerate it (go run ./examples/js-plant/vectors/exact > examples/js-plant/vectors/exact.json) and run node --test examples/js-plant")
	}
}
