package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/anvil-llm/anvil/fakevllm"
	"github.com/anvil-llm/anvil/router/decisionlog"
	"github.com/anvil-llm/anvil/router/server"
)

// pacedBody is a request body that arrives at perSecond bytes a second on the router's clock: every
// read moves the manual clock by the time its bytes take at that rate. The rule of
// limits.min_upload_bytes_per_second is then decided exactly, with no real waiting.
type pacedBody struct {
	io.ReadCloser
	clock     *manualClock
	perSecond int64
}

func (p pacedBody) Read(b []byte) (int, error) {
	n, err := p.ReadCloser.Read(b)
	p.clock.advance(time.Duration(int64(n) * int64(time.Second) / p.perSecond))
	return n, err
}

// pacedRouter starts a router whose every request body arrives at perSecond on its manual clock.
func pacedRouterOptions(perSecond int64) routerOptions {
	clock := &manualClock{t0: time.Unix(1_700_000_000, 0).UTC()}
	return routerOptions{server: server.Options{Now: clock.now},
		body: func(b io.ReadCloser) io.ReadCloser { return pacedBody{b, clock, perSecond} }}
}

// The default rule (16 KiB/s once 10 s have passed) on ordinary bodies: a 1 MiB body at 32 KiB/s is
// read and answered; the same body at 4 KiB/s falls behind after about 53 KiB and is cut with 408
// upload_too_slow, counted for its caller, recorded, and never reaches a member.
func TestSlowBodyIsCut(t *testing.T) {
	for _, tc := range []struct {
		name      string
		perSecond int64
		status    int
	}{
		{"32 KiB/s passes", 32 << 10, http.StatusOK},
		{"4 KiB/s is cut", 4 << 10, http.StatusRequestTimeout},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ms := startMembers(t, 2)
			r := startRouterWith(t, replicaYAML(ms, tierOpts{}), pacedRouterOptions(tc.perSecond))
			status, text, _ := r.do(t, "/v1/chat/completions", paddedChat(1<<20))
			rec := r.lastRecord(t)
			require.Equal(t, tc.status, status, text)
			assert.Equal(t, tc.status, rec.Status)
			cut := 0.0
			if tc.status == http.StatusRequestTimeout {
				cut = 1
				assert.JSONEq(t, errorJSONBody("request body arrived slower than the router's minimum upload rate",
					"invalid_request_error", "upload_too_slow"), text)
				assert.Equal(t, decisionlog.OutcomeRefused, rec.Outcome)
				assert.Zero(t, totalCalls(ms))
			}
			assert.Equal(t, cut, value(bodyMetrics(t, r), "anvil_router_body_refusals_total", "caller-1", "too_slow"))
		})
	}
}

// The defaults never refuse an honest 25 MiB audio upload on a slow link: at 48 KiB/s (384 kbit/s,
// the slowest uplink that sends it within the default upstream.timeout of 10 min) it streams through
// the router to the member and is answered.
func TestSlowLinkAudioUploadPasses(t *testing.T) {
	rig := startAudioRigWith(t, "", func(o *fakevllm.Options) {
		o.Profile.MaxModelLen, o.Profile.NumGPUBlocks, o.Profile.MaxNumBatchedTokens = 16384, 1100, 16384 // room for 25 MiB of audio
	}, pacedRouterOptions(48<<10))
	ct, form := audioForm(t, [][2]string{{"model", "whisper"}}, "long.wav", bytes.Repeat([]byte{1, 2}, 25<<19))
	resp, body, err := rig.r.postRaw(t, context.Background(), "/v1/audio/transcriptions", ct, bytes.NewReader(form), true)
	require.NoError(t, err)
	rec := rig.r.lastRecord(t)
	require.Equal(t, http.StatusOK, resp.StatusCode, string(body))
	assert.Equal(t, decisionlog.OutcomeSuccess, rec.Outcome)
}

// An upload at 8 KiB/s under the default rule falls behind after 160 KiB and is cut with 408 while
// it streams, before the upstream has a complete request.
func TestSlowAudioUploadIsCut(t *testing.T) {
	rig := startAudioRigWith(t, "", nil, pacedRouterOptions(8<<10))
	ct, form := audioForm(t, [][2]string{{"model", "whisper"}}, "long.wav", bytes.Repeat([]byte{1, 2}, 1<<19))
	conn, br := rawRequest(t, rig.r, "POST /v1/audio/transcriptions HTTP/1.1\r\nHost: anvil\r\nAuthorization: Bearer "+callerToken+
		"\r\nContent-Type: "+ct+"\r\nContent-Length: "+strconv.Itoa(len(form))+"\r\n\r\n")
	go func() { _, _ = conn.Write(form) }() // the router stops reading it: the rest is refused by the closed connection
	resp, err := http.ReadResponse(br, nil)
	require.NoError(t, err)
	defer resp.Body.Close()
	rec := rig.r.lastRecord(t)
	require.Equal(t, http.StatusRequestTimeout, resp.StatusCode)
	var e openAIError
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&e))
	assert.Equal(t, "upload_too_slow", e.Error.Code)
	assert.Equal(t, http.StatusRequestTimeout, rec.Status)
	assert.Equal(t, decisionlog.OutcomeBodyRefused, rec.Outcome)
	assert.Equal(t, 1.0, value(bodyMetrics(t, rig.r), "anvil_router_body_refusals_total", "caller-1", "too_slow"))
}

// A body that sends a few bytes and stalls is cut by its connection's read deadline once it falls
// behind the rule, long before the server's one-minute read timeout: here, with a 1 s grace, after
// about a second of real time.
func TestStalledBodyIsCutByTheDeadline(t *testing.T) {
	ms := startMembers(t, 2)
	r := startRouter(t, replicaYAML(ms, tierOpts{extra: "limits:\n  min_upload_grace: 1s\n"}))
	conn, br := rawRequest(t, r, postHead("Content-Length: 4096\r\n", "Expect: 100-continue"))
	resp, err := http.ReadResponse(br, nil)
	require.NoError(t, err)
	require.Equal(t, http.StatusContinue, resp.StatusCode)
	_, err = io.WriteString(conn, `{"model":"chat",`) // and nothing more
	require.NoError(t, err)
	start := time.Now()
	resp, err = http.ReadResponse(br, nil)
	require.NoError(t, err)
	defer resp.Body.Close()
	waited := time.Since(start)
	assert.Equal(t, http.StatusRequestTimeout, resp.StatusCode)
	var e openAIError
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&e))
	assert.Equal(t, "upload_too_slow", e.Error.Code)
	assert.Less(t, waited, 30*time.Second, "cut by the rule, not by the read timeout")
	r.wait(t, 1)
	assert.Zero(t, totalCalls(ms))
}

// The rule switched off (0 bytes a second) cuts nothing: a body at 1 KiB/s is read however long its
// clock says it took.
func TestUploadRuleOff(t *testing.T) {
	ms := startMembers(t, 2)
	r := startRouterWith(t, replicaYAML(ms, tierOpts{extra: "limits:\n  min_upload_bytes_per_second: 0\n"}), pacedRouterOptions(1<<10))
	status, text, _ := r.do(t, "/v1/chat/completions", paddedChat(64<<10))
	r.wait(t, 1)
	assert.Equal(t, http.StatusOK, status, text)
}
