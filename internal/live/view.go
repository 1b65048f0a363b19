package live

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/dpsim/dpsim/pkg/figure"
	"github.com/dpsim/dpsim/pkg/record"
	"github.com/dpsim/dpsim/pkg/report"
	"github.com/dpsim/dpsim/pkg/trace"
)

// The files of a run directory the view reads.
const (
	SummaryFile       = record.FileName
	FaultsAppliedFile = "faults.applied.yaml"
)

// MaxViewEpisodes bounds the traced episodes the view loads per point (the first ones of its
// trace file): a run with --trace-episodes -1 may hold every episode.
const MaxViewEpisodes = 200

// ViewState is a finished run as the page shows it in view mode (dpsim view): /api/state.
type ViewState struct {
	Page     string `json:"page"` // "view"
	Dir      string `json:"dir"`
	Scenario string `json:"scenario"`
	Kind     string `json:"kind"`   // cloud-control or consensus
	Engine   string `json:"engine"` // nats or fast
	Mode     string `json:"mode"`   // lockstep or realtime
	Runs     int    `json:"runs"`
	Status   string `json:"status"` // ok, degraded, failed or interrupted
	Error    string `json:"error,omitempty"`
	// Points are the run's points (a sweep has several) with their traced episodes.
	Points []ViewPoint `json:"points"`
	// Figures are the figures of report.md, in its order.
	Figures []ViewFigure `json:"figures"`
	// Timeline is the run's timeline of faults and exits (summary.json), FaultsApplied the
	// text of faults.applied.yaml when the run wrote one.
	Timeline      []record.TimelineEvent `json:"timeline"`
	FaultsApplied string                 `json:"faults_applied,omitempty"`
	// Notes say what the view shows only in part (episodes beyond MaxViewEpisodes, figures
	// of a run written before their data was).
	Notes []string `json:"notes"`
	// Summary is summary.json without its long numeric series (the per-step means, the
	// figures show them): status, problems, warnings, processes, each point's metrics and
	// links.
	Summary map[string]any `json:"summary"`
}

// ViewPoint is one point of a finished run.
type ViewPoint struct {
	Name      string            `json:"name"`
	Params    map[string]string `json:"params,omitempty"` // the swept parameters' values
	Steps     int               `json:"steps"`
	Bound     float64           `json:"bound,omitempty"` // the live view's PointInfo.Bound: consensus, Proposition 1's bound; cloud control, Var(gamma)
	Requested int               `json:"requested"`
	Completed int               `json:"completed"`
	TraceFile string            `json:"trace_file,omitempty"`
	Traced    int               `json:"traced"`   // episodes in the trace file (summary.json)
	Episodes  []int             `json:"episodes"` // the traced episodes loaded, in file order
}

// ViewFigure is one figure of report.md: its data (figure.Data) or, for a run written before
// the report wrote its figures' data, only its image (served under /out/).
type ViewFigure struct {
	Name  string       `json:"name"`
	Alt   string       `json:"alt"`
	Image string       `json:"image"` // the PNG, relative to the run directory
	Data  *figure.Data `json:"data,omitempty"`
}

// View is a finished run loaded for the page: its state and its traced episodes' series.
type View struct {
	dir      string
	state    []byte
	episodes map[[2]int][]byte // (point, episode) -> the Series as JSON
	images   map[string]bool   // the files /out/ serves
	st       *ViewState
}

// State returns the view's state (the caller must not change it).
func (v *View) State() *ViewState { return v.st }

// LoadView reads the finished run in dir: summary.json, report.md and its figures' data,
// the merged traces of the traced episodes and faults.applied.yaml. An error names the file
// and what is wrong with it.
func LoadView(dir string) (*View, error) {
	fi, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("%s: no such directory", dir)
	case err != nil:
		return nil, err
	case !fi.IsDir():
		return nil, fmt.Errorf("%s is not a directory (want the --out directory of a dpsim run)", dir)
	}
	raw, sum, err := readSummary(dir)
	if err != nil {
		return nil, err
	}
	v := &View{dir: dir, episodes: map[[2]int][]byte{}, images: map[string]bool{}}
	st := &ViewState{Page: "view", Dir: dir, Scenario: sum.Scenario, Kind: sum.Kind, Engine: sum.Engine, Mode: sum.Mode,
		Runs: sum.Runs, Status: sum.Status, Error: sum.Error, Timeline: sum.Timeline, Notes: []string{}, Summary: trimSeries(raw).(map[string]any)}
	if st.Timeline == nil {
		st.Timeline = []record.TimelineEvent{}
	}
	delete(st.Summary, "metrics") // the points' metrics hold the same
	v.st = st
	if err := v.loadPoints(sum); err != nil {
		return nil, err
	}
	if err := v.loadFigures(sum.Files.Report); err != nil {
		return nil, err
	}
	if st.FaultsApplied, err = readFaultsApplied(dir); err != nil {
		return nil, err
	}
	if v.state, err = json.Marshal(st); err != nil {
		return nil, fmt.Errorf("view of %s: %w", dir, err)
	}
	return v, nil
}

