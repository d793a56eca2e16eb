package server_test

import (
	"bytes"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/anvil-llm/anvil/router/audioform"
)

// formPart is one part of a form as a multipart reader reads it.
type formPart struct{ name, fileName, value string }

// readForm reads a whole form; complete says it reached its closing boundary.
func readForm(body io.Reader, boundary string) ([]formPart, bool) {
	mr := multipart.NewReader(body, boundary)
	var out []formPart
	for {
		p, err := mr.NextPart()
		if err == io.EOF {
			return out, true
		}
		if err != nil {
			return out, false
		}
		v, err := io.ReadAll(p)
		if err != nil {
			return out, false
		}
		out = append(out, formPart{p.FormName(), p.FileName(), string(v)})
	}
}

// recordingUpstream is a direct audio upstream that reads every form to its end, keyed by the
// request ID the router forwards (an abandoned attempt may arrive after its caller's answer): it
// answers 200 to a complete form and records it, and 422 to a form that never completed (which the
// router, having abandoned the attempt, must never relay).
type recordingUpstream struct {
	*httptest.Server
	mu       sync.Mutex
	seen     map[string]bool       // request IDs that reached the upstream at all
	complete map[string][]formPart // request IDs whose form arrived complete
}

func newRecordingUpstream(t testing.TB) *recordingUpstream {
	u := &recordingUpstream{seen: map[string]bool{}, complete: map[string][]formPart{}}
	u.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := r.Header.Get("X-Request-Id")
		u.mu.Lock()
		u.seen[id] = true
		u.mu.Unlock()
		_, params, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
		parts, complete := readForm(r.Body, params["boundary"])
		if err != nil || !complete {
			w.WriteHeader(http.StatusUnprocessableEntity)
			return
		}
		u.mu.Lock()
		u.complete[id] = parts
		u.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"text":"ok"}`)
	}))
	t.Cleanup(u.Close)
	return u
}

// of reports what the upstream has seen of one request so far.
func (u *recordingUpstream) of(id string) (seen bool, parts []formPart, complete bool) {
	u.mu.Lock()
	defer u.mu.Unlock()
	parts, complete = u.complete[id]
	return u.seen[id], parts, complete
}

// heldOrder is the order the upstream receives a form's parts in: the caller's, unless its file came
// before its model, in which case the file was held and comes after every field.
func heldOrder(parts []formPart) []formPart {
	for _, p := range parts {
		switch p.name {
		case "model":
			return parts
		case "file":
			var fields, files []formPart
			for _, q := range parts {
				if q.name == "file" {
					files = append(files, q)
				} else {
					fields = append(fields, q)
				}
			}
			return append(fields, files...)
		}
	}
	return parts
}

// FuzzAudioUpload drives arbitrary multipart bodies through the real router to a recording upstream:
// the router never fails internally; what it forwards arrives complete and carries exactly the
// caller's parts (the model replaced by the served model); what it refuses never reaches the upstream
// as a complete form, and a form refused on its head never reaches the upstream at all.
func FuzzAudioUpload(f *testing.F) {
	const b = "FuzzB"
	part := func(name, value string) string {
		return "--" + b + "\r\nContent-Disposition: form-data; name=\"" + name + "\"\r\n\r\n" + value + "\r\n"
	}
	file := func(v string) string {
		return "--" + b + "\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a.wav\"\r\nContent-Type: audio/wav\r\n\r\n" + v + "\r\n"
	}
	end := "--" + b + "--\r\n"
	for _, seed := range []string{
		part("model", "whisper") + file("RIFFdata") + end,
		part("model", "whisper") + part("stream", "true") + file("RIFFdata") + part("language", "en") + end,
		part("model", "chat") + file("x") + end,
		part("model", "nope") + file("x") + end,
		file("x") + part("model", "whisper") + end,
		file("RIFFdata") + part("model", "whisper") + part("stream", "true") + part("language", "en") + end,
		part("language", "en") + file(strings.Repeat("z", 3000)) + part("model", "whisper") + end,
		file("x") + part("language", "en") + end,
		file("x") + part("model", "whisper") + file("y") + end,
		file("x") + part("model", "whisper"),
		part("model", "whisper") + part("model", "whisper") + file("x") + end,
		part("model", "whisper") + file("x") + part("model", "whisper") + end,
		part("model", "whisper") + file("x") + file("y") + end,
		part("model", "whisper") + file(strings.Repeat("z", 5000)) + end,
		part("model", "whisper") + file("x"),
		part("model", "whisper") + part("prompt", strings.Repeat("p", 2000)) + file("x") + end,
		part("model", "whisper") + end,
		"",
	} {
		f.Add([]byte(seed), false)
		f.Add([]byte(seed), true)
	}
	up := newRecordingUpstream(f)
	var y strings.Builder
	y.WriteString("listen: 127.0.0.1:0\nshutdown_grace: 5s\nlimits: {max_audio_bytes: 4096, max_body_bytes: 1024}\n")
	y.WriteString("aliases:\n  - {id: whisper, tier: audio}\n  - {id: chat, tier: replicas}\ntiers:\n")
	y.WriteString("  - id: audio\n    kind: direct\n    served_model: served/whisper\n    endpoint: " + up.URL +
		"\n    gates: {max_context_tokens: 4096, media_allowed: true}\n")
	y.WriteString("  - id: replicas\n    kind: replica\n    served_model: m\n    host: 127.0.0.1\n    provenance: fuzz\n" +
		"    gates: {max_context_tokens: 4096, media_allowed: true}\n    members:\n" +
		"      - {id: a, endpoint: 'http://127.0.0.1:9'}\n      - {id: b, endpoint: 'http://127.0.0.1:10'}\n")
	r := startRouter(f, y.String())
	lim := audioform.DefaultLimits()
	lim.MaxHeadBytes = 1024

	var n atomic.Int64
	f.Fuzz(func(t *testing.T, body []byte, chunked bool) {
		id := fmt.Sprintf("fuzz-%d", n.Add(1))
		var rd io.Reader = bytes.NewReader(body)
		if chunked {
			rd = io.MultiReader(rd)
		}
		req, err := http.NewRequest(http.MethodPost, r.http.URL+"/v1/audio/transcriptions", rd)
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+callerToken)
		req.Header.Set("Content-Type", "multipart/form-data; boundary="+b)
		req.Header.Set("X-Request-ID", id)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		got, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		r.wait(t, 1)
		id = resp.Header.Get("X-Request-ID") // the router's: what the upstream received
		require.NotEqual(t, http.StatusInternalServerError, resp.StatusCode, string(got))
		require.NotEqual(t, http.StatusUnprocessableEntity, resp.StatusCode, "the router relayed the answer to an incomplete form")
		seen, parts, complete := up.of(id)
		if resp.StatusCode == http.StatusOK {
			require.True(t, complete, "a forwarded form arrives complete: id %s seen %v answer %s hdr %v", id, seen, got, resp.Header)
			want, ok := readForm(bytes.NewReader(body), b)
			require.True(t, ok)
			for i := range want {
				if want[i].name == "model" {
					assert.Equal(t, "whisper", want[i].value)
					want[i].value = "served/whisper"
				}
			}
			assert.Equal(t, heldOrder(want), parts)
			return
		}
		assert.False(t, complete, "a refused form never reaches the upstream complete")
		if int64(len(body)) > 4096 && !chunked {
			assert.False(t, seen, "an announced length over the bound reaches no upstream")
		}
		if _, err := audioform.Open(bytes.NewReader(body), "multipart/form-data; boundary="+b, lim); err != nil {
			assert.False(t, seen, "a form refused on its head reaches no upstream")
		}
	})
}
