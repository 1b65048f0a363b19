package runner

import (
	"context"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/schollz/progressbar/v3"

	"github.com/dpsim/dpsim/internal/cli"
)

// runAll plays the run: its engine opened, the progress shown, the resume state begun, every
// point played by the one loop (playPoints).
func (l *launcher) runAll(ctx context.Context) error {
	total := l.runs * len(l.points)
	if f, ok := l.stderr.(*os.File); ok && l.o.Progress && cli.IsTerminal(f) {
		l.bar = progressbar.NewOptions(total, progressbar.OptionSetWriter(l.stderr),
			progressbar.OptionSetDescription(l.scn.Name), progressbar.OptionShowCount(),
			progressbar.OptionShowIts(), progressbar.OptionSetItsString("episodes"),
			progressbar.OptionThrottle(100*time.Millisecond), progressbar.OptionClearOnFinish())
		defer func() { _ = l.bar.Finish() }()
	} else if l.o.Progress {
		// Not a terminal (piped, a CI log): a plain line every few seconds instead of silence.
		l.plain = &plainProgress{w: l.stderr, total: total, start: time.Now(), last: time.Now(), name: l.scn.Name}
	}
	l.resumeBegin()
	l.observe()
	eng, closeEngine, err := l.openEngine(ctx)
	if err != nil {
		return err
	}
	defer closeEngine()
	if err := l.startRecording(); err != nil {
		return err
	}
	defer l.stopRecording() // before the server stops and summary.json is written
	return l.playPoints(ctx, eng)
}

// PlainProgressEvery is how often a run that does not write to a terminal prints a progress line.
const PlainProgressEvery = 5 * time.Second

// plainProgress prints "dpsim run: NAME: 120/500 episodes (24%), 12.3 s" lines.
type plainProgress struct {
	mu          sync.Mutex
	w           io.Writer
	name        string
	total, done int
	start, last time.Time
}

func (p *plainProgress) add(n int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.done += n
	if now := time.Now(); now.Sub(p.last) >= PlainProgressEvery || p.done == p.total {
		p.last = now
		fmt.Fprintf(p.w, "dpsim run: %s: %d/%d episodes (%.0f%%), %.1f s\n", p.name, p.done, p.total,
			100*float64(p.done)/float64(max(p.total, 1)), now.Sub(p.start).Seconds())
	}
}
