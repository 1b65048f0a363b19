package audit

import (
	"errors"
	"fmt"
	"math"
	"slices"

	"gonum.org/v1/gonum/mat"

	"github.com/dpsim/dpsim/pkg/dynamics"
	"github.com/dpsim/dpsim/pkg/noise"
	"github.com/dpsim/dpsim/pkg/plan"
	"github.com/dpsim/dpsim/pkg/privacy"
	"github.com/dpsim/dpsim/pkg/rng"
	"github.com/dpsim/dpsim/pkg/scenario"
)

// Score names (GameReport.Scores, Game.ScoreNames).
const (
	// ScoreProjection is the eavesdropper's own estimate projected on the pair's difference
	// (ProjectionScore): what the adversary of the simulation concludes, with no knowledge of the
	// noise law.
	ScoreProjection = "projection"
	// ScoreLLR is the likelihood-ratio score of the estimate where the noise law is known: Gaussian
	// (GaussianScorer with the estimate's exact covariance) or Laplace (LaplaceLLR in the noise
	// coordinates); Neyman-Pearson optimal for the estimate.
	ScoreLLR = "llr"
)

// Pair sources (Pair.Source).
const (
	PairWorst    = "worst-pair" // the argmax of the sensitivity for the audited adjacency
	PairScenario = "scenario"   // audit.pair of the scenario (or GameOptions.Pair)
)

// Pair is the adjacent pair of the game: the challenger runs the system from X0 (secret bit 0) or
// X0Prime (bit 1). Cloud control: the plant's initial state; consensus: every agent's x_i(0).
//
// A claim game's (NewClaimGame: trials from a scores file) has no pair: its zero Source and X0
// (IsZero), left out of the report's JSON.
type Pair struct {
	X0      []float64 `json:"x0"`
	X0Prime []float64 `json:"x0prime"`
	Source  string    `json:"source"` // worst-pair | scenario
	// Adjacency is the adjacency the pair belongs to (the audited one; for a scenario pair, the one
	// it is claimed under).
	Adjacency string `json:"adjacency"`
	// Z is the private model's initial-state difference per unit of mu (the worst pair's
	// Lambda_bar^+ F (x - x') with Lambda_bar = O_T, docs/math.md section 3), and DX the plant's, solving
	// O_T(plant) DX = O_T(model) Z; X0Prime = X0 + Mu DX. Consensus: Z = DX = 1 at Agent.
	Z  []float64 `json:"z,omitempty"`
	DX []float64 `json:"dx,omitempty"`
	Mu float64   `json:"mu,omitempty"`
	// Time and Component locate the free coordinate whose unit change defines the worst pair
	// (x_Component(Time) of the private model's trajectory); -1 when not applicable.
	Time      int `json:"time"`
	Component int `json:"component"`
	// Agent is the consensus agent whose x_i(0) differs (agent 0: every agent has the same
	// sensitivity, Section 6); -1 for cloud control.
	Agent int `json:"agent"`
	// Candidates is the number of worst directions (one per circuit) the pair was chosen from: with a
	// non-scalar Gaussian Sigma the worst pair for the calibrated noise is the direction with the
	// largest Mahalanobis length z' Sigma^+ z, which need not be the sensitivity's argmax of ||z||.
	Candidates int `json:"candidates,omitempty"`
	// Null: the system ignores the secret (both bits run X0); the scores still test X0 against
	// X0Prime. It audits the auditor: every bound must stay at 0 within its confidence.
	Null bool `json:"null,omitempty"`
}

// GameOptions configure NewGame.
type GameOptions struct {
	// Adjacency to audit; "" = the plan's (the one the noise was calibrated for).
	Adjacency privacy.Adjacency
	// Pair, when set, overrides the worst pair (cloud control: the plant's x(0); consensus: every
	// agent's x_i(0)). X0 = X0Prime makes a null game whose scores use the worst pair's direction.
	Pair *scenario.AuditPair
	// Null runs X0 for both bits (with the default or given pair) - the auditor's soundness check.
	Null bool
	// Budget bounds the sensitivity enumeration (flops; <= 0: privacy.DefaultBudget).
	Budget int64
	// EpisodesPerTrial is k, the episodes every trial plays from the same secret x(0) with fresh
	// noise, which the eavesdropper combines into one score (composition, docs/math.md section 9);
	// 0 means 1, today's one-episode game. See Game.EpisodesPerTrial.
	EpisodesPerTrial int
	// NoPrecision leaves out the precision score (ScorePrecision, docs/math.md section 6.3),
	// which is computed by default wherever it applies.
	NoPrecision bool
}

// MaxEpisodesPerTrial bounds GameOptions.EpisodesPerTrial: a trial plays its k episodes in a row.
const MaxEpisodesPerTrial = 1 << 16

