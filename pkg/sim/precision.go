package sim

// Tap receives, step by step, the transcript the eavesdropper's estimator takes in: what the
// eavesdropper saw, exactly as it used it. The auditor's precision scores (pkg/audit) read the
// bits of the published values through it (docs/math.md section 6.3). A tap must not keep the
// slices it is handed (views valid during the call) and must not allocate if the engine is to
// stay allocation-free.
type Tap interface {
	// TapBegin starts episode ep.
	TapBegin(ep int)
	// TapControl is step t of a cloud-control transcript: yhat(t) (nil: not received) and the
	// input u(t) the plant is taken to have applied (received, or the plant's missing-input rule).
	TapControl(t int, yhat, u []float64)
	// TapConsensus is step t of a consensus transcript: y(t) of every agent, have[i] false where
	// y_i(t) was not received (y[i] is then the eavesdropper's stand-in).
	TapConsensus(t int, y []float64, have []bool)
}

// SetTap makes tap (nil: none) receive the transcript the eavesdropper core's estimator takes
// in from the next episode on.
func (c *EavesdropperCore) SetTap(tap Tap) { c.tap = tap }

// SetTap makes tap (nil: none) receive the transcript of episode slot j of every batch (the
// episodes ep+j of Batch.Set's batches) from the next batch on.
func (b *Batch) SetTap(j int, tap Tap) {
	if b.eve.taps == nil {
		b.eve.taps = make([]Tap, b.Width)
	}
	b.eve.taps[j] = tap
}
