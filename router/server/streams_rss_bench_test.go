package server_test

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// Open streams and the router's memory (issue 15, item 3): a real router in its own process (this test
// binary re-executed as TestRouterProcess), a replica tier of two members in a third process
// (TestStreamHolderProcess) that answer every stream with its headers and first chunks and then hold
// it open, and N callers that each hold one stream through the router. With every stream open, the
// router's resident memory is read from /proc/PID/status; then the members finish every stream and
// each caller must get its [DONE]. Run it with
//
//	go test -run '^$' -bench BenchmarkOpenStreamsRSS -benchtime 1x -timeout 30m ./router/server/
//
// front=http1 is one connection per caller, so the router holds two sockets per stream: at most
// ulimit -n / 2 streams (this machine's hard limit of 20,000 descriptors allows 9,900; a lower limit
// lowers the count). front=h2 serves the callers over TLS and HTTP/2 (up to 250 streams a connection),
// so 10,000 streams fit in the same limit. ANVIL_OPEN_STREAMS overrides both counts.
// ANVIL_ROUTER_PROCESS_MEM=PREFIX has the router process write where its memory goes (a heap profile,
// its goroutines, runtime.MemStats) with every stream open, after the RSS is read.

const holderEnv = "ANVIL_STREAM_HOLDER_MODEL"

// holderChunk is the member's first answer on every stream; the rest follows the release.
const holderChunk = `data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"test/llama","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}` + "\n\n" +
	`data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"test/llama","choices":[{"index":0,"delta":{"content":"Hello"},"finish_reason":null}]}` + "\n\n"

const holderRest = `data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"test/llama","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}` + "\n\n" +
	"data: [DONE]\n\n"

// TestStreamHolderProcess is the members' side of BenchmarkOpenStreamsRSS: two vLLM-like listeners
// serving the served model's readiness pages, and streams held after their first chunks until a line
// arrives on stdin. It prints "ADDR a b" and ends when stdin closes.
func TestStreamHolderProcess(t *testing.T) {
	model := os.Getenv(holderEnv)
	if model == "" {
		t.Skip("the members of BenchmarkOpenStreamsRSS")
	}
	release := make(chan struct{})
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/v1/models":
			_, _ = io.WriteString(w, `{"object":"list","data":[{"id":"`+model+`"}]}`)
			return
		case "/health":
			return
		}
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		rc := http.NewResponseController(w)
		_, _ = io.WriteString(w, holderChunk)
		_ = rc.Flush()
		select {
		case <-release:
			_, _ = io.WriteString(w, holderRest)
		case <-r.Context().Done():
		}
	})
	var addrs []string
	for range 2 {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addrs = append(addrs, ln.Addr().String())
		srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
		go func() { _ = srv.Serve(ln) }()
	}
	fmt.Printf("ADDR %s\n", strings.Join(addrs, " "))
	sc := bufio.NewScanner(os.Stdin)
	if sc.Scan() {
		close(release)
	}
	for sc.Scan() {
	}
}

// child is a re-executed test process that prints "ADDR ..." first and serves until its stdin closes.
type child struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	addr   string
	dumped chan struct{} // a line each time the router process has written its memory (childMemEnv)
}

func startChild(b *testing.B, test string, env ...string) *child {
	cmd := exec.Command(os.Args[0], "-test.run=^"+test+"$")
	cmd.Env = append(os.Environ(), env...)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	c := &child{cmd: cmd, stdin: stdin}
	b.Cleanup(func() {
		_ = stdin.Close()
		_ = cmd.Wait()
	})
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		if a, ok := strings.CutPrefix(sc.Text(), "ADDR "); ok {
			c.addr = a
			break
		}
	}
	if c.addr == "" {
		b.Fatalf("%s printed no address", test)
	}
	c.dumped = make(chan struct{}, 1)
	go func() {
		for sc.Scan() {
			if sc.Text() == "MEMORY WRITTEN" {
				c.dumped <- struct{}{}
			}
		}
		_, _ = io.Copy(io.Discard, stdout)
	}()
	return c
}

func BenchmarkOpenStreamsRSS(b *testing.B) {
	files := openFilesLimit()
	for _, tc := range []struct {
		front   string
		streams int
	}{{"http1", min(9900, (files-200)/2)}, {"h2", min(10000, files-200)}} {
		if s := os.Getenv("ANVIL_OPEN_STREAMS"); s != "" {
			n, err := strconv.Atoi(s)
			if err != nil || n <= 0 {
				b.Fatal("ANVIL_OPEN_STREAMS must be a positive integer")
			}
			tc.streams = n
		}
		b.Run(fmt.Sprintf("front=%s/streams=%d", tc.front, tc.streams), func(b *testing.B) {
			for b.Loop() {
				openStreams(b, tc.front == "h2", tc.streams)
			}
		})
	}
}

// openFilesLimit is the hard limit on this process's descriptors (Go raises the soft limit to it), read
// from /proc/self/limits; the router process inherits it. Unknown: assume the 20,000 the counts were
// chosen for.
func openFilesLimit() int {
	b, err := os.ReadFile("/proc/self/limits")
	if err != nil {
		return 20000
	}
	for line := range strings.Lines(string(b)) {
		if rest, ok := strings.CutPrefix(line, "Max open files"); ok {
			if f := strings.Fields(rest); len(f) >= 2 {
				if n, err := strconv.Atoi(f[1]); err == nil {
					return n
				}
			}
		}
	}
	return 20000
}