// Theory is what the calibration says about the audited pair, for comparison with the bounds.
type Theory struct {
	// MuPair is the Gaussian-DP parameter of the pair under the noise as calibrated: the distance of
	// the two estimate distributions in noise units, sqrt(d' Cov^+ d) (GaussianScorer.Mu). The claim
	// allows MuClaimed = KappaInverse(eps, delta) (Theorem 1, eq. (9)).
	MuPair float64 `json:"mu_pair,omitempty"`
	// EpsilonPair is the smallest eps the pair's mechanism satisfies at the claimed delta: Gaussian
	// EpsilonForGDP(MuPair, delta); Laplace ||G d||_1 (eq. (14)). An ideal auditor's bounds approach
	// it; it exceeds the claim exactly when the calibration is unsound for this pair.
	EpsilonPair float64 `json:"epsilon_pair"`
	// Exact says whether the figure is exact for the eavesdropper's estimate (known noise law).
	Exact bool `json:"exact"`
	// Distinguishable: the pair's difference leaves the noise's range (rank condition (8) fails for
	// it), so no finite eps holds; EpsilonPair is then 0 and meaningless.
	Distinguishable bool `json:"distinguishable,omitempty"`
}

// Game is the distinguishing game of one plan (docs/math.md section 6): the calibrated system, the
// adjacent pair and the adversary's scores. It is immutable after NewGame; Scorer gives each
// worker its own scratch.
type Game struct {
	Plan *plan.Plan
	Pair Pair
	// Calibrated and Audited adjacency.
	Calibrated, Audited privacy.Adjacency
	Theory              *Theory
	// Notes explain choices and limitations (e.g. why no likelihood-ratio score exists).
	Notes []string

	run   [2][]float64 // what the system runs for bit 0 / 1
	score [2][]float64 // the pair the scores test (= run unless Null)
	names []string
	gauss *GaussianScorer
	prec  *precisionModel // the precision tests (nil: no precision score)
	lapG  *mat.Dense      // Laplace: the estimate error is M w with w iid Laplace(0,1); lapG = M^+
	dim   int             // estimate length
	k     int             // episodes per trial (>= 1)
	claim *Claim          // a claim game's (NewClaimGame; nil: the plan's)
}

// NewGame builds the game of plan p (one scenario point, calibrated as the scenario says).
func NewGame(p *plan.Plan, o GameOptions) (*Game, error) {
	if p == nil || p.Scenario == nil {
		return nil, errors.New("audit: game: plan is nil")
	}
	g := &Game{Plan: p, Calibrated: p.Adjacency, Audited: o.Adjacency, k: max(1, o.EpisodesPerTrial)}
	if o.EpisodesPerTrial < 0 || o.EpisodesPerTrial > MaxEpisodesPerTrial {
		return nil, fmt.Errorf("audit: %d episodes per trial: want 1..%d", o.EpisodesPerTrial, MaxEpisodesPerTrial)
	}
	if g.Audited == "" {
		g.Audited = p.Adjacency
	}
	if g.Audited != privacy.Manifold && g.Audited != privacy.Block {
		return nil, fmt.Errorf("audit: unknown adjacency %q (allowed: manifold, block)", g.Audited)
	}
	em, err := estimateNoise(p)
	if err != nil {
		return nil, err
	}
	g.dim = em.dim
	// The default pair: needed unless an explicit pair with x0 != x0prime is given.
	explicit := o.Pair != nil && !slices.Equal(o.Pair.X0, o.Pair.X0Prime)
	if !explicit {
		base := baseState(p)
		if o.Pair != nil {
			base = slices.Clone(o.Pair.X0)
		}
		if g.Pair, err = worstPair(p, g.Audited, o.Budget, base, em); err != nil {
			return nil, err
		}
		if o.Pair != nil || o.Null {
			g.Pair.Null = true
			if o.Pair != nil {
				g.Pair.Source = PairScenario
			}
		}
	} else {
		if len(o.Pair.X0) != em.dim || len(o.Pair.X0Prime) != em.dim {
			return nil, fmt.Errorf("audit: pair: x0 has %d and x0prime %d values, want %d (%s)", len(o.Pair.X0), len(o.Pair.X0Prime), em.dim, stateName(p))
		}
		for i, v := range append(slices.Clone(o.Pair.X0), o.Pair.X0Prime...) {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return nil, fmt.Errorf("audit: pair: value %d is not finite", i)
			}
		}
		g.Pair = Pair{X0: slices.Clone(o.Pair.X0), X0Prime: slices.Clone(o.Pair.X0Prime), Source: PairScenario,
			Adjacency: string(g.Audited), Time: -1, Component: -1, Agent: -1, Null: o.Null}
		if err := g.checkAdjacent(em, o.Budget); err != nil {
			return nil, err
		}
	}
	g.score = [2][]float64{g.Pair.X0, g.Pair.X0Prime}
	g.run = g.score
	if g.Pair.Null {
		g.run = [2][]float64{g.Pair.X0, g.Pair.X0}
		g.Notes = append(g.Notes, "null game: the system runs x0 for both values of the secret bit, so its true eps is 0: "+
			"any bound above 0 is a false positive (probability <= 1 - the confidence); the verdict still compares the bounds with the claimed eps")
	}
	if p.Scenario.Kind == scenario.CloudControl {
		for b := 0; b < 2; b++ {
			if err := p.System.CheckState(g.run[b]); err != nil {
				return nil, fmt.Errorf("audit: pair: %w", err)
			}
		}
	}
	g.names = []string{ScoreProjection}
	if err := g.likelihood(em); err != nil {
		g.Notes = append(g.Notes, "no likelihood-ratio score: "+err.Error())
	} else {
		g.names = append(g.names, ScoreLLR)
	}
	g.precision(o)
	if g.Pair.Null {
		// the system runs the same input for both bits: the mechanism of the game is 0-DP
		g.Theory = &Theory{Exact: true}
	}
	g.Notes = append(g.Notes, redrawNotes(p)...)
	g.compose()
	return g, nil
}

