package server_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/anvil-llm/anvil/router/config"
	"github.com/anvil-llm/anvil/router/config/load"
	"github.com/anvil-llm/anvil/router/server"
)

// wideYAML is 16 capacity tiers of 16 members each (256 members: the pressure cache's bound), each
// on its own loopback port (never contacted: the benchmark serves no request), with member ceilings
// of ceiling.
func wideYAML(ceiling int) string {
	var sb strings.Builder
	sb.WriteString("listen: 127.0.0.1:0\naliases:\n")
	for t := range 16 {
		fmt.Fprintf(&sb, "  - {id: chat%02d, tier: t%02d}\n", t, t)
	}
	sb.WriteString("tiers:\n")
	for t := range 16 {
		fmt.Fprintf(&sb, "  - id: t%02d\n    kind: replica\n    served_model: test/llama\n    host: 127.0.0.1\n", t)
		sb.WriteString("    provenance: bench\n    replica_strategy: capacity\n    gates: {max_context_tokens: 8192}\n    members:\n")
		for m := range 16 {
			fmt.Fprintf(&sb, "      - {id: m%02d, endpoint: %s, max_concurrency: %d}\n", m, fmt.Sprintf("http://127.0.0.1:%d", 20000+t*16+m), ceiling)
		}
	}
	return sb.String()
}

func parseBench(b *testing.B, yaml string) config.Config {
	b.Helper()
	cfg, err := load.Parse([]byte(yaml), env)
	if err != nil {
		b.Fatal(err)
	}
	return cfg
}

// BenchmarkReloadSwap measures Server.Reload from the call to the swap for a 16-tier, 256-member
// capacity config whose every member ceiling moves: the whole next generation is built and
// validated (admission, passive health, readiness and pressure staged) and published.
func BenchmarkReloadSwap(b *testing.B) {
	cfgs := []config.Config{parseBench(b, wideYAML(100)), parseBench(b, wideYAML(200))}
	srv, err := server.New(cfgs[0], server.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer srv.Close()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		if _, err := srv.Reload(context.Background(), cfgs[(i+1)%2], fmt.Sprintf("%064x", i)); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRequestDuringReloads measures loopback request latency through a real router to a
// zero-latency member, steady and with 10 reloads a second in the same run; it reports p50 and p99.
func BenchmarkRequestDuringReloads(b *testing.B) {
	up, up2 := zeroUpstream(b), zeroUpstream(b)
	yaml := func(ceiling int) string {
		return fmt.Sprintf(`listen: 127.0.0.1:0
aliases: [{id: chat, tier: replicas}]
tiers:
  - id: replicas
    kind: replica
    served_model: test/llama
    host: 127.0.0.1
    provenance: bench
    replica_strategy: capacity
    gates: {max_context_tokens: 8192}
    members:
      - {id: m00, endpoint: %[1]s, max_concurrency: %[2]d}
      - {id: m01, endpoint: %[3]s, max_concurrency: %[2]d}
`, up.URL, ceiling, up2.URL)
	}
	cfgs := []config.Config{parseBench(b, yaml(1000)), parseBench(b, yaml(2000))}
	srv, err := server.New(cfgs[0], server.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer srv.Close()
	srv.ProbeNow(context.Background())
	front := httptest.NewServer(srv.Handler())
	defer front.Close()
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 8}}
	body := `{"model":"chat","messages":[{"role":"user","content":"hello"}],"max_tokens":4}`
	post := func() time.Duration {
		req, _ := http.NewRequest(http.MethodPost, front.URL+"/v1/chat/completions", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+callerToken)
		start := time.Now()
		resp, err := client.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			b.Fatalf("status %d", resp.StatusCode)
		}
		return time.Since(start)
	}
	for _, reloading := range []bool{false, true} {
		name := "steady"
		if reloading {
			name = "reloads_10_per_s"
		}
		b.Run(name, func(b *testing.B) {
			stop := make(chan struct{})
			var wg sync.WaitGroup
			if reloading {
				wg.Go(func() {
					tick := time.NewTicker(100 * time.Millisecond)
					defer tick.Stop()
					for i := 0; ; i++ {
						select {
						case <-stop:
							return
						case <-tick.C:
							if _, err := srv.Reload(context.Background(), cfgs[i%2], fmt.Sprintf("%064x", i)); err != nil {
								b.Error(err)
								return
							}
						}
					}
				})
			}
			var lat []time.Duration
			b.ReportAllocs()
			for b.Loop() {
				lat = append(lat, post())
			}
			close(stop)
			wg.Wait()
			slices.Sort(lat)
			b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
			b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
		})
	}
}
