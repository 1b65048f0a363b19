// Package audit is the statistics core of dpsim's empirical privacy auditor (docs/math.md section 6): it turns
// the outcomes of the distinguishing game into lower bounds on epsilon, a verdict and a trade-off curve.
// The engines that play the game (fast in-process, wire over NATS) feed it through Trials.
//
// # The game
//
// Per trial a challenger picks a secret bit: 0 runs the system on the input x, 1 on an adjacent x' (by
// default the worst pair of the sensitivity computation). The adversary sees what the system releases and
// outputs a real score; the challenger keeps the bit. Any threshold tau defines the test "guess x' when
// score > tau" (orientation greater; "<= tau" is orientation less) with
//
//	FPR = P(score > tau | x),   FNR = P(score <= tau | x').
//
// (eps, delta)-DP applied to the event E = {score > tau} and to its complement, in both directions of the
// definition, forces (Kairouz-Oh-Viswanath) FNR >= max(0, 1 - delta - e^eps FPR, e^-eps (1 - delta - FPR)):
// AllowedFNR, the region the claim allows.
//
// Scores: GaussianLLR / GaussianScorer (known Gaussian noise, possibly singular covariance) and LaplaceLLR
// are the Neyman-Pearson optimal likelihood-ratio scores; ProjectionScore is the eavesdropper's own
// estimate projected on the pair's difference (pkg/estimate.ProjectScore); ScorePrecision (precision.go,
// docs/math.md section 6.3) reads the bits of the published float64 values - under each hypothesis a
// replay of the system's float arithmetic from the transcript and a test of the fitted noise against
// the float sampler's image - on top of the likelihood ratio. All point to x' when large.
//
// # The two bounds
//
// For a test with k0 false positives among n0 x-trials and k1 false negatives among n1 x'-trials,
// ClopperPearsonUpper gives exact one-sided upper bounds FPR_up, FNR_up (Beta quantiles). Then
//
//	eps_lb_cp = max(ln((1 - delta - FNR_up)/FPR_up), ln((1 - delta - FPR_up)/FNR_up), 0)
//
// is a lower bound on the eps of ANY mechanism satisfying the claimed delta (each direction separately:
// the first is the inequality with P(x' in E) on the left, the second with P(x in E^c)). For a Gaussian
// mechanism the trade-off curve is the mu-GDP curve FNR = Phi(PhiInv(1 - FPR) - mu) (GDPFNR), so
//
//	mu_gdp = PhiInv(1 - FPR_up) - PhiInv(FNR_up),   eps_lb_gdp: Kappa(eps, mu_gdp) = delta
//
// (privacy.EpsilonForGDP, 0 when mu_gdp <= 0) bounds the mu, hence the eps, of a mechanism whose curve
// is Gaussian; it is much tighter than the CP bound at small delta because one central threshold with
// large counts pins mu down, while the CP bound needs the rare tail events. It is a model-based bound:
// sound for Gaussian mechanisms (what it is used for), not for arbitrary ones. Laplace (pure eps,
// delta = 0) is audited with the CP bound alone.
//
// # Confidence and threshold selection
//
// Options.Confidence (default 0.95) is the JOINT level of everything reported: every rate bound is a
// one-sided Clopper-Pearson bound at level 1 - alpha/S (Result.RateLevel), S = Result.Statements being
// the number of rate statements in the union (Bonferroni) bound, so that all of them, hence both eps
// bounds and the verdict, hold simultaneously with probability >= Confidence. Thresholds must not be
// chosen on the trials that bound them (maximising over tail thresholds on the same data inflates the
// bound), so there are two procedures (Options.Selection):
//
//   - split (default): a hash of the trial number puts each trial in the selection part (SplitFraction,
//     default one half) or the bounding part. On the selection part a grid of GridSize (200) thresholds -
//     quantiles of both sides at levels geometric from 1/n to 1/2 towards each tail - is searched, then
//     refined over the order statistics between the best candidate's neighbours (fan of 32 per round),
//     for each bound (CP; GDP for Gaussian) and orientation; the criterion is the bound itself computed on
//     the selection part at a 100x stricter level (against the winner's curse). The chosen tests (one per
//     bound) are bounded on the other part, and each bound takes the best of them: S = 2 x bounds (4 for Gaussian, 2 for Laplace), so each rate
//     is at 1 - alpha/8 for Gaussian (the f-DP statistic takes the other half of alpha) or 1 - alpha/2
//     for Laplace. Cheap in confidence, costs the selection trials.
//   - bonferroni: the grid is fixed before the bounding data is seen: either Options.Thresholds, or the
//     same quantile grid (plus the refined best threshold of each bound) placed on a pilot share of the
//     trials (PilotFraction, default 0.1), which is then left out. Every grid threshold, in every allowed
//     orientation, is bounded on the remaining trials: S = 2 x G x orientations (about 800 for G = 202 and
//     both orientations, each rate at 1 - 0.05/800). Uses more trials for bounding, pays log(S) in the
//     Clopper-Pearson margins.
//
// Both give similar bounds (within a few percent at 10^5-10^6 trials per side; see the tests).
//
// # The f-DP statistic
//
// For a Gaussian mechanism with selection trials, eps_lb_fdp (fdp.go; docs/math.md section 6.1)
// bounds both error rates of a test by one joint region. It takes half of the error level
// (fdpLevelShare): the single-threshold bounds above share the other half, so the S statements
// hold at 1 - (1 - Confidence)/2. With split selection it is cross-fitted: one fold chooses its
// test on the selection half and bounds it on the other, the other fold the reverse, each region at
// a quarter of the error level, and the larger bound is reported. With several scores each fold
// chooses its score on its choosing half (Game.Analyze).
//
// The split tag depends only on the trial number, so the result depends only on the multiset of
// (trial, bit, score): engines may add trials in any order from any number of workers (per-worker Trials
// buffers merged with Merge) and get bit-identical reports for a seed.
//
// # The verdict
//
// "violation" when eps_lb_cp, eps_lb_gdp or eps_lb_fdp exceeds the claimed eps: with probability >=
// Confidence the mechanism, as run, does not satisfy the claim (for the GDP and f-DP bounds: or its
// trade-off curve is not Gaussian). "consistent" means only that this adversary, with these trials, found no evidence against
// the claim at this confidence: it is not a proof of privacy (a weaker score, a non-worst pair or too few
// trials all give low bounds), and eps_lb says how much of the claim was actually exercised: a tight
// audit shows eps_lb close to eps. For a mechanism exactly at its claim a false "violation" happens with
// probability at most 1 - Confidence.
//
// The bounds are the rows of one table, [Bounds]: each row's name and JSON keys, when it is
// computed (any mechanism, or Gaussian only), how a single-threshold bound is made from its chosen
// test, and its words. The verdict, report.md, dpsim audit's table and --json, the figures and the
// live view iterate it; a new statistic is a new row (and its fields in [Result] and [GameReport]).
//
// # Cost
//
// Analyze sorts each part once (O(n log n), the four sorts in parallel) and evaluates O(GridSize + 32 x
// rounds) candidate tests by binary search (O(log n) each) with a handful of incomplete-beta inversions;
// the empirical curve (Options.CurvePoints) is one two-pointer sweep. About 0.25 s for 10^6 trials per
// side on the project's 2-core machine (BenchmarkAnalyze); recording a trial costs ~40 ns, no allocation
// once the buffer has grown.
//
// # The game against a scenario, and its engines
//
// Game (game.go) sets the distinguishing game up for one resolved scenario point (pkg/plan): the
// adjacent pair - by default the worst pair of the sensitivity for the adjacency being audited,
// which may differ from the one the noise was calibrated for, mapped from the private model to the
// plant (O_T(plant) dx = O_T(model) z, x' = x + mu dx; consensus: agent 0's x_0(0) + mu) - the
// challenger's balanced secret bits (Bit: trials 2k, 2k+1 opposite, the coin from the contract stream
// rng(seed, "challenger", 2k)) and the adversary's scores on the eavesdropper's final estimate:
// ProjectionScore, and the likelihood ratio where the noise law is known (GaussianScorer with the
// estimate's exact covariance derived from the plan; LaplaceLLR in the noise coordinates for
// structured Laplace noise). PlayFast (engine.go) plays it in-process with the role cores of pkg/sim
// (engine.Player), parallel and deterministic for a seed; PlayChunk and Outcome.AddChunk (chunk.go) cut it
// into chunks that workers on other hosts play (internal/farm) with the same outcome; the wire engine
// (internal/auditrun's WirePlayer) plays it with the real processes over NATS. Game.Analyze runs the statistics above on every score, each at
// confidence 1 - (1 - Confidence)/k so that the strongest, chosen afterwards, holds at Confidence.
package audit
