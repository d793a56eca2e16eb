package relay

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/anvil-llm/anvil/router/decisionlog"
)

const hostileKey = "sk-proj-Q7vLm2Xa9RtBk4Wz"

func TestLeakCheckForms(t *testing.T) {
	cases := []struct {
		name string
		key  string
		body string
		leak bool
	}{
		{"verbatim", hostileKey, `{"error":{"message":"key ` + hostileKey + ` is revoked"}}`, true},
		{"JSON-escaped", "ab<cd>ef&gh/ij", `{"error":"ab\u003ccd\u003eef\u0026gh/ij"}`, true},
		{"eight-character run", hostileKey, `key ending in Xa9RtBk4 was refused`, true},
		{"OpenAI masked: first 8, last 4", hostileKey, `Incorrect API key provided: sk-proj-************************Bk4Wz.`, true},
		{"first 6 and a mask", hostileKey, `sk-pro*********`, true},
		{"first 4 and dots", hostileKey, `key sk-p... rejected`, true},
		{"mask and last 4", hostileKey, `key ****k4Wz rejected`, true},
		{"dots and last 3", hostileKey, `key ...4Wz rejected`, true},
		{"bullets and last 4", hostileKey, "key \u2022\u2022\u2022k4Wz", true},
		{"ellipsis character and last 4", hostileKey, "sk-\u2026\u2026\u2026k4Wz", true},
		{"x mask and last 4", hostileKey, "sk-xxxxxxxxk4Wz", true},
		{"short key verbatim", "abc", `{"k":"abc"}`, true},
		{"unrelated error", hostileKey, `{"error":{"message":"model is overloaded... try again","code":"overloaded"}}`, false},
		{"the common prefix alone", hostileKey, `keys look like sk-...`, false},
		{"seven characters of the key", hostileKey, `Xa9RtBk`, false},
		{"last 4 without a mask", hostileKey, `k4Wz`, false},
		{"two-character mask", hostileKey, `**k4Wz`, false},
		{"no key configured", "", hostileKey, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			assert.Equal(t, c.leak, newLeakCheck(c.key).in([]byte(c.body)))
		})
	}
	var none *leakCheck
	assert.False(t, none.in([]byte(hostileKey)))
}

func FuzzLeakCheck(f *testing.F) {
	f.Add(hostileKey, []byte("prefix "), []byte(" suffix"))
	f.Add("k", []byte(""), []byte("***"))
	f.Add("\u2022\u2022\u2022abc", []byte("..."), []byte("x"))
	f.Fuzz(func(t *testing.T, key string, before, after []byte) {
		c := newLeakCheck(key)
		_ = c.in(before) // never panics, whatever the bytes
		if key == "" {
			assert.False(t, c.in([]byte(string(before)+key+string(after))))
			return
		}
		assert.True(t, c.in([]byte(string(before)+key+string(after))), "the key itself is always found")
	})
}

// hostileUpstream answers every request with status and a body that echoes the bearer token it was
// sent, in the form echo renders.
func hostileUpstream(t *testing.T, status int, ct string, echo func(key string) string) *upstream {
	return newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		key := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
		w.Header().Set("Content-Type", ct)
		w.Header().Set("Retry-After", "7")
		w.WriteHeader(status)
		_, _ = io.WriteString(w, echo(key))
	})
}

func openAIEcho(key string) string {
	return fmt.Sprintf(`{"error":{"message":"Incorrect API key provided: %s****%s.","type":"invalid_request_error","code":"invalid_api_key"}}`, key[:8], key[len(key)-4:])
}

