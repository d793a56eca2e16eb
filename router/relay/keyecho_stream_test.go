package relay

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/anvil-llm/anvil/router/decisionlog"
)

// keySplits is every way to cut the script's key (at at) into two or three writes: one cut at each
// position from its first byte to its end, and every pair of cuts inside it.
func keySplits(at, n int) [][]int {
	var out [][]int
	for i := 0; i <= n; i++ {
		out = append(out, []int{at + i})
		for j := i + 1; j < n; j++ {
			if i > 0 {
				out = append(out, []int{at + i, at + j})
			}
		}
	}
	return out
}

var withheldEvent = inband("upstream_http_error", "the upstream server's answer was withheld")

// TestStreamCarryingTheKeyIsCut: an SSE event whose data echoes the key ends the stream in its place,
// with the fixed error event and no [DONE]; the events before it pass. The key arrives cut into two or
// three flushed writes at every position, and no byte of it reaches the caller.
func TestStreamCarryingTheKeyIsCut(t *testing.T) {
	ev1 := "data: " + chunk(1) + "\n\n"
	script := ev1 + `data: {"choices":[{"index":0,"delta":{"content":"key: {KEY}!"}}]}` + "\n\n" + "data: " + chunk(2) + "\n\ndata: [DONE]\n\n"
	u := echoUpstream(t, "text/event-stream", script, nil)
	f := keyedFront(t, u, hostileKey, true, false)
	at := strings.Index(echo(script, hostileKey), hostileKey)
	for _, cuts := range keySplits(at, len(hostileKey)) {
		resp, body, res, rerr := f.fetch(t, cutPath(cuts...))
		require.NoError(t, rerr, "cuts %v", cuts)
		require.Equal(t, http.StatusOK, resp.StatusCode, "cuts %v", cuts)
		require.Equal(t, ev1+withheldEvent, body, "cuts %v", cuts)
		require.Equal(t, decisionlog.OutcomeUpstreamHTTPError, res.Outcome)
		require.Equal(t, http.StatusOK, res.Status)
		require.ErrorIs(t, res.Err, ErrUpstreamKeyEcho)
		require.False(t, res.Cut)
	}

	t.Run("in the first event: a clean 502", func(t *testing.T) {
		u := echoUpstream(t, "text/event-stream", `data: {"content":"{JKEY}"}`+"\n\ndata: [DONE]\n\n", nil)
		resp, body, res, rerr := keyedFront(t, u, `sk-<Q7vLm2Xa9>&"RtBk4Wz`, true, false).fetch(t, cutPath(12))
		require.NoError(t, rerr)
		assert.Equal(t, http.StatusBadGateway, resp.StatusCode)
		assert.JSONEq(t, withheldBody, body)
		assert.ErrorIs(t, res.Err, ErrUpstreamKeyEcho)
		assert.Equal(t, decisionlog.OutcomeUpstreamHTTPError, res.Outcome)
	})
	t.Run("in the Content-Type", func(t *testing.T) {
		u := echoUpstream(t, "text/event-stream; k={KEY}", ev1, nil)
		resp, body, res, _ := keyedFront(t, u, hostileKey, true, false).fetch(t, "/cut")
		assert.Equal(t, http.StatusBadGateway, resp.StatusCode)
		assert.JSONEq(t, withheldBody, body)
		assert.ErrorIs(t, res.Err, ErrUpstreamKeyEcho)
	})
}

// TestPassedThroughBodyCarryingTheKeyIsCut: a passed-through body is written read by read, except for
// the bytes that may begin the key: the caller gets everything before the key as soon as it arrives,
// never a byte of it, and then a broken response.
func TestPassedThroughBodyCarryingTheKeyIsCut(t *testing.T) {
	script := "RIFF" + strings.Repeat("\x00\x01\x7f\xfe", 64) + "{KEY}" + "tail of the audio"
	next := make(chan struct{}, 2)
	u := echoUpstream(t, "audio/wav", script, next)
	f := keyedFront(t, u, hostileKey, false, true)
	at := strings.Index(echo(script, hostileKey), hostileKey)
	for _, cuts := range keySplits(at, len(hostileKey)) {
		if cuts[0] == at || cuts[len(cuts)-1] == at+len(hostileKey) {
			continue // a cut at the key's edge: the key arrives whole
		}
		resp, err := postPath(t, f.URL+cutPath(cuts...))
		require.NoError(t, err)
		head := make([]byte, at)
		_, err = io.ReadFull(resp.Body, head)
		require.NoError(t, err, "everything before the key arrives before the rest of the key exists")
		for range cuts {
			next <- struct{}{}
		}
		rest, rerr := io.ReadAll(resp.Body)
		require.NoError(t, resp.Body.Close())
		require.Error(t, rerr, "cuts %v: the caller sees a broken body", cuts)
		require.Empty(t, rest, "cuts %v: no byte of the key", cuts)
		require.Equal(t, echo(script, hostileKey)[:at], string(head))
		res := recv(t, f.results, "relay result")
		require.True(t, res.Cut)
		require.ErrorIs(t, res.Err, ErrUpstreamKeyEcho)
		require.Equal(t, decisionlog.OutcomeUpstreamHTTPError, res.Outcome)
	}
}

