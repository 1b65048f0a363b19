package runner

import (
	"github.com/schollz/progressbar/v3"

	"github.com/dpsim/dpsim/pkg/metrics"
	"github.com/dpsim/dpsim/pkg/record"
)

// observer is told what the run's loop (playPoints) does. What follows a run - the summary,
// the live view, the progress display, the resume state - is an observer, not code in the loop;
// they are told in the order of launcher.observers (the summary first: the others read it).
type observer interface {
	// pointBegin: point k starts playing.
	pointBegin(k int)
	// episodesDone: n more episodes completed (called as the engine folds them).
	episodesDone(n int)
	// pointEnd: point k stopped, completed or not, with its summary and Results (nil: none).
	pointEnd(k int, ps record.PointSummary, res *metrics.Results, completed bool)
}

// observe builds the run's observers: the summary, the live view (--ui), the progress display,
// the resume state, then those the options add (tests).
func (l *launcher) observe() {
	l.observers = []observer{summaryObserver{l}, hubObserver{l}, progressDisplay{l.bar, l.plain}, resumeObserver{l}}
	l.observers = append(l.observers, l.o.observers...)
}

// tick tells the observers that n more episodes completed.
func (l *launcher) tick(n int) {
	for _, ob := range l.observers {
		ob.episodesDone(n)
	}
}

// summaryObserver records each point in the summary (summary.json points and metrics).
type summaryObserver struct{ l *launcher }

func (summaryObserver) pointBegin(int)   {}
func (summaryObserver) episodesDone(int) {}
func (o summaryObserver) pointEnd(_ int, ps record.PointSummary, res *metrics.Results, _ bool) {
	o.l.addPoint(ps, res)
}

// hubObserver feeds the live view's hub (nil without --ui: every call is then a no-op).
type hubObserver struct{ l *launcher }

func (o hubObserver) pointBegin(k int)   { o.l.hubBegin(k) }
func (o hubObserver) episodesDone(n int) { o.l.hub.Progress(n) }
func (o hubObserver) pointEnd(k int, _ record.PointSummary, res *metrics.Results, _ bool) {
	// the point as the summary recorded it (its metrics and parameters set)
	if ps := o.l.sum.Points; len(ps) > 0 {
		o.l.hubPoint(k, ps[len(ps)-1], res)
	}
}

// progressDisplay is the progress bar on a terminal, or the plain progress lines elsewhere.
type progressDisplay struct {
	bar   *progressbar.ProgressBar
	plain *plainProgress
}

func (progressDisplay) pointBegin(int) {}
func (d progressDisplay) episodesDone(n int) {
	if d.bar != nil {
		_ = d.bar.Add(n)
	}
	if d.plain != nil {
		d.plain.add(n)
	}
}
func (progressDisplay) pointEnd(int, record.PointSummary, *metrics.Results, bool) {}

// resumeObserver writes a completed point into the resume state (resume.json); the
// checkpoints within a point are the NATS engine's (launch.PlayOptions.Checkpoint).
type resumeObserver struct{ l *launcher }

func (resumeObserver) pointBegin(int)   {}
func (resumeObserver) episodesDone(int) {}
func (o resumeObserver) pointEnd(k int, _ record.PointSummary, _ *metrics.Results, completed bool) {
	if completed {
		o.l.completePoint(k)
	}
}
