package run_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/foxglove/mcap/go/mcap"
	"github.com/stretchr/testify/require"

	"github.com/dpsim/dpsim/internal/busrec"
	"github.com/dpsim/dpsim/pkg/record"
	"github.com/dpsim/dpsim/pkg/wire"
)

// recordSummary is what these tests read of summary.json: the recording and each process's
// name, point and published messages (its connection's out_msgs).
type recordSummary struct {
	Recording *record.Recording `json:"recording"`
	Processes []struct {
		Name  string         `json:"name"`
		Point int            `json:"point"`
		Conn  wire.ConnStats `json:"conn"`
	} `json:"processes"`
}

func readRecordSummary(t *testing.T, dir string) recordSummary {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, "summary.json"))
	require.NoError(t, err)
	var s recordSummary
	require.NoError(t, json.Unmarshal(data, &s))
	require.NotNil(t, s.Recording)
	return s
}

// publisher is the process that published on subject, after its run id (the point's): the
// sender of a data subject, the <role>.<id> of ctl.ready/done/rejoin/result, the launcher for
// ctl.episode and ctl.stop.
func publisher(t *testing.T, subject string) string {
	sub, err := wire.ParseSubject(subject)
	require.NoError(t, err, subject)
	switch {
	case !sub.IsCtl():
		return sub.Run + "/" + strings.Replace(sub.Sender(), ".", "-", 1)
	case len(sub.Ctl) == 3:
		return sub.Run + "/" + sub.Ctl[1] + "-" + sub.Ctl[2]
	}
	return sub.Run + "/launcher"
}

// A recording of a run over NATS (binary encoding for the consensus run) holds every subject of
// the run as a channel with its schema and JSON messages, as many from each process as it
// published (its out_msgs, and its ctl.result, sent after its counters were taken), the run's
// metadata, and its summary section.
func TestRecordRun(t *testing.T) {
	for _, c := range []struct {
		name string
		args []string
	}{
		{"cloud-vehicle", []string{scenarioPath("cloud-vehicle"), "--episodes", "3"}},
		{"consensus", []string{scenarioPath("consensus-gaussian"), "--episodes", "2", "--encoding", "binary"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			args := append([]string{"run"}, c.args...)
			code, _, stderr := runDpsim(t, 2*time.Minute, append(args, "--out", dir, "--record", "bus.mcap", "--log-level", "warn", "--progress=false")...)
			require.Equal(t, 0, code, stderr)
			sum := readRecordSummary(t, dir)
			path := filepath.Join(dir, "bus.mcap")
			require.True(t, sum.Recording.Complete, sum.Recording.Error)
			require.Zero(t, sum.Recording.Dropped)

			f, err := os.Open(path)
			require.NoError(t, err)
			defer f.Close()
			rd, err := mcap.NewReader(f)
			require.NoError(t, err)
			info, err := rd.Info()
			require.NoError(t, err)
			require.NotNil(t, info.Statistics, "the summary section")
			c, err := busrec.Scan(path, nil)
			require.NoError(t, err)
			// the messages that came with NATS headers (in flight: Dpsim-Episodes) have their
			// header records on the companion channels "<subject>#headers"
			require.Equal(t, sum.Recording.Messages+c.Headers, info.Statistics.MessageCount)
			subjects := 0
			perProc := map[string]uint64{}
			for id, ch := range info.Channels {
				s := info.Schemas[ch.SchemaID]
				require.NotNil(t, s, ch.Topic)
				require.Equal(t, "jsonschema", s.Encoding)
				if _, ok := busrec.IsHeaders(ch.Topic); ok {
					require.Equal(t, busrec.HeadersSchemaName, s.Name)
					continue
				}
				subjects++
				require.Equal(t, "dpsim/"+strings.TrimSuffix(busrec.SchemaFor(ch.Topic), ".json"), s.Name)
				require.Equal(t, "json", ch.MessageEncoding)
				require.True(t, strings.HasPrefix(ch.Topic, wire.Prefix+"."), "never the challenger's line: %s", ch.Topic)
				perProc[publisher(t, ch.Topic)] += info.Statistics.ChannelMessageCounts[id]
			}
			require.Equal(t, sum.Recording.Channels, subjects)
			require.Positive(t, c.Headers)
			require.True(t, c.Complete)
			md := c.Metadata[busrec.MetadataName]
			require.NotEmpty(t, md["seed"])
			for _, p := range sum.Processes {
				run := md["run_id_p"+strconv.Itoa(p.Point)]
				require.Equal(t, p.Conn.OutMsgs+1, perProc[run+"/"+p.Name], "%s of %s: its published messages and its result", p.Name, run)
				require.Positive(t, perProc[run+"/launcher"], "ctl.episode, ctl.stop")
			}

			it, err := rd.Messages()
			require.NoError(t, err)
			n := uint64(0)
			for {
				_, _, m, err := it.NextInto(nil)
				if err != nil {
					break
				}
				require.True(t, json.Valid(m.Data), "JSON, also what travelled binary")
				require.NotZero(t, m.PublishTime)
				n++
			}
			require.Equal(t, info.Statistics.MessageCount, n)

			report, err := os.ReadFile(filepath.Join(dir, "report.md"))
			require.NoError(t, err)
			require.Contains(t, string(report), "Recording: ")
		})
	}
}

