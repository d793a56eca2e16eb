package server_test

import (
	"bytes"
	"encoding/hex"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// An upload streamed to its member carries the trace too: the transcription's server span has the
// upstream child, and the audio member saw the router's span as its parent.
func TestTraceCrossesTheHopOnAnUpload(t *testing.T) {
	c := startCollector(t)
	rig := startAudioRig(t, c.tracingYAML("always_on"), nil)
	ct, body := audioForm(t, [][2]string{{"model", "whisper"}, {"language", "en"}}, "clip.wav", bytes.Repeat([]byte{1, 2}, 3200))
	req, err := http.NewRequest(http.MethodPost, rig.r.http.URL+"/v1/audio/transcriptions", bytes.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+callerToken)
	req.Header.Set("Content-Type", ct)
	req.Header.Set("Traceparent", callerParent)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Equal(t, callerTrace, rig.r.lastRecord(t).TraceID)
	flush(t, rig.r)

	spans := c.spans(callerTrace)
	srv := byName(t, spans, "POST /v1/audio/transcriptions")
	up := byName(t, spans, "anvil.upstream")
	assert.Equal(t, srv.SpanId, up.ParentSpanId)
	assert.Equal(t, "whisper", attrs(srv)["gen_ai.request.model"])
	traces := rig.audio.fake.Traces()
	require.Len(t, traces, 1)
	assert.Equal(t, "00-"+callerTrace+"-"+hex.EncodeToString(up.SpanId)+"-01", traces[0].TraceParent, "the upstream span is the parent")
	assert.Equal(t, "/v1/audio/transcriptions", traces[0].Path)
}
