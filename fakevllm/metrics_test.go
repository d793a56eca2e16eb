package fakevllm

import (
	"bytes"
	"context"
	"io"
	"math"
	"net/http"
	"sort"
	"strings"
	"testing"
	"testing/synctest"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/anvil-llm/anvil/engine"
)

// scrape fetches and parses /metrics as the router's adapter would.
func scrape(t *testing.T, url string) (map[string]*dto.MetricFamily, *http.Response) {
	t.Helper()
	return scrapeResp(t, http.DefaultClient, url)
}

func scrapeWith(t *testing.T, c *http.Client, url string) map[string]*dto.MetricFamily {
	t.Helper()
	fams, _ := scrapeResp(t, c, url)
	return fams
}

func scrapeResp(t *testing.T, c *http.Client, url string) (map[string]*dto.MetricFamily, *http.Response) {
	t.Helper()
	resp, err := c.Get(url + "/metrics")
	require.NoError(t, err)
	body := readAll(t, resp)
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", body)
	p := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := p.TextToMetricFamilies(bytes.NewReader(body))
	require.NoError(t, err)
	return fams, resp
}

func labelMap(m *dto.Metric) map[string]string {
	out := map[string]string{}
	for _, l := range m.GetLabel() {
		out[l.GetName()] = l.GetValue()
	}
	return out
}

func TestMetricsConformance(t *testing.T) {
	for _, legacy := range []bool{false, true} {
		name := map[bool]string{false: "current", true: "legacy"}[legacy]
		t.Run(name, func(t *testing.T) {
			o := tinyOptions()
			o.LegacyMetrics = legacy
			m := startLoopback(t, o)
			ctx := context.Background()
			// One request finishing by length, one by a natural stop.
			readAll(t, post(t, ctx, http.DefaultClient, m.url+"/v1/completions", `{"prompt":"x","max_tokens":3,"ignore_eos":true}`))
			readAll(t, post(t, ctx, http.DefaultClient, m.url+"/v1/completions", `{"prompt":"y","max_tokens":30}`))

			fams, resp := scrape(t, m.url)
			assert.Equal(t, "text/plain; version=0.0.4; charset=utf-8", resp.Header.Get("Content-Type"))
			kv := MetricKVUsage
			if legacy {
				kv = MetricGPUCacheUsage
			}
			want := map[string]dto.MetricType{
				MetricRunning: dto.MetricType_GAUGE, MetricWaiting: dto.MetricType_GAUGE,
				MetricWaitingByReason: dto.MetricType_GAUGE, kv: dto.MetricType_GAUGE,
				MetricPreemptions: dto.MetricType_COUNTER, MetricPromptTokens: dto.MetricType_COUNTER,
				MetricGenerationTokens: dto.MetricType_COUNTER, MetricRequestSuccess: dto.MetricType_COUNTER,
				MetricTTFT: dto.MetricType_HISTOGRAM, MetricITL: dto.MetricType_HISTOGRAM,
				MetricE2E: dto.MetricType_HISTOGRAM, MetricQueueTime: dto.MetricType_HISTOGRAM,
			}
			var names []string
			for n := range fams {
				names = append(names, n)
			}
			sort.Strings(names)
			require.Len(t, fams, len(want), "families: %v", names)
			for n, typ := range want {
				require.Contains(t, fams, n)
				assert.Equal(t, typ, fams[n].GetType(), n)
			}

			extra := map[string][]string{MetricWaitingByReason: {"capacity", "deferred"}, MetricRequestSuccess: {"abort", "length", "stop"}}
			extraLabel := map[string]string{MetricWaitingByReason: "reason", MetricRequestSuccess: "finished_reason"}
			for n, f := range fams {
				var values []string
				for _, mt := range f.GetMetric() {
					l := labelMap(mt)
					assert.Equal(t, "0", l["engine"], n)
					assert.Equal(t, testModel, l["model_name"], n)
					if ln, ok := extraLabel[n]; ok {
						assert.Len(t, l, 3, n)
						values = append(values, l[ln])
					} else {
						assert.Len(t, l, 2, n)
					}
				}
				sort.Strings(values)
				if ev, ok := extra[n]; ok {
					assert.Equal(t, ev, values, n)
				} else {
					assert.Len(t, f.GetMetric(), 1, n)
				}
			}

			bounds := map[string][]float64{MetricTTFT: engine.TTFTBuckets(), MetricITL: engine.ITLBuckets(),
				MetricE2E: engine.RequestLatencyBuckets(), MetricQueueTime: engine.RequestLatencyBuckets()}
			for n, b := range bounds {
				h := fams[n].GetMetric()[0].GetHistogram()
				var got []float64
				for _, bk := range h.GetBucket() {
					got = append(got, bk.GetUpperBound())
				}
				assert.Equal(t, append(b, math.Inf(1)), got, "%s buckets are vLLM's, then +Inf", n)
			}

			em := m.srv.Metrics()
			value := func(n string, labels ...string) float64 {
				for _, mt := range fams[n].GetMetric() {
					l := labelMap(mt)
					if len(labels) == 2 && l[labels[0]] != labels[1] {
						continue
					}
					if mt.GetCounter() != nil {
						return mt.GetCounter().GetValue()
					}
					return mt.GetGauge().GetValue()
				}
				t.Fatalf("no %s %v", n, labels)
				return 0
			}
			assert.Equal(t, 0.0, value(MetricRunning))
			assert.Equal(t, 0.0, value(kv))
			assert.Equal(t, 1.0, value(MetricRequestSuccess, "finished_reason", "length"))
			assert.Equal(t, 1.0, value(MetricRequestSuccess, "finished_reason", "stop"))
			assert.Equal(t, 0.0, value(MetricRequestSuccess, "finished_reason", "abort"))
			assert.Equal(t, float64(em.PromptTokens), value(MetricPromptTokens))
			assert.Equal(t, float64(em.GenerationTokens), value(MetricGenerationTokens))
			assert.Equal(t, uint64(2), fams[MetricE2E].GetMetric()[0].GetHistogram().GetSampleCount())
			assert.InDelta(t, em.TTFT.SumSeconds(), fams[MetricTTFT].GetMetric()[0].GetHistogram().GetSampleSum(), 1e-12)
		})
	}
}

