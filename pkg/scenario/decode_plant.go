package scenario

import "gopkg.in/yaml.v3"

// plantTable is plant: {A, B, C, x0}. B and C are checked against A when A is usable (p.A
// is set only then).
var plantTable = []field[PlantSpec]{
	{key: "A", need: "the state matrix, nx x nx", set: func(d *decoder, p *PlantSpec, n *yaml.Node, path string) bool {
		m, ok := d.matrix(n, path, flatNone)
		if !ok {
			return false
		}
		if m.Rows() != m.Cols() {
			d.add(n, path, "is %s, must be square (states x states)", m.dims())
			return false
		}
		p.A = m
		return true
	}},
	{key: "B", need: "the input matrix, nx x nu (a flat list is one column)", set: func(d *decoder, p *PlantSpec, n *yaml.Node, path string) bool {
		m, ok := d.matrix(n, path, flatColumn)
		if !ok {
			return false
		}
		p.B = m
		if p.A != nil && m.Rows() != p.Nx() {
			d.add(n, path, "%d rows, plant.A is %s", m.Rows(), p.A.dims())
			return false
		}
		return true
	}},
	{key: "C", need: "the output matrix, ny x nx (a flat list is one row)", set: func(d *decoder, p *PlantSpec, n *yaml.Node, path string) bool {
		m, ok := d.matrix(n, path, flatRow)
		if !ok {
			return false
		}
		p.C = m
		if p.A != nil && m.Cols() != p.Nx() {
			d.add(n, path, "%d columns, plant.A is %s", m.Cols(), p.A.dims())
			return false
		}
		return true
	}},
	// x0 defaults to zeros; a wrong one is reported but leaves the plant usable for the
	// checks of the other sections.
	{key: "x0", set: func(d *decoder, p *PlantSpec, n *yaml.Node, path string) bool {
		if v, ok := d.vector(n, path); ok {
			p.X0 = v
			if p.A != nil && len(v) != p.Nx() {
				d.add(n, path, "%d entries, plant.A is %s (want %d)", len(v), p.A.dims(), p.Nx())
			}
		}
		return true
	}, absent: func(_ *decoder, p *PlantSpec, _ *fields) bool {
		if p.A != nil {
			p.X0 = make([]float64, p.Nx())
		}
		return true
	}},
}

// plant decodes plant: {A, B, C, x0} and checks the dimensions agree. It returns nil when
// A, B or C is unusable (so that later dimension checks are skipped rather than cascading).
func (d *decoder) plant(n *yaml.Node) *PlantSpec {
	p := &PlantSpec{}
	if f, good := section(d, n, "plant", p, plantTable); f == nil || !good {
		return nil
	}
	return p
}
