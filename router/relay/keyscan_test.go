package relay

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func newKeyScan(key string) *keyScan {
	var s keyScan
	s.reset(key)
	return &s
}

func formsOf(s *keyScan) []string {
	var out []string
	for _, f := range s.forms {
		out = append(out, string(f.b))
	}
	return out
}

// TestKeyScanForms: the key, and the JSON escapes of it that differ, Go's (HTML-safe) and everyone
// else's.
func TestKeyScanForms(t *testing.T) {
	assert.Equal(t, []string{hostileKey}, formsOf(newKeyScan(hostileKey)))
	assert.Equal(t, []string{`k<"\&/`, `k\u003c\"\\\u0026/`, `k<\"\\&/`}, formsOf(newKeyScan(`k<"\&/`)))
	assert.Equal(t, []string{`k"`, `k\"`}, formsOf(newKeyScan(`k"`)))
	assert.Empty(t, formsOf(newKeyScan("")))

	s := newKeyScan("")
	assert.False(t, s.feed([]byte(hostileKey)), "no key: nothing is found")
	assert.Zero(t, s.pending())
}

// TestKeyScanReset: a scan reused for the next attempt starts clean; a new key rebuilds the forms.
func TestKeyScanReset(t *testing.T) {
	s := newKeyScan(hostileKey)
	require.False(t, s.feed([]byte("xx"+hostileKey[:5])))
	require.Equal(t, 5, s.pending())
	s.reset(hostileKey)
	assert.Zero(t, s.pending())
	assert.False(t, s.feed([]byte(hostileKey[5:])), "the prefix fed before the reset does not count")
	s.reset("other-key")
	assert.Equal(t, []string{"other-key"}, formsOf(s))
	assert.True(t, s.feed([]byte("an other-key")))

	s.reset("") // an attempt without a key: the scan is off, the tables stay for the next keyed one
	assert.False(t, s.feed([]byte("an other-key")))
	assert.False(t, s.contains("other-key"))
	assert.Zero(t, s.pending())
	s.reset("other-key")
	assert.True(t, s.feed([]byte("other-key")))
}

// TestKeyScanEverySplit: the key inside ordinary text, cut into two or three pieces at every pair of
// positions, is found in the piece where it ends and in no earlier one; while it is incomplete the
// scan holds back exactly the part that has arrived.
func TestKeyScanEverySplit(t *testing.T) {
	for _, key := range []string{hostileKey, "aab", "abab", "a", `q<"x`} {
		form := formsOf(newKeyScan(key))
		for _, f := range form {
			data := []byte(`{"content":"the key is ` + f + ` ok"}`)
			at := bytes.Index(data, []byte(f))
			end := at + len(f)
			for i := 0; i <= len(data); i++ {
				for j := i; j <= len(data); j++ {
					s := newKeyScan(key)
					pieces := [][]byte{data[:i], data[i:j], data[j:]}
					fed := 0
					for k, p := range pieces {
						fed += len(p)
						hit := s.feed(p)
						require.Equal(t, fed >= end, hit, "key %q form %q cuts %d,%d piece %d", key, f, i, j, k)
						if hit {
							break
						}
						require.Equal(t, naivePending(formsOf(s), data[:fed]), s.pending(), "cuts %d,%d piece %d", i, j, k)
					}
				}
			}
		}
	}
}

// naivePending is pending by its definition: the longest suffix of fed that is a proper prefix of a
// form.
func naivePending(forms []string, fed []byte) int {
	n := 0
	for _, f := range forms {
		for q := min(len(f)-1, len(fed)); q > n; q-- {
			if bytes.HasSuffix(fed, []byte(f[:q])) {
				n = q
				break
			}
		}
	}
	return n
}

// FuzzKeyScan checks the streaming scan against bytes.Contains over everything fed so far, for any
// key, any bytes and any way of cutting them into pieces, and pending against its definition.
func FuzzKeyScan(f *testing.F) {
	f.Add(hostileKey, []byte("data: {\"c\":\""+hostileKey+"\"}\n\n"), []byte{3, 20, 9})
	f.Add("abab", []byte("abaabababab"), []byte{1, 1, 1, 2})
	f.Add(`k<"`, []byte(`{"k":"k\u003c\""}`), []byte{7})
	f.Add("aaaa", []byte("aaabaaab aaa"), []byte{3, 4})
	f.Add("", []byte("anything"), []byte{2})
	f.Fuzz(func(t *testing.T, key string, data, cuts []byte) {
		// The oracle is quadratic: bound the input, not the scan.
		key, data, cuts = key[:min(len(key), 64)], data[:min(len(data), 4096)], cuts[:min(len(cuts), 64)]
		s := newKeyScan(key)
		forms := formsOf(s)
		fed := 0
		for k := 0; fed < len(data) || k == 0; k++ {
			n := len(data) - fed
			if k < len(cuts) {
				n = min(n, int(cuts[k]))
			}
			hit := s.feed(data[fed : fed+n])
			fed += n
			want := false
			for _, form := range forms {
				want = want || bytes.Contains(data[:fed], []byte(form))
			}
			require.Equal(t, want, hit, "key %q after %d of %q", key, fed, data)
			if hit {
				return
			}
			require.Equal(t, naivePending(forms, data[:fed]), s.pending())
		}
	})
}

// BenchmarkKeyScanOrdinary1KiB is the scan's share of BenchmarkOrdinary1KiBKeyed: one feed of the body,
// one look at the Content-Type.
func BenchmarkKeyScanOrdinary1KiB(b *testing.B) {
	body := ordinary1KiB()
	s := newKeyScan(benchKey)
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		s.reset(benchKey)
		if s.feed(body) || s.contains("application/json") {
			b.Fatal("found a key that is not there")
		}
	}
}

// BenchmarkKeyScanSSE64 is the scan's share of BenchmarkSSE64Keyed: its 65 events, one feed each.
func BenchmarkKeyScanSSE64(b *testing.B) {
	events := bytes.SplitAfter(sse64(), []byte("\n\n"))
	s := newKeyScan(benchKey)
	b.SetBytes(int64(len(sse64())))
	b.ReportAllocs()
	for b.Loop() {
		s.reset(benchKey)
		for _, ev := range events {
			if s.feed(ev) {
				b.Fatal("found a key that is not there")
			}
		}
	}
}

// BenchmarkKeyScanPassThrough64KiB is the scan's share of BenchmarkPassThrough64KiBKeyed: 64 KiB in
// reads of 4 KiB, each followed by the hold-back question.
func BenchmarkKeyScanPassThrough64KiB(b *testing.B) {
	body := audio64KiB()
	s := newKeyScan(benchKey)
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		s.reset(benchKey)
		for p := body; len(p) > 0; p = p[min(len(p), 4<<10):] {
			if s.feed(p[:min(len(p), 4<<10)]) {
				b.Fatal("found a key that is not there")
			}
			_ = s.pending()
		}
	}
}
