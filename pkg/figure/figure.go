package figure

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"

	"github.com/dpsim/dpsim/internal/atomicfile"
)

// Figure is a grid of panels written as Name.png and Name.svg. Its width follows from the
// number of columns (Width for one, ColumnWidth each for more); each row is PanelHeight tall
// plus a strip below it for the legends of that row's panels.
type Figure struct {
	Name    string         // file base name
	Caption string         // what the figure shows, for a report
	Panels  [][]*plot.Plot // rows of panels (New), all rows of the same length
	// PanelHeight is the height of each row without its legend strip; 0 means PanelHeight
	// for several rows, TallPanelHeight for one.
	PanelHeight vg.Length
}

// Formats are the file formats Render writes.
var Formats = []string{"png", "svg"}

const (
	legendGap = 4 * vg.Millimeter // between a row's x axis label and its legends
	padY      = 5 * vg.Millimeter // between rows
)

func (f *Figure) cols() int {
	if len(f.Panels) == 0 {
		return 0
	}
	return len(f.Panels[0])
}

func (f *Figure) panelHeight() vg.Length {
	if f.PanelHeight > 0 {
		return f.PanelHeight
	}
	if len(f.Panels) == 1 {
		return TallPanelHeight
	}
	return PanelHeight
}

// legendStrip is the height of the strip under every row: the tallest legend of the figure
// (0 when no panel has one).
func (f *Figure) legendStrip() vg.Length {
	var h vg.Length
	for _, row := range f.Panels {
		for _, p := range row {
			if p == nil {
				continue
			}
			if lh := p.Legend.Rectangle(draw.Canvas{}).Size().Y; lh > h {
				h = lh
			}
		}
	}
	if h > 0 {
		h += legendGap
	}
	return h
}

// Size is the figure's width and height.
func (f *Figure) Size() (w, h vg.Length) {
	w = Width
	if c := f.cols(); c > 1 {
		w = ColumnWidth * vg.Length(c)
	}
	return w, vg.Length(len(f.Panels)) * (f.panelHeight() + f.legendStrip())
}

// tiles lays the panels out with room for a legend strip of height strip under each row.
func (f *Figure) tiles(strip vg.Length) draw.Tiles {
	return draw.Tiles{Rows: len(f.Panels), Cols: f.cols(), PadX: 6 * vg.Millimeter, PadY: padY + strip,
		PadTop: 2 * vg.Millimeter, PadBottom: 2*vg.Millimeter + strip, PadLeft: 2 * vg.Millimeter, PadRight: 3 * vg.Millimeter}
}

// tileWidth is the width each panel is drawn in.
func (f *Figure) tileWidth() vg.Length {
	w, _ := f.Size()
	t := f.tiles(0)
	return (w - t.PadLeft - t.PadRight - vg.Length(t.Cols-1)*t.PadX) / vg.Length(t.Cols)
}

func (f *Figure) validate() error {
	if len(f.Panels) == 0 || len(f.Panels[0]) == 0 {
		return fmt.Errorf("figure %s has no panels", f.Name)
	}
	for i, row := range f.Panels {
		if len(row) != f.cols() {
			return fmt.Errorf("figure %s: row %d has %d panels, row 0 has %d", f.Name, i, len(row), f.cols())
		}
		for j, p := range row {
			if p == nil {
				return fmt.Errorf("figure %s: panel (%d, %d) is nil", f.Name, i, j)
			}
		}
	}
	return nil
}

