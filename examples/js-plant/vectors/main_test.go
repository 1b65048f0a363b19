package main

import (
	"bytes"
	"os"
	"testing"
)

// The committed vectors are what Go's math/rand/v2 computes today: a change in Go's generator
// (or in this program) shows here, without Node.js (regenerate with
// `go run ./examples/js-plant/vectors > examples/js-plant/vectors/chacha8.json`).
func TestVectorsCurrent(t *testing.T) {
	var b bytes.Buffer
	if err := write(&b); err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile("chacha8.json")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(b.Bytes(), want) {
		t.Fatal("chacha8.json is not what Go computes: regenerate it (go run ./examples/js-plant/vectors > examples/js-plant/vectors/chacha8.json) and run node --test examples/js-plant")
	}
}
