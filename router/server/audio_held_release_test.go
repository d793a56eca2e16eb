package server_test

import (
	"bytes"
	"context"
	"net/http"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/anvil-llm/anvil/router/server"
)

// postAsync posts a file-first form in the background; the channel receives its status (-1 when the
// request failed).
func postAsync(rig *audioRig, t *testing.T, ct string, body []byte) <-chan int {
	answered := make(chan int, 1)
	go func() {
		resp, _, err := rig.r.postRaw(t, context.Background(), "/v1/audio/transcriptions", ct, bytes.NewReader(body), true)
		if err != nil {
			answered <- -1
			return
		}
		answered <- resp.StatusCode
	}()
	return answered
}

// TestHeldReleasedOnceSent: a held file (part of it spilled) gives back its memory of the in-flight
// body budget and its disk as soon as it has been sent upstream, while the upstream is still working
// on the answer: a long transcription does not pin the budget chat bodies need.
func TestHeldReleasedOnceSent(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "spool")
	rig := startAudioRigWith(t, "limits: {max_audio_bytes: "+strconv.Itoa(heldLimit)+"}\n", nil,
		routerOptions{server: server.Options{SpoolDir: dir}})
	gate := make(chan struct{})
	rig.audio.gate.Store(&gate)
	rig.audio.drained.Store(true)
	ct, body := fileFirstForm(t, "clip.wav", make([]byte, 3<<19), [2]string{"model", "whisper"})
	answered := postAsync(rig, t, ct, body)
	select {
	case <-rig.audio.bodyRead:
	case code := <-answered:
		t.Fatalf("answered %d before the upstream read the form", code)
	}
	mem, disk := rig.r.srv.HeldBudgets()
	assert.Zero(t, mem, "the held file's memory is given back once it was sent")
	assert.Zero(t, disk, "its disk is given back once it was sent")
	assert.Zero(t, rig.r.srv.SpoolBytes(), "its spool file is closed once it was sent")
	close(gate)
	require.Equal(t, http.StatusOK, <-answered)
	assertHeldGiven(t, rig.r.srv)
}
