package replay

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
	"syscall"

	"github.com/dpsim/dpsim/internal/atomicfile"
	"github.com/dpsim/dpsim/internal/busrec"
	"github.com/dpsim/dpsim/internal/cli"
	"github.com/dpsim/dpsim/pkg/bus"
)

// Command is the table entry for `dpsim replay`.
var Command = cli.Command{Name: "replay", Summary: "publish a run's MCAP recording (dpsim run --record) onto a NATS bus, check it, or recover a killed one", Run: Run}

const synopsis = `dpsim replay FILE.mcap --nats-url URL [--speed X]
       dpsim replay FILE.mcap --check [--out DIR]
       dpsim replay FILE.mcap --recover DST.mcap`

const description = `Publishes every message of a recording of dpsim run --record onto the NATS server --nats-url
(default $` + bus.EnvURL + `), on its subject, with its recorded JSON payload and its recorded NATS
headers (the route of a faulty link, Dpsim-Episodes of a group of episodes in flight, the
Dpsim-Sig signature), in the order received, at the recorded pace scaled by --speed (2: twice as
fast; 0: as fast as possible): what was on the bus of the run is on the bus again, for a
subscriber or an eavesdropper of your own. A binary message is recorded as its JSON equivalent,
which its signature does not verify: it is published without its Dpsim-Sig header.

--check reads the recording and checks each message (a wire message of its subject's run, or a
result document) and prints the subjects with their counts; then it re-runs the recording: for
each point of the run it starts an embedded NATS server and a fresh eavesdropper process
configured as in the run (its plan file from the recorded scenario and seed, whose digest must
be the recorded eavesdropper's), publishes the recorded traffic minus what the recorded
eavesdropper published, and compares the fresh eavesdropper's metrics (eve_sq_error) with the
recorded run's bit for bit. A recording that cannot be re-run (not closed, cut by its size
limit, of a realtime run, without its scenario attachment or point results) says why and is only
checked message by message. The fresh eavesdropper's files (a folder per point: its plan file,
log, trace and result) go into --out DIR when given (a new or empty folder, private), else into
a private temporary folder removed afterwards.

--recover DST.mcap writes what a recording killed before it closed holds (every complete chunk)
into a closed recording DST. A recording killed before it closed is read up to its last
complete chunk in every mode.

Exit status: 0 done; 1 a message failed --check, the re-run differs from the recording, the file
is no MCAP recording, or publishing failed; 2 a usage error.`

// Run executes `dpsim replay` with args (without the command name).
func Run(args []string, stdout, stderr io.Writer) error {
	fs := cli.NewFlagSet("replay", synopsis, description, stderr)
	var (
		url       = fs.String("nats-url", "", "the NATS server to publish on (default $"+bus.EnvURL+"); credentials in the URL are used, never printed")
		speed     = fs.Float64("speed", 1, "pace: the recorded one scaled by this factor (2: twice as fast); 0: as fast as possible")
		check     = fs.Bool("check", false, "check the recording's messages, print its subjects, and re-run its eavesdropper to the recorded metrics bit for bit, instead of publishing")
		recoverTo = fs.String("recover", "", "write what the recording holds into this new, closed MCAP file instead of publishing (a recording killed mid-run)")
		out       = fs.String("out", "", "with --check: keep the re-run's files - the fresh eavesdropper's plan, log, trace and result, a folder per point - in this new or empty folder (private) instead of a temporary one removed after")
	)
	pos, err := cli.ParseInterspersed(fs, args)
	if err != nil {
		return err
	}
	switch {
	case len(pos) != 1:
		return cli.UsageError("want one FILE.mcap, got %d arguments", len(pos))
	case *speed < 0:
		return cli.UsageError("--speed %v: want >= 0", *speed)
	case *check && *recoverTo != "":
		return cli.UsageError("--check and --recover: one at a time")
	case *out != "" && !*check:
		return cli.UsageError("--out: only with --check (where the re-run's files go)")
	}
	if *out != "" {
		if entries, err := os.ReadDir(*out); err == nil && len(entries) > 0 {
			return cli.UsageError("--out %s: not empty (the re-run writes a folder per point there; give a new or empty folder)", *out)
		} else if err != nil && !os.IsNotExist(err) {
			return cli.UsageError("--out %s: %v", *out, err)
		}
	}
	path := pos[0]
	if st, err := os.Stat(path); err != nil || st.IsDir() {
		return cli.UsageError("%s: no such recording file", path)
	}
	switch {
	case *check:
		return runCheck(path, *out, stdout, stderr)
	case *recoverTo != "":
		return runRecover(path, *recoverTo, stdout)
	}
	target := bus.ResolveURL(*url)
	if target == "" {
		return cli.UsageError("no NATS server: pass --nats-url (or set $%s)", bus.EnvURL)
	}
	return publish(path, target, *speed, stdout)
}

