package vecsumcmd

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/dpsim/dpsim/internal/cli"
)

// TestRunHeaderRule: a first row is a header only with --header or when every cell is non-numeric;
// a first row mixing numbers and words is an error naming line and column, not a lost data row
// ("1,abc,3" was once silently taken as a header, changing n and the sum).
func TestRunHeaderRule(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte(body), 0o644))
		return p
	}
	cases := []struct {
		name, csv string
		header    bool
		wantN     int
		wantErr   string
	}{
		{"mixed first row", "1,abc,3\n4,5,6\n7,8,9\n", false, 0, `line 1 (data row 1), column 2: "abc" is not a number`},
		{"mixed first row after comment", "# data\n1,2,x\n4,5,6\n", false, 0, `line 2 (data row 1), column 3: "x" is not a number`},
		{"word in a later row", "a,b,c\n1,2,3\n4,five,6\n", false, 0, `line 3 (data row 2), column 2 (b): "five" is not a number`},
		{"all words: header", "a,b,c\n1,2,3\n4,5,6\n", false, 2, ""},
		{"no header", "1,2,3\n4,5,6\n", false, 2, ""},
		{"--header names a mixed row", "id,2024,x\n1,2,3\n4,5,6\n", true, 2, ""},
		{"--header takes a numeric row", "1,2,3\n4,5,6\n", true, 1, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			args := []string{"run", "--input", write("in.csv", c.csv), "--epsilon", "1", "--delta", "1e-6",
				"--method", "gaussian", "--bounds", "10", "--seed", "1", "--json"}
			if c.header {
				args = append(args, "--header")
			}
			out, _, err := run(t, args...)
			if c.wantErr != "" {
				require.Error(t, err)
				require.Contains(t, err.Error(), c.wantErr)
				require.Contains(t, err.Error(), "in.csv")
				require.False(t, errors.Is(err, cli.ErrUsage), "a data problem is a failure (exit 1), not a usage error")
				return
			}
			require.NoError(t, err)
			var r runJSON
			require.NoError(t, json.Unmarshal([]byte(out), &r))
			require.Equal(t, c.wantN, r.N)
		})
	}
}
