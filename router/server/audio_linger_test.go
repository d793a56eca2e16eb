package server_test

import (
	"bufio"
	"io"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/anvil-llm/anvil/fakevllm"
)

// lingerFile is the audio file of these tests: far more than the loopback socket buffers hold, so a
// router that stops reading it makes the caller's write of the rest fail with a reset.
const lingerFile = 20 << 20

// upload is an audio upload on a raw connection, sent as a client does: its head and first bytes
// at once, from its own goroutine, while the answer is read; the rest once released.
type upload struct {
	resp    *http.Response
	release chan struct{}
	sent    chan error // the send's end: nil once every byte was written
	br      *bufio.Reader
}

// sendUpload starts sending form (first its first bytes, the rest once released) and reads the
// router's answer's head.
func sendUpload(t *testing.T, r *router, ct string, form []byte, first int) *upload {
	t.Helper()
	conn, br := rawRequest(t, r, "POST /v1/audio/transcriptions HTTP/1.1\r\nHost: anvil\r\nAuthorization: Bearer "+callerToken+
		"\r\nContent-Type: "+ct+"\r\nContent-Length: "+strconv.Itoa(len(form))+"\r\n\r\n")
	u := &upload{release: make(chan struct{}), sent: make(chan error, 1), br: br}
	go func() {
		if _, err := conn.Write(form[:first]); err != nil {
			u.sent <- err
			return
		}
		<-u.release
		_, err := conn.Write(form[first:])
		u.sent <- err
	}()
	t.Cleanup(func() { _ = conn.Close() })
	resp, err := http.ReadResponse(br, nil)
	require.NoError(t, err)
	u.resp = resp
	return u
}

// finish releases the rest of the upload and reads the answer's body; it requires that every byte
// was sent and that the connection then ends with a clean close.
func (u *upload) finish(t *testing.T) []byte {
	t.Helper()
	close(u.release)
	body, err := io.ReadAll(u.resp.Body)
	require.NoError(t, err)
	require.NoError(t, <-u.sent, "the router closed on the rest of the upload")
	tail, err := io.ReadAll(u.br)
	require.NoError(t, err, "the connection ends with a clean close, not a reset")
	assert.Empty(t, tail)
	return body
}

// untilSettled waits, by the tier's change events, until it holds no lease.
func untilSettled(t *testing.T, r *router, tier string) {
	t.Helper()
	ta, ok := r.srv.Admission().Tier(tier)
	require.True(t, ok)
	guard := time.After(30 * time.Second)
	for {
		changed := ta.Changed() // taken before the read, so no release is missed
		if s := ta.Snapshot(); s.Active == 0 && s.Acquired == s.Released {
			return
		}
		select {
		case <-changed:
		case <-guard:
			t.Fatal("the tier still holds a lease")
		}
	}
}

// TestEarlyAnswerOutlivesTheUpload: a member that refuses an upload after 32 KiB is answered through
// at once; the router then reads the caller's remaining 20 MiB and throws it away instead of closing
// on a caller still sending, whose client would see a reset (and often lose the answer) in place of
// the member's 400. The lease is released before that, while the caller has not sent the rest.
func TestEarlyAnswerOutlivesTheUpload(t *testing.T) {
	rig := startAudioRig(t, "", func(o *fakevllm.Options) { o.MaxAudioBytes = 32 << 10 })
	ct, form := audioForm(t, [][2]string{{"model", "whisper"}}, "long.wav", make([]byte, lingerFile))
	u := sendUpload(t, rig.r, ct, form, 1<<20)
	assert.Equal(t, http.StatusBadRequest, u.resp.StatusCode)
	assert.True(t, u.resp.Close, "a connection whose upload was not read is not reused")
	untilSettled(t, rig.r, "audio") // before the rest is sent: lingering holds no lease
	assert.Contains(t, string(u.finish(t)), "audio_filesize_mb", "the member's own refusal")
	rec := rig.r.lastRecord(t)
	assert.Equal(t, http.StatusBadRequest, rec.Status)
	assert.Equal(t, int64(1), rig.audio.calls.Load())
	assertSettled(t, rig.r.snapshot(t, "audio"))
}

// TestRefusalBeforeTheAttemptOutlivesTheUpload: the router's own refusals of an upload whose file it
// has not read (an unknown model, a quiesced tier) reach a caller still sending the same way.
func TestRefusalBeforeTheAttemptOutlivesTheUpload(t *testing.T) {
	for _, tc := range []struct {
		name, model string
		quiesce     bool
		status      int
		code        string
	}{
		{"unknown model", "nope", false, http.StatusNotFound, "model_not_found"},
		{"quiesced tier", "whisper", true, http.StatusServiceUnavailable, "\"quiesced\""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rig := startAudioRig(t, "", nil)
			if tc.quiesce {
				ta, ok := rig.r.srv.Admission().Tier("audio")
				require.True(t, ok)
				require.NoError(t, ta.Quiesce("maintenance"))
			}
			ct, form := audioForm(t, [][2]string{{"model", tc.model}}, "long.wav", make([]byte, lingerFile))
			u := sendUpload(t, rig.r, ct, form, 64<<10)
			assert.Equal(t, tc.status, u.resp.StatusCode)
			assert.NotEqual(t, int64(-1), u.resp.ContentLength, "the router's answer states its length")
			assert.Contains(t, string(u.finish(t)), tc.code)
			assert.Equal(t, tc.status, rig.r.lastRecord(t).Status)
			assert.Zero(t, rig.audio.calls.Load())
		})
	}
}
