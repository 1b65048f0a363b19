package runner

import (
	"bytes"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/dpsim/dpsim/internal/atomicfile"
	"github.com/dpsim/dpsim/internal/cli"
	"github.com/dpsim/dpsim/pkg/record"
)

// What resume.json may hold, and how it is checked. OUT may be writable by others (a
// shared volume, as --attach and docker-compose need), so the file is input from whoever can
// write OUT: it carries no command and no path. The flags a resumption takes from it are the
// result-deciding values of resumeFlags, each a plain value parsed by its flag again; a command
// (--role) or --attach is recorded as a sha256 only and must be given again on the command line;
// paths (SCENARIO, --out, TLS files) and how to connect are never recorded. Every file it names
// is a bare name in OUT (or procs/... for the processes' files it only reports), opened without
// following a link, and the trace a resumption continues is checked against its recorded
// sha256 before it is cut and appended to.
//
// The file ends with "digest": HMAC-SHA256 of its bytes before it, keyed by ResumeKeyFile (32
// random bytes, mode 0600, made by the run). A resumption refuses a state whose digest does not
// verify, or a key that is a link, not the user's own or readable by others. This catches
// edits, a state from another run and a key planted by another user; it does not stop someone
// who can read the key (the same user, root): the defence against them is that nothing in the
// file can be a command or a path.

// ResumeKeyFile is the key of resume.json's digest, beside it in OUT (mode 0600); removed with it.
const ResumeKeyFile = "resume.key"

// resumeClass is how a flag of `dpsim run` is treated by --resume.
type resumeClass int

const (
	// resumeGiven (also every flag resumeFlags does not list): decides the results or what runs,
	// but is a command or switches the launcher to other programs. Only the sha256 of its value
	// is recorded (given_sha256); a resumption takes its value from the command line alone and
	// refuses one that differs from the run's.
	resumeGiven resumeClass = iota
	// resumeValue decides the results and is a plain value (a number, a duration, a name of a
	// fixed set): recorded in flags when given, taken from there when not given again; given
	// again, it must be the run's.
	resumeValue
	// resumeFree says how to reach the processes, what to show or how much to allow, or is a
	// path: not recorded, and what the resumption is given applies.
	resumeFree
)

// resumeFlags is the one table of how --resume treats each flag of `dpsim run`.
var resumeFlags = map[string]resumeClass{
	// the result-deciding values (the seed is recorded as "seed", not in flags)
	"seed": resumeValue, "engine": resumeValue, "episodes": resumeValue, "runs": resumeValue, "mode": resumeValue, "period": resumeValue,
	"timeout": resumeValue, "agents-per-process": resumeValue, "trace-episodes": resumeValue, "encoding": resumeValue,
	"transcript": resumeValue, "sign": resumeValue, "strict": resumeValue, "max-missed-fraction": resumeValue,
	// commands and who starts the processes: given again, checked against their sha256
	"role": resumeGiven, "attach": resumeGiven,
	// paths, transport, display, limits: not recorded
	"resume": resumeFree, "out": resumeFree, "nats-url": resumeFree, "tls": resumeFree, "tls-ca": resumeFree,
	"tls-cert": resumeFree, "tls-key": resumeFree, "connect-retry": resumeFree, "listen": resumeFree, "cluster": resumeFree,
	"run-id": resumeFree, "log-level": resumeFree, "progress": resumeFree, "json": resumeFree, "child-gomaxprocs": resumeFree,
	"attach-timeout": resumeFree, "no-sign": resumeFree, "budget": resumeFree, "inflight": resumeFree, "keep-secrets": resumeFree, "share-outputs": resumeFree,
	"ui": resumeFree, "ui-hold": resumeFree, "ui-public": resumeFree, "nats-monitor": resumeFree,
	"dispatch": resumeFree, "spawn-workers": resumeFree, "worker-listen": resumeFree, "worker-creds": resumeFree,
	"verify-share": resumeFree, "chunk-timeout": resumeFree, "dispatch-durable": resumeFree, "record": resumeFree, "record-limit": resumeFree, "parquet": resumeFree,
	"shard": resumeFree, // a shard is never resumed (Options.checkShard)
}

// resumeOldNames maps a flag's old name, still read, to its name: the state records a flag as
// the command line named it, and a resumption reads and compares it under its name.
var resumeOldNames = map[string]string{"runs": "episodes"}