// readSummary reads and checks dir/summary.json.
func readSummary(dir string) (map[string]any, *record.Summary, error) {
	path := filepath.Join(dir, SummaryFile)
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil, fmt.Errorf("%s is not a dpsim run directory: it has no %s (dpsim run --out DIR writes one)", dir, SummaryFile)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	var raw map[string]any
	var sum record.Summary
	if err := json.Unmarshal(b, &raw); err != nil {
		return nil, nil, fmt.Errorf("%s: invalid JSON: %w", path, err)
	}
	if err := json.Unmarshal(b, &sum); err != nil {
		return nil, nil, fmt.Errorf("%s: not a dpsim run summary: %w", path, err)
	}
	switch {
	case sum.Kind != "cloud-control" && sum.Kind != "consensus":
		return nil, nil, fmt.Errorf("%s: not a dpsim run summary: kind %q (want cloud-control or consensus)", path, sum.Kind)
	case len(sum.Points) == 0:
		return nil, nil, fmt.Errorf("%s: not a dpsim run summary: no points", path)
	}
	return raw, &sum, nil
}

// loadPoints reads each point's traced episodes.
func (v *View) loadPoints(sum *record.Summary) error {
	for k, p := range sum.Points {
		vp := ViewPoint{Name: p.Name, Params: p.Point, Steps: sum.Steps, Requested: p.Requested, Completed: p.Episodes,
			TraceFile: p.TraceFile, Traced: p.TraceEpisodes, Episodes: []int{}}
		if p.Metrics != nil {
			if p.Metrics.Steps > 0 {
				vp.Steps = p.Metrics.Steps
			}
			if p.Metrics.Consensus != nil {
				vp.Bound = p.Metrics.Consensus.Prop1Bound
			} else {
				vp.Bound = p.Metrics.NoiseVariance // cloud control: E||x(t) - x_r(t)||^2 -> Var(gamma), as the live view
			}
		}
		if vp.Steps <= 0 {
			return fmt.Errorf("%s: point %d (%s) has no steps", filepath.Join(v.dir, SummaryFile), k, p.Name)
		}
		if p.TraceFile != "" {
			more, err := v.loadTrace(k, &vp, sum.Kind)
			if err != nil {
				return err
			}
			if more {
				v.st.Notes = append(v.st.Notes, fmt.Sprintf("%s: the first %d traced episodes are shown", p.TraceFile, MaxViewEpisodes))
			}
		}
		v.st.Points = append(v.st.Points, vp)
	}
	return nil
}

// loadTrace reads the first MaxViewEpisodes episodes of point k's merged trace into series;
// true when the file holds more.
func (v *View) loadTrace(k int, vp *ViewPoint, kind string) (more bool, err error) {
	path := filepath.Join(v.dir, vp.TraceFile)
	f, err := os.Open(path)
	if err != nil {
		return false, fmt.Errorf("%s (the trace of point %s): %w", path, vp.Name, err)
	}
	defer f.Close()
	info := Info{Kind: kind, Points: []PointInfo{{Name: vp.Name, Steps: vp.Steps, Bound: vp.Bound}}}
	var hub *Hub
	cur := -1
	flush := func() error {
		if hub == nil {
			return nil
		}
		b, err := hubSeries(hub, k)
		if err != nil {
			return fmt.Errorf("%s: episode %d: %w", path, cur, err)
		}
		v.episodes[[2]int{k, cur}] = b
		vp.Episodes = append(vp.Episodes, cur)
		return nil
	}
	// begin starts episode ep; false when MaxViewEpisodes are loaded.
	begin := func(ep int) (bool, error) {
		if err := flush(); err != nil {
			return false, err
		}
		if _, dup := v.episodes[[2]int{k, ep}]; dup {
			return false, fmt.Errorf("%s: episode %d appears twice (the records of an episode are together)", path, ep)
		}
		if len(vp.Episodes) == MaxViewEpisodes {
			hub = nil
			return false, nil
		}
		hub, cur = NewHub(info, time.Time{}), ep
		return true, nil
	}
	br := bufio.NewReaderSize(f, 1<<16)
	if kind == "consensus" {
		more, err = readEpisodes(trace.NewReader[trace.ConsensusRecord](br), func(r *trace.ConsensusRecord) int { return r.Episode },
			&cur, begin, func(r *trace.ConsensusRecord) { hub.Consensus(0, r) })
	} else {
		more, err = readEpisodes(trace.NewReader[trace.ControlRecord](br), func(r *trace.ControlRecord) int { return r.Episode },
			&cur, begin, func(r *trace.ControlRecord) { hub.Control(0, r) })
	}
	if err != nil {
		return false, fmt.Errorf("%s: %w", path, err)
	}
	if more {
		return true, nil
	}
	return false, flush()
}

