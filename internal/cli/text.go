package cli

import "strings"

// OneLine keeps a sentence on one line of a terminal table: its runs of white space become one
// space and Markdown emphasis (**) goes.
func OneLine(s string) string {
	return strings.ReplaceAll(strings.Join(strings.Fields(s), " "), "**", "")
}
