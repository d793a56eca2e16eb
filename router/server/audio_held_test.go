package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"mime/multipart"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/anvil-llm/anvil/router/decisionlog"
	"github.com/anvil-llm/anvil/router/server"
)

// heldLimit is the audio bound of the file-first tests: 2.25 MiB, so a file at the bound spills past the
// 1 MiB held in memory (and stays within the tiny member's 1024-token context).
const heldLimit = 2<<20 + 256<<10

const heldBoundary = "file-first-boundary"

// fileFirstForm builds a form as OpenAI's Node SDK sends it: the file first, then the fields.
func fileFirstForm(t testing.TB, fileName string, file []byte, fields ...[2]string) (string, []byte) {
	t.Helper()
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	require.NoError(t, mw.SetBoundary(heldBoundary))
	w, err := mw.CreateFormFile("file", fileName)
	require.NoError(t, err)
	_, err = w.Write(file)
	require.NoError(t, err)
	for _, f := range fields {
		require.NoError(t, mw.WriteField(f[0], f[1]))
	}
	require.NoError(t, mw.Close())
	return mw.FormDataContentType(), buf.Bytes()
}

// fileOfTotal is the file size that makes a file-first form with a whisper model exactly total bytes.
func fileOfTotal(t *testing.T, total int) int {
	_, empty := fileFirstForm(t, "clip.wav", nil, [2]string{"model", "whisper"})
	return total - len(empty)
}

// spoolEntries lists the spool directory (nil when it does not exist).
func spoolEntries(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if os.IsNotExist(err) {
		return nil
	}
	require.NoError(t, err)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

// heapInUse is the live heap after a collection.
func heapInUse() int64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return int64(ms.HeapInuse)
}

// TestAudioFileBeforeModel: transcriptions and translations whose file part comes before the model
// field (OpenAI's Node SDK) go through a direct tier to the real fake member, the model rewritten to
// the served model (the member answers 404 otherwise), a stream field after the model honoured; a
// file in memory, one spilled, one exactly at limits.max_audio_bytes (accepted, spilled) and one
// byte over (413, the too-large class, no member contacted). After them: no spool file left, the
// budgets given back, the heap where it was.
func TestAudioFileBeforeModel(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "spool")
	rig := startAudioRigWith(t, "limits: {max_audio_bytes: "+strconv.Itoa(heldLimit)+"}\n", nil,
		routerOptions{server: server.Options{SpoolDir: dir}})
	before := heapInUse()
	atBound := fileOfTotal(t, heldLimit)
	cases := []struct {
		name, path, verb string
		size             int
		fields           [][2]string
		chunked          bool
		status           int
	}{
		{"transcription in memory", "/v1/audio/transcriptions", "transcribed", 6400, [][2]string{{"model", "whisper"}, {"language", "en"}}, false, 200},
		{"translation in memory", "/v1/audio/translations", "translated", 6400, [][2]string{{"model", "whisper"}}, true, 200},
		{"transcription spilled", "/v1/audio/transcriptions", "transcribed", 3 << 19, [][2]string{{"model", "whisper"}}, true, 200},
		{"translation at the bound", "/v1/audio/translations", "translated", atBound, [][2]string{{"model", "whisper"}}, true, 200},
		{"transcription at the bound", "/v1/audio/transcriptions", "transcribed", atBound, [][2]string{{"model", "whisper"}}, false, 200},
		{"translation one byte over", "/v1/audio/translations", "", atBound + 1, [][2]string{{"model", "whisper"}}, true, 413},
		{"transcription one byte over", "/v1/audio/transcriptions", "", atBound + 1, [][2]string{{"model", "whisper"}}, true, 413},
	}
	calls := int64(0)
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ct, body := fileFirstForm(t, "clip.wav", bytes.Repeat([]byte{byte(i + 1)}, c.size), c.fields...)
			var rd io.Reader = bytes.NewReader(body)
			if c.chunked {
				rd = io.MultiReader(rd) // no length: counted while it is read
			}
			resp, got, err := rig.r.postRaw(t, context.Background(), c.path, ct, rd, true)
			require.NoError(t, err)
			require.Equal(t, c.status, resp.StatusCode, string(got))
			rec := rig.r.lastRecord(t)
			if c.status == 413 {
				assert.JSONEq(t, errorJSONBody("audio upload is larger than the router accepts", "invalid_request_error", "request_too_large"), string(got))
				assert.Equal(t, decisionlog.OutcomeRefused, rec.Outcome)
				assert.Zero(t, rec.Attempts)
				assert.False(t, rig.reached(resp.Header.Get("X-Request-ID")), "refused before any member was contacted")
			} else {
				calls++
				var answer struct{ Text string }
				require.NoError(t, json.Unmarshal(got, &answer), string(got))
				assert.True(t, strings.HasPrefix(answer.Text, c.verb+" "+strconv.Itoa(c.size)+" bytes of clip.wav"), answer.Text)
				assert.Equal(t, decisionlog.OutcomeSuccess, rec.Outcome)
				assert.Equal(t, 1, rec.Attempts)
			}
			assert.Equal(t, calls, rig.audio.calls.Load(), "one attempt per accepted upload")
			assert.Empty(t, spoolEntries(t, dir), "no spool file outlives its request")
			assertHeldGiven(t, rig.r.srv)
			assertSettled(t, rig.r.snapshot(t, "audio"))
		})
	}
	t.Run("streamed, stream after the model", func(t *testing.T) {
		ct, body := fileFirstForm(t, "clip.wav", make([]byte, 6400), [2]string{"model", "whisper"}, [2]string{"stream", "true"})
		resp, got, err := rig.r.postRaw(t, context.Background(), "/v1/audio/transcriptions", ct, bytes.NewReader(body), true)
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, resp.StatusCode, string(got))
		assert.Equal(t, "text/event-stream", strings.Split(resp.Header.Get("Content-Type"), ";")[0])
		events := readEvents(t, bytes.NewReader(got))
		require.NotEmpty(t, events)
		assert.Equal(t, "[DONE]", events[len(events)-1])
		rig.r.wait(t, 1)
	})
	growth := heapInUse() - before
	t.Logf("heap in use after %d file-first uploads: %+d KiB", len(cases)+1, growth>>10)
	assert.Less(t, growth, int64(4<<20), "nothing of the held files stays in memory")
	assert.Empty(t, spoolEntries(t, dir))
}

// assertHeldGiven: both budgets a held file takes from are whole again.
func assertHeldGiven(t *testing.T, srv *server.Server) {
	t.Helper()
	mem, disk := srv.HeldBudgets()
	assert.Zero(t, mem, "the in-flight body budget is given back")
	assert.Zero(t, disk, "the spill budget is given back")
	assert.Zero(t, srv.SpoolBytes(), "no spool file is open")
}
