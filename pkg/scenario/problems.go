package scenario

import (
	"fmt"
	"sort"
	"strings"
)

// Problem is one thing wrong with a scenario file: where (a field path such as
// "privacy.epsilon" or "plant.A[1][0]", indices counted from 0, and the line in the file)
// and what (the value found and what is allowed).
type Problem struct {
	Path    string // field path; "" for the document as a whole
	Line    int    // 1-based line in the file; 0 when unknown
	Message string
}

// String formats the problem as "path: message (line N)".
func (p Problem) String() string {
	var b strings.Builder
	if p.Path != "" {
		b.WriteString(p.Path)
		b.WriteString(": ")
	}
	b.WriteString(p.Message)
	if p.Line > 0 {
		fmt.Fprintf(&b, " (line %d)", p.Line)
	}
	return b.String()
}

// ValidationError lists every problem found in one scenario file. Its message has one
// line per problem, each starting with "scenario SOURCE: " ("scenario: " without a
// source), in file order.
type ValidationError struct {
	Source   string
	Problems []Problem
}

func (e *ValidationError) Error() string {
	prefix := "scenario " + e.Source + ": "
	if e.Source == "" {
		prefix = "scenario: "
	}
	lines := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		lines[i] = prefix + p.String()
	}
	return strings.Join(lines, "\n")
}

// problems accumulates Problems while a file is decoded and validated.
type problems struct {
	list []Problem
	seen map[string]bool
}

func (ps *problems) add(path string, line int, format string, args ...any) {
	p := Problem{Path: path, Line: line, Message: fmt.Sprintf(format, args...)}
	key := p.String()
	if ps.seen == nil {
		ps.seen = map[string]bool{}
	}
	if ps.seen[key] {
		return
	}
	ps.seen[key] = true
	ps.list = append(ps.list, p)
}

// err returns nil when nothing was found, else a *ValidationError with the problems in
// file order (problems without a line last, in the order found).
func (ps *problems) err(source string) error {
	if len(ps.list) == 0 {
		return nil
	}
	out := append([]Problem(nil), ps.list...)
	sort.SliceStable(out, func(i, j int) bool {
		li, lj := out[i].Line, out[j].Line
		if li == 0 || lj == 0 {
			return li != 0 && lj == 0
		}
		return li < lj
	})
	return &ValidationError{Source: source, Problems: out}
}

// Line returns the line of the field at path (e.g. "controller.lqr", "graph") in the file
// the scenario was parsed from; 0 when unknown (a scenario built in code, a path the file
// does not give).
func (s *Scenario) Line(path string) int { return s.lines[path] }

// Problem returns err as a problem of the field at path, with its line (Line) and without
// the "dynamics: " prefix of pkg/dynamics: for the problems only the dynamics find, after
// Parse (plan.New builds the plant, the gains and the graph).
func (s *Scenario) Problem(path string, err error) Problem {
	return Problem{Path: path, Line: s.Line(path), Message: strings.TrimPrefix(err.Error(), "dynamics: ")}
}

// Refuse returns the problems found in s after Parse as Parse returns its own: a
// *ValidationError named by s.Source (else s.Name), the problems in file order; nil when
// list is empty.
func (s *Scenario) Refuse(list []Problem) error {
	ps := &problems{}
	for _, p := range list {
		ps.add(p.Path, p.Line, "%s", p.Message)
	}
	source := s.Source
	if source == "" {
		source = s.Name
	}
	return ps.err(source)
}

// dynamicsFields are the sections whose problems only the dynamics find (plan.New).
var dynamicsFields = []string{"plant", "controller", "graph", "privacy.model"}

// dynamicsLines keeps of lines (every field path of a file) those of dynamicsFields and their
// fields: what Line answers.
func dynamicsLines(lines map[string]int) map[string]int {
	out := map[string]int{}
	for path, line := range lines {
		for _, f := range dynamicsFields {
			if path == f || strings.HasPrefix(path, f+".") || strings.HasPrefix(path, f+"[") {
				out[path] = line
			}
		}
	}
	return out
}