// publish replays path onto the server at url until done or interrupted.
func publish(path, url string, speed float64, stdout io.Writer) error {
	clean, user, pass := bus.SplitURL(url)
	conn, err := bus.Connect(clean, "dpsim-replay", bus.WithUser(user, pass))
	if err != nil {
		return err
	}
	defer conn.Close()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	c, err := busrec.Replay(ctx, path, conn.PublishRawHeaders, busrec.ReplayOptions{Speed: speed})
	if ferr := conn.Drain(busrec.DrainTimeout); err == nil && ferr != nil {
		err = ferr
	}
	if c != nil {
		fmt.Fprintf(stdout, "published %d messages on %d subjects to %s\n", c.Messages, len(c.Channels), bus.RedactURL(url))
		if c.Truncated != "" {
			fmt.Fprintf(stdout, "the recording was not closed: %s\n", c.Truncated)
		}
	}
	if errors.Is(err, context.Canceled) {
		return fmt.Errorf("replay interrupted")
	}
	return err
}

// runCheck prints the recording's subjects and counts, re-runs it, and fails on a bad message
// or a re-run that differs.
func runCheck(path, out string, stdout, stderr io.Writer) error {
	r, err := busrec.Check(path)
	if err != nil {
		return err
	}
	c := r.Contents
	topics := make([]string, 0, len(c.Channels))
	for t := range c.Channels {
		topics = append(topics, t)
	}
	sort.Strings(topics)
	for _, t := range topics {
		fmt.Fprintf(stdout, "%-50s %-20s %d\n", t, c.Channels[t].Schema, c.Channels[t].Messages)
	}
	state := "closed (summary section present)"
	if !c.Complete {
		state = "not closed: " + c.Truncated
	}
	fmt.Fprintf(stdout, "%d messages on %d subjects (%d with NATS headers); %s\n", c.Messages, len(c.Channels), c.Headers, state)
	for _, p := range r.Problems {
		fmt.Fprintf(stdout, "problem: %s\n", p)
	}
	same, err := rerun(path, out, c, stdout, stderr)
	switch {
	case r.Bad > 0:
		return fmt.Errorf("%s: %d messages failed the check", path, r.Bad)
	case err != nil:
		return err
	case !same:
		return fmt.Errorf("%s: the re-run differs from the recorded run", path)
	}
	return nil
}

// rerun re-runs the recording's eavesdropper (busrec.Rerun) in out (private), or without it
// in a private temporary folder removed after, prints the verdict of each point and reports
// whether the re-run matched (or could not be done, which it says).
func rerun(path, out string, c *busrec.Contents, stdout, stderr io.Writer) (bool, error) {
	exe, err := os.Executable()
	if err != nil {
		return false, fmt.Errorf("re-run: cannot find the dpsim binary: %w", err)
	}
	dir := out
	if dir != "" {
		err = atomicfile.MkdirOutputs(dir, false) // 0700: the fresh eavesdropper's estimates
	} else {
		dir, err = os.MkdirTemp("", "dpsim-replay-check-") // 0700 too
		defer os.RemoveAll(dir)
	}
	if err != nil {
		return false, fmt.Errorf("re-run: %w", err)
	}
	log, err := cli.Logger(stderr, "warn")
	if err != nil {
		return false, err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	res, err := busrec.Rerun(ctx, path, c, busrec.RerunOptions{Exe: exe, Dir: dir, Log: log})
	if err != nil {
		return false, err
	}
	if res.Skipped != "" {
		fmt.Fprintf(stdout, "re-run: skipped: %s\n", res.Skipped)
		return true, nil
	}
	for _, p := range res.Points {
		if p.Differences == 0 {
			fmt.Fprintf(stdout, "re-run: point %d (run %s): a fresh eavesdropper gives the recorded eavesdropper metrics bit for bit (%d episodes)\n", p.Point, p.Run, p.Episodes)
			continue
		}
		fmt.Fprintf(stdout, "re-run: point %d (run %s): MISMATCH, %d differences from the recorded run\n", p.Point, p.Run, p.Differences)
		for _, m := range p.Mismatches {
			fmt.Fprintf(stdout, "mismatch: %s\n", m)
		}
	}
	return res.Same(), nil
}

// runRecover writes the recording's readable messages into a closed file dst.
func runRecover(src, dst string, stdout io.Writer) error {
	c, st, err := busrec.Recover(src, dst, atomicfile.Mode(true, false))
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "recovered %d messages on %d subjects into %s\n", st.Messages, st.Channels, dst)
	if c.Truncated != "" {
		fmt.Fprintf(stdout, "the source was not closed: %s\n", c.Truncated)
	}
	return nil
}
