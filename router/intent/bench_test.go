package intent_test

import (
	"fmt"
	"testing"

	"github.com/anvil-llm/anvil/router/intent"
)

// BenchmarkDecode reads a large but realistic document: 256 tiers, each with 16 quiesced members.
func BenchmarkDecode(b *testing.B) {
	d := intent.Document{Tiers: map[string]string{}, Members: map[string]map[string]string{}}
	for i := range 256 {
		t := fmt.Sprintf("tier-%03d", i)
		d.Tiers[t] = "maintenance"
		d.Members[t] = map[string]string{}
		for m := range 16 {
			d.Members[t][fmt.Sprintf("vllm-%02d", m)] = "upgrade"
		}
	}
	data := intent.Encode(d)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := intent.Decode(data); err != nil {
			b.Fatal(err)
		}
	}
}
