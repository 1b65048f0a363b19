package figure

import (
	"math"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
)

// LogTicker marks the ticks of a log axis (see SetLogY); Check recognises log axes by it.
type LogTicker struct{}

// Ticks implements plot.Ticker.
func (LogTicker) Ticks(min, max float64) []plot.Tick { return logTicks(min, max) }

// NiceTicker is the ticker of every linear axis (New sets it).
type NiceTicker struct{}

// Ticks implements plot.Ticker.
func (NiceTicker) Ticks(min, max float64) []plot.Tick { return niceTicks(min, max) }

// SpansDecades reports whether the positive values span at least two decades (log axis).
func SpansDecades(vals []float64) bool {
	lo, hi := math.Inf(1), 0.0
	for _, v := range vals {
		if v > 0 && !math.IsInf(v, 0) {
			lo, hi = math.Min(lo, v), math.Max(hi, v)
		}
	}
	return hi > 0 && hi >= 100*lo
}

// PositiveRange returns the smallest and largest positive finite values.
func PositiveRange(vals []float64) (lo, hi float64, ok bool) {
	lo, hi = math.Inf(1), 0
	for _, v := range vals {
		if v > 0 && !math.IsInf(v, 0) && !math.IsNaN(v) {
			lo, hi = math.Min(lo, v), math.Max(hi, v)
		}
	}
	return lo, hi, hi > 0
}

// Log axes are drawn on linear axes holding log10 of the data, with ticks labelled as the
// powers of ten they stand for (gonum's LogScale mis-places the axis label's glyph box, which
// shrinks the data area, and panics on non-positive ranges).

// Lg maps a positive value to the log axis coordinate.
func Lg(v float64) float64 { return math.Log10(v) }

// MaxLogDecades is the most decades a log axis spans below the largest value it shows;
// smaller values are drawn on its lower edge (a near-zero value such as an exact 1e-15 would
// otherwise stretch the axis over fifteen decades and flatten everything else).
const MaxLogDecades = 12

// SetLogY makes the y axis logarithmic for positive data values in [lo, hi]. It returns the
// floor, the axis's lowest value (plot smaller values at it), and whether lo was raised to
// keep within MaxLogDecades. An axis of more than four decades runs from decade to decade,
// so that both ends are labelled.
func SetLogY(p *plot.Plot, lo, hi float64) (floor float64, clipped bool) {
	p.Y.Tick.Marker = LogTicker{}
	p.Y.Min, p.Y.Max, clipped = logRange(lo, hi, 1.15)
	return math.Pow(10, p.Y.Min), clipped
}

// SetLogX makes the x axis logarithmic for positive data values in [lo, hi].
func SetLogX(p *plot.Plot, lo, hi float64) (floor float64, clipped bool) {
	p.X.Tick.Marker = LogTicker{}
	p.X.Min, p.X.Max, clipped = logRange(lo, hi, 1.4)
	return math.Pow(10, p.X.Min), clipped
}

// logRange is the log10 axis range for data in [lo, hi] with a margin of a factor pad: over
// up to two decades from a 1, 2 or 5 times a power of ten to another (logTicks labels those),
// beyond from decade to decade; both ends are labelled.
func logRange(lo, hi, pad float64) (min, max float64, clipped bool) {
	if hi <= lo {
		lo, hi = lo/2, hi*2
	}
	if lo < hi*math.Pow(10, -MaxLogDecades) {
		lo, clipped = hi*math.Pow(10, -MaxLogDecades), true
	}
	if Lg(hi*pad)-Lg(lo/pad) <= 2 {
		return Lg(step125Below(lo / pad)), Lg(step125Above(hi * pad)), clipped
	}
	// whole decades around the data, no margin
	min, max = math.Floor(Lg(lo)+1e-9), math.Ceil(Lg(hi)-1e-9)
	if d := int(max - min); d > 7 {
		step := (d + 6) / 7 // logTicks labels every step-th decade from min
		max = min + float64((d+step-1)/step*step)
	}
	return min, max, clipped
}

// step125Below is the largest 1, 2 or 5 times a power of ten at most v; step125Above the
// smallest at least v.
func step125Below(v float64) float64 {
	e := math.Pow(10, math.Floor(Lg(v)+1e-12))
	for _, m := range []float64{5, 2, 1} {
		if m*e <= v*(1+1e-12) {
			return m * e
		}
	}
	return e
}

func step125Above(v float64) float64 {
	e := math.Pow(10, math.Floor(Lg(v)-1e-12))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*e >= v*(1-1e-12) {
			return m * e
		}
	}
	return 10 * e
}

// logSpan125 is the widest log axis (in decades) labelled at 1, 2 and 5 times the powers of
// ten: logRange rounds a range of up to two decades out to such values, which can widen it
// to 2 + 2 log10(2.5) decades.
const logSpan125 = 2.9

