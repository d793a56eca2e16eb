package fakevllm

import (
	"bytes"
	"context"
	"net/http"
	"slices"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"

	"github.com/anvil-llm/anvil/engine"
)

// Metric family names, as vLLM >= 0.12 exposes them.
const (
	MetricRunning          = "vllm:num_requests_running"
	MetricWaiting          = "vllm:num_requests_waiting"
	MetricWaitingByReason  = "vllm:num_requests_waiting_by_reason"
	MetricKVUsage          = "vllm:kv_cache_usage_perc"
	MetricGPUCacheUsage    = "vllm:gpu_cache_usage_perc" // the legacy name of MetricKVUsage
	MetricPreemptions      = "vllm:num_preemptions_total"
	MetricPromptTokens     = "vllm:prompt_tokens_total"
	MetricGenerationTokens = "vllm:generation_tokens_total"
	MetricRequestSuccess   = "vllm:request_success_total"
	MetricTTFT             = "vllm:time_to_first_token_seconds"
	MetricITL              = "vllm:inter_token_latency_seconds"
	MetricE2E              = "vllm:e2e_request_latency_seconds"
	MetricQueueTime        = "vllm:request_queue_time_seconds"
)

// oversizedMetricsBytes is the size the oversized fault pads /metrics to: past
// a scraper's 1 MiB + 1 byte bound.
const oversizedMetricsBytes = 1<<20 + 64<<10

// collector exposes one engine's metrics snapshot with vLLM's names, types,
// help texts and labels (model_name, engine="0"). It reads a fresh snapshot
// from the driver at every scrape, so there is no state to keep in sync.
type collector struct {
	drv    *driver
	labels prometheus.Labels

	running, waiting, byReason, kv               *prometheus.Desc
	preemptions, promptTokens, genTokens, finish *prometheus.Desc
	ttft, itl, e2e, queue                        *prometheus.Desc
}

func newCollector(drv *driver, model string, legacy bool) *collector {
	l := prometheus.Labels{"model_name": model, "engine": "0"}
	desc := func(name, help string, variable ...string) *prometheus.Desc {
		return prometheus.NewDesc(name, help, variable, l)
	}
	kvName, kvHelp := MetricKVUsage, "KV-cache usage. 1 means 100 percent usage."
	if legacy {
		kvName, kvHelp = MetricGPUCacheUsage, "GPU KV-cache usage. 1 means 100 percent usage."
	}
	return &collector{
		drv: drv, labels: l,
		running:      desc(MetricRunning, "Number of requests in model execution batches."),
		waiting:      desc(MetricWaiting, "Number of requests waiting to be processed."),
		byReason:     desc(MetricWaitingByReason, "Number of requests waiting to be processed, by reason.", "reason"),
		kv:           desc(kvName, kvHelp),
		preemptions:  desc(MetricPreemptions, "Cumulative number of preemption from the engine."),
		promptTokens: desc(MetricPromptTokens, "Number of prefill tokens processed."),
		genTokens:    desc(MetricGenerationTokens, "Number of generation tokens processed."),
		finish:       desc(MetricRequestSuccess, "Count of successfully processed requests.", "finished_reason"),
		ttft:         desc(MetricTTFT, "Histogram of time to first token in seconds."),
		itl:          desc(MetricITL, "Histogram of inter-token latency in seconds."),
		e2e:          desc(MetricE2E, "Histogram of e2e request latency in seconds."),
		queue:        desc(MetricQueueTime, "Histogram of time spent in WAITING phase for request."),
	}
}

