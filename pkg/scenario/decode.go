package scenario

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"regexp"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// decoder walks a yaml.Node tree, converting values and recording every problem with its
// field path and line. Type checks are strict: a quoted "1" is a string, not a number.
type decoder struct {
	ps       *problems
	lines    map[string]int // line of every field path seen, for problems found after decoding
	warnings []string       // allowed but worth saying (they go to Scenario.Warnings)
}

// warn records a warning.
func (d *decoder) warn(format string, args ...any) {
	d.warnings = append(d.warnings, fmt.Sprintf(format, args...))
}

func (d *decoder) add(n *yaml.Node, path, format string, args ...any) {
	line := 0
	if n != nil {
		line = n.Line
	}
	d.ps.add(path, line, format, args...)
}

// parseDocument parses exactly one YAML document and returns its root node, or nil after
// recording the syntax problem.
func parseDocument(data []byte, d *decoder) *yaml.Node {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			d.add(nil, "", "empty file: want a YAML mapping with at least name, kind, steps, episodes and privacy")
		} else {
			d.syntax(err)
		}
		return nil
	}
	var extra yaml.Node
	switch err := dec.Decode(&extra); {
	case errors.Is(err, io.EOF):
	case err != nil:
		d.syntax(err)
		return nil
	default:
		d.add(&extra, "", "a second YAML document (---): put one scenario per file")
		return nil
	}
	if doc.Kind == yaml.DocumentNode && len(doc.Content) == 1 {
		if left := expandBudget(doc.Content[0], maxExpandedNodes); left < 0 {
			d.add(&doc, "", "the document expands to more than %d values (through aliases)", maxExpandedNodes)
			return nil
		}
		return resolve(doc.Content[0])
	}
	d.add(&doc, "", "empty document: want a YAML mapping")
	return nil
}

// maxExpandedNodes bounds the size of a document with its aliases expanded, so that a
// small file cannot make the decoder walk an exponential tree ("billion laughs").
const maxExpandedNodes = 10_000_000

// expandBudget subtracts from budget the number of nodes in n with aliases expanded and
// returns what is left (negative: over budget; it stops early).
func expandBudget(n *yaml.Node, budget int) int {
	for i := 0; n != nil && n.Kind == yaml.AliasNode; i++ {
		if i > 100 {
			return -1
		}
		n = n.Alias
	}
	if n == nil {
		return budget
	}
	budget--
	for _, c := range n.Content {
		if budget < 0 {
			return budget
		}
		budget = expandBudget(c, budget)
	}
	return budget
}

var yamlLineRE = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

// syntax records a YAML syntax error, keeping its line number.
func (d *decoder) syntax(err error) {
	msg := err.Error()
	if m := yamlLineRE.FindStringSubmatch(msg); m != nil {
		line, _ := strconv.Atoi(m[1])
		// yaml.v3 numbers scanner errors from 1 but parser errors ("did not find
		// expected ...", reported at the enclosing construct) from 0.
		if strings.HasPrefix(m[2], "did not find expected") {
			line++
		}
		d.ps.add("", line, "invalid YAML: %s", m[2])
		return
	}
	d.ps.add("", 0, "invalid YAML: %s", strings.TrimPrefix(msg, "yaml: "))
}

// resolve follows aliases (*name) to the anchored node.
func resolve(n *yaml.Node) *yaml.Node {
	for i := 0; n != nil && n.Kind == yaml.AliasNode && i < 100; i++ {
		n = n.Alias
	}
	return n
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func index(path string, i int) string { return fmt.Sprintf("%s[%d]", path, i) }

// describe names what a node holds, for type errors.
func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.SequenceNode:
		return "a list"
	case yaml.MappingNode:
		return "a mapping"
	case yaml.ScalarNode:
		switch n.ShortTag() {
		case "!!null":
			return "an empty value"
		case "!!str":
			return fmt.Sprintf("string %q", n.Value)
		case "!!int", "!!float":
			return "number " + n.Value
		case "!!bool":
			return "boolean " + n.Value
		}
		return fmt.Sprintf("%s %q", n.ShortTag(), n.Value)
	}
	return "an unsupported YAML node"
}

// fields is a decoded mapping: its values by key, resolved.
type fields struct {
	node *yaml.Node
	path string
	vals map[string]*yaml.Node
}

// mapping checks that n is a mapping whose keys are all in allowed (reporting unknown and
// repeated keys) and returns its fields, or nil if n is not a mapping.
func (d *decoder) mapping(n *yaml.Node, path string, allowed ...string) *fields {
	return d.mappingRenamed(n, path, nil, allowed...)
}

