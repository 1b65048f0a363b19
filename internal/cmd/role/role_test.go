package role

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/dpsim/dpsim/internal/cli"
	"github.com/dpsim/dpsim/internal/roleproc"
	"github.com/dpsim/dpsim/pkg/bus"
	"github.com/dpsim/dpsim/pkg/contract"
	"github.com/dpsim/dpsim/pkg/endpoint"
	"github.com/dpsim/dpsim/pkg/wire"
)

func TestParseAgents(t *testing.T) {
	for _, tc := range []struct {
		in      string
		lo, hi  int
		wantErr string
	}{
		{"3", 3, 3, ""},
		{"0..24", 0, 24, ""},
		{" 5 .. 7 ", 5, 7, ""},
		{"7..5", 0, 0, "0 <= i <= j"},
		{"-1..2", 0, 0, "0 <= i <= j"},
		{"a..b", 0, 0, "want i..j"},
		{"", 0, 0, "want i..j"},
		{"1..2..3", 0, 0, "want i..j"},
	} {
		lo, hi, err := ParseAgents(tc.in)
		if tc.wantErr != "" {
			require.ErrorContains(t, err, tc.wantErr, tc.in)
			continue
		}
		require.NoError(t, err, tc.in)
		require.Equal(t, [2]int{tc.lo, tc.hi}, [2]int{lo, hi}, tc.in)
	}
}

func TestParseConfig(t *testing.T) {
	base := []string{"--nats-url", "nats://127.0.0.1:4222", "--run", "r1", "--scenario", "s.yaml"}
	for _, tc := range []struct {
		role    endpoint.Role
		args    []string
		wantErr string // "" ok; "help" flag.ErrHelp
		check   func(*testing.T, *roleproc.Config)
	}{
		{role: endpoint.Plant, args: base, check: func(t *testing.T, c *roleproc.Config) {
			require.Equal(t, "plant-0", c.Name())
			require.Equal(t, contract.DefaultTimeout, c.Timeout)
			require.False(t, c.SeedSet)
		}},
		{role: endpoint.Plant, args: append(base, "--seed", "42", "--id", "2", "--mode", "realtime", "--period", "10ms"), check: func(t *testing.T, c *roleproc.Config) {
			require.Equal(t, uint64(42), c.Seed)
			require.True(t, c.SeedSet)
			require.Equal(t, wire.Realtime, c.Mode)
			require.Equal(t, 10*time.Millisecond, c.Period)
			require.Equal(t, "plant-2", c.Name())
		}},
		{role: endpoint.Agent, args: append(base, "--agents", "4..7"), check: func(t *testing.T, c *roleproc.Config) {
			require.Equal(t, "agents-4-7", c.Name())
		}},
		{role: endpoint.Eavesdropper, args: append(base, "--transcript=false"), check: func(t *testing.T, c *roleproc.Config) {
			require.False(t, c.Transcript)
		}},
		{role: endpoint.Plant, args: []string{"--help"}, wantErr: "help"},
		{role: endpoint.Plant, args: []string{"--run", "r1", "--scenario", "s.yaml"}, wantErr: "no NATS server"},
		{role: endpoint.Plant, args: []string{"--nats-url", "nats://x:1", "--scenario", "s.yaml"}, wantErr: "--run is required"},
		{role: endpoint.Plant, args: []string{"--nats-url", "nats://x:1", "--run", "a.b", "--scenario", "s.yaml"}, wantErr: "--run"},
		{role: endpoint.Plant, args: []string{"--nats-url", "nats://x:1", "--run", "r1"}, wantErr: "--scenario or --plan is required"},
		{role: endpoint.Plant, args: append(base, "--plan", "p.json"), wantErr: "not both"},
		{role: endpoint.Cloud, args: []string{"--nats-url", "nats://x:1", "--run", "r1", "--plan", "cloud-0.plan.json"}, check: func(t *testing.T, c *roleproc.Config) {
			require.Equal(t, "cloud-0.plan.json", c.PlanPath)
		}},
		{role: endpoint.Plant, args: append(base, "--seed", "-3"), wantErr: "--seed"},
		{role: endpoint.Plant, args: append(base, "--mode", "warp"), wantErr: "--mode"},
		{role: endpoint.Plant, args: append(base, "--encoding", "xml"), wantErr: "--encoding"},
		{role: endpoint.Plant, args: append(base, "--timeout", "0s"), wantErr: "--timeout"},
		{role: endpoint.Plant, args: append(base, "--log-level", "loud"), wantErr: "--log-level"},
		{role: endpoint.Plant, args: append(base, "--agents", "1..2"), wantErr: "flag provided but not defined"},
		{role: endpoint.Cloud, args: append(base, "--seed", "1"), wantErr: "flag provided but not defined"},
		{role: endpoint.Agent, args: append(base, "--agents", "1..2", "--id", "1"), wantErr: "not both"},
		{role: endpoint.Agent, args: append(base, "extra"), wantErr: "unexpected argument"},
	} {
		t.Run(fmt.Sprintf("%s %v", tc.role, tc.args), func(t *testing.T) {
			t.Setenv(bus.EnvURL, "")
			c, err := parseConfig(tc.role, tc.args, io.Discard, io.Discard)
			switch tc.wantErr {
			case "":
				require.NoError(t, err)
				tc.check(t, c)
			case "help":
				require.True(t, errors.Is(err, flag.ErrHelp))
			default:
				require.ErrorContains(t, err, tc.wantErr)
				require.True(t, errors.Is(err, cli.ErrUsage), "a usage error (exit 2): %v", err)
			}
		})
	}
}

