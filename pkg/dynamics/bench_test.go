package dynamics

import "testing"

// One plant + observer + controller step of the cloud-control loop (eqs. 16, 17, 24).
func BenchmarkPlantObserverControllerStep(b *testing.B) {
	sys := vehicle(b)
	K, L := paperGains()
	p := NewPlant(sys, []float64{0, 0})
	c, err := NewObserverController(sys, K, L, TanhReference{}, nil)
	if err != nil {
		b.Fatal(err)
	}
	y, u := make([]float64, 1), make([]float64, 1)
	b.ReportAllocs()
	k := 0
	for b.Loop() {
		p.Output(y)
		y[0] += 0.1 // a noise offset
		c.Step(k, y, u)
		p.Step(u)
		k++
		if k == 100 {
			k = 0
			p.Reset(nil)
			c.Reset(nil)
		}
	}
}

// One step of eq. (25) for 100 agents on a random 4-regular graph.
func BenchmarkConsensusStep(b *testing.B) {
	g, err := RandomRegular(100, 4, 0, 1)
	if err != nil {
		b.Fatal(err)
	}
	x0 := make([]float64, 100)
	for i := range x0 {
		x0[i] = float64(i)
	}
	net, err := NewConsensusNetwork(g, x0)
	if err != nil {
		b.Fatal(err)
	}
	y, gamma := make([]float64, 100), make([]float64, 100)
	for i := range gamma {
		gamma[i] = 0.01 * float64(i%7)
	}
	b.ReportAllocs()
	for b.Loop() {
		net.Outputs(gamma, y)
		net.Step(y)
	}
}

func BenchmarkDLQRVehicle(b *testing.B) {
	sys := vehicle(b)
	Q, R := scaledEye(2, 20), scaledEye(1, 1)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := DLQR(sys.A, sys.B, Q, R); err != nil {
			b.Fatal(err)
		}
	}
}
