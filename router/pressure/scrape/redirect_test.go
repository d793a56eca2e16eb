package scrape

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/anvil-llm/anvil/router/pressure"
	"github.com/stretchr/testify/assert"
)

// A member whose /metrics redirects is a failed sample: the scrape never follows it, so another
// host's numbers can never become this member's pressure.
func TestScrapesNeverFollowRedirects(t *testing.T) {
	var elsewhere atomic.Int32
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		elsewhere.Add(1)
		_, _ = w.Write([]byte("vllm:num_requests_running{model_name=\"m\",engine=\"0\"} 0\n"))
	}))
	defer other.Close()
	member := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, other.URL+"/metrics", http.StatusFound)
	}))
	defer member.Close()

	for name, caller := range map[string]*http.Client{"own client": nil, "caller's client": http.DefaultClient} {
		_, cl := Fetch(context.Background(), scrapeClient(caller), member.URL, "m")
		assert.Equal(t, pressure.ClassFailed, cl, name)
	}
	assert.Zero(t, elsewhere.Load(), "the redirect target was never contacted")
}