func TestNATSURLFromEnv(t *testing.T) {
	t.Setenv(bus.EnvURL, "nats://127.0.0.1:9999")
	c, err := parseConfig(endpoint.Cloud, []string{"--run", "r1", "--scenario", "s.yaml"}, io.Discard, io.Discard)
	require.NoError(t, err)
	require.Equal(t, "nats://127.0.0.1:9999", c.NATSURL)
}

func TestUsageTextsExplainEveryFlag(t *testing.T) {
	for role := range docs {
		var buf, errb strings.Builder
		_, err := parseConfig(role, []string{"--help"}, &buf, &errb)
		require.Empty(t, errb.String(), "an asked-for --help goes to stdout")
		require.True(t, errors.Is(err, flag.ErrHelp))
		out := buf.String()
		for _, f := range []string{"-nats-url", "-run ", "-scenario", "-point", "-id", "-out", "-mode", "-period", "-timeout", "-idle-timeout", "-log-level", "-parent-pid", "-encoding"} {
			require.Contains(t, out, f, "%s --help", role)
		}
	}
}

func ExampleParseAgents() {
	lo, hi, err := ParseAgents("25..49")
	fmt.Println(lo, hi, err, contract.ProcName(endpoint.Agent, lo, hi))
	// Output: 25 49 <nil> agents-25-49
}

// Role usage texts: the eavesdropper's --id and --mode say what they mean for it; a role run
// as its own binary names itself; --help goes to stdout, a bad flag's usage to stderr;
// --timeout 1ns is refused, naming the flag.
func TestRoleUsageTexts(t *testing.T) {
	var out, errb strings.Builder
	_, err := parseConfig(endpoint.Eavesdropper, []string{"--help"}, &out, &errb)
	require.ErrorIs(t, err, flag.ErrHelp)
	require.Empty(t, errb.String())
	help := out.String()
	require.Contains(t, help, "eavesdropper id: the <id> of its ctl subjects")
	require.NotContains(t, help, "the plant and the cloud of a loop share it")
	require.Contains(t, help, "the eavesdropper never paces itself")

	out.Reset()
	program[endpoint.Plant] = "plant"
	defer delete(program, endpoint.Plant)
	_, err = parseConfig(endpoint.Plant, []string{"-h"}, &out, &errb)
	require.ErrorIs(t, err, flag.ErrHelp)
	require.Contains(t, out.String(), "Usage: plant --run ID")
	require.NotContains(t, out.String(), "dpsim plant --run")

	out.Reset()
	_, err = parseConfig(endpoint.Cloud, []string{"--nope"}, &out, &errb)
	require.ErrorIs(t, err, cli.ErrUsage)
	require.Empty(t, out.String())
	require.Empty(t, errb.String(), "the error is returned once, not printed with 60 lines of help")
	require.ErrorContains(t, err, "flag provided but not defined: -nope (see 'dpsim cloud --help')")

	t.Setenv(bus.EnvURL, "")
	_, err = parseConfig(endpoint.Plant, []string{"--nats-url", "nats://x:1", "--run", "r", "--scenario", "s.yaml", "--timeout", "1ns"}, io.Discard, io.Discard)
	require.ErrorIs(t, err, cli.ErrUsage)
	require.ErrorContains(t, err, "--timeout 1ns: must be at least 1ms")
}
