package policy

import (
	"testing"
	"time"

	"pgregory.net/rapid"
)

// Every reference policy chooses an eligible member whenever one exists and -1 otherwise, on any
// snapshot: whatever the leases, samples, ages and completions say, an ineligible member (not
// ready, quiesced, ejected, a trial member already holding its one lease, or at its ceiling: the
// simulator folds all of them into Eligible) is never chosen.
func TestPropertyChoiceIsEligible(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(2, 16).Draw(t, "members")
		ms := make([]Member, n)
		any := false
		for i := range ms {
			ceiling := rapid.Int64Range(1, 64).Draw(t, "ceiling")
			active := rapid.Int64Range(0, ceiling).Draw(t, "active")
			ms[i] = Member{
				Eligible: active < ceiling && rapid.Bool().Draw(t, "ready"),
				Active:   active, Ceiling: ceiling,
				Load: Load{Known: rapid.Bool().Draw(t, "known"), Age: time.Duration(rapid.Int64Range(0, int64(5*time.Second)).Draw(t, "age")),
					Running: rapid.Int64Range(0, 300).Draw(t, "running"), Waiting: rapid.Int64Range(0, 300).Draw(t, "waiting"),
					KV: rapid.Float64Range(0, 1).Draw(t, "kv")},
				Completion: time.Duration(rapid.Int64Range(0, int64(Never)).Draw(t, "completion")),
			}
			any = any || ms[i].Eligible
		}
		r := src(rapid.Uint64().Draw(t, "seed"))
		for _, name := range All() {
			f, ok := Lookup(name)
			if !ok {
				continue
			}
			got := f(ms, r)
			switch {
			case !any && got != -1:
				t.Fatalf("%s chose %d with no eligible member", name, got)
			case any && (got < 0 || got >= n || !ms[got].Eligible):
				t.Fatalf("%s chose %d, not an eligible member", name, got)
			case any && ms[got].Active >= ms[got].Ceiling:
				t.Fatalf("%s chose a full member", name)
			}
		}
	})
}
