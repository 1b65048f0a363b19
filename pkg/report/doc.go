// Package report writes what a person reads after a dpsim run: the figures (PNG and SVG, drawn
// with gonum.org/v1/plot) and report.md, which states the setup, the privacy budget and its
// calibration, and the results against the papers' bounds (MATH.md sections 1-5).
//
// The launcher calls one function after a run:
//
//	err := report.Write(outDir, report.Input{
//		Scenario: s,                 // the file as loaded (possibly with a sweep)
//		Points:   points,            // one Point{Scenario, Plan, Results} per s.Expand() point
//		Seed:     seed, SeedDrawn: drawn,
//		Engine:   "nats", Mode: "lockstep", NATSURL: url,
//		Processes: procs,            // role, id, pid, peak RSS
//		Timing:   stats,             // optional: any JSON-serialisable value
//		Invalid:  counters,          // optional: invalid-message counters
//		Elapsed:  time.Since(start),
//	})
//
// Build does the same without I/O and returns the Markdown, the figures (Figure.Render gives
// PNG or SVG bytes) and the computed checks, e.g. for summary.json.
//
// # Files
//
// Cloud control: tracking-error (x - x_r against t with the 95% band, paper Fig. 2),
// tracking-mse (E[(x - x_r)^2], log scale when it spans decades), eavesdropper-error
// (E||x0hat(t) - x(0)||^2). Consensus: consensus-deviation (E[x_i(t) - x*] per agent, Fig. 5),
// consensus-mse (E||x(t) - 1x*||^2 with the Proposition 1 bound dashed, one pair per swept
// value, Figs. 6-7), eavesdropper-error. A sweep adds sweep-final-mse (the final mean-square
// error against the swept parameter, one line per noise kind or other swept parameter, Fig. 3)
// and sweep-eavesdropper (the eavesdropper's error against t per noise kind at one value: flat
// for structured noise, shrinking for iid-naive noise). The sweep figures' x axis is the first
// numeric swept parameter (log scale over decades), else a categorical axis of names; the
// per-point figures show the representative point (swept value closest to 1, e.g. the paper's
// eps = 1, first value of the other parameters).
//
// # Statements
//
// Every PASS/FAIL in report.md is computed from the run's numbers (Report.Checks):
//
//   - calibration: kappa_eps(mu Delta / sigma) <= delta (Theorem 1, eq. 7) or mu Delta_L / b <= eps
//     (Theorem 2), and every LMI (12) for an optimal Sigma; iid-naive noise gets the eps it
//     really gives over T releases (privacy.IIDSensitivity, privacy.EpsilonForGDP);
//   - full-state cloud control: the manifold vs block sensitivities and noise (plan.New with the
//     other adjacency), and the eps the block noise really gives under manifold adjacency;
//   - cloud control: velocity error vanishing (MSE at T below VanishFactor of its peak, for a
//     constant offset), final position MSE = offset variance (within 3.29 SE), error bounded in
//     mean square (last quarter <= GrowthRatio x third quarter), eavesdropper flat (structured)
//     or shrinking (iid-naive) by the late/early ratio FlatRatio; structured beats iid-calibrated
//     at every swept value;
//   - consensus (Proposition 1): final E||x(T) - 1x*||^2 with its upper 95% limit below the bound,
//     E[x_i(T) - x*] within alpha^T ||x(0) - 1x*|| (simultaneous 95% intervals), network sum
//     preserved to SumTol.
//
// The Markdown is deterministic (maps are sorted, no clock is read): the same Input gives the
// same bytes. Numbers are printed with 3 significant digits (4 for noise scales).
package report
