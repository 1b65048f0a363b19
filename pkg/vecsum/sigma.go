package vecsum

import (
	"errors"
	"fmt"
	"math"

	"github.com/dpsim/dpsim/pkg/privacy"
)

// ErrInput marks invalid arguments (wrapped with context in every returned error).
var ErrInput = errors.New("vecsum: invalid input")

func inputErr(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInput, fmt.Sprintf(format, args...))
}

// SigmaOpt returns sigma_opt(eps, delta), the smallest noise multiplier of the Gaussian mechanism
// (Theorem 2 of the vector-sum paper, Balle & Wang 2018 Thm. 8): the mechanism with per-coordinate
// noise N(0, (Delta_2 sigma)^2) is (eps, delta)-DP iff sigma >= sigma_opt, where sigma_opt is the
// smallest value with
//
//	Phi(1/(2 sigma_opt) - eps sigma_opt) - e^eps Phi(-1/(2 sigma_opt) - eps sigma_opt) <= delta   (eq. (2)),
//
// i.e. sigma_opt = 1 / kappa_eps^{-1}(delta) with privacy.KappaInverse. The returned value is rounded up
// so that the defining inequality holds as computed.
func SigmaOpt(eps, delta float64) (float64, error) {
	if err := checkBudget(eps, delta); err != nil {
		return 0, err
	}
	y, err := privacy.KappaInverse(eps, delta)
	if err != nil {
		return 0, fmt.Errorf("vecsum: sigma_opt: %w", err)
	}
	s := 1 / y
	for i := 0; i < 8 && privacy.Kappa(eps, 1/s) > delta; i++ {
		s = math.Nextafter(s, math.Inf(1))
	}
	return s, nil
}

func checkBudget(eps, delta float64) error {
	if math.IsNaN(eps) || math.IsInf(eps, 0) || eps <= 0 {
		return inputErr("epsilon = %v: must be finite and > 0", eps)
	}
	if math.IsNaN(delta) || delta <= 0 || delta >= 1 {
		return inputErr("delta = %v: must lie in (0, 1)", delta)
	}
	return nil
}

func checkFinite(name string, v []float64) error {
	for j, x := range v {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return inputErr("%s[%d] = %v: must be finite", name, j, x)
		}
	}
	return nil
}
