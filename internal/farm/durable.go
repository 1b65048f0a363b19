package farm

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/dpsim/dpsim/internal/atomicfile"
	"github.com/dpsim/dpsim/pkg/bus"
)

// The durable farm (Config.Durable, --dispatch-durable): the embedded server keeps a JetStream
// store under the command's --out, and every chunk result the coordinator accepted - judged as
// any other: valid, and checked by a second computation when the secret draw picked it - is
// appended to a journal stream (one key per job and chunk) before it counts. A coordinator
// started again on the same directory (after a crash, a SIGKILL, a reboot) reads the journal
// back when it plays each job, restores the chunks found there as decided, and plays only the
// rest: the results are deterministic functions of (job, chunk), so the fold is the
// uninterrupted one, bit for bit. A manifest beside the store names the scenario and each job
// (kind, point, a hash of its parameters and of its chunks): a command that differs (another
// seed, options, trials, scenario) is refused rather than mixed with the journal.
//
// Only the coordinator's account may use JetStream's API (JournalAPI, the journal's subjects): a
// worker publishes on its own protocol subjects and pulls from the work queue only (queue.go),
// so it cannot write the journal. A chunk
// result taken back later (its worker quarantined) is tombstoned (an empty record) before the
// coordinator plays it again.

// JournalDir is the durable farm's directory under --out: the JetStream store and the manifest.
const JournalDir = "farm-jetstream"

const (
	journalStream = "DPSIM_FARM_JOURNAL"
	journalPrefix = "dpsim.journal."
	manifestName  = "manifest.json"
	// recordBound is a journal record's bytes at most: a chunk's result fits in one NATS message
	// (1 MiB, the server's payload limit) and the record's framing in the rest.
	recordBound = 1<<20 + 1<<10
	// journalTimeout bounds one journal operation (an append waits for the server's store).
	journalTimeout = 10 * time.Second
)

// manifest is what the journal was written for: the scenario and the jobs in their order.
type manifest struct {
	Scenario string `json:"scenario_sha256"`
	// Session names the jobs (Job.ID: session-seq) of every coordinator of the journal, so that
	// the chunks and answers in the work queues (queue.go) keep their job across them.
	Session string     `json:"session,omitempty"`
	Jobs    []jobPrint `json:"jobs"`
}

// jobPrint identifies a job across coordinators (a job's ID is per session).
type jobPrint struct {
	Kind   string `json:"kind"`
	Point  int    `json:"point"`
	Params string `json:"params_sha256"` // the kind's parameters: seed, options
	Chunks int    `json:"chunks"`
	Spans  string `json:"spans_sha256"` // the chunks' ranges: the trials or episodes
}

// journalRecord is one accepted chunk result in the journal (Encode); an empty record is a
// result taken back.
type journalRecord struct {
	Job      string // the job's print (jobPrint.key): a record of another job is never restored
	Lo, Hi   int
	Result   []byte
	By       string // the worker (or the coordinator) that computed it
	Verified bool   // a second computation agreed with it
}

// durable is the coordinator's journal.
type durable struct {
	dir string
	man manifest
	j   *bus.Journal
	// spent is the time the scheduler's loop waited for the journal, over writes records
	// (the loop's goroutine only; the benchmark reads them when no job runs).
	spent  time.Duration
	writes int
}

