package audit

import (
	"math"

	"github.com/dpsim/dpsim/pkg/privacy"
)

// The f-DP one-run bound of Mahloujifar, Melis & Chaudhuri (2024), "Auditing f-Differential
// Privacy in One Run", ICML 2025 (arXiv:2410.22235), docs/math.md section 6.2.
//
// The game is Steinke et al.'s (onerun_bound.go): m canaries with independent fair bits, r guesses
// (abstentions on the rest) of which v are right. The claim is no longer a pair (eps, delta) but the
// mechanism's trade-off function f (f-DP in each canary: every test of the bit has false-negative
// rate >= f(false-positive rate)). Write fbar(x) = 1 - f(x) for the largest "right" rate a test with
// "wrong" rate x may have, and fbar^-1 for its inverse. Their argument: if the auditor made v or more
// right guesses with probability at least tau, the expected masses of right (rho) and wrong (eta)
// guesses, per canary, start from rho = tau v / m and eta = tau (r - v) / m, and for i = v-1, ..., 0
//
//	eta' = max(eta, fbar^-1(rho)),   rho' = min(rho + i / (r - i) (eta' - eta), 1)
//
// (each right guess needs its share of wrong ones, by f, and every further guess up to r splits
// between the two in that proportion); the claim is rejected at level tau when the masses the claim
// forces exceed what was guessed: rho + eta > r / m. The bound is the largest eps whose claim is
// rejected (the claims weaken as eps grows), at tau = 1 - confidence.

// fbarInverse is the inverse of fbar(x) = 1 - f(x) of a claim's trade-off function f: the least
// wrong-guess rate that a right-guess rate y needs.
type fbarInverse func(y float64) float64

// gdpFbarInverse is fbar^-1 of mu-GDP, f(x) = Phi(Phi^-1(1 - x) - mu) (Dong, Roth & Su 2019):
// fbar(x) = Phi(Phi^-1(x) + mu), so fbar^-1(y) = Phi(Phi^-1(y) - mu).
func gdpFbarInverse(mu float64) fbarInverse {
	return func(y float64) float64 {
		switch {
		case y <= 0:
			return 0
		case y >= 1:
			return 1
		}
		return privacy.Phi(privacy.PhiInv(y) - mu)
	}
}

// pureFbarInverse is fbar^-1 of pure eps-DP, f(x) = max(0, 1 - e^eps x, e^-eps (1 - x)) (Kairouz, Oh
// & Viswanath 2015): fbar(x) = min(1, e^eps x, 1 - e^-eps (1 - x)) is concave, so its inverse is the
// larger of the two pieces' inverses, max(e^-eps y, 1 - e^eps (1 - y)).
func pureFbarInverse(eps float64) fbarInverse {
	lo, hi := math.Exp(-eps), math.Exp(eps)
	return func(y float64) float64 {
		switch {
		case y <= 0:
			return 0
		case y >= 1:
			return 1
		}
		return math.Max(lo*y, 1-hi*(1-y))
	}
}

// OneRunFDPRejects reports whether v right guesses out of r, with m canaries, reject at level tau
// the claim whose trade-off function has fbar^-1 = inv (Mahloujifar et al. 2024; see above). It
// reports false for invalid input (not 0 <= v <= r <= m, m > 0, tau outside (0, 1)).
func OneRunFDPRejects(inv fbarInverse, m, r, v int, tau float64) bool {
	if m <= 0 || v < 0 || v > r || r > m || !(tau > 0 && tau < 1) {
		return false
	}
	rho := tau * float64(v) / float64(m)
	eta := tau * float64(r-v) / float64(m)
	for i := v - 1; i >= 0; i-- {
		next := math.Max(eta, inv(rho))
		if next == eta {
			break // rho cannot grow any more, so neither can eta
		}
		rho = math.Min(rho+float64(i)/float64(r-i)*(next-eta), 1)
		eta = next
	}
	return rho+eta > float64(r)/float64(m)
}

// OneRunFDPEpsilonLB is the f-DP one-run lower bound on eps at the given confidence: the largest eps
// (to 1e-6, rounded down) whose claim is rejected by OneRunFDPRejects, 0 when even eps = 0 is not.
// The claim at eps is the mechanism's: pure eps-DP for Laplace, and for Gaussian mu-GDP with mu the
// Gaussian mechanism's at (eps, delta) (KappaInverse; a Gaussian mechanism is (eps, delta)-DP exactly
// when it is mu-GDP with mu <= KappaInverse(eps, delta)).
func OneRunFDPEpsilonLB(mech privacy.Mechanism, m, r, v int, delta, confidence float64) float64 {
	tau := 1 - confidence
	claim := func(eps float64) (fbarInverse, bool) {
		if mech != privacy.Gaussian {
			return pureFbarInverse(eps), true
		}
		mu, err := privacy.KappaInverse(eps, delta)
		if err != nil || !(mu >= 0) {
			return nil, false
		}
		return gdpFbarInverse(mu), true
	}
	rejects := func(eps float64) bool {
		inv, ok := claim(eps)
		return ok && OneRunFDPRejects(inv, m, r, v, tau)
	}
	lo := 0.0
	if mech == privacy.Gaussian {
		lo = 1e-9 // KappaInverse needs eps > 0; mu there is below the float64 resolution of the tests
	}
	if !rejects(lo) {
		return 0
	}
	hi := 1.0
	for rejects(hi) {
		lo, hi = hi, 2*hi
		if hi > 1e3 {
			return lo
		}
	}
	for hi-lo > 1e-6 {
		mid := (lo + hi) / 2
		if rejects(mid) {
			lo = mid
		} else {
			hi = mid
		}
	}
	return lo
}