// logTicks gives the ticks of a log axis whose coordinates are log10 values in [min, max]:
// labels at powers of ten (every k-th decade when there are many), minor ticks at 2..9 times
// them; over up to logSpan125 decades it also labels 2 and 5 times the powers of ten.
func logTicks(min, max float64) []plot.Tick {
	if !(max > min) || math.IsInf(min, 0) || math.IsInf(max, 0) {
		return plot.DefaultTicks{}.Ticks(min, max)
	}
	lo, hi := int(math.Floor(min)), int(math.Ceil(max))
	decades := hi - lo
	step := 1
	if decades > 7 {
		step = (decades + 6) / 7
	}
	in := func(x float64) bool { return x >= min-1e-9 && x <= max+1e-9 }
	with25 := max-min <= logSpan125
	var ticks []plot.Tick
	for e := lo; e <= hi; e++ {
		x := float64(e)
		if (e-lo)%step == 0 && in(x) {
			ticks = append(ticks, plot.Tick{Value: x, Label: tickLabel(math.Pow(10, x))})
		} else if in(x) {
			ticks = append(ticks, plot.Tick{Value: x})
		}
		if decades <= 7 {
			for k := 2; k <= 9; k++ {
				xm := x + math.Log10(float64(k))
				if !in(xm) {
					continue
				}
				t := plot.Tick{Value: xm}
				if with25 && (k == 2 || k == 5) {
					t.Label = tickLabel(math.Pow(10, xm))
				}
				ticks = append(ticks, t)
			}
		}
	}
	// One format per axis: when any label needs an exponent, every label gets one (1e-2, not
	// 0.01 beside 1e-4).
	exp := false
	for _, t := range ticks {
		exp = exp || strings.Contains(t.Label, "e")
	}
	if exp {
		for i := range ticks {
			if ticks[i].Label != "" {
				ticks[i].Label = expLabel(math.Pow(10, ticks[i].Value))
			}
		}
	}
	return ticks
}

// expLabel prints v as m e k ("1e-2", "5e3"); 1 stays "1".
func expLabel(v float64) string {
	if math.Abs(v-1) < 1e-9 {
		return "1"
	}
	s := strconv.FormatFloat(v, 'e', -1, 64)
	mant, e, _ := strings.Cut(s, "e")
	if m, err := strconv.ParseFloat(mant, 64); err == nil {
		mant = strconv.FormatFloat(math.Round(m*1e6)/1e6, 'g', -1, 64)
	}
	sign := ""
	if strings.HasPrefix(e, "-") {
		sign = "-"
	}
	e = strings.TrimLeft(strings.TrimLeft(e, "+-"), "0")
	if e == "" {
		return mant
	}
	return mant + "e" + sign + e
}

// niceTicks labels a linear axis every 1, 2, 2.5 or 5 times a power of ten (5 to 10 labels),
// with minor ticks in between, printing each label with only the digits the step needs.
func niceTicks(min, max float64) []plot.Tick {
	if !(max > min) || math.IsInf(min, 0) || math.IsInf(max, 0) {
		return plot.DefaultTicks{}.Ticks(min, max)
	}
	step, minorDiv := niceStepDiv(min, max)
	mag := math.Pow(10, math.Floor(math.Log10(step)+1e-9))
	dec := 0
	if e := -int(math.Floor(math.Log10(step) + 1e-9)); e > 0 {
		dec = e
	}
	if math.Abs(step/mag-2.5) < 1e-9 && step < 10 { // 2.5, 7.5 and 0.25, 0.75 need one more digit
		dec++
	}
	big := math.Max(math.Abs(min), math.Abs(max))
	var ticks []plot.Tick
	minor := step / float64(minorDiv)
	k0 := int(math.Ceil(min/minor - 1e-9))
	for k := k0; ; k++ {
		v := float64(k) * minor
		if v > max+1e-9*step {
			break
		}
		if k%minorDiv == 0 {
			v = float64(k/minorDiv) * step
			var label string
			if big >= 1e5 || big < 1e-3 {
				// every label with an exponent (5e4 beside 1e5, not 50000)
				label = expLabel(math.Round(v/minor) * minor)
				if math.Abs(v) < minor/2 {
					label = "0"
				}
			} else {
				label = strconv.FormatFloat(v, 'f', dec, 64)
				if strings.Trim(label, "-0.") == "" {
					label = "0"
				}
			}
			ticks = append(ticks, plot.Tick{Value: v, Label: label})
		} else {
			ticks = append(ticks, plot.Tick{Value: v})
		}
		if len(ticks) > 200 {
			break
		}
	}
	return ticks
}

// niceStep is the labelled step of a linear axis over [min, max]: the smallest 1, 2, 2.5 or 5
// times a power of ten that gives at most about 6 intervals.
func niceStep(min, max float64) float64 {
	step, _ := niceStepDiv(min, max)
	return step
}

// niceStepDiv is niceStep and the number of minor intervals per step.
func niceStepDiv(min, max float64) (step float64, minorDiv int) {
	raw := (max - min) / 6
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	step, minorDiv = 10*mag, 5
	for _, m := range []struct {
		f   float64
		div int
	}{{1, 5}, {2, 4}, {2.5, 5}, {5, 5}} {
		if m.f*mag >= raw {
			return m.f * mag, m.div
		}
	}
	return step, minorDiv
}

// tickLabel prints a tick value compactly: 0.01, 100, 1e-5, 2e6.
func tickLabel(v float64) string {
	v, _ = strconv.ParseFloat(strconv.FormatFloat(v, 'g', 6, 64), 64)
	a := math.Abs(v)
	if a != 0 && (a < 1e-3 || a >= 1e5) {
		s := strconv.FormatFloat(v, 'e', -1, 64)
		mant, exp, _ := strings.Cut(s, "e")
		sign := ""
		if strings.HasPrefix(exp, "-") {
			sign = "-"
		}
		exp = strings.TrimLeft(strings.TrimLeft(exp, "+-"), "0")
		if mant == "1" {
			return "1e" + sign + exp
		}
		return mant + "e" + sign + exp
	}
	return strconv.FormatFloat(v, 'g', 6, 64)
}