// openDurable prepares dir (mode 0700) and its manifest for scenario: a manifest of another
// scenario is refused.
func openDurable(dir string, scenario []byte) (*durable, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("farm: --dispatch-durable: %w", err)
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		return nil, fmt.Errorf("farm: --dispatch-durable: %w", err)
	}
	d := &durable{dir: dir}
	sum := sha256.Sum256(scenario)
	want := hex.EncodeToString(sum[:])
	data, err := os.ReadFile(filepath.Join(dir, manifestName))
	switch {
	case errors.Is(err, fs.ErrNotExist):
		d.man = manifest{Scenario: want, Jobs: []jobPrint{}}
		return d, d.save()
	case err != nil:
		return nil, fmt.Errorf("farm: --dispatch-durable: %w", err)
	}
	if err := json.Unmarshal(data, &d.man); err != nil {
		return nil, fmt.Errorf("farm: --dispatch-durable: %s: %w", filepath.Join(dir, manifestName), err)
	}
	if d.man.Scenario != want {
		return nil, fmt.Errorf("farm: --dispatch-durable: the journal in %s was written for another scenario file (sha256 %.12s, this one %.12s): resume with the same scenario, or give another --out (or remove %s)",
			dir, d.man.Scenario, want, dir)
	}
	return d, nil
}

// session is the journal's session: the manifest's, else fresh (entered there).
func (d *durable) session(fresh string) (string, error) {
	if d.man.Session == "" {
		d.man.Session = fresh
		if err := d.save(); err != nil {
			return "", err
		}
	}
	return d.man.Session, nil
}

func (d *durable) save() error {
	data, err := json.MarshalIndent(d.man, "", "  ")
	if err != nil {
		return err
	}
	if err := atomicfile.WriteFile(filepath.Join(d.dir, manifestName), append(data, '\n'), 0o600); err != nil {
		return fmt.Errorf("farm: --dispatch-durable: manifest: %w", err)
	}
	return nil
}

// records is how many records the jobs of the manifest may hold: one per chunk.
func (d *durable) records() int64 {
	n := int64(0)
	for _, p := range d.man.Jobs {
		n += int64(p.Chunks)
	}
	return max(n, 1)
}

// limits are the journal's limits sized to the jobs of the manifest.
func (d *durable) limits() (msgs, bytes int64) { n := d.records(); return n, n * recordBound }

// open opens the journal on conn, sized to the jobs the manifest holds.
func (d *durable) open(conn *bus.Conn) error {
	ctx, cancel := context.WithTimeout(context.Background(), journalTimeout)
	defer cancel()
	msgs, bytes := d.limits()
	j, err := conn.Journal(ctx, bus.JournalOptions{Stream: journalStream, Subjects: journalPrefix + ">",
		MaxMsgs: msgs, MaxBytes: bytes, MaxMsgSize: recordBound})
	if err != nil {
		return fmt.Errorf("farm: --dispatch-durable: %w", err)
	}
	d.j = j
	return nil
}

// printOf identifies job j of work w.
func printOf(j *Job, w Work) jobPrint {
	p := sha256.Sum256(j.Params)
	h := sha256.New()
	for _, sp := range w.Spans {
		fmt.Fprintf(h, "%d %d\n", sp.Lo, sp.Hi)
	}
	return jobPrint{Kind: j.Kind, Point: j.Point, Params: hex.EncodeToString(p[:]), Chunks: len(w.Spans), Spans: hex.EncodeToString(h.Sum(nil))}
}

// subject is the journal's key of chunk i of the seq-th job.
func (d *durable) subject(seq, i int) string {
	return journalPrefix + strconv.Itoa(seq) + "." + strconv.Itoa(i)
}

// begin enters the seq-th job (j, w) in the manifest, or checks it against the entry a
// coordinator before wrote there (a mismatch is refused), and sizes the journal to it.
func (d *durable) begin(seq int, j *Job, w Work) error {
	p := printOf(j, w)
	if seq <= len(d.man.Jobs) {
		if was := d.man.Jobs[seq-1]; was != p {
			return fmt.Errorf("farm: --dispatch-durable: the journal in %s was written by another command: its job %d was %s, this one is %s; resume with the same command (scenario, seed, options, trials), or give another --out (or remove %s)",
				d.dir, seq, describe(was), describe(p), d.dir)
		}
		return nil
	}
	d.man.Jobs = append(d.man.Jobs, p)
	if err := d.save(); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), journalTimeout)
	defer cancel()
	msgs, bytes := d.limits()
	return d.j.Resize(ctx, msgs, bytes)
}

