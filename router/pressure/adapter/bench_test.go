package adapter_test

import (
	"fmt"
	"testing"

	"github.com/anvil-llm/anvil/router/pressure"
	"github.com/anvil-llm/anvil/router/pressure/adapter"
	"github.com/anvil-llm/anvil/router/pressure/scrape"
)

// vllmPageOfSize is a vLLM page of two engines (the three pressure families) grown to n bytes with
// more of the per-engine series vLLM prints, so the vLLM adapter's cost can be set against another
// adapter's on a page of the same size.
func vllmPageOfSize(n int) []byte {
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
			benchParse(b, adapter.ReadVLLM, vllmPageOfSize(len(page)), llama)
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