// TestKeyedUpstreamRefusalsAreReplaced: a keyed upstream's 401 or 403 never reaches the caller; the
// caller gets a fixed 502 (its own credentials were fine) and the record an upstream HTTP error.
func TestKeyedUpstreamRefusalsAreReplaced(t *testing.T) {
	for _, status := range []int{401, 403} {
		t.Run(fmt.Sprint(status), func(t *testing.T) {
			u := hostileUpstream(t, status, "application/json", func(key string) string { return `{"error":"bad key ` + key + `"}` })
			up := baseUpstream(u, false)
			up.APIKey = hostileKey
			resp, body, res := newFront(t, New(nil, Options{}), up).call(t)
			assert.Equal(t, http.StatusBadGateway, resp.StatusCode)
			assert.JSONEq(t, `{"error":{"message":"the upstream server refused the router's credentials","type":"upstream_error","param":null,"code":"upstream_http_error"}}`, body)
			assert.NotContains(t, body, hostileKey[8:])
			assert.Empty(t, resp.Header.Get("Retry-After"))
			assert.Equal(t, decisionlog.OutcomeUpstreamHTTPError, res.Outcome)
			assert.Equal(t, http.StatusBadGateway, res.Status)
			assert.ErrorIs(t, res.Err, ErrUpstreamCredentials)
			assertOneCall(t, u, res)
		})
	}
	t.Run("unkeyed upstream's 401 passes through", func(t *testing.T) {
		u := hostileUpstream(t, 401, "application/json", func(string) string { return `{"error":"no"}` })
		up := baseUpstream(u, false)
		up.APIKey = ""
		resp, body, res := newFront(t, New(nil, Options{}), up).call(t)
		assert.Equal(t, http.StatusUnauthorized, resp.StatusCode)
		assert.Equal(t, `{"error":"no"}`, body)
		assert.ErrorIs(t, res.Err, ErrUpstreamStatus)
	})
}

// TestErrorBodiesCarryingTheKeyAreWithheld: any other error status keeps its status and a clean
// Retry-After, but a body that carries the key, whole or masked, is replaced by a fixed error.
func TestErrorBodiesCarryingTheKeyAreWithheld(t *testing.T) {
	cases := []struct {
		name   string
		status int
		echo   func(string) string
		leak   bool
	}{
		{"400 verbatim", 400, func(k string) string { return `{"error":{"message":"key ` + k + `"}}` }, true},
		{"429 OpenAI masked", 429, openAIEcho, true},
		{"500 plain text last four", 500, func(k string) string { return "auth ...." + k[len(k)-4:] + " failed" }, true},
		{"503 clean body passes", 503, func(string) string { return `{"error":{"message":"overloaded"}}` }, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			u := hostileUpstream(t, c.status, "application/json", c.echo)
			up := baseUpstream(u, false)
			up.APIKey = hostileKey
			resp, body, res := newFront(t, New(nil, Options{}), up).call(t)
			assert.Equal(t, c.status, resp.StatusCode)
			assert.Equal(t, "7", resp.Header.Get("Retry-After"))
			assert.Equal(t, decisionlog.OutcomeUpstreamHTTPError, res.Outcome)
			assert.Equal(t, c.status, res.Status)
			assert.ErrorIs(t, res.Err, ErrUpstreamStatus)
			assert.False(t, newLeakCheck(hostileKey).in([]byte(body)), "the caller never sees the key: %s", body)
			if c.leak {
				assert.JSONEq(t, `{"error":{"message":"the upstream server returned an error","type":"upstream_error","param":null,"code":"upstream_http_error"}}`, body)
			} else {
				assert.Equal(t, c.echo(hostileKey), body)
			}
		})
	}
}

// TestErrorEventsCarryingTheKeyAreReplaced: mid-stream, an upstream error event that carries the key
// is replaced by the relay's fixed error event; other events pass unchanged.
func TestErrorEventsCarryingTheKeyAreReplaced(t *testing.T) {
	u := newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		key := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, "data: {\"choices\":[{\"delta\":{\"content\":\"hi\"}}]}\n\n")
		_, _ = io.WriteString(w, "event: error\ndata: {\"error\":{\"message\":\"key "+key+" expired\"}}\n\n")
		_, _ = io.WriteString(w, "data: {\"error\":{\"message\":\"rate limited\"}}\n\n")
	})
	up := baseUpstream(u, true)
	up.APIKey = hostileKey
	resp, body, res := newFront(t, New(nil, Options{}), up).call(t)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	assert.NotContains(t, body, hostileKey)
	assert.Equal(t, "data: {\"choices\":[{\"delta\":{\"content\":\"hi\"}}]}\n\n"+
		"data: {\"error\":{\"message\":\"the upstream server returned an error\",\"type\":\"upstream_error\",\"param\":null,\"code\":\"upstream_http_error\"}}\n\n"+
		"data: {\"error\":{\"message\":\"rate limited\"}}\n\n"+
		"data: {\"error\":{\"message\":\"the upstream stream ended before completion\",\"type\":\"upstream_error\",\"param\":null,\"code\":\"stream_truncated\"}}\n\n", body)
	assert.Equal(t, decisionlog.OutcomeUpstreamHTTPError, res.Outcome)
}
