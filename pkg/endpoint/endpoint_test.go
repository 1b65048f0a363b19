package endpoint

import (
	"errors"
	"slices"
	"testing"
)

func TestStringParseRoundTrip(t *testing.T) {
	tests := []struct {
		e    Endpoint
		name string
	}{
		{Endpoint{Plant, 0}, "plant.0"},
		{Endpoint{Cloud, 0}, "cloud.0"},
		{Endpoint{Agent, 7}, "agent.7"},
		{Endpoint{Agent, 9999}, "agent.9999"},
		{Endpoint{Eavesdropper, 0}, "eavesdropper.0"},
		{Endpoint{Block, 250}, "host.250"},
		{Endpoint{Launcher, 0}, "launcher.0"},
	}
	for _, tc := range tests {
		if got := tc.e.String(); got != tc.name {
			t.Errorf("%#v.String() = %q, want %q", tc.e, got, tc.name)
		}
		got, err := Parse(tc.name)
		if err != nil {
			t.Errorf("Parse(%q): %v", tc.name, err)
			continue
		}
		if got != tc.e {
			t.Errorf("Parse(%q) = %#v, want %#v", tc.name, got, tc.e)
		}
	}
}

func TestParseInvalid(t *testing.T) {
	for _, s := range []string{
		"", "plant", "plant.", ".0", "plant0", "nobody.0", "Plant.0", "plant.-1", "plant.+1",
		"plant.01", "plant.00", "plant.0x1", "plant.1.2", "plant. 1", "agent.99999999999999999999999",
	} {
		e, err := Parse(s)
		if err == nil {
			t.Errorf("Parse(%q) = %#v, want an error", s, e)
			continue
		}
		if !errors.Is(err, ErrSyntax) {
			t.Errorf("Parse(%q): error %v does not wrap ErrSyntax", s, err)
		}
	}
}

// Roles has one row per role, at the role's index, with a distinct name.
func TestRoleTable(t *testing.T) {
	seen := map[string]bool{}
	for r := Role(0); int(r) < NumRoles; r++ {
		ri := Roles[r]
		if ri.Role != r || ri.Name == "" || seen[ri.Name] {
			t.Errorf("Roles[%d] = %+v: want the row of role %d with a distinct name", r, ri, r)
		}
		seen[ri.Name] = true
		if r.Info() != ri {
			t.Errorf("%s.Info() = %+v, want %+v", r, r.Info(), ri)
		}
	}
	if ri := Role(NumRoles).Info(); ri != (RoleInfo{}) {
		t.Errorf("Role(NumRoles).Info() = %+v, want the zero RoleInfo", ri)
	}
	if got, want := ProcessRoles(), []string{"plant", "cloud", "agent", "eavesdropper"}; !slices.Equal(got, want) {
		t.Errorf("ProcessRoles() = %v, want %v", got, want)
	}
}

func TestRoleNames(t *testing.T) {
	tests := []struct {
		r                      Role
		name                   string
		stream                 string
		process, many, private bool
	}{
		{Plant, "plant", StreamYhat, true, false, true},
		{Cloud, "cloud", StreamU, true, false, false},
		{Agent, "agent", StreamY, true, true, true},
		{Eavesdropper, "eavesdropper", "", true, false, false},
		{Block, "host", StreamY, false, true, false},
		{Launcher, "launcher", "", false, false, false},
	}
	if len(tests) != NumRoles {
		t.Fatalf("%d roles tested, NumRoles = %d", len(tests), NumRoles)
	}
	for _, tc := range tests {
		if got := tc.r.String(); got != tc.name {
			t.Errorf("Role(%d).String() = %q, want %q", tc.r, got, tc.name)
		}
		if got := tc.r.Stream(); got != tc.stream {
			t.Errorf("%s.Stream() = %q, want %q", tc.r, got, tc.stream)
		}
		if ri := tc.r.Info(); ri.Process != tc.process || tc.r.Many() != tc.many || tc.r.Private() != tc.private {
			t.Errorf("%s: process %v, many %v, private %v; want %v, %v, %v", tc.r, ri.Process, tc.r.Many(), tc.r.Private(), tc.process, tc.many, tc.private)
		}
		got, err := ParseRole(tc.name)
		if err != nil || got != tc.r {
			t.Errorf("ParseRole(%q) = %v, %v, want %v", tc.name, got, err, tc.r)
		}
		if !tc.r.Valid() {
			t.Errorf("%s.Valid() = false", tc.r)
		}
	}
	if r := Role(NumRoles); r.Valid() || r.String() != "Role(6)" || r.Stream() != "" {
		t.Errorf("Role(%d): Valid %v, String %q, Stream %q", NumRoles, r.Valid(), r.String(), r.Stream())
	}
	for _, s := range []string{"", "Plant", "agents", "launcher.0"} {
		if r, err := ParseRole(s); !errors.Is(err, ErrSyntax) {
			t.Errorf("ParseRole(%q) = %v, %v, want an ErrSyntax error", s, r, err)
		}
	}
}

func TestParseDoesNotAllocate(t *testing.T) {
	var sink Endpoint
	if n := testing.AllocsPerRun(100, func() { sink, _ = Parse("agent.12345") }); n != 0 {
		t.Errorf("Parse allocates %v times", n)
	}
	_ = sink
}
