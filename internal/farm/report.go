package farm

import (
	"fmt"
	"slices"
	"strings"
	"sync"
)

// Degradation kinds: what went wrong with the workers, each named in Report.Degradations with
// the worker that caused it. None changes the result (the answers folded are the chunks' first
// valid ones, bit-identical whichever worker played them); they cost time.
const (
	KindReissued  = "chunk re-issued"  // its worker went silent (no heartbeat for Config.Silence)
	KindLost      = "worker lost"      // a worker went silent holding a chunk
	KindDuplicate = "duplicate answer" // a late answer of a chunk already folded: ignored
	KindInvalid   = "invalid answer"   // an answer that does not fit its chunk: refused
)

// Degradation is one event of a degraded dispatch.
type Degradation struct {
	Kind   string `json:"kind"`
	Worker string `json:"worker,omitempty"`
	Job    string `json:"job,omitempty"`
	Chunk  int    `json:"chunk"`
	Detail string `json:"detail"`
}

// WorkerReport is what one worker did.
type WorkerReport struct {
	Name     string `json:"name"`
	Issued   int    `json:"chunks_issued"`
	Answered int    `json:"chunks_answered"` // valid answers folded
	Episodes int    `json:"episodes"`        // episodes of those
}

// Report is the dispatch of a command's episodes: the "dispatch" object of summary.json and of
// dpsim audit --json.
type Report struct {
	Server       string         `json:"server"`           // where the workers connect
	Credentials  string         `json:"credentials_file"` // the workers' credentials (mode 0600)
	Spawned      int            `json:"spawned_workers"`  // local workers started
	Chunks       int            `json:"chunks"`           // chunks folded
	Workers      []WorkerReport `json:"workers"`          // by name
	Reissued     int            `json:"reissued_chunks"`
	Lost         int            `json:"lost_workers"`
	Duplicates   int            `json:"duplicate_answers"`
	Invalid      int            `json:"invalid_answers"`
	Degradations []Degradation  `json:"degradations,omitempty"`
}

// Lines are the degradations as sentences, for the commands' "degraded" notes (nil: none).
func (r *Report) Lines() []string {
	if len(r.Degradations) == 0 {
		return nil
	}
	line := fmt.Sprintf("dispatch to workers: %d chunk(s) re-issued, %d worker(s) lost, %d duplicate and %d invalid answer(s) (the result is unchanged)",
		r.Reissued, r.Lost, r.Duplicates, r.Invalid)
	var by []string
	for _, d := range r.Degradations {
		who := d.Worker
		if who == "" {
			who = "unknown sender"
		}
		by = append(by, who+": "+d.Detail)
	}
	return []string{line + ": " + strings.Join(by, "; ")}
}

// collector gathers the Report under a lock (the scheduler writes, the commands read).
type collector struct {
	mu sync.Mutex
	r  Report
}

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
	c.r.Chunks++
}

func (c *collector) degrade(d Degradation) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.r.Degradations = append(c.r.Degradations, d)
	switch d.Kind {
	case KindReissued:
		c.r.Reissued++
	case KindLost:
		c.r.Lost++
	case KindDuplicate:
		c.r.Duplicates++
	case KindInvalid:
		c.r.Invalid++
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
	return &r
}