// key is the print as one string, carried by each of the job's records.
func (p jobPrint) key() string {
	return fmt.Sprintf("%s/%d/%d/%s/%s", p.Kind, p.Point, p.Chunks, p.Params, p.Spans)
}

func describe(p jobPrint) string {
	return fmt.Sprintf("%s of point %d in %d chunks (parameters %.12s, chunks %.12s)", p.Kind, p.Point, p.Chunks, p.Params, p.Spans)
}

// restore reads back the journaled results of the seq-th job's chunks (nil: none there, or
// taken back): each must be of this job (a store whose manifest was removed may hold another's),
// of its chunk's range and pass the job's judge, else it is played again.
func (d *durable) restore(seq int, w Work, check func(*answer) error) ([]*answer, error) {
	job := d.man.Jobs[seq-1].key()
	out := make([]*answer, len(w.Spans))
	ctx, cancel := context.WithTimeout(context.Background(), journalTimeout)
	defer cancel()
	for i, sp := range w.Spans {
		data, ok, err := d.j.Last(ctx, d.subject(seq, i))
		if err != nil {
			return nil, fmt.Errorf("farm: --dispatch-durable: %w", err)
		}
		if !ok || len(data) == 0 {
			continue
		}
		var r journalRecord
		if err := Decode(data, &r); err != nil || r.Job != job || (Span{r.Lo, r.Hi}) != sp {
			continue
		}
		a := &answer{Worker: r.By, Lo: r.Lo, Hi: r.Hi, Result: r.Result}
		if check(a) != nil {
			continue
		}
		out[i] = a
	}
	return out, nil
}

// append journals chunk i's decided result (seq: its job's) and returns once it is stored.
func (d *durable) append(seq, i int, cs *chunkState) error {
	data, err := Encode(journalRecord{Job: d.man.Jobs[seq-1].key(), Lo: cs.Lo, Hi: cs.Hi, Result: cs.result.Result, By: cs.by, Verified: cs.verified})
	if err != nil {
		return err
	}
	return d.write(seq, i, data)
}

// retract tombstones chunk i's journaled result (taken back: its worker was quarantined).
func (d *durable) retract(seq, i int) error { return d.write(seq, i, nil) }

func (d *durable) write(seq, i int, data []byte) error {
	ctx, cancel := context.WithTimeout(context.Background(), journalTimeout)
	defer cancel()
	start := time.Now()
	defer func() { d.spent += time.Since(start); d.writes++ }()
	if err := d.j.Append(ctx, d.subject(seq, i), data); err != nil {
		return fmt.Errorf("farm: --dispatch-durable: %w", err)
	}
	return nil
}

// journalName is who a restored chunk's result is attributed to.
const journalName = "journal"

// resume enters js's job in the journal and restores its journaled chunks as decided (before
// the scheduler sees the job: restored chunks are neither issued nor drawn for a check - an
// earlier coordinator judged them - and count as restored in the report).
func (c *Coordinator) resume(js *jobState, w Work) error {
	seq := js.job.seq
	if err := c.dur.begin(seq, js.job, w); err != nil {
		return err
	}
	got, err := c.dur.restore(seq, w, js.check)
	if err != nil {
		return err
	}
	n := 0
	for i, a := range got {
		if a == nil {
			continue
		}
		cs := js.chunks[i]
		cs.result, cs.by, cs.final, cs.restored = a, journalName, true, true
		js.left--
		js.done += cs.Hi - cs.Lo
		n++
	}
	if n > 0 {
		c.rep.restore(n)
		c.log.Info().Str("job", js.job.ID).Int("chunks", n).Int("of", len(js.chunks)).Str("journal", c.dur.dir).Msg("chunks restored from the durable journal: playing the rest")
	}
	return nil
}
