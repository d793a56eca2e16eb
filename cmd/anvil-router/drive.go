package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/anvil-llm/anvil/router/decisionlog"
	"github.com/anvil-llm/anvil/router/server"
)

// driveConcurrency is how many demo clients send at once: enough to keep both members busy so the
// scheduler has real choices to make, and within the tier's ceiling, so nothing is refused.
const driveConcurrency = 8

// shot is one kind of demo request.
type shot struct {
	path, alias, body string
	stream            bool
	done              string // the marker a complete stream ends with
}

var shots = []shot{
	{"/v1/chat/completions", "demo-chat", `"messages":[{"role":"user","content":"Tell me about anvils."}],"max_tokens":24`, false, ""},
	{"/v1/chat/completions", "demo-chat", `"messages":[{"role":"user","content":"Stream a haiku."}],"max_tokens":32,"stream":true,"stream_options":{"include_usage":true}`, true, "data: [DONE]"},
	{"/v1/responses", "demo-chat", `"input":"Summarize continuous batching.","max_output_tokens":24,"stream":true`, true, "response.completed"},
	{"/v1/completions", "demo-chat", `"prompt":"Once upon a time","max_tokens":16`, false, ""},
	{"/v1/chat/completions", "demo-direct", `"messages":[{"role":"user","content":"Hi direct tier."}],"max_tokens":8`, false, ""},
}

type driveReport struct {
	sent, ok int
	failures map[string]int
	elapsed  time.Duration
}

// drive sends n requests through the router over real HTTP and checks every response end to end.
func drive(ctx context.Context, base, token string, n int) (driveReport, error) {
	client := &http.Client{Timeout: time.Minute}
	jobs := make(chan int)
	rep := driveReport{failures: map[string]int{}}
	var mu sync.Mutex
	var wg sync.WaitGroup
	start := time.Now()
	for range driveConcurrency {
		wg.Go(func() {
			for i := range jobs {
				err := send(ctx, client, base, token, shots[i%len(shots)])
				mu.Lock()
				rep.sent++
				if err != nil {
					rep.failures[err.Error()]++
				} else {
					rep.ok++
				}
				mu.Unlock()
			}
		})
	}
	for i := range n {
		select {
		case jobs <- i:
		case <-ctx.Done():
		}
	}
	close(jobs)
	wg.Wait()
	rep.elapsed = time.Since(start)
	if rep.ok != n {
		return rep, fmt.Errorf("demo: %d of %d requests failed", n-rep.ok, n)
	}
	return rep, nil
}

func send(ctx context.Context, client *http.Client, base, token string, s shot) error {
	body := `{"model":"` + s.alias + `",` + s.body + `}`
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+s.path, strings.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return errors.New("transport error")
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		_, _ = io.Copy(io.Discard, resp.Body)
		return fmt.Errorf("status %d on %s", resp.StatusCode, s.path)
	}
	if !s.stream {
		_, err := io.Copy(io.Discard, resp.Body)
		return err
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	var last []byte
	for sc.Scan() {
		if line := bytes.TrimSpace(sc.Bytes()); len(line) > 0 {
			last = append(last[:0], line...)
		}
	}
	if err := sc.Err(); err != nil {
		return errors.New("stream read error")
	}
	if !bytes.Contains(last, []byte(s.done)) {
		return fmt.Errorf("stream on %s ended without %q", s.path, s.done)
	}
	return nil
}

func printReport(out io.Writer, rep driveReport, members *demoEnv, srv *server.Server) {
	fmt.Fprintf(out, "drove %d requests (%d ok) in %s with %d concurrent clients\n",
		rep.sent, rep.ok, rep.elapsed.Round(time.Millisecond), driveConcurrency)
	msgs := make([]string, 0, len(rep.failures))
	for msg := range rep.failures {
		msgs = append(msgs, msg)
	}
	sort.Strings(msgs)
	for _, msg := range msgs {
		fmt.Fprintf(out, "  failed: %d x %s\n", rep.failures[msg], msg)
	}
	fmt.Fprintln(out, "\nwhat each member served (engine-side finished requests):")
	for i, m := range members.replicas.Members() {
		met := m.Server().Metrics()
		fmt.Fprintf(out, "  demo-replicas/vllm-%d  %4d requests, %6d generated tokens\n",
			i, met.Success.Total(), met.GenerationTokens)
	}
	met := members.direct.Members()[0].Server().Metrics()
	fmt.Fprintf(out, "  demo-single (direct)   %4d requests, %6d generated tokens\n", met.Success.Total(), met.GenerationTokens)
	fmt.Fprintln(out, "\ndecision summary:")
	fmt.Fprint(out, decisionlog.Summarize(srv.Decisions().Recent(1<<30)).Text())
}
