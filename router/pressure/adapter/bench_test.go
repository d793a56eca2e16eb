package adapter_test

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/anvil-llm/anvil/router/pressure"
	"github.com/anvil-llm/anvil/router/pressure/adapter"
	"github.com/anvil-llm/anvil/router/pressure/scrape"
)

// vllmPageOfSize is a vLLM page of about n bytes, so the vLLM adapter's cost can be set against
// another adapter's on a page of the same size and shape: the scrape shell's fixture of two engines
// (pressure gauges, counters, histograms), grown with renamed copies of its other vLLM families
// (vllm:r1_..., vllm:r2_...). A page smaller than that fixture is the three pressure families
// grown with one counter's series.
func vllmPageOfSize(b *testing.B, n int) []byte {
	fixture := readPage(b, "../../scrape/testdata/current_two_engines.txt")
	if n < len(fixture) {
		return smallVLLMPage(n)
	}
	page := bytes.Clone(fixture)
	var others [][]byte
	for _, line := range bytes.SplitAfter(fixture, []byte("\n")) {
		if bytes.Contains(line, []byte("vllm:")) && !bytes.Contains(line, []byte("vllm:num_requests_")) &&
			!bytes.Contains(line, []byte("vllm:kv_cache_usage_perc")) {
			others = append(others, line)
		}
	}
	for r := 1; len(page) < n; r++ {
		prefix := fmt.Appendf(nil, "vllm:r%d_", r)
		for _, line := range others {
			if len(page) >= n {
				break
			}
			page = append(page, bytes.ReplaceAll(line, []byte("vllm:"), prefix)...)
		}
	}
	return page
}

func smallVLLMPage(n int) []byte {
	var page []byte
	for _, f := range []struct{ name, help, v0, v1 string }{
		{"vllm:num_requests_running", "Number of requests in model execution batches.", "7.0", "5.0"},
		{"vllm:num_requests_waiting", "Number of requests waiting to be processed.", "3.0", "1.0"},
		{"vllm:kv_cache_usage_perc", "KV-cache usage. 1 means 100 percent usage.", "0.42", "0.07"},
	} {
		page = fmt.Appendf(page, "# HELP %s %s\n# TYPE %s gauge\n", f.name, f.help, f.name)
		page = fmt.Appendf(page, "%s{engine=\"0\",model_name=%q} %s\n", f.name, llama, f.v0)
		page = fmt.Appendf(page, "%s{engine=\"1\",model_name=%q} %s\n", f.name, llama, f.v1)
	}
	page = append(page, "# HELP vllm:request_params_n Number of requests by n.\n# TYPE vllm:request_params_n counter\n"...)
	for i := 0; len(page) < n; i++ {
		page = fmt.Appendf(page, "vllm:request_params_n{engine=\"%d\",model_name=%q,n=\"%d\"} %d.0\n", i%2, llama, i, i*7)
	}
	return page
}

// BenchmarkAdapters parses each engine's fixture through its adapter, next to the vLLM adapter on
// a vLLM page of the same size.
func BenchmarkAdapters(b *testing.B) {
	cases := []struct{ engine, page, model string }{
		{adapter.SGLang, "sglang_current_dp2.txt", llama},
		{adapter.TRTLLM, "trtllm_current.txt", triton},
		{adapter.LlamaCpp, "llamacpp_2024.txt", llama},
		{adapter.TGI, "tgi_3.txt", llama},
	}
	for _, c := range cases {
		page := readPage(b, c.page)
		a, _ := adapter.For(c.engine)
		b.Run(c.engine, func(b *testing.B) { benchParse(b, a, page, c.model) })
		b.Run(c.engine+"-vllm-same-size", func(b *testing.B) {
			benchParse(b, adapter.ReadVLLM, vllmPageOfSize(b, len(page)), llama)
		})
	}
}

func benchParse(b *testing.B, a adapter.Adapter, page []byte, model string) {
	b.SetBytes(int64(len(page)))
	b.ReportAllocs()
	for b.Loop() {
		if _, cl := scrape.ParseWith(a, page, model); cl != pressure.ClassOK {
			b.Fatal(cl)
		}
	}
}

// BenchmarkReadOnly times the adapters alone on already-parsed families (the simulator's path,
// and the part of a scrape an adapter adds to expfmt's parse), vLLM's on its fixture first.
func BenchmarkReadOnly(b *testing.B) {
	cases := []struct{ engine, page, model string }{
		{adapter.VLLM, "../../scrape/testdata/current_two_engines.txt", llama},
		{adapter.SGLang, "sglang_current_dp2.txt", llama},
		{adapter.TRTLLM, "trtllm_current.txt", triton},
		{adapter.LlamaCpp, "llamacpp_2024.txt", llama},
		{adapter.TGI, "tgi_3.txt", llama},
	}
	for _, c := range cases {
		parser := expfmt.NewTextParser(model.UTF8Validation)
		families, err := parser.TextToMetricFamilies(bytes.NewReader(readPage(b, c.page)))
		if err != nil {
			b.Fatal(err)
		}
		a, _ := adapter.For(c.engine)
		b.Run(c.engine, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if adapter.Classify(a(families, c.model)) != pressure.ClassOK {
					b.Fatal("unknown")
				}
			}
		})
	}
}
