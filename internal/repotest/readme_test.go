package repotest

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dpsim/dpsim/internal/dpsimtest"
)

var dpsimBin string

func TestMain(m *testing.M) { os.Exit(dpsimtest.Main(m, &dpsimBin)) }

// docPages are the pages whose commands run as written: README.md, then docs/*.md by name.
func docPages(t *testing.T, root string) []string {
	t.Helper()
	docs, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(docs)
	return append([]string{filepath.Join(root, "README.md")}, docs...)
}

// readmeCommands returns the dpsim commands of the sh blocks of README.md and docs/*.md, as
// written, in page order (README.md first) and in their order on each page.
func readmeCommands(t *testing.T, root string) []string {
	t.Helper()
	var out []string
	for _, page := range docPages(t, root) {
		data, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		for _, block := range regexp.MustCompile("(?s)```sh\n(.*?)```").FindAllStringSubmatch(string(data), -1) {
			for _, line := range strings.Split(block[1], "\n") {
				line = strings.TrimSpace(line)
				if i := strings.Index(line, "#"); i >= 0 {
					line = strings.TrimSpace(line[:i])
				}
				line = strings.TrimPrefix(line, "go run ./cmd/")
				if strings.HasPrefix(line, "dpsim ") {
					out = append(out, line)
				}
			}
		}
	}
	return out
}

// Every dpsim command of the README and of docs/*.md runs as written from the repository root -
// with small run and trial counts, and its outputs redirected to a temporary directory. A command
// shown on several pages runs once. Commands that need what a fresh machine does not have (an
// external NATS server, your own certificates) are listed as skipped.
func TestReadmeCommands(t *testing.T) {
	if testing.Short() {
		t.Skip("runs every README command")
	}
	root, _ := filepath.Abs(filepath.Join("..", ".."))
	cmds := readmeCommands(t, root)
	if len(cmds) < 30 {
		t.Fatalf("only %d commands found in README.md and docs/*.md", len(cmds))
	}
	small := func(args []string, flag, value string) []string {
		for i := 0; i+1 < len(args); i++ {
			if args[i] == flag {
				args[i+1] = value
				return args
			}
		}
		return append(args, flag, value)
	}
	scoresDir := t.TempDir()       // the scores files of `dpsim audit --write-scores` and `--scores`
	prevOut := ""                  // the output directory of the command before: what a `dpsim view OUT` shows
	ran := make(map[string]string) // a command already run -> its output directory
	for _, c := range cmds {
		if out, ok := ran[c]; ok && !strings.HasPrefix(c, "dpsim view ") {
			t.Logf("ran before (shown on another page too): %s", c)
			prevOut = out
			continue
		}
		if strings.Contains(c, "--nats-url") {
			t.Logf("skipped (needs an external NATS server): %s", c)
			continue
		}
		if ex := jsExample(c); ex != "" && !jsInstalled(t, root, ex) {
			t.Logf("skipped (needs Node.js and (cd examples/%s && npm ci)): %s", ex, c)
			continue
		}
		args := shellFields(t, c)[1:]
		tmp := t.TempDir()
		for i := 0; i+1 < len(args); i++ {
			switch args[i] {
			case "--out", "--plot-out":
				args[i+1] = filepath.Join(tmp, "out")
			case "--write-scores", "--scores": // by base name, in one folder: a page writes the file the next reads
				args[i+1] = filepath.Join(scoresDir, filepath.Base(args[i+1]))
			}
		}
		if slices.Contains(args, "--scores") {
			if !scoresFile(t, root, args[slices.Index(args, "--scores")+1]) {
				t.Logf("skipped (needs python3 for the page's snippet that writes its scores file): %s", c)
				continue
			}
		}
		switch args[0] {
		case "run":
			args = small(args, "--episodes", "2")
			if !strings.Contains(c, "--out") {
				args = append(args, "--out", filepath.Join(tmp, "out"))
			}
		case "audit":
			if slices.Contains(args, "--scores") { // analyses a file: nothing to play, no OUT
				break
			}
			if !slices.Contains(args, "--one-run") { // one episode: nothing to make small
				args = small(args, "--trials", "300")
			}
			if !strings.Contains(c, "--out") {
				args = append(args, "--out", filepath.Join(tmp, "out"))
			}
		case "view": // the run of the command before, for a second
			args = append([]string{"view", "--for", "1s"}, append(args[1:len(args)-1], prevOut)...)
		}
		prevOut = filepath.Join(tmp, "out")
		ran[c] = prevOut
		attach := slices.Contains(args, "--attach")
		if attach {
			args = small(args, "--listen", "127.0.0.1:0") // the README's port may be taken here
		}
		t.Run(strings.Join(shellFields(t, c)[:2], "_"), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			if attach {
				runAttached(ctx, t, root, filepath.Join(tmp, "out"), c, args)
				return
			}
			cmd := exec.CommandContext(ctx, dpsimBin, args...)
			cmd.Dir = root
			cmd.Env = append(os.Environ(), "NATS_URL=")
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("%s\n(run as: dpsim %s)\n%v\n%s", c, strings.Join(args, " "), err, tail(string(out)))
			}
		})
	}
}

