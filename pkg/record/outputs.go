package record

// The figures of a run's report (files NAME.png and NAME.svg in OUT, their data
// FigureDataDir/NAME.json): pkg/report draws them, the launcher's table of secret outputs and
// the cleaning of a reused OUT name them.
const (
	FigTrackingError     = "tracking-error"      // cloud control: x - x_r against t (paper Fig. 2)
	FigTrackingMSE       = "tracking-mse"        // cloud control: E[(x - x_r)^2] against t
	FigEavesdropper      = "eavesdropper-error"  // E||x0hat(t) - x(0)||^2 against t
	FigSweepFinalMSE     = "sweep-final-mse"     // final mean-square error against the swept parameter (Fig. 3)
	FigSweepEavesdropper = "sweep-eavesdropper"  // eavesdropper error against t per noise kind
	FigConsensusDev      = "consensus-deviation" // E[x_i(t) - x*] against t (Fig. 5)
	FigConsensusMSE      = "consensus-mse"       // E||x(t) - 1x*||^2 with the Proposition 1 bound (Figs. 6, 7)
	FigFaults            = "faults"              // final errors (and sum drift) against a swept fault parameter
)

// FigureDataDir is the directory, in the output directory, where the report puts the data of
// each figure (NAME.json).
const FigureDataDir = "figures"

// FigureNames lists every figure a run's report may create (as NAME.png and NAME.svg), so that a
// caller reusing an output directory can remove those of an earlier run.
func FigureNames() []string {
	return []string{FigTrackingError, FigTrackingMSE, FigEavesdropper, FigSweepFinalMSE, FigSweepEavesdropper,
		FigConsensusDev, FigConsensusMSE, FigFaults}
}
