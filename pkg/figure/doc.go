// Package figure is dpsim's one plot style: every figure the tools write (the run report's,
// the audit's trade-off plot, the vector-sum gain figure, the John ellipsoid accuracy plot)
// is a Figure of panels made by New, drawn by Render and written by WriteFiles.
//
// The style: Liberation Sans at fixed sizes (title 13 pt, axis labels 12, tick labels and
// legends 10), one column 7 in wide (ColumnWidth per column when panels stand side by side),
// rows PanelHeight tall (TallPanelHeight for a lone panel), a colour-blind-friendly palette
// (Color), legends in a strip below their panel so they never cover data, titles wrapped to
// their panel's width. Linear axes are labelled every 1, 2, 2.5 or 5 times a power of ten
// with only the digits the step needs (all with an exponent when the values are large or
// small: 5e4 beside 1e5), and Fit runs them from label to label so that no data runs into an
// unlabelled edge; log axes (SetLogX, SetLogY) label powers of ten, over up to two decades
// also 2 and 5 times them, in one format per axis, with labelled ends, and span at most
// MaxLogDecades below their largest value. Series are told apart by Color, SeriesDashes and
// Marker.
//
// Check verifies a figure against the style - fonts, sizes, no clipped text or data, every
// series distinguishable, nothing drawn twice, labels that neither overlap nor sit at odd
// values nor leave an end of an axis unlabelled, log axes that are not mostly empty, both
// formats rendering at the figure's size - so that each package's tests can hold every figure
// it draws to it.
package figure