// The recording is bounded: past --record-limit messages are dropped and counted, and the file
// is still closed with its summary.
func TestRecordLimit(t *testing.T) {
	dir := t.TempDir()
	code, _, stderr := runDpsim(t, 2*time.Minute, "run", scenarioPath("cloud-vehicle"), "--episodes", "3", "--out", dir,
		"--record", "bus.mcap", "--record-limit", "8KiB", "--log-level", "warn", "--progress=false")
	require.Equal(t, 0, code, stderr)
	sum := readRecordSummary(t, dir)
	require.True(t, sum.Recording.Complete)
	require.Positive(t, sum.Recording.Dropped)
	require.LessOrEqual(t, sum.Recording.Bytes, int64(8<<10))
	c, err := busrec.Scan(filepath.Join(dir, "bus.mcap"), nil)
	require.NoError(t, err)
	require.True(t, c.Complete)
	require.Equal(t, sum.Recording.Messages, c.Messages)
	md, err := os.ReadFile(filepath.Join(dir, "report.md"))
	require.NoError(t, err)
	require.Contains(t, string(md), "dropped past --record-limit")
}

// --record is refused where the fast engine's episodes are not played in the process, and for
// a name that is no .mcap file.
func TestRecordRefused(t *testing.T) {
	for _, args := range [][]string{{"--engine", "fast", "--dispatch", "--record", "x.mcap"}, {"--engine", "fast", "--shard", "0/2", "--seed", "1", "--record", "x.mcap"}, {"--record", "x.json"}} {
		code, _, stderr := runDpsim(t, time.Minute, append([]string{"run", scenarioPath("cloud-vehicle"), "--out", t.TempDir()}, args...)...)
		require.Equal(t, 2, code, stderr)
		require.Contains(t, stderr, "--record")
	}
}

// waitSize waits until the file at path holds at least n bytes.
func waitSize(t *testing.T, l *started, path string, n int64) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		if fi, err := os.Stat(path); err == nil && fi.Size() >= n {
			return
		}
		if time.Now().After(deadline) || l.cmd.ProcessState != nil {
			_ = l.cmd.Process.Kill()
			t.Fatalf("the recording never reached %d bytes: %s", n, l.stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// A recording run killed with SIGKILL leaves a file without its summary section whose complete
// chunks read back with the MCAP lexer (busrec.Scan); Ctrl-C (SIGINT) closes it properly.
func TestRecordKilled(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGKILL, syscall.SIGINT} {
		t.Run(sig.String(), func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "bus.mcap")
			l := start(t, "run", scenarioPath("cloud-vehicle"), "--episodes", "1000000", "--out", dir, "--record", "bus.mcap",
				"--log-level", "warn", "--progress=false")
			waitSize(t, l, path, 3*busrec.DefaultChunkSize/4) // a few compressed chunks
			require.NoError(t, l.cmd.Process.Signal(sig))
			code := l.wait(t, time.Minute)
			require.NotEqual(t, 0, code)
			c, err := busrec.Scan(path, nil)
			require.NoError(t, err)
			require.Greater(t, c.Messages, uint64(100))
			total := uint64(0)
			for _, ch := range c.Channels {
				total += ch.Messages
			}
			require.Equal(t, c.Messages, total)
			if sig == syscall.SIGKILL {
				waitNoProcessUnder(t, dir) // the role processes end when their server is gone
				require.False(t, c.Complete, "killed: no summary section")
				require.NotEmpty(t, c.Truncated)
				return
			}
			require.True(t, c.Complete, c.Truncated)
			sum := readRecordSummary(t, dir)
			require.True(t, sum.Recording.Complete, sum.Recording.Error)
			require.Equal(t, sum.Recording.Messages, c.Messages)
		})
	}
}

// waitNoProcessUnder waits until no process names dir on its command line (the role processes
// of a launcher killed with SIGKILL end by themselves once their server is gone; until then
// they may still write their files under dir, which the test's cleanup removes).
func waitNoProcessUnder(t *testing.T, dir string) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		var left []string
		cmdlines, _ := filepath.Glob("/proc/[0-9]*/cmdline")
		for _, f := range cmdlines {
			b, err := os.ReadFile(f)
			if err == nil && bytes.Contains(b, []byte(dir)) && running(pidOf(f)) {
				left = append(left, string(bytes.ReplaceAll(b, []byte{0}, []byte{' '})))
			}
		}
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("processes of the killed run still running after 2 minutes: %q", left)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// pidOf is the pid of /proc/<pid>/cmdline.
func pidOf(cmdline string) int {
	pid, _ := strconv.Atoi(filepath.Base(filepath.Dir(cmdline)))
	return pid
}