// EpisodesPerTrial is k: every trial of the game plays k episodes of the same secret x(0) (or x'(0)),
// each with fresh noise, and the eavesdropper combines the k estimates into one score.
//
// The combination is the average of the k per-episode least-squares estimates. Each one is
// x(0) + e_j with e_j = M w_j independent and identically distributed (the same plan, the same T, a
// fresh noise stream per episode), so the stacked least squares over the k transcripts, whose Gram
// matrix is k O'O, IS their average; for Gaussian noise the average is a sufficient statistic of the k
// estimates for x(0) (the covariance of each is the same M M'), and it is N(x(0), M M'/k): the pair's
// distance in noise units grows from mu_pair to sqrt(k) mu_pair, exactly the sqrt(k) mu-GDP composition of
// k releases (Dong, Roth & Su 2022, Cor. 3.3; docs/math.md section 9). The scores are the projection of
// the average and, Gaussian, the likelihood ratio of the average (k times the per-episode LLR of it:
// the same tests); Laplace (structured), whose per-episode estimates are not averaged optimally, the sum
// of the k per-episode likelihood ratios, the likelihood ratio of the k independent transcripts.
// Episode j of trial i is episode number i*k + j of the run's noise streams, a deterministic function of
// (seed, i, j); k = 1 plays exactly the one-episode game.
func (g *Game) EpisodesPerTrial() int { return g.k }

// compose turns the theory of one episode into that of a trial of k episodes (k > 1): Gaussian
// mu_pair -> sqrt(k) mu_pair (exact), Laplace eps_pair -> k eps_pair (the pure eps of the k-fold
// product of the pair's laws: the privacy losses add and each is bounded by eps_pair).
func (g *Game) compose() {
	if g.k == 1 {
		return
	}
	g.Notes = append(g.Notes, fmt.Sprintf("%d episodes per trial: each trial plays %d episodes of the same secret with fresh noise (episodes i*%d .. i*%d+%d of trial i) "+
		"and the eavesdropper averages its %d least-squares estimates (the stacked least squares; Laplace: the likelihood-ratio score sums the per-episode ones); "+
		"the game's mechanism is the %d-fold composition, and the theory row is the composed one", g.k, g.k, g.k, g.k, g.k-1, g.k, g.k))
	t := g.Theory
	if t == nil || t.Distinguishable || g.Pair.Null {
		return
	}
	kf := float64(g.k)
	switch {
	case t.MuPair > 0:
		t.MuPair *= math.Sqrt(kf)
		t.EpsilonPair = 0
		if eps, err := privacy.EpsilonForGDP(t.MuPair, g.Plan.Scenario.Privacy.Delta); err == nil {
			t.EpsilonPair = eps
		}
	default:
		t.EpsilonPair *= kf
	}
}

// ClaimRun is the claim a trial of k episodes is judged against: the per-episode claim (eps, delta)
// composed over k episodes at the same delta (privacy.GaussianRunEpsilon of the claim's
// mu_claimed = kappa_eps^{-1}(delta): a Gaussian mechanism is (eps, delta)-DP exactly when it is
// mu_claimed-GDP, and k of them are sqrt(k) mu_claimed-GDP; Laplace: privacy.LaplaceRunEpsilon at
// delta = 0, k eps). k = 1 returns eps itself. With the tight calibration it is summary.json's
// guarantee.epsilon_run for k episodes; with a looser calibration that guarantee composes the smaller
// exact mu of the noise actually injected, and is below this composed claim.
func (g *Game) ClaimRun() (float64, error) {
	c := g.Claim()
	return ComposeClaim(c.Mechanism, c.Epsilon, c.Delta, g.k)
}

// IsZero says the game has no pair (a claim game's): the report's JSON omits it.
func (p Pair) IsZero() bool { return p.Source == "" && p.X0 == nil && p.X0Prime == nil }

// Claim is the guarantee the game audits: the plan's (its scenario's privacy section), or a
// claim game's own.
func (g *Game) Claim() Claim {
	if g.claim != nil {
		return *g.claim
	}
	pr := g.Plan.Scenario.Privacy
	return Claim{Epsilon: pr.Epsilon, Delta: pr.Delta, Mechanism: g.Plan.Mechanism}
}

