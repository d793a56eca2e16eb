package manage_test

import (
	"testing"

	"github.com/anvil-llm/anvil/router/manage"
)

func BenchmarkDecode(b *testing.B) {
	body := []byte(`{"action":"quiesce","tier":"qwen-7b","member_id":"vllm-2","reason":"upgrade","dry_run":true}`)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := manage.Decode(body); err != nil {
			b.Fatal(err)
		}
	}
}
