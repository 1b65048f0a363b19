package report

import (
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/dpsim/dpsim/pkg/scenario"
)

// numericParam reports whether a sweep parameter takes numbers.
func numericParam(p string) bool {
	return p == string(scenario.SweepEpsilon) || p == string(scenario.SweepDelta) || p == string(scenario.SweepMu) || faultAxis(p)
}

// faultAxis reports whether p is a numeric fault parameter (a linear axis that may start at 0).
func faultAxis(p string) bool {
	switch scenario.SweepParam(p) {
	case scenario.SweepFaultDelay, scenario.SweepFaultJitter, scenario.SweepFaultDrop, scenario.SweepFaultDuplicate, scenario.SweepFaultReorder:
		return true
	}
	return false
}

// sweepLayout chooses the sweep figures' x parameter (the first numeric swept parameter, else
// the first), the series (the values of the other parameters) and the representative point
// (x value closest to 1 on a log scale, e.g. the paper's eps = 1; first series).
func (r *analysis) sweepLayout() {
	params := r.sweptParams()
	if len(params) == 0 {
		r.rep = r.points[0]
		r.points[0].label = pointName(r.points[0])
		return
	}
	r.sweep = len(r.points) > 1 || r.sc != nil && len(r.sc.Sweeps) > 0
	r.axisParam = params[0]
	for _, p := range params {
		if numericParam(p) {
			r.axisParam = p
			break
		}
	}
	for _, p := range params {
		if p != r.axisParam {
			r.seriesParams = append(r.seriesParams, p)
		}
	}
	r.axisLayout()
	for _, p := range r.points {
		r.place(p, params)
	}
	r.rep = r.representative()
}

// sweptParams returns the swept parameters: the scenario's sweeps, else the first point's
// values, else (several points without sweep information) "point", one categorical value per
// point, set on each.
func (r *analysis) sweptParams() []string {
	var params []string
	if r.sc != nil {
		for _, sw := range r.sc.Sweeps {
			params = append(params, string(sw.Param))
		}
	}
	if len(params) == 0 && r.points[0].sc != nil {
		for _, v := range r.points[0].sc.Point {
			params = append(params, string(v.Param))
		}
	}
	if len(params) == 0 && len(r.points) > 1 {
		// Points without sweep information: one categorical value per point.
		params = []string{"point"}
		for _, p := range r.points {
			p.values["point"] = pointName(p)
		}
	}
	return params
}

// axisLayout sets the x axis's labels (in sweep order from the file, else in order of
// appearance), whether it is numeric (every value a positive number, or >= 0 for a fault
// parameter) with its values, and whether it is logarithmic (a decade or more, not a fault axis).
func (r *analysis) axisLayout() {
	if r.sc != nil {
		for _, sw := range r.sc.Sweeps {
			if string(sw.Param) == r.axisParam {
				for i := 0; i < sw.Len(); i++ {
					r.axisLabels = append(r.axisLabels, sw.Value(i))
				}
			}
		}
	}
	for _, p := range r.points {
		if v := p.values[r.axisParam]; !slices.Contains(r.axisLabels, v) {
			r.axisLabels = append(r.axisLabels, v)
		}
	}
	r.axisNumeric = numericParam(r.axisParam)
	if r.axisNumeric {
		for _, l := range r.axisLabels {
			v, err := strconv.ParseFloat(l, 64)
			if err != nil || !(v > 0 || faultAxis(r.axisParam) && v >= 0) {
				r.axisNumeric = false
				break
			}
			r.axisValues = append(r.axisValues, v)
		}
	}
	if !r.axisNumeric {
		r.axisValues = nil
	} else if lo, hi := slices.Min(r.axisValues), slices.Max(r.axisValues); hi >= 10*lo && !faultAxis(r.axisParam) {
		r.axisLog = true
	}
}

// place sets a point's axis index, its series (adding the series on first sight) and its label
// (every swept parameter's value).
func (r *analysis) place(p *pointInfo, params []string) {
	p.axis = slices.Index(r.axisLabels, p.values[r.axisParam])
	var parts, vals []string
	for _, sp := range r.seriesParams {
		parts = append(parts, sp+"="+p.values[sp])
		vals = append(vals, p.values[sp])
	}
	key := strings.Join(vals, ", ")
	if len(r.seriesParams) > 1 {
		key = strings.Join(parts, ", ")
	}
	if i := slices.Index(r.seriesLabels, key); i >= 0 {
		p.series = i
	} else {
		p.series = len(r.seriesLabels)
		r.seriesLabels = append(r.seriesLabels, key)
	}
	var all []string
	for _, q := range params {
		if q == "point" {
			all = append(all, p.values[q])
		} else {
			all = append(all, q+"="+p.values[q])
		}
	}
	p.label = strings.Join(all, ", ")
}

// representative returns the point the per-point figures show: the first series at the x value
// closest to 1 on a log scale (the first value on a categorical axis), else the first point.
func (r *analysis) representative() *pointInfo {
	repAxis := 0
	if r.axisNumeric {
		best := math.Inf(1)
		for i, v := range r.axisValues {
			if d := math.Abs(math.Log(v)); d < best-1e-12 {
				best, repAxis = d, i
			}
		}
	}
	for _, p := range r.points {
		if p.axis == repAxis && p.series == 0 {
			return p
		}
	}
	return r.points[0]
}

func pointName(p *pointInfo) string {
	if p.sc != nil {
		return p.sc.Name
	}
	return p.res.Scenario
}

// pointsAt returns the points at axis index a (in series order).
func (r *analysis) pointsAt(a int) []*pointInfo {
	var out []*pointInfo
	for _, p := range r.points {
		if p.axis == a {
			out = append(out, p)
		}
	}
	slices.SortStableFunc(out, func(x, y *pointInfo) int { return x.series - y.series })
	return out
}

// pointsOfSeries returns the points of series s (in axis order).
func (r *analysis) pointsOfSeries(s int) []*pointInfo {
	var out []*pointInfo
	for _, p := range r.points {
		if p.series == s {
			out = append(out, p)
		}
	}
	slices.SortStableFunc(out, func(x, y *pointInfo) int { return x.axis - y.axis })
	return out
}

// axisText is the axis value of p as printed.
func (r *analysis) axisText(p *pointInfo) string {
	if r.axisParam == "point" {
		return p.values["point"]
	}
	return r.axisParam + " = " + p.values[r.axisParam]
}
