package server_test

import (
	"context"
	"io"
	"net/http"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/anvil-llm/anvil/fakevllm"
	"github.com/anvil-llm/anvil/router/decisionlog"
)

// generatedUpload produces an upload on the fly, never holding more than the caller's buffer, and
// samples the heap once per MiB it hands out.
type generatedUpload struct {
	left, sent int64
	peakHeap   uint64
}

func (g *generatedUpload) Read(p []byte) (int, error) {
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

// TestAudioUploadMemoryBounded streams a 100 MiB file through the real router to a real member whose
// own bound is higher, with the router's bound at 100 MiB: the router streams the upload as it comes
// and refuses it at the first byte past its bound, and the heap of the whole process (caller, router
// and member) stays far below the size of the upload the whole time. An upload that announces its
// length over the bound is refused before a byte of it is read, and reaches no member.
func TestAudioUploadMemoryBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("streams 100 MiB")
	}
	const limit = 100 << 20
	rig := startAudioRig(t, "limits: {max_audio_bytes: 104857600}\n", func(o *fakevllm.Options) { o.MaxAudioBytes = 2 * limit })

	const boundary = "memory-test-boundary"
	head := "--" + boundary + "\r\nContent-Disposition: form-data; name=\"model\"\r\n\r\nwhisper\r\n" +
		"--" + boundary + "\r\nContent-Disposition: form-data; name=\"file\"; filename=\"big.wav\"\r\n" +
		"Content-Type: application/octet-stream\r\n\r\n"
	tail := "\r\n--" + boundary + "--\r\n"
	ct := "multipart/form-data; boundary=" + boundary
	file := &generatedUpload{left: limit}

	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	baseline := ms.HeapInuse

	body := io.MultiReader(strings.NewReader(head), file, strings.NewReader(tail)) // no length: chunked
	resp, got, err := rig.r.postRaw(t, context.Background(), "/v1/audio/transcriptions", ct, body, true)
	require.NoError(t, err)
	assert.Equal(t, http.StatusRequestEntityTooLarge, resp.StatusCode)
	assert.JSONEq(t, errorJSONBody("audio upload is larger than the router accepts", "invalid_request_error", "request_too_large"), string(got))
	require.GreaterOrEqual(t, file.sent, int64(limit)-int64(len(head)), "the router read up to its bound")
	require.NotZero(t, file.peakHeap, "the heap was sampled during the upload")
	growth := int64(file.peakHeap) - int64(baseline)
	t.Logf("heap in use: baseline %d MiB, peak %d MiB (growth %d KiB) while %d MiB streamed through the router",
		baseline>>20, file.peakHeap>>20, growth>>10, file.sent>>20)
	assert.Less(t, growth, int64(16<<20), "the heap grew %d bytes while streaming %d bytes", growth, file.sent)

	rec := rig.r.lastRecord(t)
	assert.Equal(t, decisionlog.OutcomeBodyRefused, rec.Outcome)
	assert.Equal(t, http.StatusRequestEntityTooLarge, rec.Status)
	assert.Equal(t, 1, rec.Attempts)
	assert.Zero(t, rig.audio.fake.Metrics().Submitted, "the member never had a complete request")
	assertSettled(t, rig.r.snapshot(t, "audio"))

	// The same upload announcing its length: refused at once, no member contacted.
	pr, pw := io.Pipe()
	defer pw.Close()
	req, err := http.NewRequest(http.MethodPost, rig.r.http.URL+"/v1/audio/transcriptions", pr)
	require.NoError(t, err)
	req.ContentLength = limit + int64(len(head)+len(tail))
	req.Header.Set("Authorization", "Bearer "+callerToken)
	req.Header.Set("Content-Type", ct)
	req.Header.Set("X-Request-ID", "announced-too-large")
	go func() { _, _ = pw.Write([]byte(head)) }() // only the head is ever offered
	resp, err = http.DefaultClient.Do(req)
	require.NoError(t, err)
	_ = resp.Body.Close()
	assert.Equal(t, http.StatusRequestEntityTooLarge, resp.StatusCode)
	rec = rig.r.lastRecord(t)
	assert.Equal(t, decisionlog.OutcomeRefused, rec.Outcome)
	require.NotEmpty(t, resp.Header.Get("X-Request-ID"))
	assert.False(t, rig.reached(resp.Header.Get("X-Request-ID")), "no member was contacted")
}
