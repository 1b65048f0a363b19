package schema_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/dpsim/dpsim/pkg/endpoint"
	"github.com/dpsim/dpsim/pkg/wire"
)

const asyncAPIPath = "../../docs/asyncapi.yaml"

type asyncAPI struct {
	doc      map[string]any
	channels map[string]channel // by channel name
}

type channel struct {
	address string
	params  map[string][]string // parameter name -> enum (nil: any token)
}

func readAsyncAPI(t *testing.T) *asyncAPI {
	t.Helper()
	data, err := os.ReadFile(asyncAPIPath)
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := yaml.Unmarshal(data, &doc); err != nil {
		t.Fatalf("docs/asyncapi.yaml: %v", err)
	}
	a := &asyncAPI{doc: doc, channels: map[string]channel{}}
	chans, _ := doc["channels"].(map[string]any)
	for name, c := range chans {
		cm, _ := c.(map[string]any)
		ch := channel{params: map[string][]string{}}
		ch.address, _ = cm["address"].(string)
		params, _ := cm["parameters"].(map[string]any)
		for p, v := range params {
			def := v.(map[string]any)
			if ref, ok := def["$ref"].(string); ok {
				r, err := a.resolve(ref)
				if err != nil {
					t.Fatalf("channel %s parameter %s: %v", name, p, err)
				}
				def = r.(map[string]any)
			}
			var enum []string
			if e, ok := def["enum"].([]any); ok {
				for _, x := range e {
					enum = append(enum, x.(string))
				}
			}
			ch.params[p] = enum
		}
		a.channels[name] = ch
	}
	return a
}

// resolve follows a local reference "#/a/b" in the document.
func (a *asyncAPI) resolve(ref string) (any, error) {
	return pointer(a.doc, strings.TrimPrefix(ref, "#"))
}

// pointer resolves a JSON pointer ("/a/b", "" for the root) in v.
func pointer(v any, ptr string) (any, error) {
	if ptr == "" {
		return v, nil
	}
	for _, tok := range strings.Split(strings.TrimPrefix(ptr, "/"), "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		switch x := v.(type) {
		case map[string]any:
			next, ok := x[tok]
			if !ok {
				return nil, &missingError{ptr}
			}
			v = next
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(x) {
				return nil, &missingError{ptr}
			}
			v = x[i]
		default:
			return nil, &missingError{ptr}
		}
	}
	return v, nil
}

type missingError struct{ ptr string }

func (e *missingError) Error() string { return "nothing at " + e.ptr }

// matches reports whether subject (its run "{run}", its ids "{id}") is an instance of the
// channel address: a parameter matches its own name or one of its enum values.
func (c channel) matches(subject string) bool {
	at, st := strings.Split(c.address, "."), strings.Split(subject, ".")
	if len(at) != len(st) {
		return false
	}
	for i, a := range at {
		if a == st[i] {
			continue
		}
		name, ok := strings.CutPrefix(a, "{")
		if !ok {
			return false
		}
		found := false
		for _, v := range c.params[strings.TrimSuffix(name, "}")] {
			found = found || v == st[i]
		}
		if !found {
			return false
		}
	}
	return true
}

// covers reports whether the NATS filter (with * and >) matches the channel's subjects.
func (c channel) covers(filter string) bool {
	at, ft := strings.Split(c.address, "."), strings.Split(filter, ".")
	for i, f := range ft {
		if f == ">" {
			return len(at) > i
		}
		if i >= len(at) {
			return false
		}
		if f != "*" && f != at[i] && !c.matches(strings.Join(append(append([]string{}, at[:i]...), append([]string{f}, at[i+1:]...)...), ".")) {
			return false
		}
	}
	return len(at) == len(ft)
}

const sentinelID = 7654321