// ComposeClaim composes a per-episode claim (eps, delta) of a Gaussian or Laplace mechanism over k
// episodes at the same delta (Game.ClaimRun): Gaussian, the eps of sqrt(k) kappa_eps^{-1}(delta)-GDP
// at delta; Laplace (delta ignored: pure eps), k eps. k = 1 returns eps.
func ComposeClaim(mech privacy.Mechanism, eps, delta float64, k int) (float64, error) {
	if k == 1 {
		return eps, nil
	}
	if mech == privacy.Laplace {
		return privacy.LaplaceRunEpsilon(eps, k, 0)
	}
	mu, err := privacy.KappaInverse(eps, delta)
	if err != nil {
		return 0, fmt.Errorf("audit: the composed claim: %w", err)
	}
	_, run, err := privacy.GaussianRunEpsilon(mu, k, delta)
	if err != nil {
		return 0, fmt.Errorf("audit: the composed claim: %w", err)
	}
	return run, nil
}

// redrawNotes says, for each crash that redraws the noise, that the theory's figure is the
// calibrated mechanism's (one release of the noise), which such a crash exceeds: the outputs
// after the restart are a second independent release the claim does not cover.
func redrawNotes(p *plan.Plan) []string {
	var n []string
	for _, c := range p.Scenario.Faults.Crashes {
		if c.Noise == scenario.NoiseRedraw {
			ep := "every episode"
			if c.Episode != scenario.EveryEpisode {
				ep = fmt.Sprintf("episode %d", c.Episode)
			}
			n = append(n, fmt.Sprintf("%s crashes at step %d of %s and restarts at step %d with a fresh noise draw (noise: redraw): "+
				"a second independent release; the theory row is the calibrated mechanism's (one release) and does not count it",
				c.Proc, c.Step, ep, c.Restart))
		}
	}
	return n
}

// ScoreNames lists the scores the game computes, in the order Scorer.Scores writes them.
func (g *Game) ScoreNames() []string { return slices.Clone(g.names) }

// EstimateDim is the length of the eavesdropper's estimate the scores read.
func (g *Game) EstimateDim() int { return g.dim }

// X0 returns the initial state the system runs for secret bit b (a view: do not modify).
func (g *Game) X0(bit int) []float64 { return g.run[bit&1] }

// Bit is the challenger's secret bit of trial `trial` under the balanced scheme: trials come in
// pairs (2k, 2k+1) with opposite bits, the first one's drawn from the contract stream
// rng.New(seed, rng.Label("challenger"), 2k). So N pairs give exactly N trials on x and N on x',
// and each trial's bit is a fair coin that nothing but the challenger's stream determines. The
// adversary scores each episode from its own transcript only; it never sees a bit.
func Bit(seed, trial uint64) int {
	first := trial &^ 1
	coin := int(rng.New(seed, rng.Label("challenger"), first).Uint64() >> 63)
	return coin ^ int(trial&1)
}

// Scorer computes a game's scores from an estimate with its own scratch (one per worker).
type Scorer struct {
	g        *Game
	buf, gx0 []float64 // Laplace: G e, G x0, G x0'
	gx1      []float64
	// a trial of k > 1 episodes (Add, Trial): the sum of the estimates, the sum of the Laplace
	// per-episode likelihood ratios, the episodes added
	sum    []float64
	lapSum float64
	ev     PrecisionEvidence
	n      int
}

// Scorer returns a scorer with its own scratch.
func (g *Game) Scorer() *Scorer {
	s := &Scorer{g: g, sum: make([]float64, g.dim)}
	if g.lapG != nil {
		r, _ := g.lapG.Dims()
		s.buf = make([]float64, r)
		s.gx0, s.gx1 = mulVec(g.lapG, g.score[0]), mulVec(g.lapG, g.score[1])
	}
	return s
}

// Add records one episode's estimate (len EstimateDim) of the trial being scored; Trial scores
// the trial once its EpisodesPerTrial estimates are in. No allocation.
func (s *Scorer) Add(est []float64) { s.AddEvidence(est, PrecisionEvidence{}) }

// AddEvidence is Add with the episode's precision evidence (PrecisionTracker.Evidence), which
// the trial's precision score sums over its episodes. No allocation.
func (s *Scorer) AddEvidence(est []float64, ev PrecisionEvidence) {
	if s.n == 0 {
		clear(s.sum)
		s.lapSum = 0
		s.ev = PrecisionEvidence{}
	}
	s.ev.Add(ev)
	for i, v := range est {
		s.sum[i] += v
	}
	if s.g.lapG != nil && s.g.hasLLR() {
		s.lapSum += s.laplace(est)
	}
	s.n++
}

// Trial writes the scores of the trial whose episodes were added (Add) into dst (len of
// ScoreNames) and starts the next trial: the scores of the average of the estimates (the
// eavesdropper's combined estimate, Game.EpisodesPerTrial), except the Laplace likelihood ratio,
// which is the sum of the per-episode ones. With one episode added it is Scores of that
// estimate, bit for bit. avg is scratch of len EstimateDim (it receives the average).
func (s *Scorer) Trial(avg, dst []float64) {
	n := float64(s.n)
	for i, v := range s.sum {
		avg[i] = v / n
	}
	s.n = 0
	s.ScoresEvidence(avg, s.ev, dst)
	if s.g.lapG != nil && s.g.hasLLR() {
		dst[1] = s.lapSum
		s.setPrecision(s.ev, dst)
	}
}

