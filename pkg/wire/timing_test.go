package wire

import (
	"testing"
	"time"
)

func TestParseMode(t *testing.T) {
	for in, want := range map[string]Mode{"lockstep": Lockstep, "": Lockstep, "realtime": Realtime} {
		if got, err := ParseMode(in); err != nil || got != want {
			t.Errorf("ParseMode(%q) = %v, %v", in, got, err)
		}
	}
	if _, err := ParseMode("fast"); err == nil {
		t.Error("ParseMode(fast) succeeded")
	}
}

func TestSummarizeDurations(t *testing.T) {
	xs := make([]time.Duration, 200)
	for i := range xs {
		xs[i] = time.Duration(200-i) * time.Microsecond // 200..1 us, unsorted
	}
	s := SummarizeDurations(xs)
	// nearest rank: ceil(0.99*200) = 198th smallest = 198 us
	want := DurationStats{N: 200, Mean: 100500 * time.Nanosecond, Max: 200 * time.Microsecond, P99: 198 * time.Microsecond}
	if s != want {
		t.Errorf("SummarizeDurations = %+v, want %+v", s, want)
	}
	if xs[0] != 200*time.Microsecond {
		t.Error("SummarizeDurations modified its input")
	}
	if (SummarizeDurations(nil) != DurationStats{}) {
		t.Error("empty input")
	}
}
