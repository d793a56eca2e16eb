package audioform

import (
	"io"
	"strings"
	"testing"
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
