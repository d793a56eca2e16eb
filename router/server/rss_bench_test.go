package server_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/anvil-llm/anvil/internal/logwriter"
	"github.com/anvil-llm/anvil/router/config"
	"github.com/anvil-llm/anvil/router/config/load"
	"github.com/anvil-llm/anvil/router/server"
)

// The hostile-memory harness of issue 13: a real router in its own process (this test binary,
// re-executed as TestRouterProcess), 100 concurrent 1 MiB bodies for an unknown model, and the
// router process's resident memory read from /proc/PID/status (VmHWM is the peak). Run it with
//
//	go test -run '^$' -bench BenchmarkHostileBodiesRSS -benchtime 1x ./router/server/
//
// ANVIL_RSS_EXTRA adds YAML under the router config's limits (max_inflight_body_bytes, say).

const (
	rssChildEnv = "ANVIL_RSS_CHILD_CONFIG"
	childLogEnv = "ANVIL_ROUTER_PROCESS_LOG" // set: the router process logs like anvil-router serve
	// childMemEnv names a file prefix: on SIGUSR1 the router process writes PREFIX.heap (a heap
	// profile), PREFIX.goroutine (the goroutines grouped by stack) and PREFIX.memstats (runtime.MemStats,
	// the goroutine count and the runtime's starting stack size, as JSON), to see where its resident memory goes.
	childMemEnv = "ANVIL_ROUTER_PROCESS_MEM"
	// childMaxStackEnv, in bytes, caps every goroutine's stack once the router is serving: the
	// process dies with the stack of the first goroutine that needs more (runtime/debug.SetMaxStack),
	// to find which path makes a handler's stack grow.
	childMaxStackEnv = "ANVIL_ROUTER_PROCESS_MAX_STACK"
)

// rssConfig is the example config's 4 MiB body limit in front of a direct tier that is never
// reached: every hostile body names a model no alias declares.
func rssConfig() string {
	return "listen: 127.0.0.1:0\nshutdown_grace: 1s\nlimits:\n  max_body_bytes: 4194304\n" + os.Getenv("ANVIL_RSS_EXTRA") +
		"aliases: [{id: chat, tier: solo}]\ntiers:\n  - id: solo\n    kind: direct\n    served_model: m\n    endpoint: http://127.0.0.1:1\n    gates: {max_context_tokens: 4096}\n"
}

// TestRouterProcess is the router side of BenchmarkHostileBodiesRSS (and of bench/router-cost.sh's
// profiled runs); it runs only when one of them starts it. It serves until its stdin closes and
// prints its address first.
func TestRouterProcess(t *testing.T) {
	yaml := os.Getenv(rssChildEnv)
	if yaml == "" {
		t.Skip("the router process of BenchmarkHostileBodiesRSS")
	}
	// The process's own environment and token files, as anvil-router serve reads them.
	cfg, err := load.ParseWith([]byte(yaml), config.Sources{LookupEnv: os.LookupEnv, ReadFile: load.ReadTokenFile})
	if err != nil {
		t.Fatal(err)
	}
	var opts server.Options
	if os.Getenv(childLogEnv) != "" { // the binary's text log on stderr (bench/router-cost.sh profiles this process)
		out := logwriter.New(os.Stderr, 0)
		defer out.Close()
		opts.Logger = slog.New(slog.NewTextHandler(out, &slog.HandlerOptions{Level: cfg.Log().SlogLevel()}))
	}
	gcLog := opts.Logger
	if gcLog == nil {
		gcLog = slog.New(slog.DiscardHandler)
	}
	server.ApplyRuntime(cfg.Runtime(), gcLog) // the collector as anvil-router serve sets it
	srv, err := server.New(cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin)
		cancel()
	}()
	if prefix := os.Getenv(childMemEnv); prefix != "" {
		dumpMemoryOnSignal(t, prefix)
	}
	if v := os.Getenv(childMaxStackEnv); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 {
			t.Fatalf("%s must be a positive number of bytes", childMaxStackEnv)
		}
		debug.SetMaxStack(n)
	}
	fmt.Printf("ADDR %s\n", ln.Addr())
	if err := srv.Serve(ctx, ln); err != nil {
		t.Fatal(err)
	}
}

// dumpMemoryOnSignal writes a heap profile and the runtime's memory statistics each time the process
// gets SIGUSR1: a diagnostic for the RSS benchmarks, never part of a measured figure.
func dumpMemoryOnSignal(t *testing.T, prefix string) {
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGUSR1)
	go func() {
		for range sig {
			writeMemory(t, prefix)
			fmt.Println("MEMORY WRITTEN") // the benchmark waits for this line
		}
	}()
}

func writeMemory(t *testing.T, prefix string) {
	var stats struct {
		runtime.MemStats
		Goroutines int
		// The size new goroutines start with: the runtime's running average of stack use.
		StackStartingSize uint64
	}
	runtime.ReadMemStats(&stats.MemStats)
	stats.Goroutines = runtime.NumGoroutine()
	sample := []metrics.Sample{{Name: "/gc/stack/starting-size:bytes"}}
	metrics.Read(sample)
	stats.StackStartingSize = sample[0].Value.Uint64()
	b, _ := json.MarshalIndent(stats, "", "  ")
	if err := os.WriteFile(prefix+".memstats", b, 0o600); err != nil {
		t.Log(err)
	}
	for name, level := range map[string]int{"heap": 0, "goroutine": 1} { // goroutines grouped by stack, with counts
		f, err := os.Create(prefix + "." + name)
		if err != nil {
			t.Log(err)
			continue
		}
		_ = pprof.Lookup(name).WriteTo(f, level)
		_ = f.Close()
	}
}

