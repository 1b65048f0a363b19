package audit

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/dpsim/dpsim/pkg/dynamics"
	"github.com/dpsim/dpsim/pkg/noise"
	"github.com/dpsim/dpsim/pkg/plan"
	"github.com/dpsim/dpsim/pkg/privacy"
	"github.com/dpsim/dpsim/pkg/scenario"
)

// ScorePrecision is the precision score (docs/math.md section 6.3): the published values are
// float64, and the eavesdropper reads their bits. Under each hypothesis (x0, bit 0; x0', bit 1)
// it replays the system's own float64 arithmetic from the transcript and asks two questions: does
// some noise value reproduce every published value bit for bit (the replay fit), and is that
// noise value fl(s e) for an e the float sampler can return (the lattice: Go's ziggurat
// NormFloat64 returns float64(j) * wn[i] in over 99% of calls, the inverse-CDF Laplace ln(2U) with
// U on a 2^-53 grid; Mironov 2012, Jin et al. 2022). With E_b the number of yeses under hypothesis b,
//
//	precision = (E_1 - E_0) * 2^20 + the likelihood-ratio score (the projection where there is none),
//
// so that it is the likelihood-ratio score where the bits say nothing (E_1 = E_0).
const ScorePrecision = "precision"

// precisionUnit is the weight of one precision test in the precision score: the tie-break
// (likelihood-ratio) score is clamped to a quarter of it, so the tests decide first.
const precisionUnit = 1 << 20

// precisionIIDDraws is how many draws of i.i.d. noise the lattice test tries per output (or
// tracked agent) and episode: the first ones received. Each is a yes for the true hypothesis
// with probability ~0.99 and for the other ~1e-4; eight bound the cost of an episode.
const precisionIIDDraws = 8

// precisionMinSteps: from this step on, the replay stops as soon as at most one hypothesis
// still fits (its rival's evidence is settled; the survivor could only lose its fit later). The
// replay of every step would double the fast engine's cost of a vehicle episode; the wrong
// hypothesis of the vehicle is refuted within the first 16 steps in 1,997 of 2,000 episodes.
// I.i.d. noise stops once its draws are tested.
var precisionMinSteps = 16

// precisionMaxAgents bounds the consensus agents whose x_i(0) differs between the pair that the
// precision tests follow (the worst pair moves one).
const precisionMaxAgents = 8

// precisionEtaBound bounds |eta| of one unit draw (the z(0) = S eta search interval): the float
// samplers never return more (the ziggurat's tail at 2^64 draws is below 10, the inverse-CDF
// Laplace below 37.5).
const precisionEtaBound = 64

// PrecisionEvidence is what the precision tests found in one transcript: E[b] is the number of
// tests that said yes under hypothesis b (bit 0: x0, bit 1: x0'). Structured noise: per tracked
// unit, 1 for the replay fit and 1 more when the fitted draw lies in the sampler's image; i.i.d.
// noise: the draws found in the image (of the first precisionIIDDraws per output or agent).
type PrecisionEvidence [2]int

// Add adds o's counts (the k episodes of a trial).
func (e *PrecisionEvidence) Add(o PrecisionEvidence) { e[0], e[1] = e[0]+o[0], e[1]+o[1] }

type precisionMode uint8

const (
	// precStructured: a scalar noise state, z(0) = fl(S eta), gamma_i(t) = fl(c_i z(t)),
	// z(t+1) = fl(a z(t)); one constant offset per episode when a = c_i = 1.
	precStructured precisionMode = iota + 1
	// precIID: gamma(t) = fl(s xi(t)), a fresh draw every step.
	precIID
)

// precisionModel is what the precision tests need of a game, fixed at NewGame.
type precisionModel struct {
	mode    precisionMode
	law     privacy.Mechanism
	control bool
	// noise: structured a, c (per output), identity (a = 1 and every c_i = 1); s: the unit
	// draw's scale (S when r = 1; the i.i.d. scale), lattice: a single draw to test (r = 1)
	a        float64
	c        []float64
	identity bool
	s        float64
	lattice  bool
	zBound   float64 // |z(0)| <= zBound
	// control: the plant and the pair
	sys *dynamics.LTI
	x0  [2][]float64
	ny  int
	// consensus: the agents whose x_i(0) differs, their x_i(0) per hypothesis, weights and
	// neighbours (ascending index, the agents' order)
	agents []int
	ax0    [2][]float64
	w      [][]float64
	nbr    [][]int
	maxDeg int
}