// readEpisodes feeds the records of rd to add, calling begin at each new episode, until the
// file ends or begin says no more; true in that case.
func readEpisodes[R trace.Record](rd *trace.Reader[R], episode func(*R) int, cur *int, begin func(int) (bool, error), add func(*R)) (bool, error) {
	for {
		r, err := rd.Read()
		if errors.Is(err, io.EOF) {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		if ep := episode(&r); ep != *cur {
			ok, err := begin(ep)
			if err != nil {
				return false, err
			}
			if !ok {
				return true, nil
			}
		}
		add(&r)
	}
}

// hubSeries is the JSON of the one series of hub, of point k (taken from the hub's JSON as
// it is: its nulls stay null).
func hubSeries(h *Hub, k int) ([]byte, error) {
	_, b := h.JSON(0)
	var st struct {
		Episodes []map[string]json.RawMessage `json:"episodes"`
	}
	if err := json.Unmarshal(b, &st); err != nil {
		return nil, err
	}
	if len(st.Episodes) == 0 {
		return nil, errors.New("no record")
	}
	s := st.Episodes[len(st.Episodes)-1]
	s["point"] = json.RawMessage(strconv.Itoa(k))
	return json.Marshal(s)
}

// figureRef matches a figure of report.md: ![alt](NAME.png).
var figureRef = regexp.MustCompile(`!\[([^\]]*)\]\(([^)\s]+)\.png\)`)

// loadFigures reads the figures report.md shows and their data.
func (v *View) loadFigures(reportFile string) error {
	v.st.Figures = []ViewFigure{}
	if reportFile == "" {
		v.st.Notes = append(v.st.Notes, "the run wrote no report.md: no figures")
		return nil
	}
	path := filepath.Join(v.dir, reportFile)
	md, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("%s (the run's report): %w", path, err)
	}
	for _, m := range figureRef.FindAllStringSubmatch(string(md), -1) {
		name := m[2]
		if strings.ContainsAny(name, `/\`) || strings.HasPrefix(name, ".") {
			return fmt.Errorf("%s: figure %q is not a file of the run directory", path, name)
		}
		fig := ViewFigure{Name: name, Alt: m[1], Image: name + ".png"}
		dpath := filepath.Join(v.dir, report.FigureDataFile(name))
		b, err := os.ReadFile(dpath)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			v.images[fig.Image] = true
			v.st.Notes = append(v.st.Notes, fmt.Sprintf("figure %s: no %s (a run of an older dpsim): its image is shown", name, report.FigureDataFile(name)))
		case err != nil:
			return fmt.Errorf("%s: %w", dpath, err)
		default:
			var d figure.Data
			if err := json.Unmarshal(b, &d); err != nil {
				return fmt.Errorf("%s: invalid figure data: %w", dpath, err)
			}
			if d.Name != name || len(d.Panels) == 0 {
				return fmt.Errorf("%s: invalid figure data: figure %q with %d rows of panels, want figure %q", dpath, d.Name, len(d.Panels), name)
			}
			fig.Data = &d
		}
		v.st.Figures = append(v.st.Figures, fig)
	}
	return nil
}

// readFaultsApplied returns the text of dir/faults.applied.yaml ("" when there is none),
// checked to be YAML.
func readFaultsApplied(dir string) (string, error) {
	path := filepath.Join(dir, FaultsAppliedFile)
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("%s: %w", path, err)
	}
	var doc any
	if err := yaml.Unmarshal(b, &doc); err != nil {
		return "", fmt.Errorf("%s: invalid YAML: %w", path, err)
	}
	return string(b), nil
}

// longSeries is the length from which a list of numbers counts as a per-step series that
// trimSeries drops.
const longSeries = 16

// trimSeries returns v (decoded JSON) without its lists of longSeries or more numbers and
// the objects left empty by that.
func trimSeries(v any) any {
	switch t := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, e := range t {
			e = trimSeries(e)
			if m, ok := e.(map[string]any); ok && len(m) == 0 {
				if _, was := t[k].(map[string]any); was && len(t[k].(map[string]any)) > 0 {
					continue
				}
			}
			if e != nil || t[k] == nil {
				out[k] = e
			}
		}
		return out
	case []any:
		if len(t) >= longSeries && numbers(t) {
			return nil
		}
		out := make([]any, 0, len(t))
		for _, e := range t {
			out = append(out, trimSeries(e))
		}
		return out
	}
	return v
}

// numbers reports whether every element of l is a number or null.
func numbers(l []any) bool {
	for _, e := range l {
		switch e.(type) {
		case float64, nil:
		default:
			return false
		}
	}
	return true
}
