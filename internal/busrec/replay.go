package busrec

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"os"
	"slices"
	"time"

	"github.com/dpsim/dpsim/pkg/wire"
)

// ReplayOptions pace a replay.
type ReplayOptions struct {
	// Speed scales the recorded pace: 1 as recorded, 2 twice as fast; 0 as fast as possible.
	Speed float64
}

// Replay publishes every message of the recording at path with publish, on its subject, with
// its recorded (JSON) payload and its recorded NATS headers (ReplayHeader: without the
// signature of a binary message recorded as JSON), in the order of the file (the order
// received), paced by the recorded receive times scaled by o.Speed. It reads an unterminated recording up to its last
// complete chunk (Contents.Truncated). It stops when ctx ends or publish fails.
func Replay(ctx context.Context, path string, publish func(subject string, header map[string][]string, data []byte) error, o ReplayOptions) (*Contents, error) {
	var t0 uint64
	var w0 time.Time
	first := true
	return Scan(path, func(m Message) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		if first {
			t0, w0, first = m.LogTime, time.Now(), false
		}
		if o.Speed > 0 && m.LogTime > t0 {
			at := w0.Add(time.Duration(float64(m.LogTime-t0) / o.Speed))
			if d := time.Until(at); d > 0 {
				t := time.NewTimer(d)
				select {
				case <-ctx.Done():
					t.Stop()
					return ctx.Err()
				case <-t.C:
				}
			}
		}
		if err := publish(m.Topic, ReplayHeader(m.Header), m.Data); err != nil {
			return fmt.Errorf("publishing on %s: %w", m.Topic, err)
		}
		return nil
	})
}

// maxProblems bounds the problems Check lists (it counts them all).
const maxProblems = 10

// CheckResult is what Check found.
type CheckResult struct {
	Contents *Contents
	Problems []string // the first maxProblems
	Bad      uint64   // every message with a problem
}

// Check reads the recording at path and checks every message: a result document is JSON,
// any other a wire message (wire.Decode, wire.Validate of its run, which must be its subject's)
// and every channel has its schema. An unterminated recording is read to its last complete
// chunk: Contents.Truncated says so, it is no problem of a message.
func Check(path string) (*CheckResult, error) {
	r := &CheckResult{}
	var m wire.Message
	bad := func(format string, args ...any) {
		r.Bad++
		if len(r.Problems) < maxProblems {
			r.Problems = append(r.Problems, fmt.Sprintf(format, args...))
		}
	}
	c, err := Scan(path, func(msg Message) error {
		if msg.Schema == "" {
			bad("%s: a channel without a schema", msg.Topic)
		}
		if msg.Schema == schemaName("result.json") {
			if !json.Valid(msg.Data) {
				bad("%s: a result that is no JSON", msg.Topic)
			}
			return nil
		}
		sub, err := wire.ParseSubject(msg.Topic)
		if err != nil {
			bad("%v", err)
			return nil
		}
		if err := wire.Decode(msg.Data, &m); err != nil {
			bad("%s: %v", msg.Topic, err)
		} else if m.Run != sub.Run {
			bad("%s: run %q, the subject's is %q", msg.Topic, m.Run, sub.Run)
		}
		return nil
	})
	r.Contents = c
	return r, err
}

// Recover writes what the recording at src holds - all of it, or of an unterminated one every
// message of its complete chunks with its headers - into a new, closed recording at dst (perm;
// no size limit), with src's metadata records and attachments.
func Recover(src, dst string, perm os.FileMode) (*Contents, Stats, error) {
	head, err := Scan(src, nil) // the metadata first: dst writes it before any message
	if err != nil {
		return nil, Stats{}, err
	}
	rec, err := Create(Options{Path: dst, Perm: perm, Limit: math.MaxInt64, Metadata: head.Metadata[MetadataName]})
	if err != nil {
		return nil, Stats{}, err
	}
	for _, name := range slices.Sorted(maps.Keys(head.Metadata)) {
		if name != MetadataName && name != MetadataName+"/counts" {
			if err := rec.WriteMetadata(name, head.Metadata[name]); err != nil {
				_, _ = rec.Close()
				return nil, Stats{}, err
			}
		}
	}
	for _, name := range slices.Sorted(maps.Keys(head.Attachments)) {
		a := head.Attachments[name]
		if err := rec.Attach(name, a.MediaType, a.Data, time.Now()); err != nil {
			_, _ = rec.Close()
			return nil, Stats{}, err
		}
	}
	c, err := Scan(src, func(m Message) error {
		var h map[string][]string
		sent := true
		if m.Header != nil {
			h, sent = m.Header.Headers, m.Header.AsSent
		}
		rec.record(m.Topic, h, sent, m.Data, time.Unix(0, int64(m.LogTime)))
		return nil
	})
	st, cerr := rec.Close()
	if err == nil {
		err = cerr
	}
	return c, st, err
}