// shellFields splits a command line as sh does for the README's commands: on blanks, with
// single- and double-quoted words kept whole (no escapes or expansions: the README has none).
func shellFields(t *testing.T, line string) []string {
	var out []string
	var word strings.Builder
	inWord := false
	var quote rune
	for _, r := range line {
		switch {
		case quote != 0 && r == quote:
			quote = 0
		case quote != 0:
			word.WriteRune(r)
		case r == '\'' || r == '"':
			quote, inWord = r, true
		case r == ' ' || r == '\t':
			if inWord {
				out = append(out, word.String())
				word.Reset()
				inWord = false
			}
		default:
			word.WriteRune(r)
			inWord = true
		}
	}
	if quote != 0 {
		t.Fatalf("README command with an unclosed quote: %s", line)
	}
	if inWord {
		out = append(out, word.String())
	}
	return out
}

// jsExample is the JavaScript example a README command runs (js-cloud, js-plant), or "".
func jsExample(c string) string {
	for _, ex := range []string{"js-cloud", "js-plant"} {
		if strings.Contains(c, "examples/"+ex) {
			return ex
		}
	}
	return ""
}

// jsInstalled reports whether the README's JavaScript example ex can run here: Node.js is on
// PATH and its nats client is installed (the README's npm ci; .ci/run does it first). It does
// not install it itself: internal/cmd/run's test may be running npm ci in the same directory.
func jsInstalled(t *testing.T, root, ex string) bool {
	if _, err := exec.LookPath("node"); err != nil {
		return false
	}
	_, err := os.Stat(filepath.Join(root, "examples", ex, "node_modules", "nats"))
	return err == nil
}

// runAttached runs a `dpsim run --attach` command as the README says: the launcher, and
// then the lines of its commands.sh (in another shell).
func runAttached(ctx context.Context, t *testing.T, root, out, c string, args []string) {
	launcher := exec.CommandContext(ctx, dpsimBin, args...)
	launcher.Dir = root
	launcher.Env = append(os.Environ(), "NATS_URL=")
	var log strings.Builder
	launcher.Stdout, launcher.Stderr = &log, &log
	if err := launcher.Start(); err != nil {
		t.Fatal(err)
	}
	commands := filepath.Join(out, "procs", "attach", "commands.sh")
	t.Logf("attach: starting the lines of %s", commands)
	for {
		if _, err := os.Stat(commands); err == nil {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("%s: no %s\n%s", c, commands, tail(log.String()))
		}
		time.Sleep(20 * time.Millisecond)
	}
	roles := exec.CommandContext(ctx, "sh", commands)
	if b, err := roles.CombinedOutput(); err != nil {
		t.Fatalf("%s: sh %s: %v\n%s", c, commands, err, tail(string(b)))
	}
	if err := launcher.Wait(); err != nil {
		t.Fatalf("%s\n(run as: dpsim %s)\n%v\n%s", c, strings.Join(args, " "), err, tail(log.String()))
	}
}

func tail(s string) string {
	if len(s) > 2000 {
		return "..." + s[len(s)-2000:]
	}
	return s
}

// scoresFile makes sure the scores file path exists for a `dpsim audit --scores` command: one
// written by a command before (--write-scores), or else by the page's Python snippet that opens
// a file of that name, run with python3 in the file's folder; false when python3 is missing.
func scoresFile(t *testing.T, root, path string) bool {
	t.Helper()
	if _, err := os.Stat(path); err == nil {
		return true
	}
	py, err := exec.LookPath("python3")
	if err != nil {
		return false
	}
	pages, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	block := regexp.MustCompile("(?s)```python\n(.*?)```")
	for _, page := range pages {
		data, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range block.FindAllStringSubmatch(string(data), -1) {
			if !strings.Contains(m[1], `open("`+filepath.Base(path)+`"`) {
				continue
			}
			cmd := exec.Command(py, "-c", m[1])
			cmd.Dir = filepath.Dir(path)
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("%s: the Python snippet that writes %s: %v\n%s", page, filepath.Base(path), err, out)
			}
			return true
		}
	}
	t.Fatalf("no command before and no Python snippet of docs/ writes %s", filepath.Base(path))
	return false
}
