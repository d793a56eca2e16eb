package server

import (
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/anvil-llm/anvil/router/ident"
)

// referenceCheck is the filter's rule written the slow, obvious way.
func referenceCheck(secrets []string, values []string) callerIDResult {
	if len(values) != 1 || !ident.ValidRequestID(values[0]) {
		return callerIDMalformed
	}
	for _, s := range secrets {
		if s != "" && strings.Contains(values[0], s) {
			return callerIDSecret
		}
	}
	return callerIDKept
}

// collides reports whether some window of id has the hash of a secret of its length without being
// that secret: a true hash collision, which the filter may only ever resolve by dropping the ID.
func collides(f *secretFilter, id string, secrets []string) bool {
	for _, s := range secrets {
		for i := 0; i+len(s) <= len(id); i++ {
			if w := id[i : i+len(s)]; w != s && f.hash(w) == f.hash(s) {
				return true
			}
		}
	}
	return false
}

// TestPropertySecretFilterIsContainment: for any base and any credentials, a candidate is refused as
// a secret exactly when it contains one, kept otherwise, and malformed whenever the grammar refuses it.
// The one allowed difference is a genuine hash collision, and only toward dropping: rapid draws edge
// bases such as hashPrime-1 (that is, -1), under which short windows collide often; a base drawn
// uniformly (randomBase) collides with probability below 128/2^61 per comparison.
// The alphabet is small so candidates often contain, or nearly contain, a credential.
func TestPropertySecretFilterIsContainment(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		secrets := rapid.SliceOfN(rapid.OneOf(
			rapid.StringMatching(`[ab0._-]{1,6}`),
			rapid.StringMatching(`[ab0]{1,3}[+/=~][ab0]{0,3}`), // outside the ID alphabet: never contained
			rapid.StringMatching(`[ab]{129,140}`),              // longer than any ID
		), 0, 8).Draw(t, "secrets")
		base := rapid.Uint64Range(256, hashPrime-1).Draw(t, "base")
		f := newSecretFilter(secrets, base)
		var id strings.Builder
		id.WriteString(rapid.StringMatching(`[ab0]`).Draw(t, "first"))
		for range rapid.IntRange(0, 6).Draw(t, "pieces") {
			if len(secrets) > 0 && rapid.Bool().Draw(t, "plant") {
				id.WriteString(rapid.SampledFrom(secrets).Draw(t, "planted"))
			} else {
				id.WriteString(rapid.StringMatching(`[ab0._-]{0,8}`).Draw(t, "filler"))
			}
		}
		values := []string{id.String()}
		if rapid.IntRange(0, 9).Draw(t, "two headers") == 0 {
			values = append(values, "b")
		}
		want, got := referenceCheck(secrets, values), f.check(values)
		if want == callerIDKept && got == callerIDSecret && collides(&f, values[0], secrets) {
			return // dropped by a collision: never the other way round
		}
		assert.Equal(t, want, got, "id %q secrets %q", values, secrets)
	})
}

// FuzzSecretFilter: whatever the candidate and the credential, the filter agrees with plain
// containment under the request-ID grammar, and never panics.
func FuzzSecretFilter(f *testing.F) {
	for _, seed := range [][2]string{
		{"caller-token-0123456789", "caller-token-0123456789"},
		{"x-caller-token-0123456789-y", "caller-token-0123456789"},
		{"caller-token-012345678", "caller-token-0123456789"},
		{"UPSTREAM-KEY", "sk+key/with=signs"},
		{strings.Repeat("a", 128), strings.Repeat("a", 128)},
		{strings.Repeat("a", 129), "a"},
		{"10.0.0.1", "10"},
		{"", "x"},
		{"trace-1", ""},
	} {
		f.Add(seed[0], seed[1], uint64(1<<40+7))
	}
	f.Fuzz(func(t *testing.T, id, secret string, base uint64) {
		base = 256 + base%(hashPrime-256)
		secrets := []string{secret, "admin-token-0123456789"}
		filter := newSecretFilter(secrets, base)
		got := filter.check([]string{id})
		if want := referenceCheck(secrets, []string{id}); got != want {
			t.Fatalf("id %q secret %q base %d: got %v, want %v", id, secret, base, got, want)
		}
	})
}

// TestSecretFilterChecksWithoutAllocating: the per-request check allocates nothing, however many
// credentials the generation holds.
func TestSecretFilterChecksWithoutAllocating(t *testing.T) {
	f := newSecretFilter(manySecrets(64), randomBase())
	id := []string{strings.Repeat("trace-", 22)[:ident.MaxRequestIDLength]}
	require.Equal(t, callerIDKept, f.check(id))
	assert.Zero(t, testing.AllocsPerRun(100, func() { _ = f.check(id) }))
}

// manySecrets is n distinct caller-token-shaped credentials of a few lengths.
func manySecrets(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = "caller-token-" + strings.Repeat("k", i%4) + strconv.Itoa(1_000_000_000+i)
	}
	return out
}

// BenchmarkCallerIDCheck is the per-request cost of the filter: an OpenAI-style 36-character ID and
// a longest one, against a handful of credentials and against many.
func BenchmarkCallerIDCheck(b *testing.B) {
	for _, n := range []int{4, 64, 1024} {
		f := newSecretFilter(manySecrets(n), randomBase())
		for _, id := range []string{"req_0123456789abcdef0123456789abcdef"[:36], strings.Repeat("x", ident.MaxRequestIDLength)} {
			b.Run("secrets="+strconv.Itoa(n)+"/id="+strconv.Itoa(len(id)), func(b *testing.B) {
				b.ReportAllocs()
				values := []string{id}
				for b.Loop() {
					_ = f.check(values)
				}
			})
		}
	}
}
