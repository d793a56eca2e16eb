package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/anvil-llm/anvil/router/config/load"
	"github.com/anvil-llm/anvil/router/server"
)

// The router's cost against a bare Go reverse proxy (issue 15, item 3). Every variant proxies to the
// same two in-process zero-latency upstreams and is driven by the same client:
//
//	go test -run '^$' -bench BenchmarkProxyCost -benchmem -count 10 ./router/server/ > cost.txt
//	benchstat -col /proxy cost.txt
//
// proxy=bare is httputil.ReverseProxy behind a JSON peek of "model" and least connections over the
// two upstreams, on a transport with the router's idle-connection settings; proxy=round_robin and
// proxy=capacity are the real router (gin engine, authentication, the body parser, the walk,
// admission, the relay, the decision record, the metrics and a text access log formatted into
// io.Discard). load=serial is one request at a time (the cost of one request); load=parallel runs 16
// clients at once (8 per core on this 2-core machine), so ns/op is the inverse of throughput.

// costChunks is the streamed answer: a role chunk, content chunks, the finish chunk and the usage
// chunk, as vLLM sends them.
var costChunks = func() []byte {
	var b bytes.Buffer
	b.WriteString(`data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"test/llama","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}` + "\n\n")
	for i := range 8 {
		fmt.Fprintf(&b, `data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"test/llama","choices":[{"index":0,"delta":{"content":" tok%d"},"finish_reason":null}]}`+"\n\n", i)
	}
	b.WriteString(`data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"test/llama","choices":[{"index":0,"delta":{},"finish_reason":"length"}]}` + "\n\n")
	b.WriteString(`data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"test/llama","choices":[],"usage":{"prompt_tokens":3,"completion_tokens":8,"total_tokens":11}}` + "\n\n")
	b.WriteString("data: [DONE]\n\n")
	return b.Bytes()
}()

// costResponses is the streamed Responses answer, the same 8 tokens as costChunks: response.created,
// the deltas, the text's done event and response.completed with the usage; no [DONE] (the stream ends
// when the upstream closes). Every event has a top-level "type", so the relay classifies each one.
var costResponses = func() []byte {
	var b bytes.Buffer
	b.WriteString("event: response.created\ndata: " + `{"type":"response.created","sequence_number":0,"response":{"id":"resp_c","object":"response","created_at":1,"status":"in_progress","model":"test/llama","output":[],"usage":null}}` + "\n\n")
	for i := range 8 {
		fmt.Fprintf(&b, "event: response.output_text.delta\ndata: "+`{"type":"response.output_text.delta","sequence_number":%d,"item_id":"msg_c","output_index":0,"content_index":0,"delta":" tok%d"}`+"\n\n", i+1, i)
	}
	b.WriteString("event: response.output_text.done\ndata: " + `{"type":"response.output_text.done","sequence_number":9,"item_id":"msg_c","output_index":0,"content_index":0,"text":" tok0 tok1 tok2 tok3 tok4 tok5 tok6 tok7"}` + "\n\n")
	b.WriteString("event: response.completed\ndata: " + `{"type":"response.completed","sequence_number":10,"response":{"id":"resp_c","object":"response","created_at":1,"status":"completed","model":"test/llama","output":[],"usage":{"input_tokens":3,"output_tokens":8,"total_tokens":11}}}` + "\n\n")
	return b.Bytes()
}()

// costUpstream answers instantly: the readiness and pressure pages, a chat completion, or, for a body
// asking for a stream, costChunks event by event with a flush after each (as vLLM does).
func costUpstream(b *testing.B, conns *atomic.Int64) *httptest.Server {
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/v1/models":
			_, _ = io.WriteString(w, `{"object":"list","data":[{"id":"test/llama"}]}`)
			return
		case "/health":
			return
		case "/metrics":
			_, _ = io.WriteString(w, benchMetrics)
			return
		}
		body, _ := io.ReadAll(r.Body)
		if !bytes.Contains(body, []byte(`"stream":true`)) {
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, benchReply)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		rc := http.NewResponseController(w)
		events := costChunks
		if r.URL.Path == "/v1/responses" {
			events = costResponses
		}
		for ev := range bytes.SplitAfterSeq(events, []byte("\n\n")) {
			if len(ev) == 0 {
				continue
			}
			_, _ = w.Write(ev)
			_ = rc.Flush()
		}
	}))
	srv.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	b.Cleanup(srv.Close)
	return srv
}

// bareProxy is the baseline: read the body, peek at "model", pick the upstream with the fewest
// requests in flight, and hand the request to httputil.ReverseProxy (which flushes event streams as
// they arrive).
type bareProxy struct {
	proxies []*httputil.ReverseProxy
	active  []atomic.Int64
}

func newBareProxy(upstreams []string) *bareProxy {
	t := http.DefaultTransport.(*http.Transport).Clone()
	// The router's transport settings: the default of 2 idle connections per host would churn
	// connections, and the default total of 100 would too once the upstreams together hold more.
	t.MaxIdleConnsPerHost, t.MaxIdleConns = 256, 0
	p := &bareProxy{active: make([]atomic.Int64, len(upstreams))}
	for _, raw := range upstreams {
		u, err := url.Parse(raw)
		if err != nil {
			panic(err)
		}
		p.proxies = append(p.proxies, &httputil.ReverseProxy{Transport: t,
			Rewrite: func(pr *httputil.ProxyRequest) { pr.SetURL(u) }})
	}
	return p
}