// newPrecisionModel returns the precision tests of plan p for the pair score (nil and why not
// when they do not apply).
func newPrecisionModel(p *plan.Plan, score [2][]float64) (*precisionModel, string) {
	m := &precisionModel{law: p.Mechanism, control: p.Scenario.Kind == scenario.CloudControl}
	switch p.Noise {
	case noise.Structured:
		if p.ModelA == nil || p.ModelC == nil || p.NoiseMatrix == nil {
			return nil, "the plan has no structured noise model"
		}
		nz, _ := p.ModelA.Dims()
		if nz != 1 {
			return nil, fmt.Sprintf("the noise state has %d dimensions (only a scalar noise state, whose map from z(0) to gamma(t) is monotone, is replayed exactly)", nz)
		}
		m.mode = precStructured
		m.a = p.ModelA.At(0, 0)
		rows, _ := p.ModelC.Dims()
		m.identity = m.a == 1
		for i := 0; i < rows; i++ {
			m.c = append(m.c, p.ModelC.At(i, 0))
			m.identity = m.identity && m.c[i] == 1
		}
		_, r := p.NoiseMatrix.Dims()
		var sum float64
		for j := 0; j < r; j++ {
			sum += math.Abs(p.NoiseMatrix.At(0, j))
		}
		m.lattice = r == 1
		m.s = p.NoiseMatrix.At(0, 0)
		m.zBound = precisionEtaBound * sum
	case noise.IIDCalibrated, noise.IIDNaive:
		m.mode, m.s, m.lattice = precIID, p.Scale, true
		m.zBound = precisionEtaBound * math.Abs(p.Scale)
	default:
		return nil, fmt.Sprintf("%s noise", p.Noise)
	}
	if !(m.zBound > 0) || math.IsInf(m.zBound, 0) {
		return nil, "the noise scale is 0"
	}
	if m.control {
		m.sys, m.ny = p.System, p.System.Ny()
		if m.mode == precStructured && len(m.c) != m.ny {
			return nil, "the noise model's outputs are not the plant's"
		}
		m.x0 = [2][]float64{slices.Clone(score[0]), slices.Clone(score[1])}
		return m, ""
	}
	if m.mode == precStructured && len(m.c) != 1 {
		return nil, "an agent's noise has more than one output"
	}
	for i := range score[0] {
		if score[0][i] == score[1][i] {
			continue
		}
		if len(m.agents) == precisionMaxAgents {
			break
		}
		m.agents = append(m.agents, i)
		m.ax0[0], m.ax0[1] = append(m.ax0[0], score[0][i]), append(m.ax0[1], score[1][i])
		var w []float64
		var nb []int
		for _, e := range p.Graph.Neighbors(i) {
			w, nb = append(w, e.W), append(nb, e.J)
		}
		m.w, m.nbr = append(m.w, w), append(m.nbr, nb)
		m.maxDeg = max(m.maxDeg, len(nb))
	}
	if len(m.agents) == 0 {
		return nil, "x0 = x0prime"
	}
	return m, ""
}

// describe says what the tests do, for the report's notes.
func (m *precisionModel) describe() string {
	what := "the replay fit (one noise value reproduces every published value bit for bit, the plant's or agent's own float64 arithmetic replayed from the transcript) and the lattice test (that value is fl(s e) for an e in the float sampler's image)"
	if m.mode == precIID {
		what = fmt.Sprintf("the lattice test on the first %d draws of each output or agent (the noise value that reproduces the published value bit for bit, the plant's or agent's own float64 arithmetic replayed from the transcript, is fl(s e) for an e in the float sampler's image)", precisionIIDDraws)
	}
	return "precision score: the eavesdropper reads the bits of the published float64 values (docs/math.md section 6.3; Mironov, CCS 2012; Jin, McMurtry, Rubinstein and Ohrimenko, IEEE S&P 2022): under each hypothesis it runs " + what +
		"; precision = (yeses under x0' - yeses under x0) * 2^20 + the likelihood-ratio score, so it is that score where the bits say nothing"
}

// PrecisionTracker runs the precision tests on one episode's transcript at a time, as the
// eavesdropper receives it (it is a sim.Tap: the fast engine attaches it to the eavesdropper
// core; the wire engine feeds it the eavesdropper process's transcript). Evidence reads the
// result once the episode's last step is in. No allocation per episode. Not safe for
// concurrent use.
type PrecisionTracker struct {
	m      *precisionModel
	plant  [2]*dynamics.Plant
	agent  [2][]*dynamics.ConsensusAgent
	ysig   []float64
	nb     []float64
	h      [2][]precisionState
	active bool
}

