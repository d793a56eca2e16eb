package load

import "testing"

// BenchmarkParse measures a full load of the every-key document: gate,
// viper decode, validation. Loading happens once per start or config
// check, so this is a sanity figure, not a hot path.
func BenchmarkParse(b *testing.B) {
	data := readTestdata(b, "full.yaml")
	env := envMap(fullEnv())
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Parse(data, env); err != nil {
			b.Fatal(err)
		}
	}
}
