package scenarios

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/anvil-llm/anvil/router/ident"
)

// withReloads is minimal with a third member and the given reloads: section.
func withReloads(reloads string) string {
	return strings.Replace(minimal, "    - {id: b, max_concurrency: 2}\n",
		"    - {id: b, max_concurrency: 2}\n    - {id: c, max_concurrency: 2}\n", 1) + "reloads:\n" + reloads
}

func TestReloadsParse(t *testing.T) {
	sc, err := Parse([]byte(withReloads(`  - at: 2s
    changes:
      - member_ceiling: {member: a, max_concurrency: 1}
      - add_member: {id: d, max_concurrency: 3}
  - at: 4s
    changes:
      - remove_member: {tier: pool, member: b}
`)))
	require.NoError(t, err)
	require.Len(t, sc.Reloads, 2)
	assert.Equal(t, DefaultTierID, sc.Reloads[0].Changes[0].MemberCeiling.Tier, "a change's tier defaults to the scenario's")
	add := sc.Reloads[0].Changes[1].AddMember
	assert.Equal(t, "8b-h100", add.Profile, "an added member gets the member defaults")
	assert.Equal(t, 1.0, add.StepScale)

	ids := func(ms []Member) []string {
		var out []string
		for _, m := range ms {
			out = append(out, fmt.Sprintf("%s:%d", m.ID, m.MaxConcurrency))
		}
		return out
	}
	gens := sc.Generations()
	require.Len(t, gens, 3)
	assert.Equal(t, []string{"a:2", "b:2", "c:2"}, ids(gens[0]))
	assert.Equal(t, []string{"a:1", "b:2", "c:2", "d:3"}, ids(gens[1]))
	assert.Equal(t, []string{"a:1", "c:2", "d:3"}, ids(gens[2]))
	assert.Equal(t, []string{"a:2", "b:2", "c:2", "d:3"}, ids(sc.AllMembers()), "first configured fields, added members last")
	assert.Equal(t, []string{"a:2", "b:2", "c:2"}, ids(sc.Tier.Members), "the tier keeps its initial members")

	cases := []struct {
		id   string
		at   time.Duration
		want bool
	}{
		{"d", time.Second, false}, {"d", 2 * time.Second, false}, {"d", 3 * time.Second, true},
		{"b", 4 * time.Second, true}, {"b", 5 * time.Second, false}, {"zz", 0, false},
	}
	for _, c := range cases {
		assert.Equal(t, c.want, sc.ConfiguredAt(c.id, c.at), "%s at %v: an event at a reload's instant comes before it", c.id, c.at)
	}
}

func TestReloadsEventsAndFaultsFollowMembership(t *testing.T) {
	base := `  - at: 2s
    changes: [{add_member: {id: d, max_concurrency: 3}}, {remove_member: {member: b}}]
`
	_, err := Parse([]byte(withReloads(base) + "events: [{at: 3s, action: quiesce, member: d}, {at: 2s, action: kill, member: b}]\n" +
		"telemetry: {faults: [{member: d, mode: outage, from: 1s}]}\n"))
	require.NoError(t, err, "an event may name an added member after its reload, and a removed one up to its reload")
	for _, ev := range []string{"{at: 1s, action: quiesce, member: d}", "{at: 3s, action: kill, member: b}"} {
		_, err := Parse([]byte(withReloads(base) + "events: [" + ev + "]\n"))
		var e *Error
		require.True(t, errors.As(err, &e), ev)
		assert.Equal(t, "events[0].member", e.Path)
		assert.Contains(t, e.Msg, "not configured at this event's time")
	}
}

func TestReloadsDefaultContextCoversAddedMembers(t *testing.T) {
	sc, err := Parse([]byte(withReloads("  - at: 2s\n    changes: [{add_member: {id: d, max_concurrency: 3, profile: tiny}}]\n")))
	require.NoError(t, err)
	assert.Equal(t, int64(1024), sc.Tier.Gates.MaxContextTokens, "the tiny profile's window, although it joins later")
	doc := strings.Replace(withReloads("  - at: 2s\n    changes: [{add_member: {id: d, max_concurrency: 3, profile: tiny}}]\n"),
		"  strategy: capacity\n", "  strategy: capacity\n  gates: {max_context_tokens: 4096}\n", 1)
	sc, err = Parse([]byte(doc))
	require.NoError(t, err)
	assert.Equal(t, int64(4096), sc.Tier.Gates.MaxContextTokens, "an explicit gate stays")
}