// Scores writes the scores of one estimate (len EstimateDim) into dst (len of ScoreNames), larger
// pointing to x'. No allocation.
func (s *Scorer) Scores(est, dst []float64) { s.ScoresEvidence(est, PrecisionEvidence{}, dst) }

// ScoresEvidence is Scores with the transcript's precision evidence (PrecisionTracker.Evidence),
// from which the precision score is computed (zero evidence: the bits said nothing). No allocation.
func (s *Scorer) ScoresEvidence(est []float64, ev PrecisionEvidence, dst []float64) {
	g := s.g
	dst[0] = ProjectionScore(est, g.score[0], g.score[1])
	if g.hasLLR() {
		switch {
		case g.gauss != nil:
			dst[1] = g.gauss.Score(est)
		case g.lapG != nil:
			dst[1] = s.laplace(est)
		}
	}
	s.setPrecision(ev, dst)
}

// laplace is the Laplace likelihood-ratio score of one estimate, in the noise coordinates G e.
func (s *Scorer) laplace(est []float64) float64 {
	g := s.g
	r, c := g.lapG.Dims()
	raw := g.lapG.RawMatrix()
	for i := 0; i < r; i++ {
		var v float64
		row := raw.Data[i*raw.Stride : i*raw.Stride+c]
		for j, a := range row {
			v += a * est[j]
		}
		s.buf[i] = v
	}
	return LaplaceLLR(s.buf, s.gx0, s.gx1, 1)
}

// estimateModel is the law of the eavesdropper's estimate error: e - x0 = M w, w a vector of iid
// standard draws of law (Gaussian N(0,1) or Laplace(0,1)). For Gaussian only the covariance M M'
// matters; laplaceExact says whether w really is iid Laplace (structured Laplace noise) so that
// LaplaceLLR is the likelihood ratio.
type estimateModel struct {
	M            *mat.Dense // nil: no noise
	dim          int
	law          privacy.Mechanism
	laplaceExact bool
	P            *mat.Dense // control: the LS map (O'O)^{-1} O' of the plant, nx x T ny
	O, Om        *mat.Dense // control: O_T of the plant and of the private model
	what         string
}

// estimateNoise derives the estimate's noise from the plan (docs/math.md sections 4-5).
//
// Cloud control: the eavesdropper's estimate is the least-squares x0_hat = x0 + P Gamma with
// P = (O'O)^{-1} O', O = O_T of the plant, Gamma the stacked noise (the known input part is
// subtracted exactly). Structured: Gamma = O_m S eta, so M = P O_m S; i.i.d.: Gamma = s w, M = s P
// (covariance s^2 (O'O)^{-1}). Consensus: agent i's estimate is x_i(0) + gamma_i (structured offset,
// M = sigma I) or x_i(0) + the mean of T i.i.d. draws (covariance s^2/T I).
func estimateNoise(p *plan.Plan) (*estimateModel, error) {
	em := &estimateModel{law: p.Mechanism}
	T := p.Steps
	switch p.Scenario.Kind {
	case scenario.CloudControl:
		O := p.System.Observability(T)
		model, err := dynamics.NewLTI(p.ModelA, nil, p.ModelC)
		if err != nil {
			return nil, fmt.Errorf("audit: private model: %w", err)
		}
		em.O, em.Om = O, model.Observability(T)
		nx := p.System.Nx()
		em.dim = nx
		var gram mat.Dense
		gram.Mul(O.T(), O)
		var P mat.Dense
		if err := P.Solve(&gram, O.T()); err != nil {
			return nil, fmt.Errorf("audit: the plant is not observable over T = %d steps: the eavesdropper has no estimate: %w", T, err)
		}
		em.P = &P
		switch p.Noise {
		case noise.Structured:
			var po mat.Dense
			po.Mul(&P, em.Om)
			em.M = mat.NewDense(nx, p.NoiseMatrix.RawMatrix().Cols, nil)
			em.M.Mul(&po, p.NoiseMatrix)
			em.laplaceExact = true
			em.what = "structured: x0_hat - x0 = P O_m S eta"
		case noise.IIDCalibrated, noise.IIDNaive:
			em.M = mat.NewDense(nx, T*p.System.Ny(), nil)
			em.M.Scale(p.Scale, &P)
			em.what = "i.i.d.: x0_hat - x0 = s P w, covariance s^2 (O'O)^{-1}"
		case noise.None:
			em.what = "no noise"
		}
	case scenario.Consensus:
		n := p.Graph.N
		em.dim = n
		switch p.Noise {
		case noise.Structured:
			em.M = scaledIdentity(n, p.Scale)
			em.laplaceExact = true
			em.what = "structured: x_i(0)_hat - x_i(0) = sigma_i eta_i"
		case noise.IIDCalibrated, noise.IIDNaive:
			em.M = scaledIdentity(n, p.Scale/math.Sqrt(float64(T)))
			em.what = "i.i.d.: x_i(0)_hat - x_i(0) = mean of T draws, variance s^2/T"
		case noise.None:
			em.what = "no noise"
		}
	default:
		return nil, fmt.Errorf("audit: unknown scenario kind %q", p.Scenario.Kind)
	}
	return em, nil
}