// precisionState is one hypothesis's tests on one unit (the plant's noise state, or one agent).
type precisionState struct {
	dead   bool    // no noise value reproduces what was published
	set    bool    // a value was constrained: [lo, hi] holds
	lo, hi float64 // the z(0) that reproduce every published value so far (an interval: monotone maps)
	zl, zh float64 // z(t) from lo and hi (a non-identity map)
	hits   int     // i.i.d.: draws in the sampler's image
	tested int     // i.i.d.: draws tried
}

// PrecisionTracker returns a tracker of the game's precision tests, or nil when the game has no
// precision score.
func (g *Game) PrecisionTracker() *PrecisionTracker {
	m := g.prec
	if m == nil {
		return nil
	}
	t := &PrecisionTracker{m: m}
	units := 1
	if !m.control {
		units = len(m.agents)
		t.nb = make([]float64, m.maxDeg)
	}
	for b := 0; b < 2; b++ {
		t.h[b] = make([]precisionState, units)
		if m.control {
			t.plant[b] = dynamics.NewPlant(m.sys, m.x0[b])
			t.ysig = make([]float64, m.ny)
			continue
		}
		for k := range m.agents {
			t.agent[b] = append(t.agent[b], dynamics.NewConsensusAgent(m.ax0[b][k], m.w[k]))
		}
	}
	return t
}

// TapBegin starts an episode (sim.Tap).
func (t *PrecisionTracker) TapBegin(int) {
	m := t.m
	for b := 0; b < 2; b++ {
		for k := range t.h[b] {
			t.h[b][k] = precisionState{}
		}
		if m.control {
			t.plant[b].Reset(m.x0[b])
			continue
		}
		for k, a := range t.agent[b] {
			a.Reset(m.ax0[b][k])
		}
	}
	t.active = true
}

// TapControl takes step t of a cloud-control transcript (sim.Tap): under each hypothesis the
// plant's output fl(C x(t)) is replayed (dynamics.Plant, the plant's own arithmetic) and each
// published yhat_i(t) = fl(fl(C x(t))_i + gamma_i(t)) constrains the noise; then x(t+1) =
// fl(A x(t) + B u(t)).
func (t *PrecisionTracker) TapControl(step int, yhat, u []float64) {
	if !t.active || !t.m.control || (step >= precisionMinSteps && t.settled()) {
		return
	}
	for b := 0; b < 2; b++ {
		st := &t.h[b][0]
		if st.dead {
			continue // nothing more to learn under b
		}
		pl := t.plant[b]
		if yhat != nil {
			pl.Output(t.ysig)
			for i, y := range yhat[:t.m.ny] {
				t.observe(st, step, i, t.ysig[i], y)
			}
		}
		t.advance(st)
		pl.Step(u)
	}
}

// TapConsensus takes step t of a consensus transcript (sim.Tap): under each hypothesis agent
// i's x_i(t) is replayed (dynamics.ConsensusAgent, the agent's own arithmetic, from the
// broadcast y's) and the published y_i(t) = fl(x_i(t) + gamma_i(t)) constrains its noise.
func (t *PrecisionTracker) TapConsensus(step int, y []float64, have []bool) {
	m := t.m
	if !t.active || m.control || (step >= precisionMinSteps && t.settled()) {
		return
	}
	for k, i := range m.agents {
		if i >= len(y) {
			continue
		}
		nb := t.nb[:len(m.nbr[k])]
		for n, j := range m.nbr[k] {
			nb[n] = y[j]
		}
		for b := 0; b < 2; b++ {
			st := &t.h[b][k]
			if st.dead {
				continue
			}
			a := t.agent[b][k]
			if have[i] {
				t.observe(st, step, 0, a.State(), y[i])
			}
			t.advance(st)
			a.Step(y[i], nb)
		}
	}
}

// Evidence returns the tests' yeses under each hypothesis for the episode whose transcript was
// taken in (zero before any): the lattice test of a structured draw runs here, once.
func (t *PrecisionTracker) Evidence() PrecisionEvidence {
	fit, lat := t.counts()
	return PrecisionEvidence{fit[0] + lat[0], fit[1] + lat[1]}
}

