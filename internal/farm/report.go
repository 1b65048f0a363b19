package farm

import (
	"fmt"
	"slices"
	"strings"
	"sync"
)

// Degradation kinds: what went wrong with the workers, each named in Report.Degradations with
// the worker that caused it. None changes the result - the answers folded are the chunks'
// answers of their holders, bit-identical whichever honest worker played them, and a worker
// caught lying has every chunk it answered played again - they cost time. A chunk that fails at
// the coordinator too fails the job instead.
const (
	KindReissued    = "chunk re-issued"    // its worker went silent (no heartbeat for Config.Silence)
	KindLost        = "worker lost"        // a worker went silent holding a chunk
	KindDuplicate   = "late answer"        // an answer of a chunk decided, or re-issued meanwhile: ignored
	KindInvalid     = "invalid answer"     // an answer that does not fit its chunk (shape, range, non-finite): refused
	KindForeign     = "foreign answer"     // an answer of a chunk its sender does not hold: refused, not folded
	KindOverdue     = "chunk overdue"      // held past the chunk bound (heartbeats or not): re-issued to another
	KindFailed      = "failed answer"      // an error answer: the chunk played by the coordinator
	KindMismatch    = "mismatch"           // two computations of a chunk differed: the coordinator's decided
	KindQuarantined = "worker quarantined" // caught lying (or failing): its answers ignored, its chunks played again
)

// Degradation is one event of a degraded dispatch.
type Degradation struct {
	Kind   string `json:"kind"`
	Worker string `json:"worker,omitempty"`
	// Workers are the two workers whose results of a chunk differed (a mismatch: which one lied
	// is the quarantine's word, not this one's).
	Workers []string `json:"workers,omitempty"`
	Job     string   `json:"job,omitempty"`
	Chunk   int      `json:"chunk"`
	Detail  string   `json:"detail"`
}

// WorkerReport is what one worker did.
type WorkerReport struct {
	Name     string `json:"name"`
	Issued   int    `json:"chunks_issued"`
	Answered int    `json:"chunks_answered"` // valid answers accepted (folded unless it was caught later)
	Episodes int    `json:"episodes"`        // episodes of those
}

// ChunkRef names one chunk of a job.
type ChunkRef struct {
	Job   string `json:"job"`
	Chunk int    `json:"chunk"`
}

// Quarantine is a worker caught: why, and the chunks of its that were played again without it.
type Quarantine struct {
	Worker string     `json:"worker"`
	Reason string     `json:"reason"`
	Chunks []ChunkRef `json:"chunks"`
	// Earlier is how many unchecked results of the worker were kept in jobs (points) that
	// ended before it was caught: reported already, they are not played again.
	Earlier int `json:"earlier_unchecked_chunks"`
}

// Report is the dispatch of a command's episodes: the "dispatch" object of summary.json and of
// dpsim audit --json.
type Report struct {
	Server           string         `json:"server"`            // where the workers connect
	Credentials      string         `json:"credentials_file"`  // the first worker's credentials (mode 0600)
	CredentialsFiles []string       `json:"credentials_files"` // every worker's started elsewhere, one each
	Spawned          int            `json:"spawned_workers"`   // local workers started
	VerifyShare      float64        `json:"verify_share"`      // the share of chunks drawn to be played twice
	Chunks           int            `json:"chunks"`            // chunks decided
	Workers          []WorkerReport `json:"workers"`           // by name
	Verified         int            `json:"verified_chunks"`   // chunks whose result two computations agreed on
	Local            int            `json:"coordinator_chunks"`
	Mismatches       int            `json:"mismatches"`
	Foreign          int            `json:"foreign_answers"`
	Failed           int            `json:"failed_answers"`
	Overdue          int            `json:"overdue_chunks"`
	Recomputed       int            `json:"recomputed_chunks"` // chunks of quarantined workers played again
	Quarantined      []Quarantine   `json:"quarantined"`
	Reissued         int            `json:"reissued_chunks"`
	Lost             int            `json:"lost_workers"`
	Duplicates       int            `json:"duplicate_answers"`
	Invalid          int            `json:"invalid_answers"`
	Degradations     []Degradation  `json:"degradations,omitempty"`
}