// Describe implements prometheus.Collector.
func (c *collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.running, c.waiting, c.byReason, c.kv, c.preemptions,
		c.promptTokens, c.genTokens, c.finish, c.ttft, c.itl, c.e2e, c.queue} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *collector) Collect(ch chan<- prometheus.Metric) {
	m := c.drv.metrics()
	gauge := func(d *prometheus.Desc, v float64, lv ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, lv...)
	}
	counter := func(d *prometheus.Desc, v uint64, lv ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), lv...)
	}
	gauge(c.running, float64(m.Running))
	gauge(c.waiting, float64(m.Waiting))
	gauge(c.byReason, float64(m.WaitingCapacity), "capacity")
	gauge(c.byReason, float64(m.WaitingDeferred), "deferred")
	gauge(c.kv, m.KVUsage)
	counter(c.preemptions, m.Preemptions)
	counter(c.promptTokens, m.PromptTokens)
	counter(c.genTokens, m.GenerationTokens)
	for _, r := range engine.FinishReasons() {
		counter(c.finish, m.Success.Get(r), r.String())
	}
	ch <- histogram(c.ttft, m.TTFT)
	ch <- histogram(c.itl, m.ITL)
	ch <- histogram(c.e2e, m.E2E)
	ch <- histogram(c.queue, m.QueueTime)
}

func histogram(d *prometheus.Desc, h engine.Histogram) prometheus.Metric {
	buckets := make(map[float64]uint64, h.N)
	for i := 0; i < h.N; i++ {
		buckets[h.UpperBounds[i]] = h.Cumulative[i]
	}
	return prometheus.MustNewConstHistogram(d, h.Count, h.SumSeconds(), buckets)
}

// serveMetrics answers GET /metrics in the Prometheus text format, applying
// the /metrics fault in force.
func (s *Server) serveMetrics(c *gin.Context) {
	f := s.faults.metricsFault()
	ctx := c.Request.Context()
	switch f.Mode {
	case MetricsHang, MetricsSlow:
		var ready <-chan time.Time
		if f.Mode == MetricsSlow {
			ready = time.After(time.Duration(f.Delay))
		}
		if !s.wait(ctx, ready) {
			if ctx.Err() == nil { // released by shutdown, not by the client
				c.Data(http.StatusServiceUnavailable, "text/plain; charset=utf-8", []byte("shutting down"))
			}
			return
		}
	case MetricsError:
		c.Data(http.StatusInternalServerError, "text/plain; charset=utf-8", []byte("Internal Server Error"))
		return
	case MetricsMalformed:
		c.Data(http.StatusOK, string(expfmt.NewFormat(expfmt.TypeTextPlain)), []byte(
			"# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running{engine=\"0\" 1 2 three\n"))
		return
	}
	body, err := s.exposition(f)
	if err != nil {
		s.log.Error("fakevllm metrics encoding failed", "err", err)
		c.Data(http.StatusInternalServerError, "text/plain; charset=utf-8", []byte("metrics encoding failed"))
		return
	}
	c.Data(http.StatusOK, string(expfmt.NewFormat(expfmt.TypeTextPlain)), body)
}

// wait blocks until ready fires (true), or the client leaves or the member
// closes (false). A nil ready waits for the latter only: the hang fault.
func (s *Server) wait(ctx context.Context, ready <-chan time.Time) bool {
	select {
	case <-ready:
		return true
	case <-ctx.Done():
	case <-s.closing:
	}
	return false
}

// exposition gathers the private registry and encodes it, dropping missing
// families and padding an oversized body as the fault says.
func (s *Server) exposition(f MetricsFault) ([]byte, error) {
	gather := s.reg.Gather
	if !s.vllm() {
		gather = s.enginePage
	}
	families, err := gather()
	if err != nil {
		return nil, err
	}
	if f.Mode == MetricsMissing {
		missing := f.Missing
		if len(missing) == 0 {
			missing = s.missingFamilies()
		}
		families = slices.DeleteFunc(families, func(mf *dto.MetricFamily) bool {
			return slices.Contains(missing, mf.GetName())
		})
	}
	var buf bytes.Buffer
	enc := expfmt.NewEncoder(&buf, expfmt.NewFormat(expfmt.TypeTextPlain))
	for _, mf := range families {
		if err := enc.Encode(mf); err != nil {
			return nil, err
		}
	}
	if f.Mode == MetricsOversized {
		// Comment lines keep the body valid text format: only its size is wrong.
		line := []byte("# fakevllm oversized-metrics fault padding ................................................\n")
		for buf.Len() < oversizedMetricsBytes {
			buf.Write(line)
		}
	}
	return buf.Bytes(), nil
}
