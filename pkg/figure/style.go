package figure

import (
	"image/color"
	"math"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// The house style: every figure dpsim draws uses these sizes and fonts (Check enforces them).
const (
	// DPI is the resolution of the PNG files.
	DPI = 150
	// Width is the width of a one-column figure.
	Width = 7 * vg.Inch
	// ColumnWidth is the width of each column of a figure with several panels side by side.
	ColumnWidth = 4.6 * vg.Inch
	// PanelHeight is the height of one row of panels of a figure with several rows (legend
	// strip not included).
	PanelHeight = 3.2 * vg.Inch
	// TallPanelHeight is the height of a figure's only row when it holds one panel.
	TallPanelHeight = 4.5 * vg.Inch
	// MinPanelHeight and MaxPanelHeight bound Figure.PanelHeight.
	MinPanelHeight = 3 * vg.Inch
	MaxPanelHeight = 7 * vg.Inch

	// Font sizes of the title, the axis labels, the tick labels and the legend.
	TitleSize  = 13
	LabelSize  = 12
	TickSize   = 10
	LegendSize = 10
)

// Sans is the typeface of every text (Liberation Sans, embedded in gonum's font package).
var Sans = font.Font{Typeface: "Liberation", Variant: "Sans"}

// palette is a colour-blind-friendly qualitative palette (Tableau 10).
var palette = []color.RGBA{
	{31, 119, 180, 255}, {214, 39, 40, 255}, {44, 160, 44, 255}, {255, 127, 14, 255}, {148, 103, 189, 255},
	{140, 86, 75, 255}, {227, 119, 194, 255}, {127, 127, 127, 255}, {188, 189, 34, 255}, {23, 190, 207, 255},
}

// Color is the i-th colour of the palette (cycling).
func Color(i int) color.RGBA { return palette[i%len(palette)] }

// Grey is the colour of reference lines (zero lines, targets).
var Grey = color.RGBA{90, 90, 90, 255}

// Translucent is c with alpha a (premultiplied, as image/color wants it): confidence bands.
func Translucent(c color.RGBA, a uint8) color.Color {
	return color.RGBA{R: uint8(uint16(c.R) * uint16(a) / 255), G: uint8(uint16(c.G) * uint16(a) / 255),
		B: uint8(uint16(c.B) * uint16(a) / 255), A: a}
}

// Dashed is the dash pattern of bounds and reference curves; Dotted the pattern of secondary ones;
// DashDot tells a fourth set of series apart (SeriesDashes).
var (
	Dashed  = []vg.Length{vg.Points(6), vg.Points(3)}
	Dotted  = []vg.Length{vg.Points(2), vg.Points(3)}
	DashDot = []vg.Length{vg.Points(7), vg.Points(2), vg.Points(2), vg.Points(2)}
)

// SeriesDashes is the dash pattern of the i-th of n data series drawn as plain lines. Up to
// four series each get their own pattern (solid, dashed, dotted, dash-dotted), so that lines
// lying on each other, or printed in grey, stay apart; more series are told apart by colour
// first: solid for the first len(palette), then dashed, dotted and dash-dotted, so that with
// Color(i) the first 40 series differ in colour or dash (Check rejects two legend entries
// drawn alike).
func SeriesDashes(i, n int) []vg.Length {
	patterns := [][]vg.Length{nil, Dashed, Dotted, DashDot}
	if n <= len(patterns) {
		return patterns[i%len(patterns)]
	}
	return patterns[(i/len(palette))%len(patterns)]
}

// Fit extends each linear axis of p (NiceTicker) outwards to the nearest labelled ticks, so
// that no data runs into an unlabelled end of the panel, where it would look clipped (Check
// rejects that). Call it after the data and any fixed range are set; it is idempotent.
func Fit(p *plot.Plot) {
	for _, a := range []*plot.Axis{&p.X, &p.Y} {
		if _, ok := a.Tick.Marker.(NiceTicker); !ok || math.IsNaN(a.Max-a.Min) || math.IsInf(a.Max-a.Min, 0) {
			continue
		}
		if a.Max == a.Min { // one value (a flat line): a range around it
			d := math.Max(math.Abs(a.Min)/2, 1)
			a.Min, a.Max = a.Min-d, a.Max+d
		}
		// a wider range may take a longer step, whose labels are elsewhere: repeat until
		// both ends sit on labels
		for range 4 {
			step := niceStep(a.Min, a.Max)
			lo, hi := math.Floor(a.Min/step+1e-9)*step, math.Ceil(a.Max/step-1e-9)*step
			if lo == a.Min && hi == a.Max {
				break
			}
			a.Min, a.Max = lo, hi
		}
	}
}

// LineWidth is the width of data lines.
var LineWidth = vg.Points(1.5)

// Marker returns the i-th marker shape (cycling), for series told apart in black and white too.
func Marker(i int) draw.GlyphDrawer {
	shapes := []draw.GlyphDrawer{draw.CircleGlyph{}, draw.SquareGlyph{}, draw.TriangleGlyph{}, draw.PyramidGlyph{}, draw.CrossGlyph{}, draw.PlusGlyph{}}
	return shapes[i%len(shapes)]
}

// New returns a panel in the house style: sans-serif text at the style's sizes, a light grid,
// tick labels at 1, 2, 2.5 or 5 times a power of ten (SetLogX/SetLogY for log axes). Its
// legend is drawn below the panel by Figure.Render, never over the data, so a panel needs no
// head room for it.
func New(title, xlabel, ylabel string) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.Title.TextStyle.Font = font.From(Sans, TitleSize)
	p.Title.Padding = vg.Points(6)
	p.X.Label.Text, p.Y.Label.Text = xlabel, ylabel
	for _, a := range []*plot.Axis{&p.X, &p.Y} {
		a.Label.TextStyle.Font = font.From(Sans, LabelSize)
		a.Tick.Label.Font = font.From(Sans, TickSize)
		a.Tick.Marker = NiceTicker{}
	}
	p.Legend.TextStyle.Font = font.From(Sans, LegendSize)
	p.Legend.Top, p.Legend.Left = true, true
	p.Legend.ThumbnailWidth = vg.Points(22)
	p.Legend.YPosition = draw.PosCenter
	p.Legend.Padding = vg.Points(2)
	g := plotter.NewGrid()
	g.Vertical.Color = color.Gray{Y: 225}
	g.Horizontal.Color = color.Gray{Y: 225}
	p.Add(g)
	return p
}