func TestReloadsErrors(t *testing.T) {
	one := func(change string) string { return withReloads("  - at: 2s\n    changes: [" + change + "]\n") }
	cases := []struct {
		name, doc, path, msg string
	}{
		{"unknown key", withReloads("  - {at: 2s, when: 3s, changes: [{remove_member: {member: a}}]}\n"), "reloads[0].when", "unknown key"},
		{"unknown change", one("{rename_member: {member: a}}"), "reloads[0].changes[0].rename_member", "unknown key"},
		{"unknown change field", one("{remove_member: {member: a, drain: true}}"), "reloads[0].changes[0].remove_member.drain", "unknown key"},
		{"no change", one("{}"), "reloads[0].changes[0]", "exactly one of member_ceiling, add_member, remove_member"},
		{"two changes in one", one("{remove_member: {member: a}, add_member: {id: d, max_concurrency: 1}}"), "reloads[0].changes[0]", "exactly one of"},
		{"no changes", withReloads("  - {at: 2s, changes: []}\n"), "reloads[0].changes", "1-32 changes"},
		{"at zero", withReloads("  - {at: 0s, changes: [{remove_member: {member: a}}]}\n"), "reloads[0].at", "within the run"},
		{"at end", withReloads("  - {at: 10s, changes: [{remove_member: {member: a}}]}\n"), "reloads[0].at", "within the run"},
		{"out of order", withReloads("  - {at: 3s, changes: [{member_ceiling: {member: a, max_concurrency: 1}}]}\n" +
			"  - {at: 3s, changes: [{member_ceiling: {member: a, max_concurrency: 2}}]}\n"), "reloads[1].at", "after the previous reload's at"},
		{"other tier", one("{member_ceiling: {tier: other, member: a, max_concurrency: 1}}"), "reloads[0].changes[0].member_ceiling.tier", "names no tier"},
		{"ceiling of unknown member", one("{member_ceiling: {member: zz, max_concurrency: 1}}"), "reloads[0].changes[0].member_ceiling.member", "configured at this reload"},
		{"ceiling zero", one("{member_ceiling: {member: a, max_concurrency: 0}}"), "reloads[0].changes[0].member_ceiling.max_concurrency", "1-100000"},
		{"ceiling too high", one("{member_ceiling: {member: a, max_concurrency: 100001}}"), "reloads[0].changes[0].member_ceiling.max_concurrency", "1-100000"},
		{"ceiling of a member removed before", withReloads("  - {at: 2s, changes: [{remove_member: {member: a}}]}\n" +
			"  - {at: 3s, changes: [{member_ceiling: {member: a, max_concurrency: 1}}]}\n"), "reloads[1].changes[0].member_ceiling.member", "configured at this reload"},
		{"ceiling of a member removed earlier in the reload", one("{remove_member: {member: a}}, {member_ceiling: {member: a, max_concurrency: 1}}"),
			"reloads[0].changes[1].member_ceiling.member", "configured at this reload"},
		{"add existing", one("{add_member: {id: a, max_concurrency: 1}}"), "reloads[0].changes[0].add_member.id", "duplicate member id"},
		{"add bad id", one("{add_member: {id: 'A B', max_concurrency: 1}}"), "reloads[0].changes[0].add_member.id", "is required"},
		{"add without ceiling", one("{add_member: {id: d}}"), "reloads[0].changes[0].add_member.max_concurrency", "1-100000"},
		{"add unknown profile", one("{add_member: {id: d, max_concurrency: 1, profile: gpt9}}"), "reloads[0].changes[0].add_member.profile", "unknown engine profile"},
		{"add bad step scale", one("{add_member: {id: d, max_concurrency: 1, step_scale: -1}}"), "reloads[0].changes[0].add_member.step_scale", "must be in"},
		{"re-add removed", withReloads("  - {at: 2s, changes: [{remove_member: {member: a}}]}\n" +
			"  - {at: 3s, changes: [{add_member: {id: a, max_concurrency: 1}}]}\n"), "reloads[1].changes[0].add_member.id", "new to the scenario"},
		{"remove unknown", one("{remove_member: {member: zz}}"), "reloads[0].changes[0].remove_member.member", "configured at this reload"},
		{"remove twice", one("{remove_member: {member: a}}, {remove_member: {member: a}}"), "reloads[0].changes[1].remove_member.member", "configured at this reload"},
		{"too few members", one("{remove_member: {member: a}}, {remove_member: {member: b}}"), "reloads[0].changes", "2-16 members"},
	}
	var adds []string
	for i := range ident.MaxMembers - 2 {
		adds = append(adds, fmt.Sprintf("{add_member: {id: n%d, max_concurrency: 1}}", i))
	}
	cases = append(cases, struct{ name, doc, path, msg string }{"too many members", one(strings.Join(adds, ", ")), "reloads[0].changes", "2-16 members"})
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse([]byte(c.doc))
			require.ErrorIs(t, err, ErrInvalid)
			var e *Error
			require.True(t, errors.As(err, &e))
			assert.Equal(t, c.path, e.Path)
			assert.Contains(t, e.Msg, c.msg)
		})
	}
}

