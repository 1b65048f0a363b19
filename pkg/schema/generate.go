package schema

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/invopop/jsonschema"
)

// Generate returns the contract's schemas by file name (the files of docs/schema), each as
// indented JSON ending in a newline. root is the repository root: the descriptions are the doc
// comments of the Go types, read from its sources.
func Generate(root string) (map[string][]byte, error) {
	comments, err := goComments(root)
	if err != nil {
		return nil, fmt.Errorf("schema: reading the Go comments: %w", err)
	}
	g := &gen{comments: comments}
	docs := map[string]*jsonschema.Schema{
		"message.json": g.message(),
		"headers.json": headers(),
		"result.json":  g.result(),
	}
	for _, k := range dataKinds() {
		docs["data-"+k.kind+".json"] = g.kind(k)
	}
	for _, k := range g.ctlKinds() {
		docs["ctl-"+k.kind+".json"] = g.kind(k)
	}
	for name, s := range g.traces() {
		docs[name] = s
	}
	docs["plan.json"] = g.plan()
	out := make(map[string][]byte, len(docs))
	for name, s := range docs {
		b, err := encode(s)
		if err != nil {
			return nil, fmt.Errorf("schema: %s: %w", name, err)
		}
		out[name] = b
	}
	return out, nil
}

// Names returns the file names of m in order.
func Names(m map[string][]byte) []string {
	names := make([]string, 0, len(m))
	for n := range m {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// encode writes s as indented JSON with <, > and & as themselves: the descriptions speak of
// "<role>.<id>", which encoding/json would escape.
func encode(s *jsonschema.Schema) ([]byte, error) {
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return nil, err
	}
	r := strings.NewReplacer(`\u003c`, "<", `\u003e`, ">", `\u0026`, "&")
	b = []byte(r.Replace(string(b)))
	if !json.Valid(b) {
		return nil, fmt.Errorf("unescaping made invalid JSON")
	}
	var buf bytes.Buffer
	buf.Write(b)
	buf.WriteByte('\n')
	return buf.Bytes(), nil
}

type gen struct {
	comments map[string]string
}

// comment is the doc comment of type t's field (or of t itself with field "").
func (g *gen) comment(v any, field string) string {
	t := reflect.TypeOf(v)
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	key := t.PkgPath() + "." + t.Name()
	if field != "" {
		key += "." + field
	}
	return g.comments[key]
}

// reflector reflects Go types with their comments. open allows properties the type does not
// have: the documents whose readers ignore unknown keys (bus messages, results); the trace
// lines and plan files are read strictly (unknown keys are errors) and so are closed.
func (g *gen) reflector(open bool) *jsonschema.Reflector {
	return &jsonschema.Reflector{
		Anonymous:                 true,
		ExpandedStruct:            true,
		AllowAdditionalProperties: open,
		CommentMap:                g.comments,
		Mapper:                    mapType,
	}
}

var durationType = reflect.TypeOf(time.Duration(0))

// mapType gives the Go types whose JSON says more than their kind: durations are integer
// nanoseconds, unsigned integers are >= 0.
func mapType(t reflect.Type) *jsonschema.Schema {
	if t == durationType {
		return &jsonschema.Schema{Type: "integer", Description: "a duration in nanoseconds"}
	}
	switch t.Kind() {
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return &jsonschema.Schema{Type: "integer", Minimum: "0"}
	}
	return nil
}

// prop returns property name of s (it must exist: the generator and the types disagree
// otherwise, and Generate's caller sees the panic in its test).
func prop(s *jsonschema.Schema, name string) *jsonschema.Schema {
	p, ok := s.Properties.Get(name)
	if !ok {
		panic("schema: no property " + name)
	}
	return p
}

// require adds names to s's required properties (once each).
func require(s *jsonschema.Schema, names ...string) {
	for _, n := range names {
		prop(s, n)
		found := false
		for _, r := range s.Required {
			found = found || r == n
		}
		if !found {
			s.Required = append(s.Required, n)
		}
	}
}

// keep restricts s to the properties names, in their order in s.
func keep(s *jsonschema.Schema, names ...string) {
	props := jsonschema.NewProperties()
	for k, v := range s.Properties.FromOldest() {
		for _, n := range names {
			if k == n {
				props.Set(k, v)
			}
		}
	}
	if props.Len() != len(names) {
		panic(fmt.Sprintf("schema: keep %v: only %d found", names, props.Len()))
	}
	s.Properties = props
	var req []string
	for _, r := range s.Required {
		if _, ok := props.Get(r); ok {
			req = append(req, r)
		}
	}
	s.Required = req
}

func u64(n uint64) *uint64 { return &n }

func num(x float64) json.Number { return json.Number(strconv.FormatFloat(x, 'f', -1, 64)) }

func integer(min, max float64, desc string) *jsonschema.Schema {
	s := &jsonschema.Schema{Type: "integer", Minimum: num(min), Description: desc}
	if max > 0 {
		s.Maximum = num(max)
	}
	return s
}
