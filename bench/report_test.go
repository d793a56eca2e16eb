package bench

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// sampleRun is a small hand-made run: two targets, a warm-up, successes streamed and not, and
// failures of several classes.
func sampleRun() (RawHeader, []Record) {
	h := RawHeader{
		Format: RawFormat, Label: "capacity", Scenario: "twenty-concurrent", Seed: 20, Endpoint: "chat", Mode: "closed",
		Load: "closed loop: 2 clients", SLO: SLOMillis{TTFT: 100, TPOT: 20, E2EL: 1000},
		Targets: []TargetInfo{{Name: "direct", Model: "m", URLs: 2}, {Name: "routed", Model: "chat", URLs: 1, Stopped: "interrupted"}},
	}
	recs := []Record{
		{Target: "direct", ID: 0, Warmup: true, Stream: true, Chunks: []time.Duration{ms(5)}, End: ms(9), Status: 200, Outcome: OK, OutputTokens: 1},
		// TTFT 50, chunks 50/60/80, E2EL 100, 5 tokens: TPOT (100-50)/4 = 12.5; good.
		{Target: "direct", ID: 0, Stream: true, Start: 0, Chunks: []time.Duration{ms(50), ms(60), ms(80)}, End: ms(100), Status: 200,
			Outcome: OK, PromptTokens: 10, OutputTokens: 5, Usage: true},
		// TTFT 150 misses the 100 ms target.
		{Target: "direct", ID: 1, URL: 1, Stream: true, Scheduled: ms(10), Start: ms(12), Chunks: []time.Duration{ms(150), ms(170)}, End: ms(200),
			Status: 200, Outcome: OK, PromptTokens: 20, OutputTokens: 3, Usage: true},
		// Not streamed: 700 ms is its TTFT too, which misses the target.
		{Target: "direct", ID: 2, Start: ms(100), End: ms(700), Status: 200, Outcome: OK, PromptTokens: 30, OutputTokens: 4, Usage: true},
		{Target: "direct", ID: 3, URL: 1, Start: ms(200), End: ms(1), Status: 503, Outcome: HTTP503, RetryAfter: time.Second},
		// Routed: one fast good answer, one transport failure.
		{Target: "routed", ID: 0, Stream: true, Chunks: []time.Duration{ms(10), ms(20)}, End: ms(30), Status: 200, Outcome: OK,
			PromptTokens: 10, OutputTokens: 2, Usage: true},
		{Target: "routed", ID: 1, Stream: true, Start: ms(5), End: ms(40), Status: 200, Outcome: Transport, Detail: DetailTruncated},
	}
	return h, recs
}