func (p *bareProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, 4<<20))
	var peek struct {
		Model string `json:"model"`
	}
	if err != nil || json.Unmarshal(body, &peek) != nil || peek.Model == "" {
		http.Error(w, "bad request", http.StatusBadRequest)
		return
	}
	pick := 0
	for i := range p.active {
		if p.active[i].Load() < p.active[pick].Load() {
			pick = i
		}
	}
	p.active[pick].Add(1)
	defer p.active[pick].Add(-1)
	r.Body = io.NopCloser(bytes.NewReader(body))
	r.ContentLength = int64(len(body))
	p.proxies[pick].ServeHTTP(w, r)
}

// TestBareProxyProcess serves the bare proxy on loopback for bench/router-cost.sh, so the loopback
// comparison has the same baseline as BenchmarkProxyCost; it runs only when the script starts it.
// ANVIL_BARE_PROXY_UPSTREAMS is the comma-separated upstream base URLs. It prints its address
// ("ADDR host:port") and serves until its stdin closes.
func TestBareProxyProcess(t *testing.T) {
	ups := os.Getenv("ANVIL_BARE_PROXY_UPSTREAMS")
	if ups == "" {
		t.Skip("the bare proxy process of bench/router-cost.sh")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: newBareProxy(strings.Split(ups, ",")), ReadHeaderTimeout: 10 * time.Second}
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin)
		_ = srv.Close()
	}()
	fmt.Printf("ADDR %s\n", ln.Addr())
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		t.Fatal(err)
	}
}

// costRouter is a real router over the two upstreams with one replica tier of the strategy, logging
// at info through a text handler into io.Discard (the production format, without the syscall).
func costRouter(b *testing.B, strategy string, upstreams []string) (*server.Server, http.Handler) {
	var sb strings.Builder
	sb.WriteString("listen: 127.0.0.1:0\naliases: [{id: chat, tier: replicas}]\ntiers:\n  - id: replicas\n    kind: replica\n")
	fmt.Fprintf(&sb, "    served_model: test/llama\n    host: 127.0.0.1\n    provenance: bench\n    replica_strategy: %s\n", strategy)
	sb.WriteString("    gates: {max_context_tokens: 8192}\n    members:\n")
	for i, u := range upstreams {
		fmt.Fprintf(&sb, "      - id: m%02d\n        endpoint: %s\n        max_concurrency: 1000\n", i, u)
	}
	cfg, err := load.Parse([]byte(sb.String()), env)
	if err != nil {
		b.Fatal(err)
	}
	srv, err := server.New(cfg, server.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = srv.Close() })
	srv.Start()
	srv.ProbeNow(context.Background())
	return srv, srv.Handler()
}

func BenchmarkProxyCost(b *testing.B) {
	var conns atomic.Int64 // connections the upstreams accepted
	ups := []string{costUpstream(b, &conns).URL, costUpstream(b, &conns).URL}
	for _, mode := range []string{"ordinary", "stream", "responses"} {
		path, body := "/v1/chat/completions", `{"model":"chat","messages":[{"role":"user","content":"Say hello to the benchmark, briefly."}],"max_tokens":8}`
		switch mode {
		case "stream":
			body = `{"model":"chat","messages":[{"role":"user","content":"Say hello to the benchmark, briefly."}],"max_tokens":8,"stream":true,"stream_options":{"include_usage":true}}`
		case "responses":
			path, body = "/v1/responses", `{"model":"chat","input":"Say hello to the benchmark, briefly.","max_output_tokens":8,"stream":true}`
		}
		for _, proxy := range []string{"bare", "round_robin", "capacity"} {
			for _, load := range []string{"serial", "parallel"} {
				b.Run(fmt.Sprintf("mode=%s/proxy=%s/load=%s", mode, proxy, load), func(b *testing.B) {
					before := conns.Load()
					benchProxy(b, proxy, load, ups, path, body)
					b.ReportMetric(float64(conns.Load()-before)/float64(b.N), "upstream-conns/op")
				})
			}
		}
	}
}

func benchProxy(b *testing.B, proxy, load string, ups []string, path, body string) {
	var h http.Handler
	var srv *server.Server
	if proxy == "bare" {
		h = newBareProxy(ups)
	} else {
		srv, h = costRouter(b, proxy, ups)
	}
	front := httptest.NewServer(h)
	defer front.Close()
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64, DisableCompression: true}}
	defer client.CloseIdleConnections()
	post := func() error {
		req, err := http.NewRequest(http.MethodPost, front.URL+path, strings.NewReader(body))
		if err != nil {
			return err
		}
		req.Header.Set("Authorization", "Bearer "+callerToken)
		req.Header.Set("Content-Type", "application/json")
		resp, err := client.Do(req)
		if err != nil {
			return err
		}
		n, _ := io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || n == 0 {
			return fmt.Errorf("status %d, %d bytes", resp.StatusCode, n)
		}
		return nil
	}
	must := func() {
		if err := post(); err != nil {
			b.Fatal(err)
		}
	}
	if proxy == "capacity" {
		warm(b, srv, must)
	}
	b.ReportAllocs()
	if load == "serial" {
		for b.Loop() {
			must()
		}
		return
	}
	b.SetParallelism(8)
	var failed atomic.Pointer[error]
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if err := post(); err != nil {
				failed.CompareAndSwap(nil, &err)
			}
		}
	})
	if err := failed.Load(); err != nil {
		b.Fatal(*err)
	}
}
