package noise

import "math/rand/v2"

// Stream yields the noise of one episode, one vector per step.
type Stream interface {
	// Reset starts a new episode from r: it draws what is drawn once per episode (eta) and sets t = 0.
	// The stream keeps r for per-step draws (IID), so r must not be shared with another consumer
	// whose draws should stay independent.
	Reset(r *rand.Rand)
	// Next writes gamma(t) into dst (len(dst) must equal the stream's dimension) and advances t.
	// It never allocates.
	Next(dst []float64)
}

// Auditable is implemented by every stream of this package: what an auditor or a result file needs.
type Auditable interface {
	Stream
	// Dim is the length of gamma(t).
	Dim() int
	// Step is the t that the next call to Next will write.
	Step() int
	// Eta returns a copy of the episode's once-drawn eta (nil when nothing is drawn once).
	Eta() []float64
	// Describe is a one-line human description of the design and its parameters.
	Describe() string
}

var (
	_ Auditable = (*StructuredStream)(nil)
	_ Auditable = (*IIDStream)(nil)
	_ Auditable = (*NoneStream)(nil)
)
