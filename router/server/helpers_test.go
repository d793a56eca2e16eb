package server_test

import (
	"bufio"
	"cmp"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/anvil-llm/anvil/router/admission"
	"github.com/anvil-llm/anvil/router/capacity"
	"github.com/anvil-llm/anvil/router/config"
	"github.com/anvil-llm/anvil/router/config/load"
	"github.com/anvil-llm/anvil/router/server"
)

const (
	callerToken = "caller-token-0123456789"
	adminToken  = "admin-token-0123456789"
	// observerToken is every test router's read-only token (ANVIL_OBSERVER_TOKENS).
	observerToken = "observer-token-0123456789"
	servedModel   = "test/llama"
)

// router is a real anvil router on loopback. done receives once per finished front-door request,
// after every deferred release and record of that request has run.
type router struct {
	srv    *server.Server
	http   *httptest.Server
	done   chan string // every finished request but a nudge, by path
	nudges sync.Map    // nudge ID -> *nudgeTrace: a nudge waits for its own request, never another's
}

type tierOpts struct {
	strategy      string // "round_robin" or "capacity"
	engine        string // tiers[].engine; "" = absent (vllm)
	memberCeiling int    // 0 = none
	tierCeiling   int    // 0 = none
	extra         string // extra YAML for the top level
	model         string // the tier's served_model; "" = servedModel
}

func replicaYAML(ms []*member, o tierOpts) string {
	var b strings.Builder
	b.WriteString("listen: 127.0.0.1:0\n")
	if !strings.Contains(o.extra, "shutdown_grace") {
		b.WriteString("shutdown_grace: 5s\n")
	}
	b.WriteString(o.extra)
	b.WriteString("aliases:\n  - id: chat\n    tier: replicas\ntiers:\n  - id: replicas\n    kind: replica\n")
	model := cmp.Or(o.model, servedModel)
	fmt.Fprintf(&b, "    served_model: %s\n    host: 127.0.0.1\n    provenance: test fakes\n", model)
	if o.strategy != "" {
		fmt.Fprintf(&b, "    replica_strategy: %s\n", o.strategy)
	}
	if o.engine != "" {
		fmt.Fprintf(&b, "    engine: %s\n", o.engine)
	}
	if o.tierCeiling > 0 {
		fmt.Fprintf(&b, "    max_concurrency: %d\n", o.tierCeiling)
	}
	b.WriteString("    gates:\n      max_context_tokens: 4096\n      max_output_tokens: 512\n    members:\n")
	for i, m := range ms {
		fmt.Fprintf(&b, "      - id: m%02d\n        endpoint: %s\n", i, m.URL())
		if o.memberCeiling > 0 {
			fmt.Fprintf(&b, "        max_concurrency: %d\n", o.memberCeiling)
		}
	}
	return b.String()
}

func env(k string) (string, bool) {
	switch k {
	case config.EnvAPIToken:
		return callerToken, true
	case config.EnvAdminToken:
		return adminToken, true
	case config.EnvObserverTokens:
		return observerToken, true
	case upstreamEnv:
		return upstreamKey, true
	}
	return "", false
}

func startRouter(t testing.TB, yaml string) *router {
	t.Helper()
	return startRouterWith(t, yaml, routerOptions{})
}

// routerOptions vary startRouter: a logger, and a wrapper around every response writer the router
// writes to (for example one that panics).
type routerOptions struct {
	logger *slog.Logger
	writer func(http.ResponseWriter, *http.Request) http.ResponseWriter
	view   func(capacity.Sources) capacity.Sources // wraps what the capacity views read
	server server.Options                          // the rest (an intent file system, ...); logger wins
	env    func(string) (string, bool)             // the environment the config is read with; nil: env
	body   func(io.ReadCloser) io.ReadCloser       // wraps every request body before the router reads it
}

func startRouterWith(t testing.TB, yaml string, o routerOptions) *router {
	t.Helper()
	lookup := env
	if o.env != nil {
		lookup = o.env
	}
	cfg, err := load.Parse([]byte(yaml), lookup)
	require.NoError(t, err)
	opts := o.server
	if opts.SpoolDir == "" { // each router its own: a start's sweep never meets another's files
		opts.SpoolDir = filepath.Join(t.TempDir(), "spool")
	}
	if o.logger != nil {
		opts.Logger = o.logger
	}
	srv, err := server.NewWithViews(cfg, opts, o.view)
	require.NoError(t, err)
	srv.Start()
	srv.ProbeNow(context.Background())
	r := &router{srv: srv, done: make(chan string, 1024)}
	h := srv.Handler()
	r.http = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if nt := r.nudgeOf(req); nt != nil {
			close(nt.entered)
			defer close(nt.finished) // also when the handler aborts the connection
		} else {
			defer func() { r.done <- req.URL.Path }() // also when the handler aborts the connection
		}
		if o.writer != nil {
			w = o.writer(w, req)
		}
		if o.body != nil {
			req.Body = o.body(req.Body)
		}
		h.ServeHTTP(w, req)
	}))
	t.Cleanup(func() {
		r.http.CloseClientConnections()
		r.http.Close()
		_ = srv.Close()
	})
	return r
}

