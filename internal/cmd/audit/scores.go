package auditcmd

import (
	"errors"
	"flag"
	"io"

	"github.com/dpsim/dpsim/internal/auditrun"
	"github.com/dpsim/dpsim/internal/cli"
	"github.com/dpsim/dpsim/pkg/audit"
)

// scoresFlags are --scores FILE and its claim, --epsilon, --delta and --mechanism.
type scoresFlags struct {
	path, mech string
	eps, delta float64
}

// defineScores defines --write-scores, --scores and the claim's flags on fs.
func defineScores(fs *flag.FlagSet, o *Options) *scoresFlags {
	sf := &scoresFlags{}
	fs.StringVar(&o.WriteScores, "write-scores", "", "write every trial's secret bit and scores to FILE (.csv: trial,bit,<scores>; .jsonl: one object per trial; .parquet: the CSV's columns; FILE-pNN.EXT per sweep point), which --scores reads back to the same bounds; it holds the secret bits: 0600 unless --share-outputs (docs/howto-audit.md)")
	fs.StringVar(&sf.path, "scores", "", "analyse the trials of FILE (.csv, .jsonl or .parquet, as --write-scores writes them: scores from any implementation; or the canary layout, in_canary_scores and out_canary_scores as CSV or Parquet columns or a .json object) against --epsilon, --delta and --mechanism (per episode, composed over --episodes-per-trial K when each trial played K episodes) instead of playing a scenario's game")
	fs.BoolVar(&o.Parquet, "parquet", false, "with --out: also write every trial's secret bit and scores to OUT/scores.parquet (OUT/scores-pNN.parquet per sweep point; columns trial INT64, bit INT32 and one DOUBLE per score, as --write-scores FILE.parquet); it holds the secret bits: 0600 unless --share-outputs")
	fs.Float64Var(&sf.eps, "epsilon", 0, "with --scores: the claimed epsilon")
	fs.Float64Var(&sf.delta, "delta", 0, "with --scores: the claimed delta (0: pure eps)")
	fs.StringVar(&sf.mech, "mechanism", "", "with --scores: gaussian or laplace; default gaussian when --delta > 0, else laplace")
	return sf
}

// check finishes the parse of --scores: no scenario, none of a game's flags, a valid claim.
func (sf *scoresFlags) check(fs *flag.FlagSet, o *Options, scenarioPath string, parseErr error) error {
	if parseErr != nil && !errors.Is(parseErr, cli.ErrMissingScenario) {
		return parseErr
	}
	if scenarioPath != "" {
		return cli.UsageError("--scores FILE analyses the file's trials: give no SCENARIO (got %s)", scenarioPath)
	}
	var bad []string
	fs.Visit(func(f *flag.Flag) {
		switch f.Name {
		case "scores", "epsilon", "delta", "mechanism", "episodes-per-trial", "confidence", "selection", "json", "fail-on-violation", "log-level":
		default:
			bad = append(bad, "--"+f.Name)
		}
	})
	if len(bad) > 0 {
		return cli.UsageError("--scores: %v play a game; with --scores only --epsilon, --delta, --mechanism, --episodes-per-trial, --confidence, --selection, --json and --fail-on-violation apply", bad)
	}
	if k := o.EpisodesPerTrial; k < 1 || k > audit.MaxEpisodesPerTrial {
		return cli.UsageError("--episodes-per-trial %d: want 1..%d episodes per trial", k, audit.MaxEpisodesPerTrial)
	}
	c, err := auditrun.ParseClaim(sf.eps, sf.delta, sf.mech)
	if err != nil {
		return err
	}
	if o.Confidence != 0 && !(o.Confidence > 0 && o.Confidence < 1) {
		return cli.UsageError("--confidence %v: want a level in (0, 1), e.g. 0.95", o.Confidence)
	}
	sel, err := audit.ParseSelection(fs.Lookup("selection").Value.String())
	if err != nil {
		return cli.UsageError("--selection: %v", err)
	}
	o.Scores = auditrun.ScoresOptions{Path: sf.path, Claim: c, Confidence: o.Confidence, Selection: sel, EpisodesPerTrial: o.EpisodesPerTrial}
	return nil
}

// executeScores is `dpsim audit --scores FILE`: the file's trials analysed against the claim,
// printed as an audit's table or --json.
func executeScores(o *Options, stdout io.Writer) error {
	r, err := auditrun.AnalyzeScores(o.Scores)
	if err != nil {
		return err
	}
	if o.JSON {
		if err := cli.WriteJSON(stdout, r); err != nil {
			return err
		}
	} else {
		printTable(stdout, []*audit.GameReport{r}, "")
	}
	if o.FailOnViolation && r.Verdict == audit.Violation {
		return &ViolationError{Points: []string{r.Scenario}}
	}
	return nil
}