// TestMetricsFollowLoad: running, waiting, waiting by reason and KV usage
// on /metrics follow the engine under a burst, and return to zero.
func TestMetricsFollowLoad(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := startPipe(t, tinyOptions())
		defer p.stop()
		// A KV squeeze to one usable block: one request runs, the others wait.
		require.NoError(t, p.srv.SetFaults(Faults{KVBlocks: 1}))
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{}, 3)
		for range 3 {
			go func() {
				defer func() { done <- struct{}{} }()
				req, _ := http.NewRequestWithContext(ctx, http.MethodPost, p.url+"/v1/completions",
					strings.NewReader(`{"prompt":"`+strings.Repeat("abcd", 10)+`","max_tokens":100,"ignore_eos":true}`))
				if resp, err := p.client.Do(req); err == nil {
					_, _ = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}
			}()
		}
		synctest.Wait()
		fams := scrapeWith(t, p.client, p.url)
		assert.Equal(t, 1.0, gaugeValue(fams, MetricRunning, "", ""))
		assert.Equal(t, 2.0, gaugeValue(fams, MetricWaiting, "", ""))
		assert.Equal(t, 2.0, gaugeValue(fams, MetricWaitingByReason, "reason", "capacity"))
		assert.Equal(t, 0.0, gaugeValue(fams, MetricWaitingByReason, "reason", "deferred"))
		assert.Equal(t, 1.0, gaugeValue(fams, MetricKVUsage, "", ""), "the squeeze's reserved blocks count as used")

		cancel()
		for range 3 {
			<-done
		}
		synctest.Wait()
		require.NoError(t, p.srv.SetFaults(Faults{}))
		fams = scrapeWith(t, p.client, p.url)
		assert.Equal(t, 0.0, gaugeValue(fams, MetricRunning, "", ""))
		assert.Equal(t, 0.0, gaugeValue(fams, MetricWaiting, "", ""))
		assert.Equal(t, 0.0, gaugeValue(fams, MetricKVUsage, "", ""))
		assert.Equal(t, 3.0, gaugeValue(fams, MetricRequestSuccess, "finished_reason", "abort"))
	})
}

// gaugeValue returns the value of family n's metric whose label k is v
// (k "" takes the only metric), counters included.
func gaugeValue(fams map[string]*dto.MetricFamily, n, k, v string) float64 {
	f, ok := fams[n]
	if !ok {
		return -1
	}
	for _, mt := range f.GetMetric() {
		if k != "" && labelMap(mt)[k] != v {
			continue
		}
		if c := mt.GetCounter(); c != nil {
			return c.GetValue()
		}
		return mt.GetGauge().GetValue()
	}
	return -1
}