// counts returns the yeses of the replay fit and of the lattice test under each hypothesis.
func (t *PrecisionTracker) counts() (fit, lat [2]int) {
	if t == nil || !t.active {
		return
	}
	m := t.m
	for b := 0; b < 2; b++ {
		for k := range t.h[b] {
			st := &t.h[b][k]
			if m.mode == precIID {
				lat[b] += st.hits
				continue
			}
			if st.dead || !st.set {
				continue
			}
			fit[b]++
			if m.lattice && drawInImage(m.law, m.s, st.lo, st.hi) {
				lat[b]++
			}
		}
	}
	return
}

// settled reports whether more steps can change nothing but a lone survivor's fit: i.i.d. noise
// whose draws are all tested, or structured noise with at most one hypothesis still fitting
// on every unit.
func (t *PrecisionTracker) settled() bool {
	for k := range t.h[0] {
		s0, s1 := &t.h[0][k], &t.h[1][k]
		if t.m.mode == precIID {
			if s0.tested < precisionIIDDraws || s1.tested < precisionIIDDraws {
				return false
			}
			continue
		}
		if !s0.dead && !s1.dead {
			return false
		}
	}
	return true
}

// observe takes one published value yhat = fl(ysig + gamma_i(t)) of unit st under a hypothesis.
func (t *PrecisionTracker) observe(st *precisionState, step, i int, ysig, yhat float64) {
	m := t.m
	if m.mode == precIID {
		if st.tested >= precisionIIDDraws {
			return
		}
		st.tested++
		lo, hi, ok := preimage(func(g float64) float64 { return ysig + g }, 1, -m.zBound, m.zBound, yhat, yhat-ysig)
		if ok && drawInImage(m.law, m.s, lo, hi) {
			st.hits++
		}
		return
	}
	if !st.set {
		st.set, st.lo, st.hi = true, -m.zBound, m.zBound
		st.zl, st.zh = t.zAt(st.lo, step), t.zAt(st.hi, step)
	}
	if m.identity {
		// gamma_i(t) = z(0): the usual case, two additions while [lo, hi] fits
		if ysig+st.lo == yhat && ysig+st.hi == yhat {
			return
		}
		lo, hi, ok := preimage(func(z float64) float64 { return ysig + z }, 1, st.lo, st.hi, yhat, yhat-ysig)
		st.lo, st.hi, st.dead = lo, hi, !ok
		return
	}
	c := m.c[i]
	dir := int(math.Copysign(1, c))
	if m.a < 0 && step%2 == 1 {
		dir = -dir
	}
	if c == 0 || (m.a == 0 && step > 0) {
		dir = 0 // gamma_i(t) does not depend on z(0)
	}
	if ysig+c*st.zl == yhat && ysig+c*st.zh == yhat {
		return
	}
	if dir == 0 {
		st.dead = true
		return
	}
	lo, hi, ok := preimage(func(z float64) float64 { return ysig + c*t.zAt(z, step) }, dir, st.lo, st.hi, yhat, math.NaN())
	st.lo, st.hi, st.dead = lo, hi, !ok
	if ok {
		st.zl, st.zh = t.zAt(lo, step), t.zAt(hi, step)
	}
}

// advance moves a structured unit's z(t) from lo and hi on to z(t+1) = fl(a z(t)).
func (t *PrecisionTracker) advance(st *precisionState) {
	if t.m.mode == precStructured && !t.m.identity && st.set {
		st.zl, st.zh = 0+t.m.a*st.zl, 0+t.m.a*st.zh
	}
}

// zAt is z(step) from z(0) by the noise stream's own recursion z <- 0 + a z.
func (t *PrecisionTracker) zAt(z0 float64, step int) float64 {
	if t.m.identity {
		return z0
	}
	z := z0
	for k := 0; k < step; k++ {
		z = 0 + t.m.a*z
	}
	return z
}