// busSubjects calls every method of wire.Subjects that builds a subject, for run "{run}" and id
// "{id}": with each process role for a Role argument, each data publisher for an Endpoint, each
// per-process ctl word for a string. Filters (with * or >) and concrete subjects come apart.
func busSubjects(t *testing.T) (concrete, filters map[string]string) {
	t.Helper()
	subj, err := wire.NewSubjects("{run}")
	if err != nil {
		t.Fatal(err)
	}
	var roles []endpoint.Role
	var publishers []endpoint.Endpoint
	for r := endpoint.Role(0); int(r) < endpoint.NumRoles; r++ {
		if r != endpoint.Launcher && r != endpoint.Block {
			roles = append(roles, r)
		}
		if r.Stream() != "" {
			publishers = append(publishers, endpoint.Endpoint{Role: r, ID: sentinelID})
		}
	}
	words := []string{wire.CtlReady, wire.CtlDone, wire.CtlRejoin, wire.CtlResult}
	argsOf := func(tp reflect.Type) []reflect.Value {
		var out []reflect.Value
		switch tp {
		case reflect.TypeOf(endpoint.Role(0)):
			for _, r := range roles {
				out = append(out, reflect.ValueOf(r))
			}
		case reflect.TypeOf(endpoint.Endpoint{}):
			for _, p := range publishers {
				out = append(out, reflect.ValueOf(p))
			}
		case reflect.TypeOf(0):
			out = append(out, reflect.ValueOf(sentinelID))
		case reflect.TypeOf(""):
			for _, w := range words {
				out = append(out, reflect.ValueOf(w))
			}
		default:
			t.Fatalf("wire.Subjects: a method takes a %v: teach this test its values", tp)
		}
		return out
	}
	concrete, filters = map[string]string{}, map[string]string{}
	v := reflect.ValueOf(subj)
	for i := 0; i < v.NumMethod(); i++ {
		m, name := v.Method(i), v.Type().Method(i).Name
		mt := m.Type()
		if mt.IsVariadic() || mt.NumOut() == 0 || mt.Out(0).Kind() != reflect.String || mt.NumIn() > 2 {
			continue // Ctl(tokens...) builds any ctl subject; the permissions are lists
		}
		calls := [][]reflect.Value{nil}
		for j := 0; j < mt.NumIn(); j++ {
			var next [][]reflect.Value
			for _, c := range calls {
				for _, a := range argsOf(mt.In(j)) {
					next = append(next, append(append([]reflect.Value{}, c...), a))
				}
			}
			calls = next
		}
		for _, args := range calls {
			s := m.Call(args)[0].String()
			if !strings.HasPrefix(s, wire.Prefix+".") && !strings.HasPrefix(s, wire.ChallengerPrefix) {
				continue // Run()
			}
			s = strings.ReplaceAll(s, strconv.Itoa(sentinelID), "{id}")
			if strings.ContainsAny(s, "*>") {
				filters[s] = name
			} else {
				concrete[s] = name
			}
		}
	}
	if len(concrete) < 10 || len(filters) < 5 {
		t.Fatalf("only %d subjects and %d filters from wire.Subjects: the reflection went wrong", len(concrete), len(filters))
	}
	return concrete, filters
}

// docs/asyncapi.yaml is an AsyncAPI 3 document whose channels are pkg/wire's subjects: every
// subject a Subjects method builds is a channel, every filter covers a channel, every channel
// is a subject of pkg/wire, and its parameters are those of its address.
func TestAsyncAPIChannelsAreTheSubjects(t *testing.T) {
	a := readAsyncAPI(t)
	if v, _ := a.doc["asyncapi"].(string); !strings.HasPrefix(v, "3.") {
		t.Fatalf("asyncapi: %q, want 3.x", v)
	}
	concrete, filters := busSubjects(t)
	for s, method := range concrete {
		found := false
		for _, c := range a.channels {
			found = found || c.matches(s)
		}
		if !found {
			t.Errorf("wire.Subjects.%s: %s is no channel of docs/asyncapi.yaml", method, s)
		}
	}
	for f, method := range filters {
		found := false
		for _, c := range a.channels {
			found = found || c.covers(f)
		}
		if !found {
			t.Errorf("wire.Subjects.%s: the filter %s covers no channel of docs/asyncapi.yaml", method, f)
		}
	}
	for name, c := range a.channels {
		found := false
		for s := range concrete {
			found = found || c.matches(s)
		}
		if !found {
			t.Errorf("channel %s (%s) is no subject of wire.Subjects", name, c.address)
		}
		n := 0
		for _, tok := range strings.Split(c.address, ".") {
			if p, ok := strings.CutPrefix(tok, "{"); ok {
				n++
				if _, ok := c.params[strings.TrimSuffix(p, "}")]; !ok {
					t.Errorf("channel %s: %s has no parameter", name, tok)
				}
			}
		}
		if n != len(c.params) {
			t.Errorf("channel %s: %d parameters for the %d of its address", name, len(c.params), n)
		}
	}
}