// Render draws the figure as "png" or "svg". The panels' axes are aligned; each panel's
// legend is drawn in the strip below it, left-aligned with its data area. Drawing problems
// are returned as errors.
func (f *Figure) Render(format string) (data []byte, err error) {
	if err := f.validate(); err != nil {
		return nil, err
	}
	defer func() {
		if rec := recover(); rec != nil {
			data, err = nil, fmt.Errorf("figure %s: drawing %s failed: %v", f.Name, format, rec)
		}
	}()
	w, h := f.Size()
	var cw vg.CanvasWriterTo
	switch format {
	case "png":
		cw = vgimg.PngCanvas{Canvas: vgimg.NewWith(vgimg.UseWH(w, h), vgimg.UseDPI(DPI))}
	case "svg":
		cw = vgsvg.New(w, h)
	default:
		return nil, fmt.Errorf("figure %s: unknown format %q (png, svg)", f.Name, format)
	}
	dc := draw.New(cw)
	strip := f.legendStrip()
	// The legends leave the panels while they are drawn (plot.Plot draws its legend over the
	// data) and come back afterwards: Render may be called again.
	legends := make([][]plot.Legend, len(f.Panels))
	for i, row := range f.Panels {
		legends[i] = make([]plot.Legend, len(row))
		for j, p := range row {
			legends[i][j] = p.Legend
			p.Legend = plot.Legend{TextStyle: p.Legend.TextStyle}
		}
	}
	// Likewise a title too wide for its panel is wrapped at spaces while it is drawn.
	titles := make([][]string, len(f.Panels))
	tw := f.tileWidth()
	for i, row := range f.Panels {
		titles[i] = make([]string, len(row))
		for j, p := range row {
			titles[i][j] = p.Title.Text
			p.Title.Text = wrap(p.Title.TextStyle, p.Title.Text, tw)
		}
	}
	defer func() {
		for i, row := range f.Panels {
			for j, p := range row {
				p.Legend = legends[i][j]
				p.Title.Text = titles[i][j]
			}
		}
	}()
	tiles := f.tiles(strip)
	canvases := plot.Align(f.Panels, tiles, dc)
	for i, row := range f.Panels {
		for j, p := range row {
			p.Draw(canvases[i][j])
			if strip == 0 {
				continue
			}
			tile := tiles.At(dc, j, i)
			area := p.DataCanvas(canvases[i][j])
			lc := draw.Canvas{Canvas: dc.Canvas, Rectangle: vg.Rectangle{
				Min: vg.Point{X: area.Min.X, Y: tile.Min.Y - strip},
				Max: vg.Point{X: tile.Max.X, Y: tile.Min.Y - legendGap},
			}}
			leg := legends[i][j]
			leg.Top, leg.Left, leg.XOffs, leg.YOffs = true, true, 0, 0
			leg.Draw(lc)
		}
	}
	var buf bytes.Buffer
	if _, err := cw.WriteTo(&buf); err != nil {
		return nil, fmt.Errorf("figure %s: %w", f.Name, err)
	}
	return buf.Bytes(), nil
}

// WriteFiles renders the figure in every format and writes dir/Name.png and dir/Name.svg,
// each atomically (a reader never sees half a file). It returns the paths written.
func (f *Figure) WriteFiles(dir string) ([]string, error) {
	return f.WriteFilesMode(dir, func(string) os.FileMode { return 0o644 })
}

// WriteFilesMode is WriteFiles with each file's mode given by mode(its name in dir).
func (f *Figure) WriteFilesMode(dir string, mode func(name string) os.FileMode) ([]string, error) {
	var paths []string
	for _, format := range Formats {
		data, err := f.Render(format)
		if err != nil {
			return paths, err
		}
		path := filepath.Join(dir, f.Name+"."+format)
		if err := atomicfile.WriteFile(path, data, mode(f.Name+"."+format)); err != nil {
			return paths, fmt.Errorf("figure %s: writing %s: %w", f.Name, path, err)
		}
		paths = append(paths, path)
	}
	return paths, nil
}

// wrap breaks each line of s at spaces so that no line is wider than width in style st
// (a single word wider than width stays on its own line).
func wrap(st text.Style, s string, width vg.Length) string {
	if s == "" || st.Rectangle(s).Size().X <= width {
		return s
	}
	var out []string
	for _, line := range strings.Split(s, "\n") {
		cur := ""
		for _, w := range strings.Fields(line) {
			if cur != "" && st.Rectangle(cur+" "+w).Size().X > width {
				out = append(out, cur)
				cur = w
				continue
			}
			if cur == "" {
				cur = w
			} else {
				cur += " " + w
			}
		}
		out = append(out, cur)
	}
	return strings.Join(out, "\n")
}