// preimage returns the interval [lo, hi] of the floats z in [from, to] with f(z) == target,
// f monotone (dir = 1: non-decreasing, -1: non-increasing), by bisection over the float64
// order; ok is false when there is none.
//
// hint, when finite, is a close guess of the answer (yhat - ysig, say): the bisection starts
// from a bracket of a few ulps around it when the bracket holds, which saves most of its
// iterations.
func preimage(f func(float64) float64, dir int, from, to, target, hint float64) (lo, hi float64, ok bool) {
	key := func(z float64) int { // -1 below the target, 0 at it, 1 above (NaN: above)
		v := f(z)
		switch {
		case v == target:
			return 0
		case v < target:
			return -dir
		case v > target:
			return dir
		}
		return 2
	}
	kl, kh := key(from), key(to)
	if kl > 0 || kh < 0 || kl == 2 {
		return 0, 0, false
	}
	lo, hi = from, to
	if pad := (math.Abs(hint) + math.Abs(target)) * 0x1p-48; pad < math.Inf(1) && kl < 0 && kh > 0 {
		// a bracket of a few ulps around the hint, if the answer lies strictly inside it
		if a, b := hint-pad-0x1p-1070, hint+pad+0x1p-1070; a > from && b < to && key(a) < 0 && key(b) > 0 {
			lo, hi = a, b
		}
	}
	L, H := floatOrd(lo), floatOrd(hi)
	if kl < 0 { // first z with key >= 0: key(L) < 0, key(H) >= 0
		a, b := L, H
		for uint64(b)-uint64(a) > 1 { // b > a: the difference may exceed MaxInt64
			mid := a + int64((uint64(b)-uint64(a))/2)
			if key(ordFloat(mid)) >= 0 {
				b = mid
			} else {
				a = mid
			}
		}
		lo, L = ordFloat(b), b
	}
	if kh > 0 { // last z with key <= 0: key(L) <= 0 ... key(H) > 0
		a, b := L, H
		for uint64(b)-uint64(a) > 1 { // b > a: the difference may exceed MaxInt64
			mid := a + int64((uint64(b)-uint64(a))/2)
			if k := key(ordFloat(mid)); k <= 0 {
				a = mid
			} else {
				b = mid
			}
		}
		hi = ordFloat(a)
	}
	if key(lo) != 0 || key(hi) != 0 {
		return 0, 0, false // the map jumps over the target
	}
	return lo, hi, true
}

// floatOrd maps float64 to int64 preserving order (-0 and +0 both to 0).
func floatOrd(x float64) int64 {
	b := int64(math.Float64bits(x))
	if b < 0 {
		b = math.MinInt64 - b
	}
	return b
}

// ordFloat is floatOrd's inverse.
func ordFloat(b int64) float64 {
	if b < 0 {
		b = math.MinInt64 - b
	}
	return math.Float64frombits(uint64(b))
}

// drawInImage reports whether some e the float sampler of law can return has fl(s e) in [lo, hi]
// (0 + s e: how the streams scale a unit draw).
func drawInImage(law privacy.Mechanism, s, lo, hi float64) bool {
	if s == 0 {
		return false
	}
	dir := 1
	if s < 0 {
		dir = -1
	}
	el, eh, ok := scaledPreimage(s, dir, lo, hi)
	if !ok {
		return false
	}
	if law == privacy.Laplace {
		return laplaceImage(el, eh)
	}
	return normalImage(el, eh)
}

// scaledPreimage is the interval of e in [-precisionEtaBound, precisionEtaBound] with
// fl(s e) in [lo, hi] (dir: the sign of s).
func scaledPreimage(s float64, dir int, lo, hi float64) (el, eh float64, ok bool) {
	// below(e): s e lies below the interval in the order of e; above(e): beyond it
	below := func(e float64) bool {
		v := 0 + s*e
		if dir < 0 {
			return v > hi
		}
		return v < lo
	}
	above := func(e float64) bool {
		v := 0 + s*e
		if dir < 0 {
			return v < lo
		}
		return v > hi
	}
	from, to := float64(-precisionEtaBound), float64(precisionEtaBound)
	// a bracket of a few ulps around lo/s and hi/s, if it holds
	a, b := lo/s, hi/s
	if a > b {
		a, b = b, a
	}
	pad := (math.Abs(a) + math.Abs(b)) * 0x1p-48
	if a, b = a-pad-0x1p-1070, b+pad+0x1p-1070; a > from && b < to && below(a) && above(b) {
		from, to = a, b
	}
	if !below(from) && !above(from) {
		el = from
	} else {
		if !below(from) || below(to) {
			return 0, 0, false
		}
		L, H := floatOrd(from), floatOrd(to) // first e not below: below(L), !below(H)
		for uint64(H)-uint64(L) > 1 {
			mid := L + int64((uint64(H)-uint64(L))/2)
			if below(ordFloat(mid)) {
				L = mid
			} else {
				H = mid
			}
		}
		el = ordFloat(H)
	}
	if !below(to) && !above(to) {
		eh = to
	} else {
		if !above(to) || above(from) {
			return 0, 0, false
		}
		L, H := floatOrd(from), floatOrd(to) // last e not above: !above(L), above(H)
		for uint64(H)-uint64(L) > 1 {
			mid := L + int64((uint64(H)-uint64(L))/2)
			if above(ordFloat(mid)) {
				H = mid
			} else {
				L = mid
			}
		}
		eh = ordFloat(L)
	}
	if el > eh || below(el) || above(el) {
		return 0, 0, false
	}
	return el, eh, true
}

