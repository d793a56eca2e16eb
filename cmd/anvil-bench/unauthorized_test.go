package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestWarnsWhenEveryEarlyAnswerIs401: a run whose token the target refuses says so once, on
// standard error, naming where the token comes from; the report still counts the http_4xx.
func TestWarnsWhenEveryEarlyAnswerIs401(t *testing.T) {
	t.Setenv("ANVIL_API_TOKEN", "")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.WriteHeader(http.StatusUnauthorized)
	}))
	defer srv.Close()
	_, stdout, stderr := runCLI(t, "run", "--url", srv.URL, "--model", "m", "--clients", "2", "--requests", "60", "--backoff", "1ms")
	assert.Equal(t, 1, strings.Count(stderr, "warning: the first 8 answers from target were all 401 Unauthorized"), stderr)
	assert.Contains(t, stderr, "--token-env names, default ANVIL_API_TOKEN")
	assert.Contains(t, stdout, "http_4xx")
}
