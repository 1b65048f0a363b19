package main

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestExitCodes(t *testing.T) {
	for _, c := range []struct {
		args []string
		code int
		out  string // expected in stdout
		err  string // expected in stderr
	}{
		{nil, 2, "", "Commands:"},
		{[]string{"help"}, 0, "calibrate", ""},
		{[]string{"--help"}, 0, "Commands:", ""},
		{[]string{"help", "calibrate"}, 0, "", "--epsilon"},
		{[]string{"nope"}, 2, "", `unknown command "nope"`},
		{[]string{"calibrate", "--epsilon", "1", "--delta", "0.01"}, 0, "sigma", ""},
		{[]string{"calibrate", "--epsilon", "-1", "--delta", "0.01"}, 2, "", "--epsilon -1"},
		{[]string{"calibrate", "--scenario", "missing.yaml"}, 2, "", "missing.yaml"}, // a file that is not there: usage
		{[]string{"run", "missing.yaml"}, 2, "", "missing.yaml"},
		{[]string{"audit", "missing.yaml"}, 2, "", "missing.yaml"},
	} {
		var out, errb bytes.Buffer
		code := run(c.args, &out, &errb)
		require.Equal(t, c.code, code, "%v: stderr %s", c.args, errb.String())
		require.Contains(t, out.String(), c.out, c.args)
		require.Contains(t, errb.String(), c.err, c.args)
	}
}

// Every command in the table is reachable and explains its flags.
func TestEveryCommandHasHelp(t *testing.T) {
	for name, cmd := range commands() {
		require.Equal(t, name, cmd.Name)
		require.NotEmpty(t, cmd.Summary, name)
		var out, errb bytes.Buffer
		code := run([]string{name, "--help"}, &out, &errb)
		require.Contains(t, []int{0, 2}, code, name)
		require.NotEmpty(t, out.String()+errb.String(), name)
	}
}

// audit --fail-on-violation carries its own exit status through the dispatcher.
func TestViolationExitCode(t *testing.T) {
	var out, errb bytes.Buffer
	code := run([]string{"audit", "../../scenarios/audit-vehicle-iid-naive.yaml", "--trials", "500", "--fail-on-violation", "--json"}, &out, &errb)
	require.Equal(t, 3, code, errb.String())
	require.Contains(t, out.String(), `"verdict": "violation"`)
}
