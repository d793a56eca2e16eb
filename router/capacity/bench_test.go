package capacity_test

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/anvil-llm/anvil/router/capacity"
)

// BenchmarkBuild is one capacity JSON projection of the fixture (three tiers, nine members).
func BenchmarkBuild(b *testing.B) {
	src, plan, p := fixtureSources(b)
	b.ReportAllocs()
	for b.Loop() {
		p.peeks = p.peeks[:0]
		capacity.Build(plan, src.Admission.Snapshots(), src.Pressure)
	}
}

// BenchmarkGather is one scrape of the collector through a registry (what /metrics costs).
func BenchmarkGather(b *testing.B) {
	src, plan, p := fixtureSources(b)
	reg := prometheus.NewRegistry()
	reg.MustRegister(capacity.NewCollector(plan, src))
	b.ReportAllocs()
	for b.Loop() {
		p.peeks = p.peeks[:0]
		if _, err := reg.Gather(); err != nil {
			b.Fatal(err)
		}
	}
}