func TestBuildResult(t *testing.T) {
	h, recs := sampleRun()
	results := Build(h, recs)
	require.Len(t, results, 2)
	d := results[0]
	assert.Equal(t, ResultFormat, d.Format)
	assert.Equal(t, "capacity", d.Label)
	assert.Equal(t, "twenty-concurrent", d.Scenario)
	assert.Equal(t, uint64(20), d.Seed)
	assert.Equal(t, 4, d.Requests)
	assert.Equal(t, 3, d.Completed)
	assert.Equal(t, 1, d.Failed)
	assert.Equal(t, 1, countOf(d.Outcomes, "http_503"))
	assert.Len(t, d.Outcomes, int(numOutcomes))
	assert.Equal(t, 1, countOf(d.WarmupOutcomes, "ok"))
	assert.Equal(t, []URLCount{{0, 2, 2}, {1, 2, 1}}, d.URLs)
	assert.Equal(t, 1, d.RetryAfter)
	assert.Equal(t, int64(60), d.TotalInputTokens)
	assert.Equal(t, int64(12), d.TotalOutputTokens)
	// The run lasted until its last request ended: 100 + 700 ms.
	assert.InDelta(t, 0.8, d.DurationS, 1e-12)
	assert.InDelta(t, 3/0.8, d.RequestThroughput, 1e-9)
	assert.InDelta(t, 12/0.8, d.OutputThroughput, 1e-9)
	assert.InDelta(t, 72/0.8, d.TotalTokenThroughput, 1e-9)
	require.NotNil(t, d.RequestGoodput)
	assert.InDelta(t, 1/0.8, *d.RequestGoodput, 1e-9)
	assert.Equal(t, 3, d.PeakConcurrency) // 0-100, 12-212, 100-800 overlap; the 503 at 200-201 too: max 3
	assert.Equal(t, 2, d.TTFT.N)
	assert.InDelta(t, 100, d.TTFT.Mean, 1e-9)
	assert.InDelta(t, 100, d.TTFT.P50, 1e-9)
	assert.InDelta(t, 140, d.TTFT.P90, 1e-9)
	assert.Equal(t, 2, d.TPOT.N)
	assert.InDelta(t, (12.5+25)/2, d.TPOT.Mean, 1e-9)
	assert.Equal(t, 3, d.ITL.N) // 10, 20 and 20
	assert.InDelta(t, 50.0/3, d.ITL.Mean, 1e-9)
	assert.Equal(t, 3, d.E2EL.N)
	assert.InDelta(t, 200, d.E2EL.P50, 1e-9)
	assert.InDelta(t, 200, d.SendLag.Max, 1e-9) // the 503 was scheduled at 0 and sent at 200 ms

	r := results[1]
	assert.Equal(t, "interrupted", r.Target.Stopped)
	assert.Equal(t, 2, r.Requests)
	assert.Equal(t, 1, r.Completed)
	assert.Equal(t, []Count{{"truncated", 1}}, r.Details)
	assert.Nil(t, r.WarmupOutcomes)
	assert.InDelta(t, 0.045, r.DurationS, 1e-12)
	assert.Equal(t, 2, r.PeakConcurrency)
}

// Only successful requests enter latency figures, however long the failures took.
func TestFailuresStayOutOfLatencies(t *testing.T) {
	h, _ := sampleRun()
	recs := []Record{{Target: "direct", Stream: true, Chunks: []time.Duration{ms(1)}, End: ms(2), Status: 200, Outcome: OK, OutputTokens: 1}}
	for _, o := range Outcomes()[1:] {
		recs = append(recs, Record{Target: "direct", Stream: true, Chunks: []time.Duration{ms(900)}, End: time.Hour, Status: 200, Outcome: o})
	}
	r := Build(h, recs)[0]
	assert.Equal(t, 1, r.TTFT.N)
	assert.Equal(t, 1.0, r.TTFT.Max)
	assert.Equal(t, 1, r.E2EL.N)
	assert.Equal(t, 2.0, r.E2EL.Max)
	assert.Equal(t, 0, r.ITL.N)
	assert.Equal(t, len(Outcomes())-1, r.Failed)
}

func TestGoodDefinition(t *testing.T) {
	slo := SLO{TTFT: ms(100), TPOT: ms(10), E2EL: ms(1000)}
	stream := func(chunks []time.Duration, end time.Duration, tokens int64) *Record {
		return &Record{Stream: true, Chunks: chunks, End: end, Outcome: OK, OutputTokens: tokens}
	}
	assert.True(t, stream([]time.Duration{ms(100)}, ms(190), 10).Good(slo), "at the targets is good")
	assert.False(t, stream([]time.Duration{ms(101)}, ms(190), 10).Good(slo))
	assert.False(t, stream([]time.Duration{ms(50)}, ms(1001), 1000).Good(slo))
	assert.False(t, stream([]time.Duration{ms(50)}, ms(200), 10).Good(slo), "TPOT 16.7 ms")
	assert.True(t, stream([]time.Duration{ms(50)}, ms(900), 1).Good(slo), "one token: TPOT counts as zero")
	assert.False(t, (&Record{End: ms(150), Outcome: OK}).Good(slo), "an ordinary answer's TTFT is its E2EL")
	assert.True(t, (&Record{End: ms(90), Outcome: OK, OutputTokens: 50}).Good(slo), "no TPOT for an ordinary answer")
	assert.False(t, (&Record{End: ms(1), Outcome: HTTP503}).Good(slo))
	assert.True(t, stream([]time.Duration{ms(500)}, ms(5000), 2).Good(SLO{}), "no targets: every success is good")
}