// mappingRenamed is mapping that also accepts the old names of renamed keys (not listed in
// its messages: a file is pointed at the current names).
func (d *decoder) mappingRenamed(n *yaml.Node, path string, old []string, allowed ...string) *fields {
	if n.Kind != yaml.MappingNode {
		what := "a mapping"
		if len(allowed) > 0 {
			what = "a mapping with fields " + strings.Join(allowed, ", ")
		}
		d.add(n, path, "want %s, got %s", what, describe(n))
		return nil
	}
	f := &fields{node: n, path: path, vals: map[string]*yaml.Node{}}
	firstLine := map[string]int{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := resolve(n.Content[i]), resolve(n.Content[i+1])
		key := k.Value
		p := join(path, key)
		if k.Kind != yaml.ScalarNode {
			d.add(k, path, "a key must be a plain name, got %s", describe(k))
			continue
		}
		if l, dup := firstLine[key]; dup {
			d.add(k, p, "defined twice (first on line %d)", l)
			continue
		}
		firstLine[key] = k.Line
		if d.lines != nil {
			d.lines[p] = k.Line
		}
		if !contains(allowed, key) && !contains(old, key) {
			msg := fmt.Sprintf("unknown field (allowed: %s)", strings.Join(allowed, ", "))
			for _, a := range allowed {
				if strings.EqualFold(a, key) {
					msg += "; did you mean " + a + "?"
					break
				}
			}
			d.add(k, p, "%s", msg)
			continue
		}
		f.vals[key] = v
	}
	return f
}

func contains(xs []string, s string) bool {
	for _, x := range xs {
		if x == s {
			return true
		}
	}
	return false
}

func (f *fields) get(key string) *yaml.Node { return f.vals[key] }

func (f *fields) has(key string) bool { return f.vals[key] != nil }

func (f *fields) sub(key string) string { return join(f.path, key) }

// missing records a required field that is absent.
func (d *decoder) missing(f *fields, key, what string) {
	d.add(f.node, f.sub(key), "missing: %s", what)
}

func isNull(n *yaml.Node) bool { return n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null" }

func (d *decoder) str(n *yaml.Node, path string) (string, bool) {
	if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!str" {
		d.add(n, path, "want a string, got %s", describe(n))
		return "", false
	}
	return n.Value, true
}

func isNumber(n *yaml.Node) bool {
	if n.Kind != yaml.ScalarNode {
		return false
	}
	t := n.ShortTag()
	return t == "!!int" || t == "!!float"
}

// float decodes a finite number.
func (d *decoder) float(n *yaml.Node, path string) (float64, bool) {
	if !isNumber(n) {
		d.add(n, path, "want a number, got %s", describe(n))
		return 0, false
	}
	var v float64
	if err := n.Decode(&v); err != nil {
		d.add(n, path, "%s is not a number: %v", n.Value, err)
		return 0, false
	}
	if math.IsNaN(v) || math.IsInf(v, 0) {
		d.add(n, path, "%s is not a finite number (NaN and Inf are not allowed)", n.Value)
		return 0, false
	}
	return v, true
}

// integer decodes an integer; an integral float such as 1e3 is accepted.
func (d *decoder) integer(n *yaml.Node, path string) (int64, bool) {
	if !isNumber(n) {
		d.add(n, path, "want an integer, got %s", describe(n))
		return 0, false
	}
	if n.ShortTag() == "!!int" {
		var v int64
		if err := n.Decode(&v); err != nil {
			d.add(n, path, "%s is out of the integer range", n.Value)
			return 0, false
		}
		return v, true
	}
	var f float64
	if err := n.Decode(&f); err != nil || math.IsNaN(f) || math.IsInf(f, 0) || f != math.Trunc(f) || math.Abs(f) > 1<<53 {
		d.add(n, path, "want an integer, got %s", n.Value)
		return 0, false
	}
	return int64(f), true
}

// intIn decodes an integer in [lo, hi].
func (d *decoder) intIn(n *yaml.Node, path string, lo, hi int64, what string) (int, bool) {
	v, ok := d.integer(n, path)
	if !ok {
		return 0, false
	}
	if v < lo {
		d.add(n, path, "%s must be >= %d%s", n.Value, lo, what)
		return 0, false
	}
	if v > hi {
		d.add(n, path, "%s must be <= %d%s", n.Value, hi, what)
		return 0, false
	}
	return int(v), true
}