func TestReloadsMembersOverTheWholeScenarioAreBounded(t *testing.T) {
	// Each reload swaps two members for two new ones: 3 + 2*31 = 65 members over 31 reloads.
	var b strings.Builder
	prev := [2]string{"b", "c"}
	for r := range 31 {
		next := [2]string{fmt.Sprintf("n%d", 2*r), fmt.Sprintf("n%d", 2*r+1)}
		fmt.Fprintf(&b, "  - at: %dms\n    changes: [{remove_member: {member: %s}}, {remove_member: {member: %s}}, "+
			"{add_member: {id: %s, max_concurrency: 1}}, {add_member: {id: %s, max_concurrency: 1}}]\n",
			100+r*10, prev[0], prev[1], next[0], next[1])
		prev = next
	}
	_, err := Parse([]byte(withReloads(b.String())))
	var e *Error
	require.True(t, errors.As(err, &e))
	assert.Equal(t, "reloads[30].changes[3].add_member", e.Path)
	assert.Contains(t, e.Msg, "at most 64 members over the whole scenario")
}

// FuzzParseReloads: any document either fails with ErrInvalid or yields a reload timeline that
// holds the schema's promises at every generation.
func FuzzParseReloads(f *testing.F) {
	f.Add([]byte(withReloads("  - at: 2s\n    changes: [{member_ceiling: {member: a, max_concurrency: 1}}, {add_member: {id: d, max_concurrency: 3}}]\n" +
		"  - at: 4s\n    changes: [{remove_member: {member: b}}]\n")))
	f.Add([]byte(withReloads("  - {at: 2s, changes: [{remove_member: {member: a}}, {remove_member: {member: b}}]}\n")))
	f.Add([]byte(withReloads("  - {at: 3s, changes: [{add_member: {id: a, max_concurrency: 100001}}]}\n")))
	if data, err := Source("live-reload"); err == nil {
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		sc, err := Parse(data)
		if err != nil {
			require.ErrorIs(t, err, ErrInvalid)
			return
		}
		gens := sc.Generations()
		require.Len(t, gens, len(sc.Reloads)+1)
		for i, g := range gens[1:] {
			require.GreaterOrEqual(t, len(g), ident.MinMembers)
			require.LessOrEqual(t, len(g), ident.MaxMembers)
			r := sc.Reloads[i]
			require.Greater(t, r.At, time.Duration(0))
			require.Less(t, r.At, sc.Duration)
			if i > 0 {
				require.Greater(t, r.At, sc.Reloads[i-1].At)
			}
			seen := map[string]bool{}
			for _, m := range g {
				require.False(t, seen[m.ID], "no duplicate member in a generation")
				seen[m.ID] = true
				_, ok := sc.EverMember(m.ID)
				require.True(t, ok)
			}
			for _, c := range r.Changes {
				if mc := c.MemberCeiling; mc != nil {
					require.Equal(t, sc.Tier.ID, mc.Tier)
					require.True(t, mc.MaxConcurrency >= 1 && mc.MaxConcurrency <= ident.MaxCeiling)
				}
				if a := c.AddMember; a != nil {
					require.True(t, a.MaxConcurrency >= 1 && a.MaxConcurrency <= ident.MaxCeiling)
					require.NotEmpty(t, a.Profile)
				}
			}
		}
		require.LessOrEqual(t, len(sc.AllMembers()), MaxAllMembers)
	})
}