// likelihood prepares the likelihood-ratio score and the theory figures, or says why there is none.
func (g *Game) likelihood(em *estimateModel) error {
	p := g.Plan
	if em.M == nil {
		return errors.New("noise none: the estimate is exact, the two inputs are told apart with certainty (rank condition (8) fails)")
	}
	m0, m1 := g.score[0], g.score[1]
	if slices.Equal(m0, m1) {
		return errors.New("x0 = x0prime")
	}
	switch p.Mechanism {
	case privacy.Gaussian:
		var cov mat.SymDense
		cov.SymOuterK(1, em.M)
		gs, err := NewGaussianScorer(m0, m1, &cov)
		if err != nil {
			if errors.Is(err, ErrDistinguishable) {
				g.Theory = &Theory{Distinguishable: true, Exact: true}
			}
			return err
		}
		g.gauss = gs
		g.Theory = &Theory{MuPair: gs.Mu(), Exact: true}
		if eps, err := privacy.EpsilonForGDP(gs.Mu(), p.Scenario.Privacy.Delta); err == nil {
			g.Theory.EpsilonPair = eps
		}
		return nil
	case privacy.Laplace:
		if !em.laplaceExact {
			return fmt.Errorf("%s noise: the estimate's error is a sum of Laplace draws, whose law is not Laplace (the projection score is used)", p.Noise)
		}
		G, err := laplaceMap(em)
		if err != nil {
			return err
		}
		g.lapG = G
		// ||G d||_1 must be all of d's difference: d must lie in range(M), else certain distinction.
		d := make([]float64, len(m0))
		for i := range d {
			d[i] = m1[i] - m0[i]
		}
		gd := mulVec(G, d)
		back := mulVec(em.M, gd)
		var res, dn, l1 float64
		for i := range d {
			res += (back[i] - d[i]) * (back[i] - d[i])
			dn += d[i] * d[i]
		}
		if math.Sqrt(res) > 1e-6*math.Sqrt(dn) {
			g.lapG = nil
			g.Theory = &Theory{Distinguishable: true, Exact: true}
			return ErrDistinguishable
		}
		for _, v := range gd {
			l1 += math.Abs(v)
		}
		g.Theory = &Theory{EpsilonPair: l1, Exact: true}
		return nil
	}
	return fmt.Errorf("unknown mechanism %q", p.Mechanism)
}

// laplaceMap returns G = M^+ for a Laplace estimate error M w (w iid Laplace(0, 1)), which must
// have full column rank so that the estimate determines the noise.
func laplaceMap(em *estimateModel) (*mat.Dense, error) {
	var svd mat.SVD
	if !svd.Factorize(em.M, mat.SVDThin) {
		return nil, errors.New("SVD of the estimate's noise map failed")
	}
	vals := svd.Values(nil)
	_, r := em.M.Dims()
	if len(vals) < r || !(vals[r-1] > 1e-10*vals[0]) {
		return nil, errors.New("the estimate does not determine the Laplace noise (rank-deficient noise map)")
	}
	var G mat.Dense
	if err := G.Solve(em.M, identity(em.dim)); err != nil { // least squares: G = M^+ (full column rank)
		return nil, fmt.Errorf("pseudo-inverse of the noise map: %w", err)
	}
	return &G, nil
}

// checkAdjacent refuses a given pair that is farther apart, in the units of the calibrated noise,
// than the worst mu-adjacent pair of the audited adjacency: such a pair is not adjacent (Definition
// 4 lets one free coordinate move by at most mu), and a violation measured on it would say nothing
// about the claim. Where the noise law gives no exact distance (iid Laplace, none), the pair is
// accepted with a note.
func (g *Game) checkAdjacent(em *estimateModel, budget int64) error {
	p := g.Plan
	worst, err := worstPair(p, g.Audited, budget, g.Pair.X0, em)
	if err != nil {
		return fmt.Errorf("audit: pair: the worst adjacent pair to compare it with: %w", err)
	}
	given, ok1 := pairDistance(p, em, g.Pair.X0, g.Pair.X0Prime)
	limit, ok2 := pairDistance(p, em, worst.X0, worst.X0Prime)
	if !ok1 || !ok2 {
		g.Notes = append(g.Notes, "the given pair's adjacency could not be checked against the noise law; its verdict assumes it is mu-adjacent")
		return nil
	}
	if given > limit*(1+1e-9) {
		return fmt.Errorf("audit: pair: x0 and x0prime are not mu-adjacent under %s adjacency: in the noise's units they are %.6g apart, "+
			"the worst adjacent pair only %.6g (%.3gx), so a violation on them would say nothing about the claim; "+
			"give a pair that differs as Definition 4 allows (one free coordinate by at most mu = %g)",
			g.Audited, given, limit, given/limit, p.Scenario.Privacy.Mu)
	}
	return nil
}

