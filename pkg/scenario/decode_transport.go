package scenario

import (
	"time"

	"gopkg.in/yaml.v3"
)

// transportTable is transport: {mode, period, timeout}.
var transportTable = []field[TransportSpec]{
	{key: "mode", set: to(oneOf("mode", Lockstep, Realtime), func(t *TransportSpec) *TransportMode { return &t.Mode })},
	{key: "period", set: to(period, func(t *TransportSpec) *time.Duration { return &t.Period }),
		absent: func(d *decoder, t *TransportSpec, f *fields) bool {
			if t.Mode == Realtime {
				d.missing(f, "period", "mode realtime needs period, the wall-clock time of one step (e.g. 100ms)")
				return false
			}
			return true
		}},
	{key: "timeout", set: to(durationRange(time.Millisecond, time.Hour), func(t *TransportSpec) *time.Duration { return &t.Timeout })},
}

// period is a step period: a duration > 0 written with its unit.
var period valueKind[time.Duration] = func(d *decoder, n *yaml.Node, path string) (time.Duration, bool) {
	if isNumber(n) {
		d.add(n, path, "want a duration with a unit such as 100ms or 1s, got number %s", n.Value)
		return 0, false
	}
	v, ok := d.str(n, path)
	if !ok {
		return 0, false
	}
	p, err := time.ParseDuration(v)
	switch {
	case err != nil:
		d.add(n, path, "%q is not a duration (write e.g. 100ms or 1s)", v)
	case p <= 0:
		d.add(n, path, "%s must be > 0", v)
	default:
		return p, true
	}
	return 0, false
}

// transport decodes transport: {mode, period, timeout} (default: lockstep).
func (d *decoder) transport(n *yaml.Node) TransportSpec {
	t := TransportSpec{Mode: Lockstep}
	section(d, n, "transport", &t, transportTable)
	return t
}
