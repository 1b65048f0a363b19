package finitejson

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"strings"
)

// MaxListed bounds the paths a Report lists (Count counts them all).
const MaxListed = 20

// NonFinite is one non-finite value: where it was (a JSON path such as
// "points[0].metrics.final_sq_error[1].ci_hi") and what it was ("NaN", "+Inf", "-Inf").
type NonFinite struct {
	Path  string `json:"path"`
	Value string `json:"value"`
}

// Report says how many non-finite values were written as null, and lists the first MaxListed.
type Report struct {
	Count int         `json:"count"`
	First []NonFinite `json:"first"`
}

// String words a report on one line: "3 non-finite values written as null: a.b (+Inf), ...".
func (r *Report) String() string { return r.Brief(MaxListed) }

// Brief is String naming at most n paths.
func (r *Report) Brief(n int) string {
	if r == nil || r.Count == 0 {
		return ""
	}
	parts := make([]string, min(n, len(r.First)))
	for i, n := range r.First[:len(parts)] {
		parts[i] = n.Path + " (" + n.Value + ")"
	}
	more := ""
	if r.Count > len(parts) {
		more = fmt.Sprintf(", and %d more", r.Count-len(parts))
	}
	return fmt.Sprintf("%d non-finite values (overflowed float64) written as null: %s%s", r.Count, strings.Join(parts, ", "), more)
}

// sentinel stands in for a non-finite float while encoding/json encodes.
const sentinel = -math.MaxFloat64

// Marshal is json.Marshal that writes non-finite floats as null and reports them (nil: none).
func Marshal(v any) ([]byte, *Report, error) { return MarshalIndent(v, "", "") }

// MarshalIndent is json.MarshalIndent that writes non-finite floats as null and reports them
// (nil: none). v is left as it was.
func MarshalIndent(v any, prefix, indent string) ([]byte, *Report, error) {
	w := &walker{set: true}
	rv := addressable(reflect.ValueOf(v))
	w.walk(rv, "")
	defer w.undoAll()
	var data []byte
	var err error
	if indent == "" && prefix == "" {
		data, err = json.Marshal(rv.Interface())
	} else {
		data, err = json.MarshalIndent(rv.Interface(), prefix, indent)
	}
	if err != nil || w.rep.Count == 0 {
		return data, nil, err
	}
	return nullSentinels(data), &w.rep, nil
}

// Find reports the non-finite floats of v without encoding it (nil: none).
func Find(v any) *Report {
	w := &walker{}
	w.walk(reflect.ValueOf(v), "")
	if w.rep.Count == 0 {
		return nil
	}
	return &w.rep
}

// addressable returns v, or an addressable copy of it behind a pointer when its floats could
// not be set in place (v passed by value).
func addressable(v reflect.Value) reflect.Value {
	if !v.IsValid() || v.Kind() == reflect.Pointer || v.Kind() == reflect.Map || v.Kind() == reflect.Slice {
		return v
	}
	p := reflect.New(v.Type())
	p.Elem().Set(v)
	return p
}

// walker visits every float of a value; with set it replaces the non-finite ones by the
// sentinel and remembers how to put them back.
type walker struct {
	set  bool
	rep  Report
	undo []func()
}

func (w *walker) note(path string, f float64) {
	w.rep.Count++
	if len(w.rep.First) < MaxListed {
		val := "NaN"
		switch {
		case math.IsInf(f, 1):
			val = "+Inf"
		case math.IsInf(f, -1):
			val = "-Inf"
		}
		w.rep.First = append(w.rep.First, NonFinite{Path: strings.TrimPrefix(path, "."), Value: val})
	}
}

func (w *walker) undoAll() {
	for i := len(w.undo) - 1; i >= 0; i-- {
		w.undo[i]()
	}
	w.undo = nil
}