// pairDistance is how far apart the estimate laws of the pair are in the noise's units: the
// Gaussian-DP mu sqrt(d' Cov^+ d), or for Laplace ||M^+ d||_1; ok is false where no exact law exists.
func pairDistance(p *plan.Plan, em *estimateModel, m0, m1 []float64) (float64, bool) {
	if em.M == nil {
		return 0, false
	}
	switch p.Mechanism {
	case privacy.Gaussian:
		var cov mat.SymDense
		cov.SymOuterK(1, em.M)
		gs, err := NewGaussianScorer(m0, m1, &cov)
		if err != nil {
			return math.Inf(1), errors.Is(err, ErrDistinguishable)
		}
		return gs.Mu(), true
	case privacy.Laplace:
		if !em.laplaceExact {
			return 0, false
		}
		G, err := laplaceMap(em)
		if err != nil {
			return 0, false
		}
		d := make([]float64, len(m0))
		for i := range d {
			d[i] = m1[i] - m0[i]
		}
		l1 := 0.0
		for _, v := range mulVec(G, d) {
			l1 += math.Abs(v)
		}
		return l1, true
	}
	return 0, false
}

// baseState is the scenario's initial state: the plant's x(0) or every agent's x_i(0).
func baseState(p *plan.Plan) []float64 {
	if p.Scenario.Kind == scenario.Consensus {
		return slices.Clone(p.Scenario.X0)
	}
	if p.Scenario.Plant != nil && p.Scenario.Plant.X0 != nil {
		return slices.Clone(p.Scenario.Plant.X0)
	}
	return make([]float64, p.System.Nx())
}

func stateName(p *plan.Plan) string {
	if p.Scenario.Kind == scenario.Consensus {
		return "one initial value per agent"
	}
	return "the plant's initial state"
}

// worstPair maps the worst adjacent pair of the audited adjacency to the system's initial state.
//
// The sensitivity (privacy.DynamicsSensitivity for structured noise and none, IIDSensitivity for
// the i.i.d. baselines: the mechanism actually run, over the whole horizon T) gives the private
// model's initial-state difference z of the worst unit change (its Param; for i.i.d. the output
// difference O_m z, solved for z). Cloud control: the plant's difference dx solves
// O_T(plant) dx = O_T(model) z exactly (least squares, refused if the residual is not ~0): for
// the vehicle's position model dx = (z, 0). x' = x + mu dx. Consensus: agent 0's x_0(0) + mu z
// (z = 1; every agent has the same sensitivity).
//
// With structured Gaussian noise and a non-scalar Sigma, the worst pair for the noise as
// calibrated is the circuit direction (Sensitivity.Constraints, one per circuit, each at its worst
// coordinate) with the largest z' Sigma^+ z, which is chosen instead of the argmax of ||z||.
func worstPair(p *plan.Plan, adj privacy.Adjacency, budget int64, base []float64, em *estimateModel) (Pair, error) {
	norm := 2
	if p.Mechanism == privacy.Laplace {
		norm = 1
	}
	T := p.Steps
	var sens privacy.Sensitivity
	var err error
	iid := p.Noise == noise.IIDCalibrated || p.Noise == noise.IIDNaive
	if iid {
		sens, err = privacy.IIDSensitivity(p.ModelA, p.ModelC, T, adj, norm, budget)
	} else {
		sens, err = privacy.DynamicsSensitivity(p.ModelA, p.ModelC, T, adj, norm, budget)
	}
	if err != nil {
		return Pair{}, fmt.Errorf("audit: sensitivity for the audited %s adjacency: %w", adj, err)
	}
	mu := p.Scenario.Privacy.Mu
	pair := Pair{Source: PairWorst, Adjacency: string(adj), Mu: mu, Time: sens.Worst.Time, Component: sens.Worst.Component, Agent: -1}
	z := slices.Clone(sens.Worst.Param)
	if iid {
		// Param = O_m z (the output difference): recover z.
		if z, err = solveExact(modelObservability(p, em), z, "the i.i.d. worst pair's output difference is not a trajectory of the private model"); err != nil {
			return Pair{}, err
		}
	} else if p.Noise == noise.Structured && p.Mechanism == privacy.Gaussian && p.NoiseMatrix != nil && len(sens.Constraints) > 0 {
		var sig mat.Dense
		sig.Mul(p.NoiseMatrix, p.NoiseMatrix.T())
		best := mahalanobis(&sig, z)
		for _, c := range sens.Constraints {
			if v := mahalanobis(&sig, c); v > best*(1+1e-12) {
				best, z = v, slices.Clone(c)
			}
		}
		pair.Candidates = len(sens.Constraints)
	}
	pair.Z = z
	if len(base) != em.dim {
		return Pair{}, fmt.Errorf("audit: the initial state has %d values, want %d (%s)", len(base), em.dim, stateName(p))
	}
	x1 := slices.Clone(base)
	switch p.Scenario.Kind {
	case scenario.CloudControl:
		dx, err := plantDifference(em.O, em.Om, z)
		if err != nil {
			return Pair{}, err
		}
		pair.DX = dx
		for i := range x1 {
			x1[i] += mu * dx[i]
		}
	case scenario.Consensus:
		if len(z) != 1 {
			return Pair{}, fmt.Errorf("audit: consensus sensitivity has a %d-dimensional pair, want 1", len(z))
		}
		pair.Agent = 0
		pair.DX = make([]float64, len(base))
		pair.DX[0] = z[0]
		x1[0] += mu * z[0]
	}
	pair.X0, pair.X0Prime = base, x1
	return pair, nil
}

