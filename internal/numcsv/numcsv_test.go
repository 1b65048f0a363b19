package numcsv

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestParse(t *testing.T) {
	cases := []struct {
		name, csv  string
		header     bool
		rows, cols int
		values     []float64
		names      []string // ColumnName of each column
		err        string
	}{
		{name: "plain, comments, spaces, blank line", csv: "# c\n1, 2\n\n  \n3,4\n", rows: 2, cols: 2,
			values: []float64{1, 2, 3, 4}, names: []string{"column 1", "column 2"}},
		{name: "all-word header", csv: "a, b\n1,2\n", rows: 1, cols: 2, values: []float64{1, 2},
			names: []string{"column 1 (a)", "column 2 (b)"}},
		{name: "header flag takes a numeric first row", csv: "2024,2025\n1,2\n", header: true, rows: 1, cols: 2,
			values: []float64{1, 2}, names: []string{"column 1 (2024)", "column 2 (2025)"}},
		{name: "mixed first row is an error", csv: "1,abc,3\n4,5,6\n",
			err: `line 1 (data row 1), column 2: "abc" is not a number (a first row is a header only when every cell is non-numeric, or with --header)`},
		{name: "word in a data row", csv: "a,b\n1,2\n3,x\n", err: `line 3 (data row 2), column 2 (b): "x" is not a number`},
		{name: "NaN first row is data, not a header", csv: "NaN,1\n", err: `line 1 (data row 1), column 1: "NaN" is not a finite number`},
		{name: "Inf", csv: "1,2\n3,-Inf\n", err: `line 2 (data row 2), column 2: "-Inf" is not a finite number`},
		{name: "overflow", csv: "1,2\n3,1e400\n", err: `line 2 (data row 2), column 2: "1e400" is not a finite number`},
		{name: "ragged", csv: "1,2,3\n4,5\n", err: "line 2 (data row 2): 2 columns, expected 3 like the first row"},
		{name: "ragged against header", csv: "a,b\n1,2,3\n", err: "line 2 (data row 1): 3 columns, expected 2 like the header"},
		{name: "header only", csv: "a,b\n", err: "no data rows"},
		{name: "empty", csv: "# nothing\n", err: "no data rows"},
		{name: "quote", csv: "1,\"2\n3,4\n", err: "malformed CSV"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tb, err := Parse(strings.NewReader(c.csv), c.header)
			if c.err != "" {
				require.ErrorContains(t, err, c.err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, c.rows, tb.Rows)
			require.Equal(t, c.cols, tb.Cols)
			require.Equal(t, c.values, tb.Values)
			for j, n := range c.names {
				require.Equal(t, n, tb.ColumnName(j))
			}
		})
	}
}

func TestReadNamesTheFile(t *testing.T) {
	_, err := Read("/nonexistent/x.csv", false)
	require.ErrorContains(t, err, "/nonexistent/x.csv")
}