// Every operation sends or receives on a channel, messages of that channel, with NATS bindings.
func TestAsyncAPIOperations(t *testing.T) {
	a := readAsyncAPI(t)
	ops, _ := a.doc["operations"].(map[string]any)
	used := map[string]bool{}
	for name, o := range ops {
		op := o.(map[string]any)
		if act := op["action"]; act != "send" && act != "receive" {
			t.Errorf("operation %s: action %v", name, act)
		}
		ch, _ := op["channel"].(map[string]any)["$ref"].(string)
		if _, err := a.resolve(ch); err != nil || !strings.HasPrefix(ch, "#/channels/") {
			t.Errorf("operation %s: channel %q: %v", name, ch, err)
			continue
		}
		used[strings.TrimPrefix(ch, "#/channels/")+"/"+op["action"].(string)] = true
		msgs, _ := op["messages"].([]any)
		for _, m := range msgs {
			ref, _ := m.(map[string]any)["$ref"].(string)
			if !strings.HasPrefix(ref, ch+"/messages/") {
				t.Errorf("operation %s: message %q is not one of its channel's", name, ref)
			}
		}
		b, _ := op["bindings"].(map[string]any)
		if _, ok := b["nats"]; !ok {
			t.Errorf("operation %s: no NATS binding", name)
		}
	}
	for name, c := range a.doc["channels"].(map[string]any) {
		if msgs, _ := c.(map[string]any)["messages"].(map[string]any); len(msgs) == 0 {
			continue // reserved
		}
		for _, act := range []string{"send", "receive"} {
			if !used[name+"/"+act] {
				t.Errorf("channel %s: nobody %ss on it", name, act)
			}
		}
	}
}

// Every $ref of docs/asyncapi.yaml resolves: a local one in the document, a file one to a
// schema file of docs (and a fragment in it), and every $ref in those files too.
func TestAsyncAPIRefsResolve(t *testing.T) {
	a := readAsyncAPI(t)
	base := filepath.Dir(asyncAPIPath)
	files := map[string]any{}
	var walk func(v any, where string, doc any)
	check := func(ref, where string, doc any) {
		file, frag, _ := strings.Cut(ref, "#")
		target := doc
		if file != "" {
			path := filepath.Join(base, filepath.FromSlash(file))
			if where != "docs/asyncapi.yaml" {
				path = filepath.Join(filepath.Dir(filepath.Join(base, where)), filepath.FromSlash(file))
			}
			if _, seen := files[path]; !seen {
				data, err := os.ReadFile(path)
				if err != nil {
					t.Errorf("%s: $ref %s: %v", where, ref, err)
					return
				}
				var v any
				if err := json.Unmarshal(data, &v); err != nil {
					t.Errorf("%s: $ref %s: %v", where, ref, err)
					return
				}
				files[path] = v
				rel, _ := filepath.Rel(base, path)
				walk(v, filepath.ToSlash(rel), v)
			}
			target = files[path]
		}
		if _, err := pointer(target, frag); err != nil {
			t.Errorf("%s: $ref %s: %v", where, ref, err)
		}
	}
	n := 0
	walk = func(v any, where string, doc any) {
		switch x := v.(type) {
		case map[string]any:
			for k, e := range x {
				if ref, ok := e.(string); k == "$ref" && ok {
					n++
					check(ref, where, doc)
					continue
				}
				walk(e, where, doc)
			}
		case []any:
			for _, e := range x {
				walk(e, where, doc)
			}
		}
	}
	walk(a.doc, "docs/asyncapi.yaml", a.doc)
	if n < 50 {
		t.Fatalf("only %d $refs found: the walk went wrong", n)
	}
	// Every schema of docs/schema that describes a message is referenced.
	for _, f := range []string{"headers.json", "result.json", "data-yhat.json", "data-u.json", "data-y.json"} {
		if _, ok := files[filepath.Join(base, "schema", f)]; !ok {
			t.Errorf("docs/asyncapi.yaml does not reference schema/%s", f)
		}
	}
	ctl, _ := filepath.Glob(filepath.Join(base, "schema", "ctl-*.json"))
	for _, f := range ctl {
		if _, ok := files[f]; !ok {
			t.Errorf("docs/asyncapi.yaml does not reference schema/%s", filepath.Base(f))
		}
	}
}