func TestCompare(t *testing.T) {
	h, recs := sampleRun()
	results := Build(h, recs)
	c := Compare(results[0], results[1])
	assert.Equal(t, ComparisonFormat, c.Format)
	require.Len(t, c.Added, 4)
	ttft := c.Added[0]
	assert.Equal(t, "ttft_ms", ttft.Metric)
	assert.InDelta(t, results[1].TTFT.P99-results[0].TTFT.P99, ttft.P99, 1e-12)
	assert.InDelta(t, 10-100, ttft.Mean, 1e-9)
	var rt Ratio
	for _, r := range c.Ratios {
		if r.Metric == "request_throughput" {
			rt = r
		}
	}
	assert.InDelta(t, results[1].RequestThroughput/results[0].RequestThroughput, rt.Ratio, 1e-12)
	names := map[string]bool{}
	for _, r := range c.Ratios {
		names[r.Metric] = true
	}
	for _, want := range []string{"request_goodput", "ttft_p50", "ttft_p99.9", "itl_p95", "e2el_p99", "tpot_p90"} {
		assert.True(t, names[want], want)
	}

	var text, md bytes.Buffer
	require.NoError(t, c.Text(&text))
	require.NoError(t, c.Markdown(&md))
	for _, want := range []string{"Direct vs routed", "P99.9 TTFT (ms)", "Request goodput (req/s)", "stopped early", "interrupted", "added (ms)"} {
		assert.Contains(t, text.String(), want)
		assert.Contains(t, md.String(), want)
	}
	out, err := json.Marshal(c)
	require.NoError(t, err)
	assert.Contains(t, string(out), `"added_latency_ms":[{"metric":"ttft_ms"`)
}

// The raw file round-trips every record, and a report rebuilt from it equals the original.
func TestRawRoundTrip(t *testing.T) {
	h, recs := sampleRun()
	var buf bytes.Buffer
	require.NoError(t, WriteRaw(&buf, h, recs))
	h2, recs2, err := ReadRaw(bytes.NewReader(buf.Bytes()))
	require.NoError(t, err)
	assert.Equal(t, h, h2)
	require.Len(t, recs2, len(recs))
	for i := range recs {
		if len(recs[i].Chunks) == 0 {
			recs[i].Chunks = nil
		}
		assert.Equal(t, recs[i], recs2[i])
	}
	a, _ := json.Marshal(Build(h, recs))
	b, _ := json.Marshal(Build(h2, recs2))
	assert.JSONEq(t, string(a), string(b))
}