// canonicalFlag is the name a flag is recorded and compared under (resumeOldNames).
func canonicalFlag(name string) string {
	if n, ok := resumeOldNames[name]; ok {
		return n
	}
	return name
}

// resumeClassOf is the class of flag name: an unlisted flag is resumeGiven (the safe side).
func resumeClassOf(name string) resumeClass {
	if c, ok := resumeFlags[name]; ok {
		return c
	}
	return resumeGiven
}

// plainValue matches what a resumeValue flag may hold in the file: a number, a duration, a
// bool or a name, never a path (no separator) nor anything a shell or a flag parser would split.
var plainValue = regexp.MustCompile(`^[A-Za-z0-9._+-]{0,64}$`)

var hex64 = regexp.MustCompile(`^[0-9a-f]{64}$`)

// givenValue is the value of a resumeGiven flag as its digest covers it: --role as its
// ENDPOINT=COMMAND pairs in order (its flag.Value prints nothing), others as their flag print them.
func givenValue(o *Options, f *flag.Flag) string {
	if f.Name == "role" {
		keys := make([]string, 0, len(o.Roles))
		for k := range o.Roles {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		var b strings.Builder
		for _, k := range keys {
			fmt.Fprintf(&b, "%s=%s\n", k, o.Roles[k])
		}
		return b.String()
	}
	return f.Value.String()
}

// givenDigest is the sha256 recorded for a resumeGiven flag.
func givenDigest(o *Options, f *flag.Flag) string {
	h := sha256.Sum256([]byte(f.Name + "\x00" + givenValue(o, f)))
	return hex.EncodeToString(h[:])
}

// givenDigests returns the sha256 of every resumeGiven flag of o (given or not: a flag left out
// is its default, which a resumption must leave out too).
func givenDigests(o *Options) map[string]string {
	m := map[string]string{}
	o.Flags.VisitAll(func(f *flag.Flag) {
		if resumeClassOf(f.Name) == resumeGiven {
			m[f.Name] = givenDigest(o, f)
		}
	})
	return m
}

// validate refuses a state holding anything a resumption must not take from a file: a flag
// that is not a plain result-deciding value, a command, a path, a file name that is not a bare
// name of dpsim's. Every problem names its field.
func (st *resumeState) validate(fset *flag.FlagSet) error {
	var bad []string
	add := func(field, format string, a ...any) { bad = append(bad, field+": "+fmt.Sprintf(format, a...)) }
	for _, name := range sortedKeys(st.Flags) {
		v := st.Flags[name]
		switch {
		case fset.Lookup(name) == nil:
			add("flags."+name, "no such flag")
		case name == "seed":
			add("flags.seed", "the seed is recorded as seed, not in flags")
		case resumeClassOf(name) != resumeValue:
			add("flags."+name, "--%s is never taken from %s (a command, a path or how to connect): give it on the command line", name, ResumeFile)
		case !plainValue.MatchString(v):
			add("flags."+name, "%q is not a plain value", v)
		}
	}
	fset.VisitAll(func(f *flag.Flag) {
		if resumeClassOf(f.Name) != resumeGiven {
			return
		}
		if v, ok := st.Given[f.Name]; !ok || !hex64.MatchString(v) {
			add("given_sha256."+f.Name, "want the sha256 of the run's --%s", f.Name)
		}
	})
	for _, name := range sortedKeys(st.Given) {
		if f := fset.Lookup(name); f == nil || resumeClassOf(name) != resumeGiven {
			add("given_sha256."+name, "not a flag given again on resuming")
		}
	}
	if !hex64.MatchString(st.ScenarioSHA256) {
		add("scenario_sha256", "want a sha256")
	}
	if st.SeedString != strconv.FormatUint(st.Seed, 10) {
		add("seed_string", "%q is not seed %d", st.SeedString, st.Seed)
	}
	if !slices.Contains([]string{cli.SeedFromFlag, cli.SeedFromScenario, cli.SeedFromCrypto}, st.SeedSource) {
		add("seed_source", "%q: want %s, %s or %s", st.SeedSource, cli.SeedFromFlag, cli.SeedFromScenario, cli.SeedFromCrypto)
	}
	if st.Engine != "nats" && st.Engine != "fast" {
		add("engine", "%q: want nats or fast", st.Engine)
	}
	if st.Runs < 1 || st.Points < 1 || len(st.Done) > st.Points {
		add("runs, points, done", "%d runs, %d points, %d done", st.Runs, st.Points, len(st.Done))
	}
	for i, d := range st.Done {
		field := fmt.Sprintf("done[%d]", i)
		for j, tr := range d.Traces {
			if !isTraceName(tr) {
				add(fmt.Sprintf("%s.traces[%d]", field, j), "%q: want trace.jsonl or trace-pNN.jsonl", tr)
			}
		}
		if tr := d.Summary.TraceFile; tr != "" && !isTraceName(tr) {
			add(field+".summary.trace_file", "%q: want trace.jsonl or trace-pNN.jsonl", tr)
		}
		for j, p := range d.Processes {
			pf := fmt.Sprintf("%s.processes[%d]", field, j)
			if p.Program != "" {
				add(pf+".program", "a command is never taken from %s (give --role again)", ResumeFile)
			}
			if !bareName(p.Name) {
				add(pf+".name", "%q is not a bare name", p.Name)
			}
			for k, v := range map[string]string{"log_file": p.LogFile, "trace_file": p.TraceFile, "result_file": p.ResultFile} {
				if v != "" && !isProcsFile(v) {
					add(pf+"."+k, "%q: want a file under procs/ in OUT", v)
				}
			}
		}
	}
	if c := st.Current; c != nil {
		switch {
		case c.Point < len(st.Done) || c.Point >= st.Points || c.Episodes < 0 || c.Episodes > st.Runs || c.TraceOffset < 0:
			add("current", "point %d, %d episodes, trace offset %d: not a point in progress", c.Point, c.Episodes, c.TraceOffset)
		case c.TraceFile != "" && !isTraceName(c.TraceFile):
			add("current.trace_file", "%q: want trace.jsonl or trace-pNN.jsonl (a bare name in OUT)", c.TraceFile)
		case c.TraceFile != "" && !hex64.MatchString(c.TraceSHA256):
			add("current.trace_sha256", "want the sha256 of the trace file's first %d bytes", c.TraceOffset)
		case !hex64.MatchString(c.MetricsSHA256):
			add("current.metrics_sha256", "want a sha256")
		}
	}
	if len(bad) > 0 {
		return fmt.Errorf("%s holds what a resumption does not take: %s", ResumeFile, strings.Join(bad, "; "))
	}
	return nil
}

// bareName is a file name without a separator, not "." or "..", not empty, not hidden.
func bareName(s string) bool {
	return s != "" && !strings.ContainsAny(s, `/\`+"\x00") && s != "." && s != ".." && !strings.HasPrefix(s, ".") && len(s) <= 255
}

// isTraceName is the bare name of a point's trace: trace.jsonl or trace-pNN.jsonl.
func isTraceName(s string) bool { return s == "trace.jsonl" || isPointTrace(s) }

// isProcsFile is procs/NAME or procs/pNN/NAME with NAME bare (the processes' files summary.json names).
func isProcsFile(s string) bool {
	parts := strings.Split(s, "/")
	switch {
	case len(parts) == 2:
		return parts[0] == "procs" && bareName(parts[1])
	case len(parts) == 3:
		return parts[0] == "procs" && isPointDir(parts[1]) && bareName(parts[2])
	}
	return false
}

// digestKey is the start of resume.json's last member: the HMAC of the bytes before it.
const digestKey = `,"digest":"hmac-sha256:`

// signResume returns data, a JSON object, with its digest appended as its last member.
func signResume(data, key []byte) ([]byte, error) {
	if len(data) < 2 || data[len(data)-1] != '}' {
		return nil, errors.New("resume state: not a JSON object")
	}
	body := data[:len(data)-1]
	m := hmac.New(sha256.New, key)
	m.Write(body)
	out := append([]byte{}, body...)
	out = append(out, digestKey...)
	out = hex.AppendEncode(out, m.Sum(nil))
	return append(out, `"}`...), nil
}

// verifyResume checks the digest data ends with against key.
func verifyResume(data, key []byte) error {
	data = bytes.TrimRight(data, "\n")
	i := bytes.LastIndex(data, []byte(digestKey))
	if i < 0 {
		return fmt.Errorf("%s has no digest: it was not written by dpsim run, or was edited", ResumeFile)
	}
	tail := data[i+len(digestKey):]
	if len(tail) != 64+2 || string(tail[64:]) != `"}` {
		return fmt.Errorf("%s: its digest is not its last member: the file was edited", ResumeFile)
	}
	got, err := hex.DecodeString(string(tail[:64]))
	if err != nil {
		return fmt.Errorf("%s: digest: %v", ResumeFile, err)
	}
	m := hmac.New(sha256.New, key)
	m.Write(data[:i])
	if !hmac.Equal(got, m.Sum(nil)) {
		return fmt.Errorf("%s does not match its digest: it was edited since dpsim wrote it, or its %s is another run's", ResumeFile, ResumeKeyFile)
	}
	return nil
}

// newResumeKey makes the key of a fresh run's resume state: 32 random bytes in OUT/resume.key,
// mode 0600 (written by rename: a link there is replaced, not followed).
func newResumeKey(dir string) ([]byte, error) {
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		return nil, err
	}
	return key, atomicfile.WriteFile(filepath.Join(dir, ResumeKeyFile), key, 0o600)
}

// readPrivate reads the bare-named file name in dir without following a link; with private, it
// must also be the user's own and unreadable by others (the key).
func readPrivate(dir, name string, private bool) ([]byte, error) {
	f, err := atomicfile.OpenNoFollow(filepath.Join(dir, name), os.O_RDONLY, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if private {
		if err := atomicfile.CheckPrivate(f); err != nil {
			return nil, err
		}
	}
	return io.ReadAll(io.LimitReader(f, 1<<30))
}

// checkTrace checks that the trace file a resumption continues is the run's: a regular file in
// dir (not a link) whose first off bytes have the recorded sha256; then cuts it there.
func checkTrace(dir, name string, off int64, want string) error {
	f, err := atomicfile.OpenNoFollow(filepath.Join(dir, name), os.O_RDWR, 0)
	if err != nil {
		return fmt.Errorf("current.trace_file %s: %w", name, err)
	}
	defer f.Close()
	h := sha256.New()
	n, err := io.Copy(h, io.LimitReader(f, off))
	if err != nil {
		return fmt.Errorf("current.trace_file %s: %w", name, err)
	}
	if n != off || hex.EncodeToString(h.Sum(nil)) != want {
		return cli.UsageError("current.trace_file %s: its first %d bytes are not those the run recorded (current.trace_sha256): the trace was changed or cut since; start the run again", name, off)
	}
	if err := f.Truncate(off); err != nil {
		return fmt.Errorf("cutting the trace back to its last folded episode: %w", err)
	}
	return nil
}

// removeOutputLinks removes the links where a resumed run writes - OUT's outputs, procs/,
// figures/, procs/pNN - so that nothing is written through one (a fresh run's cleanOutputs
// does the same).
func removeOutputLinks(dir string) error {
	var errs []error
	check := func(d string, match func(string) bool) {
		entries, err := os.ReadDir(d)
		if err != nil {
			if !errors.Is(err, fs.ErrNotExist) {
				errs = append(errs, err)
			}
			return
		}
		for _, e := range entries {
			if e.Type()&fs.ModeSymlink != 0 && match(e.Name()) {
				if err := os.Remove(filepath.Join(d, e.Name())); err != nil && !errors.Is(err, fs.ErrNotExist) {
					errs = append(errs, err)
				}
			}
		}
	}
	check(dir, func(name string) bool { return isRunOutput(name) || name == "procs" || name == record.FigureDataDir })
	check(filepath.Join(dir, "procs"), func(name string) bool { return isPointDir(name) || hasAnySuffix(name, procFileSuffixes) })
	return errors.Join(errs...)
}

// ResumeFlags lists the flags the table of --resume classifies, each with its class: "value"
// (recorded, taken from the file when not given again), "given" (a command or who starts the
// processes: given again, checked against its sha256) or "free" (not recorded). A command
// holds its flags to it (every flag classified).
func ResumeFlags() map[string]string {
	words := map[resumeClass]string{resumeValue: "value", resumeGiven: "given", resumeFree: "free"}
	m := make(map[string]string, len(resumeFlags))
	for name, c := range resumeFlags {
		m[name] = words[c]
	}
	return m
}
