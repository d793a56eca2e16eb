package demo

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/anvil-llm/anvil/internal/wav"
	"github.com/anvil-llm/anvil/router/decisionlog"
)

// driveConcurrency is how many demo clients send at once: enough to keep both members busy so the
// scheduler has real choices to make, and within the tier's ceiling, so nothing is refused.
const driveConcurrency = 8

// shot is one kind of demo request.
type shot struct {
	path, alias, body string
	stream            bool
	done              string // the marker a complete stream ends with
	upload            string // the file name of a multipart audio upload (body holds its form fields)
	audio             bool   // the answer is a WAV file
}

// demoClip is the demo's uploaded audio: one second of 16 kHz 16-bit mono silence, as a WAV file.
var demoClip = wavSilence(16000)

var shots = []shot{
	{"/v1/chat/completions", "demo-chat", `"messages":[{"role":"user","content":"Tell me about anvils."}],"max_tokens":24`, false, "", "", false},
	{"/v1/chat/completions", "demo-chat", `"messages":[{"role":"user","content":"Stream a haiku."}],"max_tokens":32,"stream":true,"stream_options":{"include_usage":true}`, true, "data: [DONE]", "", false},
	{"/v1/responses", "demo-chat", `"input":"Summarize continuous batching.","max_output_tokens":24,"stream":true`, true, "response.completed", "", false},
	{"/v1/completions", "demo-chat", `"prompt":"Once upon a time","max_tokens":16`, false, "", "", false},
	{"/v1/chat/completions", "demo-direct", `"messages":[{"role":"user","content":"Hi direct tier."}],"max_tokens":8`, false, "", "", false},
	{"/v1/audio/transcriptions", "demo-whisper", "language=en", false, "", "clip.wav", false},
	{"/v1/audio/speech", "demo-whisper", `"input":"Anvils ring when struck.","voice":"alloy"`, false, "", "", true},
}

// Report is what a driven demo did: requests sent and answered whole, per route, and each failure.
type Report struct {
	sent, ok int
	byPath   map[string]int // successful requests per route
	failures map[string]int
	elapsed  time.Duration
}

// readyBound bounds how long a driven demo waits for every replica member to be probed ready: on a
// loaded machine a first probe can time out, and the next comes a readiness interval later.
const readyBound = 30 * time.Second