// Lines are the degradations as sentences, for the commands' "degraded" notes (nil: none): one
// per quarantined worker, then the counts with each event and its worker.
func (r *Report) Lines() []string {
	var out []string
	for _, q := range r.Quarantined {
		line := fmt.Sprintf("dispatch to workers: worker %s QUARANTINED (%s): its answers are ignored and its %d chunk(s) of the open point were played again without it",
			q.Worker, q.Reason, len(q.Chunks))
		if q.Earlier > 0 {
			line += fmt.Sprintf("; %d unchecked chunk(s) of it in points finished before were kept (reported before it was caught: rerun those points to be sure)", q.Earlier)
		}
		out = append(out, line)
	}
	if len(r.Degradations) == 0 {
		return out
	}
	var counts []string
	for _, c := range []struct {
		n    int
		what string
	}{{len(r.Quarantined), "worker(s) quarantined"}, {r.Mismatches, "mismatch(es)"}, {r.Foreign, "foreign answer(s)"},
		{r.Failed, "failed answer(s)"}, {r.Invalid, "invalid answer(s)"}, {r.Duplicates, "late answer(s)"},
		{r.Overdue, "chunk(s) overdue"}, {r.Reissued, "chunk(s) re-issued after silence"}, {r.Lost, "worker(s) lost"}} {
		if c.n > 0 {
			counts = append(counts, fmt.Sprintf("%d %s", c.n, c.what))
		}
	}
	line := "dispatch to workers: " + strings.Join(counts, ", ") + " (the result is made of the holders' answers only, none of a quarantined worker's)"
	var by []string
	for _, d := range r.Degradations {
		who := d.Worker
		switch {
		case who == "" && len(d.Workers) > 0:
			who = strings.Join(d.Workers, " vs ")
		case who == "":
			who = "unknown sender"
		}
		by = append(by, who+": "+d.Detail)
	}
	return append(out, line+": "+strings.Join(by, "; "))
}

// collector gathers the Report under a lock (the scheduler writes, the commands read).
type collector struct {
	mu      sync.Mutex
	r       Report
	details map[[2]string]int // degradations listed by (worker, kind)
}

// MaxDetails is how many degradations of one kind by one worker are listed; the others are
// counted only (a worker that floods the coordinator with foreign answers does not flood the
// outputs).
const MaxDetails = 20

func (c *collector) worker(name string) *WorkerReport {
	for i := range c.r.Workers {
		if c.r.Workers[i].Name == name {
			return &c.r.Workers[i]
		}
	}
	c.r.Workers = append(c.r.Workers, WorkerReport{Name: name})
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

func (c *collector) quarantine(q Quarantine) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.r.Quarantined = append(c.r.Quarantined, q)
}

// recomputed adds chunk ref, computed by quarantined worker, to the chunks played again, and
// takes back its count among the decided ones (decided, verified: how it was counted).
func (c *collector) recomputed(worker string, ref ChunkRef, decided, verified bool) {
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

func (c *collector) degrade(d Degradation) {
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
		KindMismatch: &c.r.Mismatches}[d.Kind]
	if counter != nil {
		*counter++
	}
}

// snapshot returns a copy of the report, workers by name.
func (c *collector) snapshot() *Report {
	c.mu.Lock()
	defer c.mu.Unlock()
	r := c.r
	r.Workers = slices.Clone(c.r.Workers)
	slices.SortFunc(r.Workers, func(a, b WorkerReport) int { return strings.Compare(a.Name, b.Name) })
	r.Degradations = slices.Clone(c.r.Degradations)
	r.Quarantined = make([]Quarantine, 0, len(c.r.Quarantined))
	for _, q := range c.r.Quarantined {
		q.Chunks = slices.Clone(q.Chunks)
		r.Quarantined = append(r.Quarantined, q)
	}
	r.CredentialsFiles = slices.Clone(c.r.CredentialsFiles)
	return &r
}
