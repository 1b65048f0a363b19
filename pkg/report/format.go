package report

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/dpsim/dpsim/pkg/metrics"
)

// num formats v with 3 significant digits: plain notation for 1e-3 <= |v| < 1e6, otherwise
// scientific with a short exponent ("2.8e-5", "1.2e7").
func num(v float64) string { return numP(v, 3) }

// numP formats v with p significant digits (see num).
func numP(v float64, p int) string {
	switch {
	case math.IsNaN(v):
		return "NaN"
	case math.IsInf(v, 1):
		return "+Inf"
	case math.IsInf(v, -1):
		return "-Inf"
	case v == 0:
		return "0"
	}
	a := math.Abs(v)
	if a >= 1e-3 && a < 1e6 {
		// Round to p significant digits first, then print without exponent.
		r, err := strconv.ParseFloat(strconv.FormatFloat(v, 'g', p, 64), 64)
		if err != nil {
			r = v
		}
		e := int(math.Floor(math.Log10(math.Abs(r))))
		dec := p - 1 - e
		if dec < 0 {
			dec = 0
		}
		s := strconv.FormatFloat(r, 'f', dec, 64)
		if strings.Contains(s, ".") {
			s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
		}
		return s
	}
	s := strconv.FormatFloat(v, 'e', p-1, 64)
	mant, exp, _ := strings.Cut(s, "e")
	if strings.Contains(mant, ".") {
		mant = strings.TrimRight(strings.TrimRight(mant, "0"), ".")
	}
	sign := ""
	if strings.HasPrefix(exp, "-") {
		sign = "-"
	}
	exp = strings.TrimLeft(strings.TrimLeft(exp, "+-"), "0")
	if exp == "" {
		exp = "0"
	}
	return mant + "e" + sign + exp
}

// ci formats a Stat as "mean [lo, hi]" (its 95% interval), or "n/a" without data.
func ci(s metrics.Stat) string {
	if s.N == 0 {
		return "n/a"
	}
	if s.N < 2 {
		return num(s.Mean) + " (1 run, no interval)"
	}
	return fmt.Sprintf("%s [%s, %s]", num(s.Mean), num(s.Lo), num(s.Hi))
}

// yesNo prints a computed boolean.
func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// bytesMiB formats a byte count in MiB ("n/a" for <= 0).
func bytesMiB(b int64) string {
	if b <= 0 {
		return "n/a"
	}
	return numP(float64(b)/(1<<20), 3) + " MiB"
}

// duration rounds d for printing.
func duration(d time.Duration) string {
	switch {
	case d <= 0:
		return "n/a"
	case d < time.Millisecond:
		return d.String()
	case d < time.Second:
		return d.Round(10 * time.Microsecond).String()
	}
	return d.Round(time.Millisecond).String()
}

// cell escapes text for a Markdown table cell.
func cell(s string) string {
	s = strings.ReplaceAll(s, "|", `\|`)
	return strings.ReplaceAll(s, "\n", " ")
}

// table writes a Markdown table.
func table(b *strings.Builder, header []string, rows [][]string) {
	if len(rows) == 0 {
		return
	}
	esc := func(r []string) string {
		parts := make([]string, len(r))
		for i, c := range r {
			parts[i] = cell(c)
		}
		return "| " + strings.Join(parts, " | ") + " |\n"
	}
	b.WriteString(esc(header))
	sep := make([]string, len(header))
	for i := range sep {
		sep[i] = "---"
	}
	b.WriteString("|" + strings.Join(sep, "|") + "|\n")
	for _, r := range rows {
		b.WriteString(esc(r))
	}
	b.WriteString("\n")
}

// flatten turns any JSON-serialisable value into (key, value) rows, keeping the order of
// struct fields (maps come out sorted by key, as encoding/json writes them). Nested keys are
// joined with '.', array elements indexed as key[i]. Numbers are formatted with num.
func flatten(v any) ([][2]string, error) {
	data, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(strings.NewReader(string(data)))
	dec.UseNumber()
	var rows [][2]string
	var walk func(prefix string) error
	walk = func(prefix string) error {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		switch t := tok.(type) {
		case json.Delim:
			switch t {
			case '{':
				for dec.More() {
					kt, err := dec.Token()
					if err != nil {
						return err
					}
					k, _ := kt.(string)
					key := k
					if prefix != "" {
						key = prefix + "." + k
					}
					if err := walk(key); err != nil {
						return err
					}
				}
				_, err = dec.Token() // '}'
				return err
			case '[':
				for i := 0; dec.More(); i++ {
					if err := walk(fmt.Sprintf("%s[%d]", prefix, i)); err != nil {
						return err
					}
				}
				_, err = dec.Token() // ']'
				return err
			}
		case json.Number:
			if f, err := t.Float64(); err == nil {
				if _, ierr := t.Int64(); ierr == nil {
					rows = append(rows, [2]string{prefix, t.String()})
				} else {
					rows = append(rows, [2]string{prefix, num(f)})
				}
			} else {
				rows = append(rows, [2]string{prefix, t.String()})
			}
		case string:
			rows = append(rows, [2]string{prefix, t})
		case bool:
			rows = append(rows, [2]string{prefix, yesNo(t)})
		case nil:
			rows = append(rows, [2]string{prefix, "null"})
		}
		return nil
	}
	if err := walk(""); err != nil {
		return nil, err
	}
	for i := range rows {
		if rows[i][0] == "" {
			rows[i][0] = "value"
		}
	}
	return rows, nil
}