// The raw reader is strict: every wrong input has a clear, fixed error and nothing is half-read.
func TestRawStrict(t *testing.T) {
	h, recs := sampleRun()
	var buf bytes.Buffer
	require.NoError(t, WriteRaw(&buf, h, recs[:2]))
	lines := strings.SplitAfter(buf.String(), "\n")
	header, rec := lines[0], strings.TrimSuffix(lines[2], "\n")
	edit := func(old, new string) string { return header + strings.Replace(rec, old, new, 1) + "\n" }
	cases := map[string]string{
		"empty":                   "",
		"blank line":              header + "\n",
		"no final newline":        header + rec,
		"not JSON":                header + "{nope\n",
		"array":                   header + "[1]\n",
		"trailing data":           header + rec + " {}\n",
		"duplicate key":           edit(`{"target":"direct",`, `{"target":"direct","target":"direct",`),
		"unknown key":             edit(`{"target"`, `{"extra":1,"target"`),
		"wrong type":              edit(`"id":0`, `"id":"0"`),
		"fraction":                edit(`"id":0`, `"id":0.5`),
		"unknown target":          edit(`"target":"direct"`, `"target":"elsewhere"`),
		"unknown outcome":         edit(`"outcome":"ok"`, `"outcome":"success"`),
		"unknown detail":          edit(`"detail":""`, `"detail":"oops"`),
		"negative time":           edit(`"end_ns":100000000`, `"end_ns":-1`),
		"huge time":               edit(`"end_ns":100000000`, `"end_ns":9007199254740993`),
		"chunk after end":         edit(`"end_ns":100000000`, `"end_ns":60000000`),
		"unordered chunks":        edit(`"chunks_ns":[50000000,60000000`, `"chunks_ns":[60000000,50000000`),
		"status of other class":   edit(`"status":200`, `"status":503`),
		"bad status":              edit(`"status":200`, `"status":700`),
		"url out of range":        edit(`"url":0`, `"url":2`),
		"ok stream no chunks":     edit(`"chunks_ns":[50000000,60000000,80000000]`, `"chunks_ns":[]`),
		"ordinary with chunks":    edit(`"stream":true`, `"stream":false`),
		"negative tokens":         edit(`"output_tokens":5`, `"output_tokens":-5`),
		"retry after too long":    edit(`"retry_after_ns":0`, `"retry_after_ns":61000000000`),
		"bad header format":       strings.Replace(header, RawFormat, "anvil-bench-raw/9", 1),
		"bad header label":        strings.Replace(header, `"label":"capacity"`, `"label":"a b"`, 1),
		"bad header endpoint":     strings.Replace(header, `"endpoint":"chat"`, `"endpoint":"embeddings"`, 1),
		"bad header mode":         strings.Replace(header, `"mode":"closed"`, `"mode":"half"`, 1),
		"negative slo":            strings.Replace(header, `"ttft_ms":100`, `"ttft_ms":-1`, 1),
		"duplicate target":        strings.Replace(header, `"name":"routed"`, `"name":"direct"`, 1),
		"comparison out of order": strings.Replace(strings.Replace(header, `"name":"routed"`, `"name":"x"`, 1), `"name":"direct"`, `"name":"routed"`, 1),
		"no targets":              header[:strings.Index(header, `"targets"`)] + `"targets":[]}` + "\n",
		"control character":       strings.Replace(header, `"load":"closed loop: 2 clients"`, `"load":"a\u0001b"`, 1),
		"nested duplicate":        strings.Replace(header, `"ttft_ms":100`, `"ttft_ms":100,"ttft_ms":1`, 1),
	}
	for name, in := range cases {
		t.Run(name, func(t *testing.T) {
			_, _, err := ReadRaw(strings.NewReader(in))
			require.Error(t, err)
			assert.ErrorIs(t, err, ErrRaw)
			assert.NotContains(t, err.Error(), "elsewhere", "errors never echo the file")
		})
	}
	// The unedited file reads.
	_, got, err := ReadRaw(strings.NewReader(header + rec + "\n"))
	require.NoError(t, err)
	assert.Len(t, got, 1)
}

func TestRenderAndPlots(t *testing.T) {
	h, recs := sampleRun()
	results := Build(h, recs)
	var text, md bytes.Buffer
	require.NoError(t, results[0].Text(&text))
	require.NoError(t, results[0].Markdown(&md))
	for _, want := range []string{"Successful requests", "Request goodput (req/s)", "Mean TTFT (ms)", "P99.9 E2EL (ms)", "Inter-token Latency", "  http_503"} {
		assert.Contains(t, text.String(), want)
		assert.Contains(t, md.String(), want)
	}
	figs, err := Figures("capacity", results)
	require.NoError(t, err)
	require.Len(t, figs, 2)
	assert.Equal(t, "capacity-latency-cdf", figs[0].Name)
	for _, f := range figs {
		for _, format := range []string{FormatPNG, FormatSVG} {
			var out bytes.Buffer
			require.NoError(t, f.WriteTo(&out, format))
			assert.NotEmpty(t, out.Bytes())
		}
		assert.ErrorIs(t, f.WriteTo(&bytes.Buffer{}, "gif"), ErrFormat)
	}
	// A run without a success still plots (an empty frame).
	empty := Build(h, []Record{{Target: "direct", End: ms(1), Status: 503, Outcome: HTTP503}})
	figs, err = Figures("x", empty)
	require.NoError(t, err)
	require.NoError(t, figs[0].WriteTo(&bytes.Buffer{}, FormatPNG))
}
