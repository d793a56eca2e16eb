package audioform

import (
	"io"
	"path/filepath"
	"strings"
	"testing"

	"github.com/anvil-llm/anvil/router/spool"
)

// BenchmarkEncode streams a 16 MiB file through Open and Encode: allocations stay those of the head
// and one copy buffer, whatever the file's size (compare B/op with the bytes streamed).
func BenchmarkEncode(b *testing.B) {
	const size = 16 << 20
	head := "--" + boundary + "\r\nContent-Disposition: form-data; name=\"model\"\r\n\r\nwhisper\r\n--" + boundary +
		"\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a.wav\"\r\n\r\n"
	tail := "\r\n--" + boundary + "--\r\n"
	b.SetBytes(size)
	b.ReportAllocs()
	for b.Loop() {
		body := io.MultiReader(strings.NewReader(head), io.LimitReader(zeros{}, size), strings.NewReader(tail))
		f, err := Open(body, ct, DefaultLimits())
		if err != nil {
			b.Fatal(err)
		}
		if err := f.Encode(io.Discard, "served"); err != nil {
			b.Fatal(err)
		}
	}
}

type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

// BenchmarkOrders compares the two orders of a form through Open/OpenHolding and Encode: the model
// first streams the file through one copy buffer; the file first holds it in a spool buffer (1 MiB
// in memory, the rest in a spool file), then writes it. B/op shows what holding costs: up to the
// memory bound, never the file's size.
func BenchmarkOrders(b *testing.B) {
	dir, _, err := spool.Open(filepath.Join(b.TempDir(), spool.DirName))
	if err != nil {
		b.Fatal(err)
	}
	defer dir.Close()
	fileHead := "--" + boundary + "\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a.wav\"\r\n\r\n"
	modelPart := "--" + boundary + "\r\nContent-Disposition: form-data; name=\"model\"\r\n\r\nwhisper\r\n"
	for _, c := range []struct {
		name      string
		size      int64
		modelLast bool
	}{
		{"model first/1MiB", 1 << 20, false},
		{"file first/1MiB in memory", 1 << 20, true},
		{"model first/16MiB", 16 << 20, false},
		{"file first/16MiB spilled", 16 << 20, true},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(c.size)
			b.ReportAllocs()
			for b.Loop() {
				var body io.Reader
				if c.modelLast {
					body = io.MultiReader(strings.NewReader(fileHead), io.LimitReader(zeros{}, c.size),
						strings.NewReader("\r\n"+modelPart+"--"+boundary+"--\r\n"))
				} else {
					body = io.MultiReader(strings.NewReader(modelPart+fileHead), io.LimitReader(zeros{}, c.size),
						strings.NewReader("\r\n--"+boundary+"--\r\n"))
				}
				f, err := OpenHolding(body, ct, DefaultLimits(), func() (Hold, error) {
					return dir.NewBuffer(1<<20, func(int64) error { return nil }), nil
				})
				if err != nil {
					b.Fatal(err)
				}
				if err := f.Encode(io.Discard, "served"); err != nil {
					b.Fatal(err)
				}
				if err := f.Close(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
