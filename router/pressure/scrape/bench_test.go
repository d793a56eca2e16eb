package scrape_test

import (
	"context"
	"runtime"
	"testing"
	"time"

	"github.com/anvil-llm/anvil/router/pressure"
	"github.com/anvil-llm/anvil/router/pressure/scrape"
)

// warmCache returns a cache whose 16-member tier holds fresh samples. The clock is
// frozen, so no refresh becomes due during the benchmark: it measures the request
// path's read (clock, lock, projection, map), not collection.
func warmCache(b *testing.B) *scrape.Cache {
	b.Helper()
	frozen := time.Now()
	c, err := scrape.NewCache([]pressure.TierSpec{tier("chat", memberIDs(16)...)}, nil, scrape.Options{
		Now:   func() time.Time { return frozen },
		Fetch: func(context.Context, pressure.Job) (pressure.Sample, pressure.Class) { return busy, pressure.ClassOK },
	})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(c.Close)
	if _, err := c.Snapshot("chat"); err != nil {
		b.Fatal(err)
	}
	for c.Pending() > 0 { // setup only: the two workers drain 16 instant fetches
		runtime.Gosched()
	}
	m, _ := c.Snapshot("chat")
	for id, p := range m {
		if _, ok := p.PPM(); !ok {
			b.Fatalf("member %s not fresh after warm-up", id)
		}
	}
	return c
}

func BenchmarkCacheSnapshotWarm16(b *testing.B) {
	c := warmCache(b)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.Snapshot("chat"); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkCacheSnapshotWarm16Parallel(b *testing.B) {
	c := warmCache(b)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := c.Snapshot("chat"); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

func BenchmarkParseTwoEngines(b *testing.B) {
	page := readPage(b, "current_two_engines.txt")
	b.SetBytes(int64(len(page)))
	b.ReportAllocs()
	for b.Loop() {
		if _, cl := scrape.Parse(page, llama); cl != pressure.ClassOK {
			b.Fatal(cl)
		}
	}
}
