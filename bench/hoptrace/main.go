// Command hoptrace sends streamed chat completions one at a time, a pause before each, rotating over
// the targets (the member directly, the router, the bare proxy), and prints per target the medians of
// the client's own per-hop times: connection (reused?), request written, first response byte, headers,
// first data frame, first content frame, end. With -router-log it joins the TRACE lines an
// instrumented router (router.patch) wrote for the routed requests, in request order, and prints the
// router's hop times on the same clock (time since the client started the request).
package main

import (
	"bufio"
	"bytes"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/httptrace"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

type sample struct {
	start                                                         time.Time
	conn, wrote, firstByte, headers, firstData, firstContent, end time.Duration
	reused                                                        bool
}

type target struct{ label, url, model, token string }

func one(c *http.Client, t target, body []byte) (sample, error) {
	req, err := http.NewRequest(http.MethodPost, t.url+"/v1/chat/completions", bytes.NewReader(body))
	if err != nil {
		return sample{}, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	if t.token != "" {
		req.Header.Set("Authorization", "Bearer "+t.token)
	}
	s := sample{start: time.Now()}
	since := func() time.Duration { return time.Since(s.start) }
	req = req.WithContext(httptrace.WithClientTrace(req.Context(), &httptrace.ClientTrace{
		GotConn:              func(i httptrace.GotConnInfo) { s.conn, s.reused = since(), i.Reused },
		WroteRequest:         func(httptrace.WroteRequestInfo) { s.wrote = since() },
		GotFirstResponseByte: func() { s.firstByte = since() },
	}))
	resp, err := c.Do(req)
	if err != nil {
		return s, err
	}
	defer resp.Body.Close()
	s.headers = since()
	br := bufio.NewReader(resp.Body)
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			break
		}
		if !strings.HasPrefix(line, "data: ") {
			continue
		}
		at := since()
		if s.firstData == 0 {
			s.firstData = at
		}
		if s.firstContent == 0 && strings.Contains(line, `"content":"`) && !strings.Contains(line, `"content":""`) {
			s.firstContent = at
		}
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	s.end = since()
	if resp.StatusCode != http.StatusOK || s.firstContent == 0 {
		return s, fmt.Errorf("%s: status %d, no content frame", t.label, resp.StatusCode)
	}
	return s, nil
}

func median(xs []float64) float64 {
	ys := slices.Clone(xs)
	slices.Sort(ys)
	return ys[len(ys)/2]
}

func us(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e3 }

func main() {
	var targetsFlag, routerLog, token, model string
	n := flag.Int("n", 60, "requests per target")
	out := flag.Int("output-tokens", 4, "max_tokens of each request")
	words := flag.Int("prompt-words", 256, "words in the prompt")
	gap := flag.Duration("gap", 300*time.Millisecond, "pause before each request")
	flag.StringVar(&targetsFlag, "targets", "", "LABEL=URL[=MODEL],... (MODEL defaults to -model; the label routed gets -token)")
	flag.StringVar(&model, "model", "bench/zero", "the members' model")
	flag.StringVar(&token, "token", "", "the router's caller token")
	flag.StringVar(&routerLog, "router-log", "", "the instrumented router's stderr, read at the end")
	flag.Parse()
	var targets []target
	for _, kv := range strings.Split(targetsFlag, ",") {
		parts := strings.SplitN(kv, "=", 3)
		if len(parts) < 2 {
			fmt.Fprintln(os.Stderr, "hoptrace: -targets LABEL=URL[=MODEL],...")
			os.Exit(2)
		}
		t := target{label: parts[0], url: parts[1], model: model}
		if len(parts) == 3 {
			t.model = parts[2]
		}
		if t.label == "routed" {
			t.token = token
		}
		targets = append(targets, t)
	}
	prompt := strings.Repeat("hello ", *words)
	clients := map[string]*http.Client{}
	res := map[string][]sample{}
	for i := -1; i < *n; i++ { // round -1 warms each target's connection and is not counted
		for k := range targets {
			t := targets[(k+max(i, 0))%len(targets)]
			if clients[t.label] == nil {
				clients[t.label] = &http.Client{Transport: &http.Transport{IdleConnTimeout: 30 * time.Second, DisableCompression: true}}
			}
			time.Sleep(*gap)
			body := fmt.Appendf(nil, `{"model":%q,"messages":[{"role":"user","content":%q}],"max_tokens":%d,"stream":true,"ignore_eos":true}`,
				t.model, prompt, *out)
			s, err := one(clients[t.label], t, body)
			if err != nil {
				fmt.Fprintln(os.Stderr, "hoptrace:", err)
				os.Exit(1)
			}
			if i >= 0 {
				res[t.label] = append(res[t.label], s)
			}
		}
	}
	fmt.Printf("client side, medians in µs over %d requests a target (%s before each)\n", *n, *gap)
	fmt.Printf("%-8s %8s %8s %8s %9s %9s %9s %9s %9s\n", "target", "reused", "conn", "wrote", "1st byte", "headers", "1st data", "1st cont", "end")
	for _, t := range targets {
		ss := res[t.label]
		col := func(f func(sample) time.Duration) float64 {
			var xs []float64
			for _, s := range ss {
				xs = append(xs, us(f(s)))
			}
			return median(xs)
		}
		reused := 0
		for _, s := range ss {
			if s.reused {
				reused++
			}
		}
		fmt.Printf("%-8s %4d/%-3d %8.0f %8.0f %8.0f %9.0f %9.0f %9.0f %9.0f\n", t.label, reused, len(ss),
			col(func(s sample) time.Duration { return s.conn }), col(func(s sample) time.Duration { return s.wrote }),
			col(func(s sample) time.Duration { return s.firstByte }), col(func(s sample) time.Duration { return s.headers }),
			col(func(s sample) time.Duration { return s.firstData }), col(func(s sample) time.Duration { return s.firstContent }),
			col(func(s sample) time.Duration { return s.end }))
	}
	if routerLog != "" {
		joinRouter(routerLog, res["routed"])
	}
}

// joinRouter prints the instrumented router's hop times for the routed requests (the last len(ss)
// TRACE triples of the log, in order), on the client's clock: time since the client started each.
func joinRouter(path string, ss []sample) {
	data, err := os.ReadFile(path)
	if err != nil {
		fmt.Fprintln(os.Stderr, "hoptrace:", err)
		os.Exit(1)
	}
	kv := regexp.MustCompile(`(\w+)=(-?\d+)`)
	var serve []int64
	var front, relay []map[string]int64
	for _, line := range strings.Split(string(data), "\n") {
		m := map[string]int64{}
		for _, p := range kv.FindAllStringSubmatch(line, -1) {
			v, _ := strconv.ParseInt(p[2], 10, 64)
			m[p[1]] = v
		}
		switch {
		case strings.Contains(line, "TRACE serve="):
			serve = append(serve, m["serve"])
		case strings.Contains(line, "TRACE front"):
			front = append(front, m)
		case strings.Contains(line, "TRACE relay"):
			relay = append(relay, m)
		}
	}
	n := len(ss)
	if len(serve) < n || len(front) < n || len(relay) < n {
		fmt.Fprintln(os.Stderr, "hoptrace: the router log has fewer TRACE lines than routed requests")
		os.Exit(1)
	}
	serve, front, relay = serve[len(serve)-n:], front[len(front)-n:], relay[len(relay)-n:]
	hops := []struct {
		name string
		at   func(i int) int64
	}{
		{"client: request written", func(i int) int64 { return ss[i].start.UnixNano() + ss[i].wrote.Nanoseconds() }},
		{"router: ServeHTTP called", func(i int) int64 { return serve[i] }},
		{"router: proxy handler entered (after middleware)", func(i int) int64 { return front[i]["entry"] }},
		{"router: body read and parsed", func(i int) int64 { return front[i]["parsed"] }},
		{"router: resolved and admitted", func(i int) int64 { return front[i]["admitted"] }},
		{"router: relay starts the upstream request", func(i int) int64 { return relay[i]["send"] }},
		{"router: upstream connection got", func(i int) int64 { return abs(relay[i]["conn"]) }},
		{"router: upstream request written", func(i int) int64 { return relay[i]["wrote"] }},
		{"router: upstream response headers (1st byte)", func(i int) int64 { return relay[i]["fb"] }},
		{"router: first upstream event read", func(i int) int64 { return relay[i]["firstev"] }},
		{"router: headers+first event written, flushed", func(i int) int64 { return relay[i]["fwd"] }},
		{"client: first response byte", func(i int) int64 { return ss[i].start.UnixNano() + ss[i].firstByte.Nanoseconds() }},
		{"client: first content frame", func(i int) int64 { return ss[i].start.UnixNano() + ss[i].firstContent.Nanoseconds() }},
	}
	reused := 0
	for i := range n {
		if relay[i]["conn"] > 0 {
			reused++
		}
	}
	fmt.Printf("\nrouted requests on one clock (µs since the client started the request; median, p10, p90); upstream connection reused %d/%d\n", reused, n)
	for _, h := range hops {
		var xs []float64
		for i := range n {
			xs = append(xs, float64(h.at(i)-ss[i].start.UnixNano())/1e3)
		}
		slices.Sort(xs)
		fmt.Printf("  %-48s %9.0f %9.0f %9.0f\n", h.name, xs[n/2], xs[n/10], xs[9*n/10])
	}
}

func abs(x int64) int64 { return max(x, -x) }