// hostileKeys is issue 13's body: about 90,000 small keys in 1 MiB, for an unknown model.
func hostileKeys() []byte {
	var b bytes.Buffer
	b.WriteString(`{"model":"nope","messages":[{"role":"user","content":"hi"}]`)
	for i := 0; b.Len() < 1<<20-16; i++ {
		fmt.Fprintf(&b, `,"k%d":0`, i)
	}
	b.WriteString("}")
	return b.Bytes()
}

// hostileString is one 1 MiB JSON string for an unknown model.
func hostileString() []byte {
	return []byte(`{"model":"nope","messages":[{"role":"user","content":"hi"}],"x":"` + strings.Repeat("a", 1<<20-80) + `"}`)
}

// procStatus reads the kB figures of /proc/PID/status.
func procStatus(pid int) (map[string]int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return nil, err
	}
	out := map[string]int64{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		name, rest, ok := strings.Cut(sc.Text(), ":")
		fields := strings.Fields(rest)
		if !ok || len(fields) != 2 || fields[1] != "kB" {
			continue
		}
		if n, err := strconv.ParseInt(fields[0], 10, 64); err == nil {
			out[name] = n
		}
	}
	return out, nil
}

// BenchmarkHostileBodiesRSS runs each body shape in two ways: "burst" sends 100 bodies at once, and
// "held" sends each with Expect: 100-continue (the body follows once the router starts reading it) and
// holds its last byte until all 100 clients have sent the rest or been answered, so the router holds
// every body it accepted at the same time (the worst case: slow senders).
func BenchmarkHostileBodiesRSS(b *testing.B) {
	for _, shape := range []struct {
		name string
		body []byte
	}{{"90k-keys", hostileKeys()}, {"1MiB-string", hostileString()}} {
		for _, held := range []bool{false, true} {
			mode := "burst"
			if held {
				mode = "held"
			}
			b.Run(shape.name+"/"+mode, func(b *testing.B) { hostileRSS(b, shape.body, held) })
		}
	}
}

// heldBody yields all but its last byte, reports that once (arrived), and yields the last byte only
// after release is closed.
type heldBody struct {
	body    []byte
	pos     int
	arrived func()
	release <-chan struct{}
}

func (h *heldBody) Read(p []byte) (int, error) {
	if h.pos >= len(h.body) {
		return 0, io.EOF
	}
	if h.pos == len(h.body)-1 {
		h.arrived()
		<-h.release
	}
	end := len(h.body) - 1
	if h.pos == end {
		end++
	}
	n := copy(p, h.body[h.pos:end])
	h.pos += n
	return n, nil
}

func hostileRSS(b *testing.B, body []byte, held bool) {
	cmd := exec.Command(os.Args[0], "-test.run=^TestRouterProcess$")
	cmd.Env = append(os.Environ(), rssChildEnv+"="+rssConfig(),
		"ANVIL_API_TOKEN="+callerToken, "ANVIL_ADMIN_TOKEN="+adminToken)
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
	defer func() {
		_ = stdin.Close()
		_ = cmd.Wait()
	}()
	sc := bufio.NewScanner(stdout)
	var addr string
	for sc.Scan() {
		if a, ok := strings.CutPrefix(sc.Text(), "ADDR "); ok {
			addr = a
			break
		}
	}
	if addr == "" {
		b.Fatal("the router process printed no address")
	}
	go func() { _, _ = io.Copy(io.Discard, stdout) }()
	pid := cmd.Process.Pid
	base, err := procStatus(pid)
	if err != nil {
		b.Fatal(err)
	}

	const clients = 100
	// A long ExpectContinueTimeout: a held body waits for the router's 100 Continue, not for a timer.
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: clients, MaxConnsPerHost: clients,
		ExpectContinueTimeout: time.Hour}}
	statuses := map[string]int{}
	var mu sync.Mutex
	for b.Loop() {
		start, release := make(chan struct{}), make(chan struct{})
		arrivals := make(chan struct{}, clients)
		var wg sync.WaitGroup
		for range clients {
			var once sync.Once
			arrived := func() { once.Do(func() { arrivals <- struct{}{} }) }
			wg.Go(func() {
				var rd io.Reader = bytes.NewReader(body)
				if held {
					rd = &heldBody{body: body, arrived: arrived, release: release}
				}
				req, _ := http.NewRequest(http.MethodPost, "http://"+addr+"/v1/chat/completions", rd)
				req.ContentLength = int64(len(body))
				req.Header.Set("Authorization", "Bearer "+callerToken)
				if held {
					req.Header.Set("Expect", "100-continue")
				}
				<-start
				resp, err := client.Do(req)
				arrived()
				status := "error"
				if err == nil {
					_, _ = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					status = strconv.Itoa(resp.StatusCode)
				}
				mu.Lock()
				statuses[status]++
				mu.Unlock()
			})
		}
		close(start)
		for range clients {
			<-arrivals
		}
		close(release)
		wg.Wait()
	}
	after, err := procStatus(pid)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(base["VmRSS"])/1024, "base-RSS-MB")
	b.ReportMetric(float64(after["VmHWM"])/1024, "peak-RSS-MB")
	b.ReportMetric(float64(after["VmRSS"])/1024, "after-RSS-MB")
	b.Logf("statuses %v; body %d bytes", statuses, len(body))
}
