package server_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/anvil-llm/anvil/router/decisionlog"
)

// rawRequest writes a request's head to a new connection to r and returns the connection and a reader
// of its responses.
func rawRequest(t *testing.T, r *router, head string) (net.Conn, *bufio.Reader) {
	t.Helper()
	conn, err := net.Dial("tcp", strings.TrimPrefix(r.http.URL, "http://"))
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	_, err = io.WriteString(conn, head)
	require.NoError(t, err)
	return conn, bufio.NewReader(conn)
}

func postHead(length string, extra ...string) string {
	h := "POST /v1/chat/completions HTTP/1.1\r\nHost: anvil\r\nAuthorization: Bearer " + callerToken + "\r\n" +
		"Content-Type: application/json\r\n" + length
	for _, e := range extra {
		h += e + "\r\n"
	}
	return h + "\r\n"
}

// A declared length over the limit gets its 413 before the body is read: no "100 Continue" first.
func TestDeclaredLengthOverTheLimitGetsNoContinue(t *testing.T) {
	ms := startMembers(t, 2)
	r := startRouter(t, replicaYAML(ms, tierOpts{extra: "limits:\n  max_body_bytes: 4096\n"}))
	_, br := rawRequest(t, r, postHead("Content-Length: 1073741824\r\n", "Expect: 100-continue"))
	resp, err := http.ReadResponse(br, nil)
	require.NoError(t, err)
	defer resp.Body.Close()
	r.wait(t, 1)
	assert.Equal(t, http.StatusRequestEntityTooLarge, resp.StatusCode, "the first answer is the refusal, not 100 Continue")
	var e openAIError
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&e))
	assert.Equal(t, "request_too_large", e.Error.Code)
	rec := r.srv.Decisions().Recent(1)[0]
	assert.Equal(t, decisionlog.OutcomeRefused, rec.Outcome)
	assert.Equal(t, http.StatusRequestEntityTooLarge, rec.Status)
	assert.Zero(t, totalCalls(ms))
}

// A body of unknown length (chunked) over the limit is cut at the limit and refused with 413.
func TestChunkedBodyOverTheLimit(t *testing.T) {
	ms := startMembers(t, 2)
	r := startRouter(t, replicaYAML(ms, tierOpts{extra: "limits:\n  max_body_bytes: 4096\n"}))
	body := io.MultiReader(strings.NewReader(`{"model":"chat","messages":[{"content":"`), strings.NewReader(strings.Repeat("x", 5000)+`"}]}`))
	req, err := http.NewRequest(http.MethodPost, r.http.URL+"/v1/chat/completions", body)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+callerToken)
	req.ContentLength = -1 // unknown: sent chunked
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	r.wait(t, 1)
	assert.Equal(t, http.StatusRequestEntityTooLarge, resp.StatusCode)
}

// The in-flight budget: bodies being read hold their declared length (or the body limit when
// unknown); a request that does not fit is refused at once with 503 and Retry-After, and the budget
// comes back when the read and parse end.
func TestBodyBudgetRefusesInsteadOfQueueing(t *testing.T) {
	ms := startMembers(t, 2)
	r := startRouter(t, replicaYAML(ms, tierOpts{extra: "limits:\n  max_body_bytes: 4096\n  max_inflight_body_bytes: 6144\n"}))
	body := chatBody(2, false)

	// Holder: declares 4096 bytes and waits for 100 Continue, which net/http sends only once the
	// handler starts reading: by then the budget is held.
	hold := func(head string) (net.Conn, *bufio.Reader) {
		conn, br := rawRequest(t, r, head)
		line, err := br.ReadString('\n')
		require.NoError(t, err)
		require.Equal(t, "HTTP/1.1 100 Continue\r\n", line)
		_, err = br.ReadString('\n') // the blank line ending the interim response
		require.NoError(t, err)
		return conn, br
	}
	padded := body[:len(body)-1] + `,"pad":"` + strings.Repeat("p", 4096-len(body)-9) + `"}`
	require.Len(t, padded, 4096)
	conn, br := hold(postHead("Content-Length: 4096\r\n", "Expect: 100-continue"))

	status, text, hdr := r.do(t, "/v1/chat/completions", padded)
	r.wait(t, 1)
	assert.Equal(t, http.StatusServiceUnavailable, status, "4096 more bytes do not fit beside 4096")
	assert.Equal(t, "1", hdr.Get("Retry-After"))
	var e openAIError
	require.NoError(t, json.Unmarshal([]byte(text), &e))
	assert.Equal(t, "body_budget_exhausted", e.Error.Code)
	assert.Equal(t, "the router is reading too many request bodies right now; retry shortly", e.Error.Message)
	rec := r.srv.Decisions().Recent(1)[0]
	assert.Equal(t, decisionlog.OutcomeRefused, rec.Outcome)
	assert.Equal(t, http.StatusServiceUnavailable, rec.Status)

	status, text, _ = r.do(t, "/v1/chat/completions", body)
	r.wait(t, 1)
	assert.Equal(t, http.StatusOK, status, "a small body fits beside the held one: %s", text)

	_, err := io.WriteString(conn, padded)
	require.NoError(t, err)
	resp, err := http.ReadResponse(br, nil)
	require.NoError(t, err)
	resp.Body.Close()
	r.wait(t, 1)
	assert.Equal(t, http.StatusOK, resp.StatusCode, "the held body completes")

	// A chunked body reserves the whole body limit while it is read.
	conn, br = hold(postHead("Transfer-Encoding: chunked\r\n", "Expect: 100-continue"))
	status, _, _ = r.do(t, "/v1/chat/completions", padded[:2100]+`"}`)
	r.wait(t, 1)
	assert.Equal(t, http.StatusServiceUnavailable, status, "4096 reserved for the unknown length leaves 2048")
	_, err = fmt.Fprintf(conn, "%x\r\n%s\r\n0\r\n\r\n", len(body), body)
	require.NoError(t, err)
	resp, err = http.ReadResponse(br, nil)
	require.NoError(t, err)
	resp.Body.Close()
	r.wait(t, 1)
	assert.Equal(t, http.StatusOK, resp.StatusCode)

	status, _, _ = r.do(t, "/v1/chat/completions", padded)
	r.wait(t, 1)
	assert.Equal(t, http.StatusOK, status, "the whole budget is back")
	assertSettled(t, r.snapshot(t, "replicas"))
}

// Issue 13's hostile body: about 90,000 small keys in 1 MiB for an unknown model is read within the
// budget, refused with 404, and holds nothing afterwards.
func TestHostileKeysBody(t *testing.T) {
	ms := startMembers(t, 2)
	r := startRouter(t, replicaYAML(ms, tierOpts{extra: "limits:\n  max_body_bytes: 4194304\n"}))
	body := hostileKeys()
	require.Greater(t, bytes.Count(body, []byte(`":0`)), 89000)
	front := httptest.NewRequest(http.MethodPost, "/v1/chat/completions", bytes.NewReader(body))
	front.Header.Set("Authorization", "Bearer "+callerToken)
	w := httptest.NewRecorder()
	r.srv.Handler().ServeHTTP(w, front)
	assert.Equal(t, http.StatusNotFound, w.Code)
	var e openAIError
	require.NoError(t, json.Unmarshal(w.Body.Bytes(), &e))
	assert.Equal(t, "model_not_found", e.Error.Code)
	assert.Zero(t, totalCalls(ms))
}
