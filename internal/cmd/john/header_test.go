package johncmd

import (
	"strings"
	"testing"
)

// TestHeaderFlag: john shares vecsum's CSV rule (internal/numcsv): --header names the columns whatever
// the first line holds; without it a first line is a header only when every cell is non-numeric.
func TestHeaderFlag(t *testing.T) {
	cases := []struct {
		name, csv string
		header    bool
		n         float64
		err       string
	}{
		{"numeric names with --header", "2024,2025\n1,0\n0,1\n1,1\n", true, 3, ""},
		{"numeric first line is data", "2024,2025\n1,0\n0,1\n1,1\n", false, 4, ""},
		{"word header", "x,y\n1,0\n0,1\n", false, 2, ""},
		{"mixed first line", "x,2\n1,0\n0,1\n", false, 0, `line 1 (data row 1), column 1: "x" is not a number`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			args := []string{"--input", writeFile(t, "h.csv", c.csv), "--json"}
			if c.header {
				args = append(args, "--header")
			}
			out, _, err := run(args...)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("error %v, want %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if n := decode(t, out)["n"]; n != c.n {
				t.Errorf("n = %v, want %v", n, c.n)
			}
		})
	}
}