// plantDifference solves O dx = O_m z exactly (O = O_T of the plant, O_m of the private model).
// When the private model is the plant, dx = z. Otherwise the square system of the first n_x rows
// is solved when it is well conditioned (for the vehicle's position model it gives dx = (z, 0)
// without rounding: rows p(0) = dx_0 and p(1) = dx_0 + Ts dx_1), else least squares; either way
// every row must hold to 1e-9 relative, or the pair is refused.
func plantDifference(O, Om *mat.Dense, z []float64) ([]float64, error) {
	const why = "the private model's worst pair is not an initial-state change of the plant (O_T(plant) dx = O_T(model) z has no exact solution)"
	if mat.Equal(O, Om) {
		return slices.Clone(z), nil
	}
	return solveExact(O, mulVec(Om, z), why)
}

func residualOK(A *mat.Dense, x, b []float64) bool {
	back := mulVec(A, x)
	var res, bn float64
	for i := range b {
		res += (back[i] - b[i]) * (back[i] - b[i])
		bn += b[i] * b[i]
	}
	return math.Sqrt(res) <= 1e-9*math.Sqrt(bn)
}

// modelObservability returns O_T of the private model (control) or 1_T (consensus agent).
func modelObservability(p *plan.Plan, em *estimateModel) *mat.Dense {
	if em.Om != nil {
		return em.Om
	}
	one := make([]float64, p.Steps)
	for i := range one {
		one[i] = 1
	}
	return mat.NewDense(p.Steps, 1, one)
}

// solveExact solves A x = b (A tall, b in its range) and refuses a residual above 1e-9 ||b||. The
// square system of the first columns-many rows is tried first when it is well conditioned (it gives
// exact answers where they are simple: for O_T of the vehicle, rows p(0) = x_0 and p(1) = x_0 + Ts x_1
// give dx = (z, 0) without rounding), then least squares.
func solveExact(A *mat.Dense, b []float64, why string) ([]float64, error) {
	r, c := A.Dims()
	if len(b) != r {
		return nil, fmt.Errorf("audit: %s (length %d, want %d)", why, len(b), r)
	}
	if r >= c {
		var lu mat.LU
		lu.Factorize(mat.DenseCopyOf(A.Slice(0, c, 0, c)))
		if cond := lu.Cond(); cond < 1e8 && !math.IsInf(cond, 0) {
			var x mat.VecDense
			if err := lu.SolveVecTo(&x, false, mat.NewVecDense(c, slices.Clone(b[:c]))); err == nil {
				out := make([]float64, c)
				for i := range out {
					out[i] = x.AtVec(i)
				}
				if residualOK(A, out, b) {
					return out, nil
				}
			}
		}
	}
	var x mat.VecDense
	if err := x.SolveVec(A, mat.NewVecDense(r, slices.Clone(b))); err != nil {
		return nil, fmt.Errorf("audit: %s: %w", why, err)
	}
	out := make([]float64, c)
	for i := range out {
		out[i] = x.AtVec(i)
	}
	if !residualOK(A, out, b) {
		back := mulVec(A, out)
		var res, bn float64
		for i := range b {
			res += (back[i] - b[i]) * (back[i] - b[i])
			bn += b[i] * b[i]
		}
		return nil, fmt.Errorf("audit: %s (residual %.3g of %.3g)", why, math.Sqrt(res), math.Sqrt(bn))
	}
	return out, nil
}

// mahalanobis returns z' S^+ z (+Inf when z leaves the range of S), S symmetric PSD.
func mahalanobis(S *mat.Dense, z []float64) float64 {
	n, _ := S.Dims()
	var eig mat.EigenSym
	if !eig.Factorize(mat.NewSymDense(n, slices.Clone(S.RawMatrix().Data)), true) {
		return math.Inf(1)
	}
	vals := eig.Values(nil)
	var U mat.Dense
	eig.VectorsTo(&U)
	mx := slices.Max(vals)
	var v, out, zn float64
	for _, x := range z {
		zn += x * x
	}
	for k, l := range vals {
		var pr float64
		for j := 0; j < n; j++ {
			pr += U.At(j, k) * z[j]
		}
		if l <= 1e-12*mx {
			out += pr * pr
			continue
		}
		v += pr * pr / l
	}
	if math.Sqrt(out) > 1e-9*math.Sqrt(zn) {
		return math.Inf(1)
	}
	return v
}

func mulVec(A mat.Matrix, x []float64) []float64 {
	r, _ := A.Dims()
	var y mat.VecDense
	y.MulVec(A, mat.NewVecDense(len(x), slices.Clone(x)))
	out := make([]float64, r)
	for i := range out {
		out[i] = y.AtVec(i)
	}
	return out
}

func scaledIdentity(n int, s float64) *mat.Dense {
	m := mat.NewDense(n, n, nil)
	for i := 0; i < n; i++ {
		m.Set(i, i, s)
	}
	return m
}

func identity(n int) *mat.Dense { return scaledIdentity(n, 1) }