// uint64v decodes an unsigned 64-bit integer.
func (d *decoder) uint64v(n *yaml.Node, path string) (uint64, bool) {
	if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!int" {
		d.add(n, path, "want an unsigned integer, got %s", describe(n))
		return 0, false
	}
	if strings.HasPrefix(strings.TrimSpace(n.Value), "-") {
		d.add(n, path, "%s must be >= 0 (an unsigned 64-bit integer)", n.Value)
		return 0, false
	}
	var v uint64
	if err := n.Decode(&v); err != nil {
		d.add(n, path, "%s does not fit an unsigned 64-bit integer", n.Value)
		return 0, false
	}
	return v, true
}

// vector decodes a list of finite numbers; a single number is a vector of length 1.
func (d *decoder) vector(n *yaml.Node, path string) ([]float64, bool) {
	if isNumber(n) {
		v, ok := d.float(n, path)
		return []float64{v}, ok
	}
	if n.Kind != yaml.SequenceNode {
		d.add(n, path, "want a list of numbers, got %s", describe(n))
		return nil, false
	}
	if len(n.Content) == 0 {
		d.add(n, path, "empty list: want at least one number")
		return nil, false
	}
	out := make([]float64, len(n.Content))
	ok := true
	for i, c := range n.Content {
		c = resolve(c)
		if !isNumber(c) {
			d.add(c, index(path, i), "want a number, got %s", describe(c))
			ok = false
			continue
		}
		v, good := d.float(c, index(path, i))
		ok = ok && good
		out[i] = v
	}
	return out, ok
}

// flatRule says how a flat list of numbers is read as a matrix.
type flatRule int

const (
	flatNone   flatRule = iota // only a list of length 1 (a square matrix must be written as rows)
	flatRow                    // one row: 1 x k
	flatColumn                 // one column: k x 1
)

// shape is the raw form a matrix was written in.
type shape int

const (
	shapeScalar shape = iota
	shapeFlat
	shapeRows
)

// matrixRaw decodes a number, a flat list or a list of rows; it reports the form used.
func (d *decoder) matrixRaw(n *yaml.Node, path string) (Matrix, shape, bool) {
	if isNumber(n) {
		v, ok := d.float(n, path)
		return Matrix{{v}}, shapeScalar, ok
	}
	if n.Kind != yaml.SequenceNode {
		d.add(n, path, "want a matrix (a number, a list of numbers or a list of rows), got %s", describe(n))
		return nil, 0, false
	}
	if len(n.Content) == 0 {
		d.add(n, path, "empty matrix")
		return nil, 0, false
	}
	nested := 0
	for _, c := range n.Content {
		if resolve(c).Kind == yaml.SequenceNode {
			nested++
		}
	}
	switch nested {
	case 0:
		v, ok := d.vector(n, path)
		return Matrix{v}, shapeFlat, ok
	case len(n.Content):
	default:
		d.add(n, path, "mixes numbers and rows: write every row as a list, e.g. [[1, 0.1], [0, 1]]")
		return nil, 0, false
	}
	m := make(Matrix, len(n.Content))
	ok := true
	for i, c := range n.Content {
		c = resolve(c)
		row, good := d.vector(c, index(path, i))
		if !good {
			ok = false
			continue
		}
		if i > 0 && m[0] != nil && len(row) != len(m[0]) {
			d.add(c, index(path, i), "%d entries, but row 0 has %d: all rows must have the same length", len(row), len(m[0]))
			ok = false
			continue
		}
		m[i] = row
	}
	return m, shapeRows, ok
}

// matrix decodes a matrix, reading a flat list by rule.
func (d *decoder) matrix(n *yaml.Node, path string, rule flatRule) (Matrix, bool) {
	m, sh, ok := d.matrixRaw(n, path)
	if !ok {
		return nil, false
	}
	if sh != shapeFlat {
		return m, true
	}
	v := m[0]
	switch rule {
	case flatRow:
		return Matrix{v}, true
	case flatColumn:
		out := make(Matrix, len(v))
		for i, x := range v {
			out[i] = []float64{x}
		}
		return out, true
	default:
		if len(v) == 1 {
			return Matrix{v}, true
		}
		d.add(n, path, "a flat list of %d numbers is ambiguous for a square matrix: write its rows, e.g. [[1, 0.1], [0, 1]]", len(v))
		return nil, false
	}
}
