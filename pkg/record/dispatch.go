package record

import (
	"fmt"
	"strings"
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

// Dispatch is the dispatch of a command's episodes to the worker farm (internal/farm): the "dispatch" object of summary.json and of
// dpsim audit --json.
type Dispatch struct {
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
	// Journal is the durable farm's journal (--dispatch-durable: its directory, "" without), and
	// Restored the chunks read back from it - decided and judged by an earlier coordinator of
	// the same --out, not played nor drawn for a check again (not among Chunks).
	Journal  string `json:"journal,omitempty"`
	Restored int    `json:"restored_chunks,omitempty"`
	// Undelivered are the chunks the durable farm's work queue delivered MaxDeliver times
	// without an answer: the coordinator played them.
	Undelivered int `json:"undelivered_chunks,omitempty"`
}

// Lines are the degradations as sentences, for the commands' "degraded" notes (nil: none): one
// per quarantined worker, then the counts with each event and its worker.
func (r *Dispatch) Lines() []string {
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
		{r.Overdue, "chunk(s) overdue"}, {r.Reissued, "chunk(s) re-issued after silence"}, {r.Undelivered, "chunk(s) undelivered (played by the coordinator)"},
		{r.Lost, "worker(s) lost"}} {
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