// keyless draws text that looks like the key without being it: its prefixes, the key with one byte
// changed, the key's runs, ordinary words.
func keyless(key string) *rapid.Generator[string] {
	return rapid.Custom(func(t *rapid.T) string {
		var b strings.Builder
		for range rapid.IntRange(0, 6).Draw(t, "parts") {
			switch rapid.IntRange(0, 3).Draw(t, "kind") {
			case 0:
				b.WriteString(key[:rapid.IntRange(1, len(key)-1).Draw(t, "prefix")])
			case 1:
				k := []byte(key)
				k[rapid.IntRange(0, len(k)-1).Draw(t, "at")] ^= 0x20
				b.Write(k)
			case 2:
				i := rapid.IntRange(0, len(key)-1).Draw(t, "from")
				b.WriteString(key[i:rapid.IntRange(i+1, len(key)).Draw(t, "to")])
			default:
				b.WriteString(rapid.StringMatching(`[a-z .,]{0,12}`).Draw(t, "words"))
			}
		}
		return withoutKey(b.String(), key)
	})
}

// withoutKey shortens every occurrence of key in s until there is none: pieces that meet may spell it,
// and so may a shortened key and what follows it.
func withoutKey(s, key string) string {
	for strings.Contains(s, key) {
		s = strings.ReplaceAll(s, key, key[:len(key)-1])
	}
	return s
}

// cutsFor draws up to 4 write boundaries inside a script of n bytes.
func cutsFor(t *rapid.T, n int) []int {
	if n < 2 {
		return nil
	}
	cuts := rapid.SliceOfNDistinct(rapid.IntRange(1, n-1), 0, 4, rapid.ID[int]).Draw(t, "cuts")
	slices.Sort(cuts)
	return cuts
}

// TestKeylessAnswersPassByteIdentical: for a keyed upstream, streams and passed-through bodies without
// the key, however close to it they come and wherever the writes are cut, reach the caller unchanged
// and complete.
func TestKeylessAnswersPassByteIdentical(t *testing.T) {
	for _, mode := range []struct {
		name         string
		ct           string
		stream, pass bool
	}{{"sse", "text/event-stream", true, false}, {"pass-through", "audio/wav", false, true}} {
		t.Run(mode.name, func(t *testing.T) {
			var script atomic.Pointer[string]
			u := scriptUpstream(t, mode.ct, &script, nil)
			f := keyedFront(t, u, hostileKey, mode.stream, mode.pass)
			rapid.Check(t, func(rt *rapid.T) {
				var b strings.Builder
				for range rapid.IntRange(1, 5).Draw(rt, "events") {
					text := keyless(hostileKey).Draw(rt, "text")
					if mode.stream {
						content, err := json.Marshal(text)
						require.NoError(rt, err)
						fmt.Fprintf(&b, `data: {"choices":[{"delta":{"content":%s}}]}`+"\n\n", content)
					} else {
						b.WriteString(text)
					}
				}
				if mode.stream {
					b.WriteString("data: [DONE]\n\n")
				}
				s := withoutKey(b.String(), hostileKey) // and no {KEY}: keyless draws no braces
				script.Store(&s)
				_, body, res, rerr := f.fetch(t, cutPath(cutsFor(rt, len(s))...))
				require.NoError(rt, rerr)
				require.Equal(rt, s, body)
				require.Equal(rt, decisionlog.OutcomeSuccess, res.Outcome)
			})
		})
	}
}
