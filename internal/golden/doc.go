// Package golden is test support for the golden malformed inputs: a file that must be refused
// carries "# want: ..." lines (written by hand) and, unless it says "# golden: skip", a golden
// .err file beside it with the whole message (rewritten with -update). pkg/scenario checks the
// files its parser refuses and pkg/plan those only the dynamics refuse, the same way.
package golden
