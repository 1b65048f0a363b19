package plan

import (
	"fmt"
	"math"

	"gonum.org/v1/gonum/mat"

	"github.com/dpsim/dpsim/pkg/dynamics"
	"github.com/dpsim/dpsim/pkg/noise"
	"github.com/dpsim/dpsim/pkg/privacy"
	"github.com/dpsim/dpsim/pkg/scenario"
)

// Conditioning is how fragile the plan's sensitivity is: its smallest kept |det D_dj| and
// its largest relative change when the entries of the private model (A_m, C_m) move by 1e-4
// relative (privacy.ModelConditioning), recomputing the sensitivity the noise is calibrated with
// (structured and none: DynamicsSensitivity; iid-calibrated: IIDSensitivity; iid-naive: one
// release). It costs up to 2 (n_x^2 + n_y n_x) + 4 recomputations of the sensitivity, capped at
// privacy.PerturbationBudget flops (about half a second for n_x = 3, T = 100), so it is computed on
// demand, not by New.
func (p *Plan) Conditioning() privacy.Conditioning {
	T, norm, adj := p.Steps, p.norm(), p.Adjacency
	nx, _ := p.ModelA.Dims()
	ny, _ := p.ModelC.Dims()
	eval := func(A, C *mat.Dense) (float64, error) {
		s, err := privacy.DynamicsSensitivity(A, C, T, adj, norm, 0)
		return s.Value, err
	}
	cost := privacy.DynamicsCost(adj, T, nx, float64(nx))
	switch p.Noise {
	case noise.IIDCalibrated:
		eval = func(A, C *mat.Dense) (float64, error) {
			s, err := privacy.IIDSensitivity(A, C, T, adj, norm, 0)
			return s.Value, err
		}
		vc := float64(nx * nx)
		if norm == 1 {
			vc = float64(T * (nx*nx + ny*nx))
		}
		cost = privacy.DynamicsCost(adj, T, nx, vc)
	case noise.IIDNaive:
		eval = func(A, C *mat.Dense) (float64, error) {
			s, err := privacy.SingleReleaseSensitivity(A, C, adj, norm)
			return s.Value, err
		}
		cost = privacy.DynamicsCost(adj, 1, nx, float64(ny*nx))
	}
	return privacy.ModelConditioning(p.ModelA, p.ModelC, p.Sensitivity, cost, eval)
}

// NoiseFree is the tracking error of the plan's closed loop run with zero noise.
type NoiseFree struct {
	// Final[i] is (x_i(T) - x_r,i(T))^2.
	Final []float64
	// Avg[i] is the time-averaged (1/(T+1)) sum_{t=0..T} (x_i(t) - x_r,i(t))^2: the transient the
	// controller is designed to achieve (metrics.ControlMetrics.AvgSqError without noise).
	Avg []float64
}

// NoiseFreeTracking runs the plan's closed loop with zero noise: the same plant, x(0), controller,
// observer, xhat(0) and reference, the plant publishing y(t) = C x(t) exactly. It is deterministic,
// the error the control would have without privacy, against which the run's tracking error measures
// what the noise costs. Cloud control only.
func (p *Plan) NoiseFreeTracking() (NoiseFree, error) {
	if p.Scenario == nil || p.Scenario.Kind != scenario.CloudControl || p.System == nil {
		return NoiseFree{}, fmt.Errorf("plan: the noise-free tracking error needs a cloud-control plan")
	}
	var x0, xhat0 []float64
	if pl := p.Scenario.Plant; pl != nil && pl.X0 != nil {
		x0 = append([]float64(nil), pl.X0...)
		if err := p.System.CheckState(x0); err != nil {
			return NoiseFree{}, fmt.Errorf("plan: x0: %w", err)
		}
	}
	if c := p.Scenario.Controller; c != nil && c.Xhat0 != nil {
		xhat0 = append([]float64(nil), c.Xhat0...)
	}
	ctl, err := dynamics.NewObserverController(p.System, p.K, p.L, p.Reference, xhat0)
	if err != nil {
		return NoiseFree{}, fmt.Errorf("plan: noise-free run: %w", err)
	}
	plant := dynamics.NewPlant(p.System, x0)
	nx := p.System.Nx()
	y := make([]float64, p.System.Ny())
	u := make([]float64, p.System.Nu())
	xr := make([]float64, nx)
	out := NoiseFree{Final: make([]float64, nx), Avg: make([]float64, nx)}
	for t := 0; ; t++ {
		if p.Reference != nil {
			p.Reference.At(t, xr)
		}
		for i, x := range plant.State() {
			d := x - xr[i]
			if math.IsNaN(d) || math.IsInf(d, 0) {
				return NoiseFree{}, fmt.Errorf("plan: the noise-free closed loop diverges (x_%d(%d) = %v)", i, t, x)
			}
			out.Avg[i] += d * d / float64(p.Steps+1)
			out.Final[i] = d * d
		}
		if t == p.Steps {
			break
		}
		plant.Output(y)
		ctl.Step(t, y, u)
		plant.Step(u)
	}
	return out, nil
}
