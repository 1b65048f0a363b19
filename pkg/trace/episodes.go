package trace

import (
	"encoding/json"
	"fmt"
	"strconv"
)

// Episodes says which episodes of a point are traced - have their per-step records
// kept: every one, none, or the first N (episodes 0..N-1). It has one meaning everywhere: the
// launcher's --trace-episodes (the merged trace.jsonl), a role process's --keep-episodes (the
// records its trace, transcript and fault log keep on disk), the engines' options and the
// collector.
//
// Written as a number (flag, JSON, String): N > 0 the first N, 0 none, -1 all. The zero value
// is AllEpisodes: no bound.
type Episodes struct {
	first   int  // the number traced from episode 0, when bounded
	bounded bool // false: every episode
}

// AllEpisodes traces every episode (the zero value; written -1).
var AllEpisodes = Episodes{}

// NoEpisodes traces none (written 0).
var NoEpisodes = Episodes{bounded: true}

// FirstEpisodes traces episodes 0..n-1; n < 0 (the flags' -1) traces every one.
func FirstEpisodes(n int) Episodes {
	if n < 0 {
		return AllEpisodes
	}
	return Episodes{first: n, bounded: true}
}

// Traced reports whether episode ep is traced.
func (t Episodes) Traced(ep int) bool { return !t.bounded || ep < t.first }

// All reports whether every episode is traced.
func (t Episodes) All() bool { return !t.bounded }

// None reports whether no episode is traced.
func (t Episodes) None() bool { return t.bounded && t.first == 0 }

// Limit returns N of the first N episodes, ok false when every episode is traced.
func (t Episodes) Limit() (n int, ok bool) { return t.first, t.bounded }

// From returns the traced episodes counted from episode first (a resumed point's start): those
// of first, first+1, ... that t traces, as episodes 0, 1, ...
func (t Episodes) From(first int) Episodes {
	if !t.bounded {
		return t
	}
	return FirstEpisodes(max(t.first-first, 0))
}

// Int is t as a number: N, 0 (none) or -1 (all).
func (t Episodes) Int() int {
	if !t.bounded {
		return -1
	}
	return t.first
}

// String is t as a flag value: N, 0 or -1.
func (t Episodes) String() string { return strconv.Itoa(t.Int()) }

// ParseEpisodes parses a flag value: N >= 0 the first N episodes (0: none), -1 all.
func ParseEpisodes(s string) (Episodes, error) {
	n, err := strconv.Atoi(s)
	if err != nil {
		return Episodes{}, fmt.Errorf("%q: want N >= 0, or -1 for every episode", s)
	}
	return EpisodesOf(n)
}

// EpisodesOf is the Episodes written n: N >= 0 the first N (0: none), -1 all;
// below -1 is an error.
func EpisodesOf(n int) (Episodes, error) {
	if n < -1 {
		return Episodes{}, fmt.Errorf("%d: want N >= 0, or -1 for every episode", n)
	}
	return FirstEpisodes(n), nil
}

// Set implements flag.Value.
func (t *Episodes) Set(s string) error {
	v, err := ParseEpisodes(s)
	if err != nil {
		return err
	}
	*t = v
	return nil
}

// MarshalJSON writes t as its number.
func (t Episodes) MarshalJSON() ([]byte, error) { return json.Marshal(t.Int()) }

// UnmarshalJSON reads the number MarshalJSON writes.
func (t *Episodes) UnmarshalJSON(b []byte) error {
	var n int
	if err := json.Unmarshal(b, &n); err != nil {
		return fmt.Errorf("traced episodes: %w", err)
	}
	v, err := EpisodesOf(n)
	if err != nil {
		return fmt.Errorf("traced episodes: %w", err)
	}
	*t = v
	return nil
}