// wait blocks until n front-door requests have fully finished (handler returned).
func (r *router) wait(t *testing.T, n int) {
	t.Helper()
	for range n {
		select {
		case <-r.done:
		case <-time.After(30 * time.Second):
			t.Fatal("router request did not finish")
		}
	}
}

func (r *router) post(t *testing.T, ctx context.Context, path, body string) *http.Response {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, r.http.URL+path, strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+callerToken)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	return resp
}

// do posts and reads the whole response.
func (r *router) do(t *testing.T, path, body string) (int, string, http.Header) {
	t.Helper()
	resp := r.post(t, context.Background(), path, body)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(b), resp.Header
}

func (r *router) snapshot(t *testing.T, tier string) admission.Snapshot {
	t.Helper()
	ta, ok := r.srv.Admission().Tier(tier)
	require.True(t, ok)
	return ta.Snapshot()
}

// assertSettled checks that nothing is held: tier active 0, every member 0, tier active equal to the
// sum of members, and releases equal to acquisitions with no misuse.
func assertSettled(t *testing.T, s admission.Snapshot) {
	t.Helper()
	var sum int64
	for _, m := range s.Members {
		sum += m.Active
		assert.Zero(t, m.Active, "member %s still holds a lease", m.ID)
	}
	assert.Zero(t, s.Active, "tier %s still holds a lease", s.ID)
	assert.Equal(t, s.Active, sum)
	assert.Equal(t, s.Acquired, s.Released, "every lease released exactly once")
	assert.Zero(t, s.ReleaseMisuse)
}

func totalCalls(ms []*member) int64 {
	var n int64
	for _, m := range ms {
		n += m.calls.Load()
	}
	return n
}

func chatBody(maxTokens int, stream bool) string {
	return fmt.Sprintf(`{"model":"chat","messages":[{"role":"user","content":"hello there"}],"max_tokens":%d,"stream":%t,"ignore_eos":true}`, maxTokens, stream)
}

func responsesBody(maxTokens int, stream bool) string {
	return fmt.Sprintf(`{"model":"chat","input":"hello there","max_output_tokens":%d,"stream":%t,"ignore_eos":true}`, maxTokens, stream)
}

// readEvents reads SSE data payloads until the stream ends.
func readEvents(t *testing.T, body io.Reader) []string {
	t.Helper()
	var out []string
	sc := bufio.NewScanner(body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			out = append(out, data)
		}
	}
	return out
}

// admin posts a transition with the admin token and waits for it to finish.
func (r *router) admin(t *testing.T, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, r.http.URL+"/admin/v1/transition", strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+adminToken)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	r.wait(t, 1)
	return resp.StatusCode, string(b)
}

func readFile(path string) (string, error) {
	b, err := os.ReadFile(path)
	return string(b), err
}

// serving is a router running Serve on a real listener, as in production.
type serving struct {
	srv  *server.Server
	addr string
	stop func() error // cancels Serve's context (SIGTERM) and returns what Serve returned
}

func serveReal(t *testing.T, yaml string) serving {
	t.Helper()
	return serveRealWith(t, yaml, server.Options{})
}

// serveRealWith is serveReal with the server's options (its own spool directory set here).
func serveRealWith(t *testing.T, yaml string, opts server.Options) serving {
	t.Helper()
	cfg, err := load.Parse([]byte(yaml), env)
	require.NoError(t, err)
	opts.SpoolDir = filepath.Join(t.TempDir(), "spool")
	srv, err := server.New(cfg, opts)
	require.NoError(t, err)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ctx, ln) }()
	var once sync.Once
	var result error
	stop := func() error {
		once.Do(func() { cancel(); result = <-served })
		return result
	}
	t.Cleanup(func() { _ = stop() })
	return serving{srv: srv, addr: ln.Addr().String(), stop: stop}
}

// postStream starts a streaming chat request against a served router.
func postStream(t *testing.T, addr string, maxTokens int) *http.Response {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, "http://"+addr+"/v1/chat/completions", strings.NewReader(chatBody(maxTokens, true)))
	req.Header.Set("Authorization", "Bearer "+callerToken)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	return resp
}
