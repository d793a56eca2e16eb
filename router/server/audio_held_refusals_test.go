package server_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/anvil-llm/anvil/router/decisionlog"
	"github.com/anvil-llm/anvil/router/server"
)

// postAs posts a form as the caller with token, without a length (counted while it is read).
func postAs(t *testing.T, r *router, token, ct string, body []byte) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, r.http.URL+"/v1/audio/transcriptions", io.MultiReader(bytes.NewReader(body)))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", ct)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	got, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp, got
}

// heldRefusal is one refusal of a held file, through real HTTP.
type heldRefusal struct {
	name   string
	limits string // the limits section's keys
	token  string // the caller; "" is callerToken (one caller)
	env    func(string) (string, bool)
	file   int  // bytes of the file
	noDir  bool // the spool directory is a regular file: unusable, spilling off
	rmDir  bool // the spool directory is removed after the start: the disk fails
	status int
	code   string
	reason string // the anvil_router_body_refusals_total reason counted for caller-1; "" none
}

// TestHeldRefusals: every refusal of a held file, answered before any member is contacted, counted,
// with no spool file and no budget left behind. A small file that cannot be held only because the
// memory budget is busy (spilling off or impossible) is the budget's retryable 503, not 413.
func TestHeldRefusals(t *testing.T) {
	cases := []heldRefusal{
		{name: "spill budget full", limits: "max_audio_bytes: 4194304, max_spill_bytes: 1048576", file: 3 << 20,
			status: 503, code: "spill_budget_exhausted", reason: "spill"},
		{name: "spill off, memory budget busy", limits: "max_body_bytes: 65536, max_inflight_body_bytes: 65536, max_spill_bytes: 0",
			file: 6400, status: 503, code: "body_budget_exhausted", reason: "budget"},
		{name: "spill off, caller's memory share held", limits: "max_body_bytes: 65536, max_inflight_body_bytes: 4194304, " +
			"caller_body_share_percent: 10, max_spill_bytes: 0", token: callerA, env: twoCallers,
			file: 6400, status: 503, code: "caller_body_share_exhausted", reason: "caller_share"},
		{name: "spill off, over the memory bound", limits: "max_spill_bytes: 0", file: 3 << 19,
			status: 413, code: "held_file_too_large"},
		{name: "spool unusable, memory budget busy", limits: "max_body_bytes: 65536, max_inflight_body_bytes: 65536",
			noDir: true, file: 6400, status: 503, code: "body_budget_exhausted", reason: "budget"},
		{name: "spool unusable, over the memory bound", noDir: true, file: 3 << 19, status: 413, code: "held_file_too_large"},
		{name: "the disk fails", rmDir: true, file: 3 << 19, status: 500, code: "internal_error"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { checkHeldRefusal(t, c) })
	}
}

func checkHeldRefusal(t *testing.T, c heldRefusal) {
	dir := filepath.Join(t.TempDir(), "spool")
	if c.noDir {
		require.NoError(t, os.WriteFile(dir, nil, 0o600))
	}
	rig := startAudioRigWith(t, "limits: {"+c.limits+"}\n", nil, routerOptions{env: c.env, server: server.Options{SpoolDir: dir}})
	if c.rmDir {
		require.NoError(t, os.RemoveAll(dir))
	}
	token := c.token
	if token == "" {
		token = callerToken
	}
	ct, body := fileFirstForm(t, "clip.wav", bytes.Repeat([]byte{7}, c.file), [2]string{"model", "whisper"})
	resp, got := postAs(t, rig.r, token, ct, body)
	require.Equal(t, c.status, resp.StatusCode, string(got))
	var e openAIError
	require.NoError(t, json.Unmarshal(got, &e), string(got))
	assert.Equal(t, c.code, e.Error.Code)
	assert.NotContains(t, string(got), dir, "no path in the answer")
	if c.status == http.StatusServiceUnavailable {
		assert.Equal(t, "1", resp.Header.Get("Retry-After"))
	}
	rec := rig.r.lastRecord(t)
	assert.Equal(t, decisionlog.OutcomeRefused, rec.Outcome)
	assert.Zero(t, rig.upstreamCalls(), "no member was contacted")
	if !c.noDir {
		assert.Empty(t, spoolEntries(t, dir))
	}
	assertHeldGiven(t, rig.r.srv)
	mfs := bodyMetrics(t, rig.r)
	for _, reason := range []string{"budget", "caller_share", "spill", "spill_share"} {
		want := 0.0
		if reason == c.reason {
			want = 1
		}
		assert.Equal(t, want, value(mfs, "anvil_router_body_refusals_total", "caller-1", reason), reason)
	}
	assert.Zero(t, value(mfs, "anvil_router_spool_bytes"))
}