func openStreams(b *testing.B, h2 bool, n int) {
	members := startChild(b, "TestStreamHolderProcess", holderEnv+"="+servedModel)
	var yaml strings.Builder
	yaml.WriteString("listen: 127.0.0.1:0\nshutdown_grace: 1s\nlog: {level: warn}\n")
	scheme := "http"
	if h2 {
		certPath, keyPath, _ := selfSigned(b)
		fmt.Fprintf(&yaml, "tls: {cert_file: %s, key_file: %s}\n", certPath, keyPath)
		scheme = "https"
	}
	yaml.WriteString("aliases: [{id: chat, tier: pool}]\ntiers:\n  - id: pool\n    kind: replica\n")
	fmt.Fprintf(&yaml, "    served_model: %s\n    host: 127.0.0.1\n    provenance: bench\n    replica_strategy: round_robin\n", servedModel)
	yaml.WriteString("    gates: {max_context_tokens: 8192}\n    members:\n")
	for i, a := range strings.Fields(members.addr) {
		fmt.Fprintf(&yaml, "      - {id: m%d, endpoint: \"http://%s\", max_concurrency: 100000}\n", i, a)
	}
	router := startChild(b, "TestRouterProcess", rssChildEnv+"="+yaml.String(),
		"ANVIL_API_TOKEN="+callerToken, "ANVIL_ADMIN_TOKEN="+adminToken)
	pid := router.cmd.Process.Pid
	base, err := procStatus(pid)
	if err != nil {
		b.Fatal(err)
	}

	tr := &http.Transport{MaxIdleConnsPerHost: n, DisableCompression: true}
	if h2 {
		tr.TLSClientConfig = &tls.Config{InsecureSkipVerify: true} //nolint:gosec // the benchmark's own self-signed router
		tr.ForceAttemptHTTP2 = true
	}
	defer tr.CloseIdleConnections()
	url := scheme + "://" + router.addr + "/v1/chat/completions"
	body := `{"model":"chat","messages":[{"role":"user","content":"hold this stream"}],"max_tokens":4,"stream":true}`

	// Streams open 256 at a time (the listen backlog is finite); each holds its slot until its first
	// chunk has come through the router.
	slots := make(chan struct{}, 256)
	opened := make(chan struct{}, n)
	finished := make(chan struct{})
	var open, done atomic.Int64
	var errMu sync.Mutex
	var firstErr error
	fail := func(err error) {
		errMu.Lock()
		if firstErr == nil {
			firstErr = err
		}
		errMu.Unlock()
	}
	var wg sync.WaitGroup
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for range n {
		slots <- struct{}{}
		wg.Go(func() {
			released := false
			defer func() {
				if !released {
					<-slots
				}
				opened <- struct{}{}
			}()
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
			req.Header.Set("Authorization", "Bearer "+callerToken)
			req.Header.Set("Content-Type", "application/json")
			resp, err := tr.RoundTrip(req)
			if err != nil {
				fail(err)
				return
			}
			defer resp.Body.Close()
			br := bufio.NewReader(resp.Body)
			first := make([]byte, len(holderChunk))
			if _, err := io.ReadFull(br, first); err != nil || string(first) != holderChunk {
				fail(fmt.Errorf("status %d, first chunks %q: %v", resp.StatusCode, first, err))
				return
			}
			open.Add(1)
			<-slots
			released = true
			opened <- struct{}{}
			<-finished // the measurement is taken
			rest, err := io.ReadAll(br)
			if err != nil || string(rest) != holderRest {
				fail(fmt.Errorf("the end of the stream %q: %v", rest, err))
				return
			}
			done.Add(1)
		})
	}
	for range n {
		<-opened
	}
	held, err := procStatus(pid)
	if err != nil {
		b.Fatal(err)
	}
	if os.Getenv(childMemEnv) != "" { // after the RSS is read: the dump allocates
		_ = router.cmd.Process.Signal(syscall.SIGUSR1)
		select {
		case <-router.dumped:
		case <-time.After(time.Minute): // a router process that died (a stack cap, say) writes nothing
			b.Fatal("the router process did not write its memory")
		}
	}
	close(finished)
	if _, err := io.WriteString(members.stdin, "release\n"); err != nil {
		b.Fatal(err)
	}
	wg.Wait()
	if firstErr != nil {
		b.Fatalf("%d of %d streams opened, %d completed; first error: %v", open.Load(), n, done.Load(), firstErr)
	}
	if done.Load() != int64(n) {
		b.Fatalf("%d of %d streams completed", done.Load(), n)
	}
	b.ReportMetric(float64(base["VmRSS"])/1024, "base-RSS-MB")
	b.ReportMetric(float64(held["VmRSS"])/1024, "open-RSS-MB")
	b.ReportMetric(float64(held["VmRSS"]-base["VmRSS"])/float64(n), "KB/stream")
	b.ReportMetric(float64(open.Load()), "streams")
	if errors.Is(ctx.Err(), context.Canceled) {
		b.Fatal("canceled")
	}
}
