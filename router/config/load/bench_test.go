package load

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/anvil-llm/anvil/router/config"
)

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

// bigDoc is a 16-tier, 256-member capacity configuration; ceiling sets every member's ceiling.
func bigDoc(ceiling int) string {
	var b strings.Builder
	b.WriteString("auth:\n  caller_tokens: [\"" + callerTok + "\"]\naliases:\n")
	for i := range 16 {
		fmt.Fprintf(&b, "  - {id: a%02d, tier: t%02d}\n", i, i)
	}
	b.WriteString("tiers:\n")
	for i := range 16 {
		fmt.Fprintf(&b, "  - id: t%02d\n    kind: replica\n    served_model: m\n    gates: {max_context_tokens: 4096}\n", i)
		b.WriteString("    host: 127.0.0.1\n    provenance: bench\n    replica_strategy: capacity\n    members:\n")
		for j := range 16 {
			fmt.Fprintf(&b, "      - {id: m%02d, endpoint: \"http://127.0.0.1:%d\", max_concurrency: %d}\n", j, 10000+i*16+j, ceiling)
		}
	}
	return b.String()
}

// BenchmarkDiff16x16 is the change list of a reload of the 16-tier, 256-member configuration that
// moves every member's ceiling: 256 lines.
func BenchmarkDiff16x16(b *testing.B) {
	old, err := Parse([]byte(bigDoc(4)), nil)
	require.NoError(b, err)
	next, err := Parse([]byte(bigDoc(2)), nil)
	require.NoError(b, err)
	require.Len(b, config.Diff(old, next), 256)
	b.ReportAllocs()
	for b.Loop() {
		config.Diff(old, next)
	}
}

// BenchmarkSourceLoad16x16 is one reload's read of the 16-tier, 256-member file: read, validate,
// read again and compare, digest and fingerprint.
func BenchmarkSourceLoad16x16(b *testing.B) {
	path := filepath.Join(b.TempDir(), "router.yaml")
	require.NoError(b, os.WriteFile(path, []byte(bigDoc(4)), 0o600))
	s := NewSource(path, func(string) (string, bool) { return "", false })
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.Load(context.Background()); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkFingerprint16x16 is one --watch poll of the same file while it does not change (the
// document is parsed only when its bytes change).
func BenchmarkFingerprint16x16(b *testing.B) {
	path := filepath.Join(b.TempDir(), "router.yaml")
	require.NoError(b, os.WriteFile(path, []byte(bigDoc(4)), 0o600))
	s := NewSource(path, nil)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.Fingerprint(context.Background()); err != nil {
			b.Fatal(err)
		}
	}
}
