// Package finitejson encodes values that may hold non-finite floats (NaN, +Inf, -Inf), which
// JSON cannot represent and encoding/json refuses ("json: unsupported value: +Inf"), writing
// each as null and saying where it was.
//
// A run whose metrics overflow float64 (an unstable loop's squared error) must still write its
// summary, its figures' data and its resume state: the numbers that exist are kept, the ones
// that do not are null, and Report names them (path, value) so that a reader learns why.
//
// Marshal walks the value with reflect, puts a sentinel (-math.MaxFloat64) in place of every
// non-finite float it can set (struct fields, slice and array elements, map values,
// interfaces; not the fields of an unexported embedded struct, which reflect cannot set, nor
// the inside of a value with its own MarshalJSON, which decides for itself), encodes with encoding/json (its tags, omitempty and MarshalJSON methods apply),
// restores the original values and writes null for every sentinel outside a string. A value
// that is exactly -math.MaxFloat64 is written as null too (no metric takes it).
package finitejson
