package farm

import (
	"slices"
	"strings"
	"sync"

	"github.com/dpsim/dpsim/pkg/record"
)

// Degradation kinds: what went wrong with the workers, each named in Report.Degradations with
// the worker that caused it. None changes the result - the answers folded are the chunks'
// answers of their holders, bit-identical whichever honest worker played them, and a worker
// caught lying has every chunk it answered played again - they cost time. A chunk that fails at
// the coordinator too fails the job instead.
const (
	KindReissued    = "chunk re-issued"    // its worker went silent (no heartbeat for Config.Silence; in the work queue: for AckWait)
	KindLost        = "worker lost"        // a worker went silent holding a chunk
	KindDuplicate   = "late answer"        // an answer of a chunk decided, or re-issued meanwhile: ignored
	KindInvalid     = "invalid answer"     // an answer that does not fit its chunk (shape, range, non-finite): refused
	KindForeign     = "foreign answer"     // an answer of a chunk its sender does not hold: refused, not folded
	KindOverdue     = "chunk overdue"      // held past the chunk bound (heartbeats or not): re-issued to another
	KindFailed      = "failed answer"      // an error answer: the chunk played by the coordinator
	KindMismatch    = "mismatch"           // two computations of a chunk differed: the coordinator's decided
	KindQuarantined = "worker quarantined" // caught lying (or failing): its answers ignored, its chunks played again
	KindUndelivered = "chunk undelivered"  // the work queue delivered it MaxDeliver times without an answer: the coordinator played it
)

// collector gathers the Report under a lock (the scheduler writes, the commands read).
type collector struct {
	mu      sync.Mutex
	r       record.Dispatch
	details map[[2]string]int // degradations listed by (worker, kind)
}

// MaxDetails is how many degradations of one kind by one worker are listed; the others are
// counted only (a worker that floods the coordinator with foreign answers does not flood the
// outputs).
const MaxDetails = 20

func (c *collector) worker(name string) *record.WorkerReport {
	for i := range c.r.Workers {
		if c.r.Workers[i].Name == name {
			return &c.r.Workers[i]
		}
	}
	c.r.Workers = append(c.r.Workers, record.WorkerReport{Name: name})
	return &c.r.Workers[len(c.r.Workers)-1]
}

func (c *collector) issued(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.worker(name).Issued++
}

func (c *collector) answered(name string, episodes int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	w := c.worker(name)
	w.Answered++
	w.Episodes += episodes
}

// decided counts a chunk whose result is decided (verified: two computations agreed; local:
// the coordinator played it).
func (c *collector) decided(verified, local bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.r.Chunks++
	if verified {
		c.r.Verified++
	}
	if local {
		c.r.Local++
	}
}

// restore counts chunks restored from the durable journal (decided by an earlier coordinator).
func (c *collector) restore(n int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.r.Restored += n
}

func (c *collector) quarantine(q record.Quarantine) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.r.Quarantined = append(c.r.Quarantined, q)
}

// recomputed adds chunk ref, computed by quarantined worker, to the chunks played again, and
// takes back its count among the decided ones (decided, verified: how it was counted).
func (c *collector) recomputed(worker string, ref record.ChunkRef, decided, verified bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.r.Recomputed++
	if decided {
		c.r.Chunks--
		if verified {
			c.r.Verified--
		}
	}
	for i := range c.r.Quarantined {
		if c.r.Quarantined[i].Worker == worker {
			c.r.Quarantined[i].Chunks = append(c.r.Quarantined[i].Chunks, ref)
		}
	}
}

func (c *collector) degrade(d record.Degradation) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.details == nil {
		c.details = map[[2]string]int{}
	}
	key := [2]string{d.Worker + strings.Join(d.Workers, "/"), d.Kind}
	if c.details[key]++; c.details[key] <= MaxDetails {
		c.r.Degradations = append(c.r.Degradations, d)
	}
	counter := map[string]*int{KindReissued: &c.r.Reissued, KindLost: &c.r.Lost, KindDuplicate: &c.r.Duplicates,
		KindInvalid: &c.r.Invalid, KindForeign: &c.r.Foreign, KindOverdue: &c.r.Overdue, KindFailed: &c.r.Failed,
		KindMismatch: &c.r.Mismatches, KindUndelivered: &c.r.Undelivered}[d.Kind]
	if counter != nil {
		*counter++
	}
}

// snapshot returns a copy of the report, workers by name.
func (c *collector) snapshot() *record.Dispatch {
	c.mu.Lock()
	defer c.mu.Unlock()
	r := c.r
	r.Workers = slices.Clone(c.r.Workers)
	slices.SortFunc(r.Workers, func(a, b record.WorkerReport) int { return strings.Compare(a.Name, b.Name) })
	r.Degradations = slices.Clone(c.r.Degradations)
	r.Quarantined = make([]record.Quarantine, 0, len(c.r.Quarantined))
	for _, q := range c.r.Quarantined {
		q.Chunks = slices.Clone(q.Chunks)
		r.Quarantined = append(r.Quarantined, q)
	}
	r.CredentialsFiles = slices.Clone(c.r.CredentialsFiles)
	return &r
}
