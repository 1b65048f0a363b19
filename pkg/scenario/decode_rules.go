package scenario

import (
	"strconv"
	"time"

	"gopkg.in/yaml.v3"
)

// Field tables. Each section of a scenario file is described by a table of field rules, one
// per key: whether the key is required (and the help its "missing: ..." message gives), how
// its value is checked (its kind and range) and where it is stored. walk applies a table to a
// decoded mapping, in the table's order - which is the order problems on one line are
// reported in, so a table lists its keys in the order the section has always been decoded.
// The keys a mapping allows, in the documented order, are listed separately where the two
// orders differ.

// field is one rule of a section's table; T is what the section decodes into.
type field[T any] struct {
	key string
	// need makes the field required: its absence is reported as "missing: <need>".
	need string
	// or names the other key of an exclusive pair ("give key or or, not both"): the row with
	// need set reports both being given (and the pair's absence); the other row only decodes.
	or string
	// was is the key's old name, still accepted in its place: alone it decodes as the key
	// (with a warning that names the new key); given with the key, it is a problem naming
	// both. The old name is allowed in the mapping but not listed among its keys.
	was string
	// set checks the value n (at path) and stores it into t; false when it is unusable (the
	// problem is recorded).
	set func(d *decoder, t *T, n *yaml.Node, path string) bool
	// check, when set, is a rule between this field and the ones before it: it runs after
	// set succeeded and only when every field before it was usable.
	check func(d *decoder, t *T, n *yaml.Node, path string) bool
	// absent, when set, handles the key's absence instead of need (a conditional requirement
	// or a default computed from other fields); false when the absence is a problem.
	absent func(d *decoder, t *T, f *fields) bool
}

// oldNamesOf lists the old names (was) of a table's keys.
func oldNamesOf[T any](table []field[T]) []string {
	var out []string
	for _, r := range table {
		if r.was != "" {
			out = append(out, r.was)
		}
	}
	return out
}

// keysOf lists a table's keys in its order.
func keysOf[T any](table []field[T]) []string {
	out := make([]string, len(table))
	for i, r := range table {
		out[i] = r.key
	}
	return out
}

// walk applies table to the fields of f, in order, decoding into t. It returns whether every
// required field was there and every field given was usable.
func walk[T any](d *decoder, f *fields, t *T, table []field[T]) bool {
	good := true
	for _, r := range table {
		n, key := f.get(r.key), r.key
		if old := f.get(r.was); r.was != "" && old != nil {
			if n != nil {
				d.add(old, f.sub(r.was), "both %s (line %d) and its old name %s are given: keep %s and remove %s", r.key, n.Line, r.was, r.key, r.was)
				good = false
				continue
			}
			d.warn("%s (line %d) is the old name of %s and is read as %s: rename it to %s", f.sub(r.was), old.Line, f.sub(r.key), r.key, r.key)
			n, key = old, r.was
		}
		if r.or != "" && n != nil && f.has(r.or) {
			if r.need != "" {
				d.add(f.get(r.or), f.path, "give %s or %s, not both", r.key, r.or)
				good = false
			}
			continue
		}
		switch {
		case n == nil && r.absent != nil:
			good = r.absent(d, t, f) && good
		case n == nil && r.need != "" && (r.or == "" || !f.has(r.or)):
			d.missing(f, r.key, r.need)
			good = false
		case n == nil || r.set == nil:
		case !r.set(d, t, n, f.sub(key)):
			good = false
		case r.check != nil && good:
			good = r.check(d, t, n, f.sub(key))
		}
	}
	return good
}

// section decodes n as a mapping with the keys of table (allowed, in that order, when given)
// into t. It returns the mapping's fields (nil when n is not a mapping) and walk's verdict.
func section[T any](d *decoder, n *yaml.Node, path string, t *T, table []field[T], allowed ...string) (*fields, bool) {
	if allowed == nil {
		allowed = keysOf(table)
	}
	f := d.mappingRenamed(n, path, oldNamesOf(table), allowed...)
	if f == nil {
		return nil, false
	}
	return f, walk(d, f, t, table)
}

// A value kind decodes one node, recording what is wrong with it.
type valueKind[V any] func(d *decoder, n *yaml.Node, path string) (V, bool)

// to stores a value of kind k at the place at(t) when it is usable.
func to[T, V any](k valueKind[V], at func(*T) *V) func(*decoder, *T, *yaml.Node, string) bool {
	return func(d *decoder, t *T, n *yaml.Node, path string) bool {
		v, ok := k(d, n, path)
		if ok {
			*at(t) = v
		}
		return ok
	}
}

// always stores the value of kind k at at(t) even when unusable (its zero value then), as
// fields whose later rules read the value regardless did.
func always[T, V any](k valueKind[V], at func(*T) *V) func(*decoder, *T, *yaml.Node, string) bool {
	return func(d *decoder, t *T, n *yaml.Node, path string) bool {
		v, ok := k(d, n, path)
		*at(t) = v
		return ok
	}
}

// The value kinds of the tables.
var (
	text     valueKind[string]    = (*decoder).str
	number   valueKind[float64]   = (*decoder).float
	vector   valueKind[[]float64] = (*decoder).vector
	unsigned valueKind[uint64]    = (*decoder).uint64v
	// probability is a number in [0, 1].
	probability valueKind[float64] = (*decoder).probability
	// nonNegative is a number >= 0.
	nonNegative valueKind[float64] = (*decoder).nonNegative
	// positive is a number > 0.
	positive valueKind[float64] = func(d *decoder, n *yaml.Node, path string) (float64, bool) {
		v, ok := d.float(n, path)
		if ok && v <= 0 {
			d.add(n, path, "%s must be > 0", n.Value)
			return 0, false
		}
		return v, ok
	}
)

// intRange is an integer in [lo, hi]; why follows the bound in messages.
func intRange(lo, hi int64, why string) valueKind[int] {
	return func(d *decoder, n *yaml.Node, path string) (int, bool) { return d.intIn(n, path, lo, hi, why) }
}

// parsed is a string that parse accepts; its error is the message.
func parsed[V any](parse func(string) (V, error)) valueKind[V] {
	return func(d *decoder, n *yaml.Node, path string) (V, bool) {
		var zero V
		s, ok := d.str(n, path)
		if !ok {
			return zero, false
		}
		v, err := parse(s)
		if err != nil {
			d.add(n, path, "%v", err)
			return zero, false
		}
		return v, true
	}
}

// oneOf is one of the names allowed: "unknown <what> "x" (allowed: a, b)" otherwise.
func oneOf[V ~string](what string, allowed ...V) valueKind[V] {
	return func(d *decoder, n *yaml.Node, path string) (V, bool) {
		s, ok := d.str(n, path)
		if !ok {
			return "", false
		}
		for _, a := range allowed {
			if string(a) == s {
				return a, true
			}
		}
		d.add(n, path, "unknown %s %s (allowed: %s)", what, strconv.Quote(s), joinNames(allowed))
		return "", false
	}
}

// durationRange is a duration written with its unit, in [lo, hi].
func durationRange(lo, hi time.Duration) valueKind[time.Duration] {
	return func(d *decoder, n *yaml.Node, path string) (time.Duration, bool) {
		return d.durationIn(n, path, lo, hi)
	}
}