// precision sets the game's precision tests up (GameOptions.NoPrecision leaves them out).
func (g *Game) precision(o GameOptions) {
	if o.NoPrecision {
		return
	}
	m, why := newPrecisionModel(g.Plan, g.score)
	if m == nil {
		g.Notes = append(g.Notes, "no precision score: "+why)
		return
	}
	g.prec = m
	g.names = append(g.names, ScorePrecision)
	g.Notes = append(g.Notes, m.describe())
}

// hasLLR reports whether the game has the likelihood-ratio score (second of its scores).
func (g *Game) hasLLR() bool { return len(g.names) > 1 && g.names[1] == ScoreLLR }

// HasPrecision reports whether the game computes the precision score (its last score).
func (g *Game) HasPrecision() bool { return g.prec != nil }

// setPrecision writes the precision score, the last of dst, from the evidence and the
// likelihood-ratio score (the projection where there is none), already in dst.
func (s *Scorer) setPrecision(ev PrecisionEvidence, dst []float64) {
	if s.g.prec == nil {
		return
	}
	tie := dst[0]
	if s.g.hasLLR() {
		tie = dst[1]
	}
	const clamp = precisionUnit / 4
	if !(tie > -clamp) { // NaN stays NaN: the trial is rejected as any non-finite score
		tie = math.Max(tie, -clamp)
	}
	tie = math.Min(tie, clamp)
	dst[len(dst)-1] = float64(ev[1]-ev[0])*precisionUnit + tie
}

// PrecisionAgents lists, for a consensus game with a precision score, the agents whose
// broadcast y_i(t) the precision tests read (the agents whose x_i(0) differs between the pair,
// and their neighbours), ascending; nil otherwise (cloud control reads yhat and u).
func (g *Game) PrecisionAgents() []int {
	m := g.prec
	if m == nil || m.control {
		return nil
	}
	var a []int
	for k, i := range m.agents {
		a = append(a, i)
		a = append(a, m.nbr[k]...)
	}
	slices.Sort(a)
	return slices.Compact(a)
}

// PrecisionPapers are the papers the precision score's attack comes from, as report.md cites them.
const PrecisionPapers = "I. Mironov, \"On significance of the least significant bits for differential privacy\", ACM CCS 2012; " +
	"J. Jin, E. McMurtry, B. I. P. Rubinstein and O. Ohrimenko, \"Are we there yet? Timing and floating-point attacks on differential privacy systems\", IEEE S&P 2022"

// mdPrecision explains the precision score in report.md, when the report has one.
func (r *GameReport) mdPrecision(b *strings.Builder) {
	var res *Result
	for _, s := range r.Scores {
		if s.Name == ScorePrecision {
			res = s.Result
		}
	}
	if res == nil {
		return
	}
	fmt.Fprintf(b, "\nThe precision score reads the bits of the published float64 values: under each hypothesis the eavesdropper replays the plant's or agents' own "+
		"float64 arithmetic from the transcript and asks whether one noise value reproduces every published value bit for bit and whether that value is one "+
		"the float sampler can return (Go's ziggurat returns float64(j) * wn[i] in over 99%% of calls; the inverse-CDF Laplace lies on a 2^-53 grid). "+
		"A noise sampler that rounds an exactly sampled real mechanism (docs/protocol.md section 12.3) leaves it nothing to read, so it then equals the likelihood-ratio score "+
		"(%s; docs/math.md section 6.3). Here it gives eps_lb_cp = %s.\n", PrecisionPapers, fmtG(res.EpsilonLBCP))
}

// precisionWords completes the report's note on what the scores read.
func (g *Game) precisionWords() string {
	if g.prec == nil {
		return ""
	}
	return " (the precision score: of the transcript's float64 bits and the public pair)"
}