// TestHeldSpillShare: a caller whose held files hold its share of the spill budget is refused 503
// caller_spill_share_exhausted while the budget itself has room, counted as spill_share.
func TestHeldSpillShare(t *testing.T) {
	g := newGate(heldPastMemory)
	// The memory budget is too small for any held file: each goes to disk from its first byte.
	rig := startAudioRigWith(t, "limits: {max_body_bytes: 65536, max_inflight_body_bytes: 65536, max_audio_bytes: "+
		strconv.Itoa(heldLimit)+", max_spill_bytes: 8388608, caller_body_share_percent: 10}\n", nil,
		routerOptions{env: twoCallers, body: func(b io.ReadCloser) io.ReadCloser { return gatedBody{b, g} }})
	answered, leave := startHeldUploadAs(t, rig.r.http.URL, callerA) // holds 2 MiB of the caller's 3 MiB share
	heldNow(t, g, answered)
	ct, body := fileFirstForm(t, "clip.wav", make([]byte, 2<<20), [2]string{"model", "whisper"})
	resp, got := postAs(t, rig.r, callerA, ct, body)
	require.Equal(t, http.StatusServiceUnavailable, resp.StatusCode, string(got))
	var e openAIError
	require.NoError(t, json.Unmarshal(got, &e))
	assert.Equal(t, "caller_spill_share_exhausted", e.Error.Code)
	assert.Equal(t, 1.0, value(bodyMetrics(t, rig.r), "anvil_router_body_refusals_total", "caller-1", "spill_share"))
	leave()
	<-answered
	rig.r.wait(t, 2)
	assertHeldGiven(t, rig.r.srv)
}

// TestHeldSpillShareFloor: with the caller share on, one caller can always hold one upload at
// max_audio_bytes on disk from its first byte (the memory budget full), though the bound is not a
// whole number of the 1 MiB steps disk is reserved in.
func TestHeldSpillShareFloor(t *testing.T) {
	rig := startAudioRigWith(t, "limits: {max_body_bytes: 65536, max_inflight_body_bytes: 65536, max_audio_bytes: "+
		strconv.Itoa(heldLimit)+", max_spill_bytes: 8388608, caller_body_share_percent: 10}\n", nil,
		routerOptions{env: twoCallers})
	ct, body := fileFirstForm(t, "clip.wav", make([]byte, fileOfTotal(t, heldLimit)), [2]string{"model", "whisper"})
	resp, got := postAs(t, rig.r, callerA, ct, body)
	require.Equal(t, http.StatusOK, resp.StatusCode, string(got))
	rig.r.wait(t, 1)
	assertHeldGiven(t, rig.r.srv)
}

// TestHeldRefusalClosesConnection: a held upload refused mid-file (the spill budget full) while the
// caller waits for the answer before sending more is answered at once and its connection closed:
// net/http does not first wait to read more of a body nobody wants.
func TestHeldRefusalClosesConnection(t *testing.T) {
	rig := startAudioRigWith(t, "limits: {max_audio_bytes: 4194304, max_spill_bytes: 1048576}\n", nil, routerOptions{})
	ct, body := fileFirstForm(t, "clip.wav", make([]byte, 3<<20), [2]string{"model", "whisper"})
	conn, err := net.Dial("tcp", strings.TrimPrefix(rig.r.http.URL, "http://"))
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	// Past the refusal (1 MiB in memory, 1 MiB on disk, then no more disk), then nothing: chunked, so
	// net/http cannot know how much is left.
	sent := body[:2<<20+64<<10]
	_, err = fmt.Fprintf(conn, "POST /v1/audio/transcriptions HTTP/1.1\r\nHost: anvil\r\nAuthorization: Bearer %s\r\n"+
		"Content-Type: %s\r\nTransfer-Encoding: chunked\r\n\r\n%x\r\n", callerToken, ct, len(sent))
	require.NoError(t, err)
	_, err = conn.Write(append(sent, "\r\n"...))
	require.NoError(t, err)
	// A bound on the test itself, not a wait: without the fix the answer never comes.
	require.NoError(t, conn.SetReadDeadline(time.Now().Add(20*time.Second)))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	require.NoError(t, err, "answered without reading more of the upload")
	defer resp.Body.Close()
	assert.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
	assert.True(t, resp.Close, "the connection is closed after the answer")
	_, err = io.ReadAll(resp.Body) // the answer states its length: it ends before the connection does
	require.NoError(t, err)
	// Such a caller now stops: the router, reading on what is left of the upload (linger.go), meets the
	// end of the connection and lets it go at once.
	require.NoError(t, conn.Close())
	rig.r.wait(t, 1)
	assertHeldGiven(t, rig.r.srv)
}