// Drive sends n requests through the router at base over real HTTP and checks every response end
// to end. It first waits until /readyz reports every replica member ready, so the requests spread
// over all the members instead of racing the first probe round.
func Drive(ctx context.Context, base, token string, n int) (Report, error) {
	client := &http.Client{Timeout: time.Minute}
	if err := awaitReady(ctx, client, base); err != nil {
		return Report{failures: map[string]int{}}, err
	}
	jobs := make(chan int)
	rep := Report{byPath: map[string]int{}, failures: map[string]int{}}
	var mu sync.Mutex
	var wg sync.WaitGroup
	start := time.Now()
	for range driveConcurrency {
		wg.Go(func() {
			for i := range jobs {
				s := shots[i%len(shots)]
				err := send(ctx, client, base, token, s, traceparent(i))
				mu.Lock()
				rep.sent++
				if err != nil {
					rep.failures[err.Error()]++
				} else {
					rep.ok++
					rep.byPath[s.path]++
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

func send(ctx context.Context, client *http.Client, base, token string, s shot, parent string) error {
	body, contentType := []byte(`{"model":"`+s.alias+`",`+s.body+`}`), "application/json"
	if s.upload != "" {
		var err error
		if body, contentType, err = uploadForm(s); err != nil {
			return err
		}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+s.path, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", contentType)
	req.Header.Set("Traceparent", parent) // trace.go: the router forwards it to the member
	resp, err := client.Do(req)
	if err != nil {
		return errors.New("transport error")
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		_, _ = io.Copy(io.Discard, resp.Body)
		return fmt.Errorf("status %d on %s", resp.StatusCode, s.path)
	}
	if s.audio {
		return checkWAV(resp)
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

// uploadForm is a shot's multipart form as the OpenAI SDKs send it: the fields (model first), then
// the file.
func uploadForm(s shot) ([]byte, string, error) {
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	fields := [][2]string{{"model", s.alias}}
	for _, kv := range strings.Split(s.body, "&") {
		if k, v, ok := strings.Cut(kv, "="); ok {
			fields = append(fields, [2]string{k, v})
		}
	}
	for _, f := range fields {
		if err := mw.WriteField(f[0], f[1]); err != nil {
			return nil, "", err
		}
	}
	w, err := mw.CreateFormFile("file", s.upload)
	if err != nil {
		return nil, "", err
	}
	if _, err := w.Write(demoClip); err != nil {
		return nil, "", err
	}
	if err := mw.Close(); err != nil {
		return nil, "", err
	}
	return buf.Bytes(), mw.FormDataContentType(), nil
}

// checkWAV reads a speech answer whole and checks it is a complete WAV file.
func checkWAV(resp *http.Response) error {
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return errors.New("speech read error")
	}
	if resp.Header.Get("Content-Type") != "audio/wav" || len(b) < 44 || string(b[:4]) != "RIFF" || string(b[8:12]) != "WAVE" ||
		int(binary.LittleEndian.Uint32(b[40:44])) != len(b)-44 {
		return errors.New("speech answer is not a complete WAV file")
	}
	return nil
}

// wavSilence is a WAV file of n samples of 16 kHz 16-bit mono silence.
func wavSilence(n int) []byte {
	data := 2 * n
	h := wav.Header(wav.Format{SampleRate: 16000, Channels: 1, BitsPerSample: 16}, uint32(data))
	return append(h[:], make([]byte, data)...)
}

// Print writes the report, what each member's engine finished and the summary of the router's
// decision records.
func (rep Report) Print(out io.Writer, members *Members, decisions []decisionlog.Record) {
	fmt.Fprintf(out, "drove %d requests (%d ok) in %s with %d concurrent clients\n",
		rep.sent, rep.ok, rep.elapsed.Round(time.Millisecond), driveConcurrency)
	paths := make([]string, 0, len(rep.byPath))
	for p := range rep.byPath {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, p := range paths {
		fmt.Fprintf(out, "  %-26s %4d ok\n", p, rep.byPath[p])
	}
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
	met = members.audio.Members()[0].Server().Metrics()
	fmt.Fprintf(out, "  demo-audio (direct)    %4d requests, %6d generated tokens (transcript words, audio tokens)\n",
		met.Success.Total(), met.GenerationTokens)
	printTraces(out, members, decisions)
	fmt.Fprintln(out, "\ndecision summary:")
	fmt.Fprint(out, decisionlog.Summarize(decisions).Text())
}

// awaitReady polls /readyz until every replica member is ready, for at most readyBound.
func awaitReady(ctx context.Context, client *http.Client, base string) error {
	ctx, cancel := context.WithTimeout(ctx, readyBound)
	defer cancel()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for !allReady(ctx, client, base) {
		select {
		case <-ctx.Done():
			return fmt.Errorf("demo: the members were not all ready within %s", readyBound)
		case <-tick.C:
		}
	}
	return nil
}

// allReady reports whether /readyz answers ready with every member of every replica tier ready.
func allReady(ctx context.Context, client *http.Client, base string) bool {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/readyz", nil)
	if err != nil {
		return false
	}
	resp, err := client.Do(req)
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	var body struct {
		Ready bool `json:"ready"`
		Tiers []struct {
			Ready   int `json:"ready"`
			Members int `json:"members"`
		} `json:"tiers"`
	}
	if resp.StatusCode != http.StatusOK || json.NewDecoder(resp.Body).Decode(&body) != nil || !body.Ready {
		return false
	}
	for _, t := range body.Tiers {
		if t.Ready != t.Members {
			return false
		}
	}
	return true
}
