package account

import "testing"

func TestEntryStateMatches(t *testing.T) {
	const state = "c3RhdGUtb2YtYS1icm93c2VyLTAxMjM0NTY3ODlhYmNkZWY"
	binding := EntryStateBinding(state)
	for _, tt := range []struct {
		name, id, state string
		want            bool
	}{
		{"its own state", "rnd." + binding, state, true},
		{"another state", "rnd." + binding, state + "x", false},
		{"no state", "rnd." + binding, "", false},
		{"no binding in the id", "rnd", state, false},
		{"binding not last", binding + ".rnd", state, false},
		{"the binding itself as the state", "rnd." + binding, binding, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := EntryStateMatches(tt.id, tt.state); got != tt.want {
				t.Errorf("EntryStateMatches(%q, %q) = %v, want %v", tt.id, tt.state, got, tt.want)
			}
		})
	}
}
