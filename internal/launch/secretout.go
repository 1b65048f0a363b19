package launch

import (
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/dpsim/dpsim/internal/atomicfile"
	"github.com/dpsim/dpsim/pkg/record"
)

// SecretOutput is an output of dpsim run or dpsim audit that holds the run's secrets: x(0), the
// seed, the true states or the noise, or what they are read back from. Pattern is a path.Match
// pattern of its path in OUT, in the folder Dir ("" OUT itself, "figures", or "procs" for
// every processes' folder: procs, procs/pNN, procs-pK).
type SecretOutput struct {
	Dir, Pattern, Holds string
	// Always: private even with --share-outputs (written 0600 by their own writers, and
	// removed when the run ends unless --keep-secrets).
	Always bool
}

// SecretOutputs is the one table of which outputs are secret: written 0600 (their folders
// procs/ and figures/ 0700) unless --share-outputs. Every other output (report.md of a run, the
// processes' logs, result files and transcripts - what the eavesdropper sees -, the audit's
// trade-off plots, faults.applied.yaml, public-keys.json, the procs/ fault logs) is 0644.
func SecretOutputs() []SecretOutput {
	out := []SecretOutput{
		{"", "summary.json", "the seed and x(0)", false},
		{"", "trace.jsonl", "the true states of the traced episodes", false},
		{"", "trace-p*.jsonl", "the true states of the traced episodes", false},
		{"", "trace.parquet", "the true states of the traced episodes (--parquet)", false},
		{"", "episodes.parquet", "every episode's errors against its true state, and x* = mean x(0) (--parquet)", false},
		{"", "faults.jsonl", "the messages' faults of the traced episodes, beside their true states", false},
		{"", "faults-p*.jsonl", "the messages' faults of the traced episodes, beside their true states", false},
		{"", "audit.json", "the seed and the audited pair x(0), x'(0)", false},
		{"", "audit-p*.json", "the seed and the audited pair x(0), x'(0)", false},
		{"", "report.md", "an audit's holds the seed (a run's, which does not, is kept private by the same rule)", false},
		{"", "report-p*.md", "an audit's sweep point's: the seed", false},
		{"", "scores*.csv", "an audit's --write-scores file (this name in OUT, or any name anywhere: ScoresMode): every trial's secret bit beside its scores", false},
		{"", "scores*.jsonl", "an audit's --write-scores file (this name in OUT, or any name anywhere: ScoresMode): every trial's secret bit beside its scores", false},
		{"", "scores*.parquet", "an audit's --write-scores file (this name in OUT, or any name anywhere: ScoresMode): every trial's secret bit beside its scores", false},
		{"", "resume.json", "the seed and every completed point's results", true},
		{"", "resume.key", "the key of resume.json's digest", true},
		{"figures", "*.json", "the figures' data: the true trajectory and the estimation errors", false},
		{"procs", "*.trace.jsonl", "a process's trace: the plant's true states, the cloud's and the eavesdropper's estimates", false},
		{"procs", "*.plan.json", "x(0) and the run seed", true},
		{"procs", "*.checkpoint.json", "a crashed process's noise draw", true},
		{"procs", "attach/*", "the attached processes' credentials", true},
	}
	for _, f := range record.FigureNames() {
		for _, ext := range []string{".png", ".svg"} {
			out = append(out, SecretOutput{"", f + ext, "a figure of the run: the true trajectory or the errors against it", false})
		}
	}
	return out
}

// IsSecretOutput reports whether rel, a path in OUT, is a SecretOutput.
func IsSecretOutput(rel string) bool {
	rel = path.Clean(strings.ReplaceAll(rel, string(os.PathSeparator), "/"))
	dir, name := path.Split(rel)
	dir = strings.TrimSuffix(dir, "/")
	switch {
	case dir == "":
	case dir == record.FigureDataDir:
		dir = "figures"
	case strings.HasPrefix(dir, "procs"):
		if d, rest, ok := strings.Cut(dir, "/"); ok && (rest == AttachDir || strings.HasSuffix(rest, "/"+AttachDir)) {
			dir, name = d, AttachDir+"/"+name
		}
		dir = "procs"
	default:
		return false
	}
	for _, s := range SecretOutputs() {
		if ok, _ := path.Match(s.Pattern, name); ok && s.Dir == dir {
			return true
		}
	}
	return false
}

// ScoresMode is the mode of dpsim audit's --write-scores file, whatever its name and folder:
// that of its rows in SecretOutputs (scores.csv), 0600 unless share (--share-outputs) - it
// holds the secret bit of every trial.
func ScoresMode(share bool) os.FileMode { return OutputMode("scores.csv", share) }

// OutputMode is the mode dpsim writes rel (a path in OUT) with: private when it is secret and
// the outputs are not shared.
func OutputMode(rel string, share bool) os.FileMode {
	return atomicfile.Mode(IsSecretOutput(rel), share)
}

// mkdirProcs creates a point's processes' folder dir (procs, procs/pNN, procs-pK) with the
// privacy of --share-outputs, and procs/ above a procs/pNN.
func mkdirProcs(dir string, share bool) error {
	if parent := filepath.Dir(dir); filepath.Base(parent) == "procs" {
		if err := atomicfile.MkdirOutputs(parent, share); err != nil {
			return err
		}
	}
	return atomicfile.MkdirOutputs(dir, share)
}
