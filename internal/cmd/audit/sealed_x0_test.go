package auditcmd

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/require"

	"github.com/dpsim/dpsim/pkg/audit"
	"github.com/dpsim/dpsim/pkg/bus"
	"github.com/dpsim/dpsim/pkg/plan"
	"github.com/dpsim/dpsim/pkg/scenario"
	"github.com/dpsim/dpsim/pkg/wire"
)

// secretForms are the byte strings that would give a secret value away: its decimal text (as
// the JSON encoding and fmt print it) and its float64 bytes, little- and big-endian.
func secretForms(v float64) [][]byte {
	var le, be [8]byte
	binary.LittleEndian.PutUint64(le[:], math.Float64bits(v))
	binary.BigEndian.PutUint64(be[:], math.Float64bits(v))
	return [][]byte{[]byte(strconv.FormatFloat(v, 'g', -1, 64)), []byte(fmt.Sprint(v)), le[:], be[:]}
}

// The challenger's x(0) is sealed: a wire audit on an open external server (no permissions:
// anyone may subscribe to anything), with an anonymous subscriber to dpsim-challenger.> that
// records every payload. None of the game's two secrets can be recovered from what it read: no
// payload decodes to a message carrying a secret value, and no payload's bytes hold a secret
// value's decimal text or float64 bytes. The vehicle's worst pair is (0, 0) and (1, 0), whose
// digits are everywhere in any message: the audit plays the same game shifted to values that are
// distinctive (the pair of a copy of the scenario), and its outcome still equals the fast
// engine's for the same seed.
func TestChallengerX0SealedOnOpenServer(t *testing.T) {
	data, err := os.ReadFile(scenarioPath("audit-vehicle-structured"))
	require.NoError(t, err)
	x0, x0p := []float64{0.7318029946511, -0.4182736455917}, []float64{1.7318029946511, -0.4182736455917}
	path := filepath.Join(t.TempDir(), "audit-vehicle-structured-shifted.yaml")
	data = append(data, fmt.Sprintf("  pair: {x0: [%v, %v], x0prime: [%v, %v]}\n", x0[0], x0[1], x0p[0], x0p[1])...)
	require.NoError(t, os.WriteFile(path, data, 0o644))
	s, err := scenario.Load(path)
	require.NoError(t, err)
	p, err := plan.New(s.Expand()[0], plan.Options{})
	require.NoError(t, err)
	g, err := audit.NewGame(p, audit.GameOptions{Adjacency: s.Audit.Adjacency, Pair: s.Audit.Pair})
	require.NoError(t, err)
	require.Equal(t, x0, g.X0(0))
	require.Equal(t, x0p, g.X0(1))
	var secrets [][]byte
	for _, v := range append(append([]float64{}, x0...), x0p...) {
		secrets = append(secrets, secretForms(v)...)
	}

	srv, err := bus.StartEmbedded(bus.EmbeddedOptions{})
	require.NoError(t, err)
	t.Cleanup(srv.Shutdown)
	nc, err := nats.Connect(srv.URL(), nats.Name("anonymous")) // no credentials: the server has none
	require.NoError(t, err)
	t.Cleanup(nc.Close)
	var mu sync.Mutex
	var heard []*nats.Msg
	_, err = nc.Subscribe(wire.ChallengerPrefix+">", func(m *nats.Msg) {
		mu.Lock()
		heard = append(heard, m)
		mu.Unlock()
	})
	require.NoError(t, err)
	require.NoError(t, nc.Flush())

	const trials = 40
	cmd := exec.Command(dpsimBin, "audit", path, "--engine", "wire", "--trials", strconv.Itoa(trials), "--nats-url", srv.URL(),
		"--seed", "77", "--json", "--log-level", "warn")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	require.NoError(t, cmd.Run(), errb.String())
	wireRep := decodeReport(t, out.String())
	require.NoError(t, nc.Flush())

	mu.Lock()
	defer mu.Unlock()
	require.Len(t, heard, 2*trials, "one x0 message per trial")
	for i, m := range heard {
		raw := bytes.Clone(m.Data)
		for k, vs := range m.Header {
			raw = append(append(raw, k...), fmt.Sprint(vs)...)
		}
		for _, sec := range secrets {
			require.False(t, bytes.Contains(raw, sec), "payload %d on %s holds the secret bytes %q", i, m.Subject, sec)
		}
		var msg wire.Message
		if wire.Decode(m.Data, &msg) != nil {
			continue
		}
		require.Equal(t, wire.CtlX0, msg.Kind)
		for _, v := range msg.Values {
			for _, sec := range append(append([]float64{}, x0...), x0p...) {
				require.NotEqual(t, sec, v, "payload %d carries a secret value", i)
			}
		}
	}

	fastOut, _, err := runIn(t, path, "--trials", strconv.Itoa(trials), "--json", "--seed", "77")
	require.NoError(t, err)
	fast := decodeReport(t, fastOut)
	require.Equal(t, 2*trials, wireRep.Episodes)
	require.Equal(t, fast.Verdict, wireRep.Verdict)
	require.Equal(t, fast.EpsilonLBCP, wireRep.EpsilonLBCP)
	require.Equal(t, fast.EpsilonLBGDP, wireRep.EpsilonLBGDP)
}