func (w *walker) walk(v reflect.Value, path string) {
	if marshals(v) {
		return // its MarshalJSON decides how it writes its floats
	}
	switch v.Kind() {
	case reflect.Float64, reflect.Float32:
		f := v.Float()
		if !math.IsNaN(f) && !math.IsInf(f, 0) {
			return
		}
		w.note(path, f)
		if w.set && v.CanSet() {
			v.SetFloat(sentinel)
			w.undo = append(w.undo, func() { v.SetFloat(f) })
		}
	case reflect.Pointer:
		if !v.IsNil() {
			w.walk(v.Elem(), path)
		}
	case reflect.Interface:
		w.walkInterface(v, path)
	case reflect.Struct:
		w.walkStruct(v, path)
	case reflect.Slice, reflect.Array:
		if v.Kind() == reflect.Slice && v.IsNil() || !mayHoldFloat(v.Type().Elem()) {
			return
		}
		for i := 0; i < v.Len(); i++ {
			w.walk(v.Index(i), fmt.Sprintf("%s[%d]", path, i))
		}
	case reflect.Map:
		w.walkMap(v, path)
	}
}

// walkInterface visits the value in an interface: one held by value is copied, fixed and put
// back (it cannot be set in place).
func (w *walker) walkInterface(v reflect.Value, path string) {
	if v.IsNil() {
		return
	}
	e := v.Elem()
	if e.Kind() == reflect.Pointer || !w.set || !v.CanSet() {
		w.walk(e, path)
		return
	}
	c := reflect.New(e.Type()).Elem()
	c.Set(e)
	n := w.rep.Count
	w.walk(c, path)
	if w.rep.Count > n {
		v.Set(c)
		w.undo = append(w.undo, func() { v.Set(e) })
	}
}

func (w *walker) walkStruct(v reflect.Value, path string) {
	t := v.Type()
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if !f.IsExported() || !mayHoldFloat(f.Type) {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch {
		case name == "-":
			continue
		case f.Anonymous && name == "":
			w.walk(v.Field(i), path) // an embedded struct's fields are the outer object's
			continue
		case name == "":
			name = f.Name
		}
		w.walk(v.Field(i), path+"."+name)
	}
}

// walkMap visits a map's values: each is copied, fixed and stored back (map values cannot be
// set in place).
func (w *walker) walkMap(v reflect.Value, path string) {
	if v.IsNil() || !mayHoldFloat(v.Type().Elem()) {
		return
	}
	iter := v.MapRange()
	type fix struct{ k, old, c reflect.Value }
	var fixes []fix
	for iter.Next() {
		k, e := iter.Key(), iter.Value()
		c := reflect.New(e.Type()).Elem()
		c.Set(e)
		n := w.rep.Count
		w.walk(c, fmt.Sprintf("%s[%v]", path, k.Interface()))
		if w.set && w.rep.Count > n {
			fixes = append(fixes, fix{k, e, c})
		}
	}
	for _, f := range fixes {
		v.SetMapIndex(f.k, f.c)
		w.undo = append(w.undo, func() { v.SetMapIndex(f.k, f.old) })
	}
}

// mayHoldFloat reports whether a value of type t can contain a float (a cheap skip of strings,
// integers and their slices).
func mayHoldFloat(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.Float32, reflect.Float64, reflect.Interface, reflect.Struct, reflect.Map:
		return true
	case reflect.Pointer, reflect.Slice, reflect.Array:
		return mayHoldFloat(t.Elem())
	}
	return false
}

// nullSentinels replaces every sentinel number outside a JSON string by null.
func nullSentinels(data []byte) []byte {
	tok, _ := json.Marshal(float64(sentinel))
	var out bytes.Buffer
	out.Grow(len(data))
	inString, escaped := false, false
	for i := 0; i < len(data); i++ {
		c := data[i]
		switch {
		case inString:
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
		case c == '"':
			inString = true
		case c == '-' && bytes.HasPrefix(data[i:], tok) && boundary(data, i+len(tok)):
			out.WriteString("null")
			i += len(tok) - 1
			continue
		}
		out.WriteByte(c)
	}
	return out.Bytes()
}

// boundary reports whether a number ending at i ends there (not a longer number).
func boundary(data []byte, i int) bool {
	if i >= len(data) {
		return true
	}
	switch data[i] {
	case ',', ']', '}', ' ', '\n', '\r', '\t':
		return true
	}
	return false
}

var marshalerType = reflect.TypeFor[json.Marshaler]()

// marshals reports whether encoding/json encodes v with its own MarshalJSON (a sentinel put
// into it might be written in another form, and it may write non-finite values itself).
func marshals(v reflect.Value) bool {
	if !v.IsValid() || v.Kind() == reflect.Interface {
		return false
	}
	t := v.Type()
	return t.Implements(marshalerType) || v.CanAddr() && reflect.PointerTo(t).Implements(marshalerType)
}
