package decisionlog

import (
	"bytes"
	"io"
	"testing"
)

func BenchmarkAdd(b *testing.B) {
	for _, bc := range []struct {
		name string
		sink io.Writer
		rec  Record
	}{
		{"direct/ring-only", nil, directRecord()},
		{"direct/sink", io.Discard, directRecord()},
		{"capacity/sink", io.Discard, capacityRecord(b)},
	} {
		b.Run(bc.name, func(b *testing.B) {
			l, err := New(1024, bc.sink)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				if err := l.Add(bc.rec); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkAddParallel(b *testing.B) {
	l, err := New(1024, io.Discard)
	if err != nil {
		b.Fatal(err)
	}
	r := capacityRecord(b)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if err := l.Add(r); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

func BenchmarkLine(b *testing.B) {
	r := capacityRecord(b)
	b.ReportAllocs()
	for b.Loop() {
		_ = r.Line()
	}
}

// BenchmarkJSON is one record as the decisions endpoint's format=json writes it (the status page
// reads 200 of these every refresh).
func BenchmarkJSON(b *testing.B) {
	r := capacityRecord(b)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := r.JSON(); err != nil {
			b.Fatal(err)
		}
	}
}

func benchCapture(b *testing.B, n int) []byte {
	var sink bytes.Buffer
	l, err := New(n, &sink)
	if err != nil {
		b.Fatal(err)
	}
	recs := []Record{capacityRecord(b), directRecord(), roundRobinRecord(), refusedRecord()}
	for i := range n {
		if err := l.Add(recs[i%len(recs)]); err != nil {
			b.Fatal(err)
		}
	}
	return sink.Bytes()
}

func BenchmarkReadJSONL(b *testing.B) {
	data := benchCapture(b, 1000)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ReadJSONL(bytes.NewReader(data), 1000); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkSummarize(b *testing.B) {
	recs, err := ReadJSONL(bytes.NewReader(benchCapture(b, 1000)), 1000)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		_ = Summarize(recs)
	}
}
