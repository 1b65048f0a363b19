package vecsum

import (
	"fmt"
	"math"
	"strconv"

	"github.com/dpsim/dpsim/pkg/rng"
)

// ZipfSigmas returns the standard deviations of Section 5: sigma_i = i^-alpha / sum_j j^-alpha, i = 1..d.
func ZipfSigmas(d int, alpha float64) []float64 {
	s := make([]float64, d)
	tot := 0.0
	for i := range s {
		s[i] = math.Pow(float64(i+1), -alpha)
		tot += s[i]
	}
	for i := range s {
		s[i] /= tot
	}
	return s
}

// LogGrid returns n points spaced evenly in log10 from lo to hi (inclusive).
func LogGrid(lo, hi float64, n int) []float64 {
	if n == 1 {
		return []float64{lo}
	}
	g := make([]float64, n)
	a, b := math.Log10(lo), math.Log10(hi)
	for i := range g {
		g[i] = math.Pow(10, a+(b-a)*float64(i)/float64(n-1))
	}
	g[0], g[n-1] = lo, hi
	return g
}

// GainRow is one point of the thesis figure (Section 5, Figure 2).
type GainRow struct {
	D     int     `json:"d"`
	N     int     `json:"n"`
	Alpha float64 `json:"alpha"`
	// Gain = E_n / E_t: expected noise error without scaling over Algorithm 3's (sigma_opt cancels).
	Gain               float64 `json:"gain"`
	ClipRadiusScaled   float64 `json:"clip_radius_scaled"`   // C (scaled space)
	ClipRadiusUnscaled float64 `json:"clip_radius_unscaled"` // C_n (original space)
	ErrScaled          float64 `json:"expected_error_scaled_per_sigma_opt2"`
	ErrUnscaled        float64 `json:"expected_error_unscaled_per_sigma_opt2"`
	// Clipping error n E||e||^2 divided by sigma_opt^2 (so comparable with the two errors above) for a
	// stated sigma_opt; nil (and absent from JSON and CSV) when not estimated (clipSamples 0).
	ClipErrScaled   *float64 `json:"clip_error_scaled_per_sigma_opt2,omitempty"`
	ClipErrUnscaled *float64 `json:"clip_error_unscaled_per_sigma_opt2,omitempty"`
}

// GainTable computes the thesis figure: for every d in ds, n in ns and alpha in alphas, the gain of
// Algorithm 3's scaling with Zipf(alpha) standard deviations and clipping probability 1/n. With
// clipSamples > 0 it also estimates the clipping errors (EstimateClipError, seeded by seed).
func GainTable(ds, ns []int, alphas []float64, clipSamples int, seed uint64) ([]GainRow, error) {
	var rows []GainRow
	for _, d := range ds {
		for _, n := range ns {
			if d < 1 || n < 2 {
				return nil, inputErr("gain table: need d >= 1 and n >= 2 (got d = %d, n = %d)", d, n)
			}
			for ai, a := range alphas {
				s := ZipfSigmas(d, a)
				r, err := ClipRadii(s, 1/float64(n))
				if err != nil {
					return nil, fmt.Errorf("gain table d = %d, n = %d, alpha = %v: %w", d, n, a, err)
				}
				row := GainRow{D: d, N: n, Alpha: a, Gain: r.Gain, ClipRadiusScaled: r.Scaled,
					ClipRadiusUnscaled: r.Unscaled, ErrScaled: r.ErrScaled, ErrUnscaled: r.ErrUnscaled}
				if clipSamples > 0 {
					src := rng.New(seed, rng.Label("vecsum-figure"), uint64(d), uint64(n), uint64(ai))
					cs, err := EstimateClipError(s, LemmaScaling(s), r.Scaled, n, clipSamples, src)
					if err != nil {
						return nil, err
					}
					cu, err := EstimateClipError(s, nil, r.Unscaled, n, clipSamples, src)
					if err != nil {
						return nil, err
					}
					row.ClipErrScaled, row.ClipErrUnscaled = &cs.Expected, &cu.Expected
				}
				rows = append(rows, row)
			}
		}
	}
	return rows, nil
}

// gainCSVColumns are the CSV columns of every row; gainCSVClipColumns follow when the clipping errors
// were estimated.
var (
	gainCSVColumns = []string{"d", "n", "alpha", "gain", "clip_radius_scaled", "clip_radius_unscaled",
		"expected_error_scaled_per_sigma_opt2", "expected_error_unscaled_per_sigma_opt2"}
	gainCSVClipColumns = []string{"clip_error_scaled_per_sigma_opt2", "clip_error_unscaled_per_sigma_opt2"}
)

// GainCSVOmitted is why the clipping-error columns are absent from a table computed without them.
const GainCSVOmitted = "clipping-error columns omitted: not estimated with --clip-samples 0 (give --clip-samples S to estimate them)"

// GainCSV formats the table for encoding/csv: a header and one record per row. The clipping-error
// columns appear only when every row has them (GainTable estimates all rows or none), so no cell is
// ever empty or NaN; omitted reports whether they were left out (GainCSVOmitted says why).
func GainCSV(rows []GainRow) (records [][]string, omitted bool) {
	withClip := len(rows) > 0
	for _, r := range rows {
		withClip = withClip && r.ClipErrScaled != nil && r.ClipErrUnscaled != nil
	}
	header := append([]string(nil), gainCSVColumns...)
	if withClip {
		header = append(header, gainCSVClipColumns...)
	}
	records = append(records, header)
	f := func(v float64) string { return strconv.FormatFloat(v, 'g', 10, 64) }
	for _, r := range rows {
		rec := []string{strconv.Itoa(r.D), strconv.Itoa(r.N), f(r.Alpha), f(r.Gain), f(r.ClipRadiusScaled),
			f(r.ClipRadiusUnscaled), f(r.ErrScaled), f(r.ErrUnscaled)}
		if withClip {
			rec = append(rec, f(*r.ClipErrScaled), f(*r.ClipErrUnscaled))
		}
		records = append(records, rec)
	}
	return records, !withClip
}
