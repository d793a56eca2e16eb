package fakevllm

import (
	"context"
	"io"
	"net/http"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// generatedFile produces n bytes on the fly, never holding more than the
// caller's buffer, and samples the heap once per MiB it hands out.
type generatedFile struct {
	left, sent int64
	peakHeap   uint64
}

func (g *generatedFile) Read(p []byte) (int, error) {
	if g.left == 0 {
		return 0, io.EOF
	}
	n := int(min(int64(len(p)), g.left))
	for i := range p[:n] {
		p[i] = byte(g.sent + int64(i))
	}
	if (g.sent+int64(n))>>20 != g.sent>>20 {
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		g.peakHeap = max(g.peakHeap, ms.HeapInuse)
	}
	g.left -= int64(n)
	g.sent += int64(n)
	return n, nil
}

// TestAudioUploadMemoryBounded streams a 100 MiB + 1 byte file through real
// HTTP to a member whose limit is 100 MiB: the server counts the file as it
// passes and refuses it at the limit, and the heap stays far below the size
// of the upload the whole time.
func TestAudioUploadMemoryBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("streams 100 MiB")
	}
	const limit = 100 << 20
	o := tinyOptions()
	o.MaxAudioBytes = limit
	m := startLoopback(t, o)

	prefix := "--" + testBoundary + "\r\nContent-Disposition: form-data; name=\"model\"\r\n\r\n" + testModel + "\r\n" +
		"--" + testBoundary + "\r\nContent-Disposition: form-data; name=\"file\"; filename=\"big.wav\"\r\n" +
		"Content-Type: application/octet-stream\r\n\r\n"
	suffix := "\r\n--" + testBoundary + "--\r\n"
	file := &generatedFile{left: limit + 1}
	body := io.MultiReader(strings.NewReader(prefix), file, strings.NewReader(suffix))

	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	baseline := ms.HeapInuse

	resp := postBody(t, context.Background(), http.DefaultClient, m.url+"/v1/audio/transcriptions", body,
		"multipart/form-data; boundary="+testBoundary)
	got := readAll(t, resp)
	assert.Equal(t, http.StatusBadRequest, resp.StatusCode)
	assert.JSONEq(t, errorJSON(400, "audio_filesize_mb", "Maximum file size exceeded (parameter=audio_filesize_mb): the limit is 104857600 bytes"), string(got))
	require.GreaterOrEqual(t, file.sent, int64(limit), "the server read up to the limit")
	require.NotZero(t, file.peakHeap, "the heap was sampled during the upload")
	growth := int64(file.peakHeap) - int64(baseline)
	t.Logf("heap in use: baseline %d MiB, peak %d MiB during a %d MiB upload", baseline>>20, file.peakHeap>>20, file.sent>>20)
	assert.Less(t, growth, int64(16<<20), "the heap grew %d bytes while streaming %d bytes", growth, file.sent)
	assert.Zero(t, m.srv.Metrics().Submitted)
}
