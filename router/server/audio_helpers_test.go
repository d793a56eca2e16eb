package server_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/anvil-llm/anvil/engine"
	"github.com/anvil-llm/anvil/fakevllm"
	"github.com/anvil-llm/anvil/router/decisionlog"
)

const whisperModel = "test/whisper"

// audioRig is a router with a direct audio tier (alias "whisper", media allowed) on one real fake
// member, a direct text tier without media (alias "text") and a replica tier (alias "chat").
type audioRig struct {
	r        *router
	audio    *member
	text     *member
	replicas []*member
}

// startAudioRig starts the members and the router; tweak adjusts the audio member's options and
// extra is YAML added at the top level (limits, upstream).
func startAudioRig(t *testing.T, extra string, tweak func(*fakevllm.Options)) *audioRig {
	t.Helper()
	return startAudioRigWith(t, extra, tweak, routerOptions{})
}

// startAudioRigWith is startAudioRig with the router's options.
func startAudioRigWith(t *testing.T, extra string, tweak func(*fakevllm.Options), o routerOptions) *audioRig {
	t.Helper()
	opts := fakevllm.Options{Models: []string{whisperModel}, Profile: engine.TinyProfile(), Seed: 7}
	if tweak != nil {
		tweak(&opts)
	}
	rig := &audioRig{audio: startMemberWith(t, opts), text: startMember(t, "test/text", 8), replicas: startMembers(t, 2)}
	var b strings.Builder
	b.WriteString("listen: 127.0.0.1:0\nshutdown_grace: 5s\n" + extra)
	b.WriteString("aliases:\n  - {id: whisper, tier: audio}\n  - {id: text, tier: text}\n  - {id: chat, tier: replicas}\ntiers:\n")
	fmt.Fprintf(&b, "  - id: audio\n    kind: direct\n    served_model: %s\n    endpoint: %s\n    max_concurrency: 4\n"+
		"    gates: {max_context_tokens: 4096, media_allowed: true}\n", whisperModel, rig.audio.URL())
	fmt.Fprintf(&b, "  - id: text\n    kind: direct\n    served_model: test/text\n    endpoint: %s\n"+
		"    gates: {max_context_tokens: 4096}\n", rig.text.URL())
	fmt.Fprintf(&b, "  - id: replicas\n    kind: replica\n    served_model: %s\n    host: 127.0.0.1\n    provenance: test fakes\n"+
		"    gates: {max_context_tokens: 4096, media_allowed: true}\n    members:\n", servedModel)
	for i, m := range rig.replicas {
		fmt.Fprintf(&b, "      - {id: m%02d, endpoint: %s}\n", i, m.URL())
	}
	rig.r = startRouterWith(t, b.String(), o)
	return rig
}

// upstreamCalls counts the generation requests that reached any member.
func (rig *audioRig) upstreamCalls() int64 {
	return rig.audio.calls.Load() + rig.text.calls.Load() + totalCalls(rig.replicas)
}

// reached reports whether the request the router answered with this X-Request-ID (the ID it
// forwards) reached any member (so far).
func (rig *audioRig) reached(id string) bool {
	for _, m := range append([]*member{rig.audio, rig.text}, rig.replicas...) {
		if m.received(id) {
			return true
		}
	}
	return false
}

// audioForm builds a form as the OpenAI SDKs do: the fields first, in order, then the file.
func audioForm(t testing.TB, fields [][2]string, fileName string, file []byte) (string, []byte) {
	t.Helper()
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	for _, f := range fields {
		require.NoError(t, mw.WriteField(f[0], f[1]))
	}
	if fileName != "" {
		w, err := mw.CreateFormFile("file", fileName)
		require.NoError(t, err)
		_, err = w.Write(file)
		require.NoError(t, err)
	}
	require.NoError(t, mw.Close())
	return mw.FormDataContentType(), buf.Bytes()
}

// postRaw posts body with a content type (and the caller token when auth is set) and reads the answer.
func (r *router) postRaw(t *testing.T, ctx context.Context, path, contentType string, body io.Reader, auth bool) (*http.Response, []byte, error) {
	t.Helper()
	return r.postID(t, ctx, path, contentType, body, auth, "")
}

// postID is postRaw with the caller's X-Request-ID (none when id is empty).
func (r *router) postID(t *testing.T, ctx context.Context, path, contentType string, body io.Reader, auth bool, id string) (*http.Response, []byte, error) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, r.http.URL+path, body)
	require.NoError(t, err)
	if auth {
		req.Header.Set("Authorization", "Bearer "+callerToken)
	}
	if id != "" {
		req.Header.Set("X-Request-ID", id)
	}
	req.Header.Set("Content-Type", contentType)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp, b, err
}

// lastRecord waits for one finished request and returns the newest decision record.
func (r *router) lastRecord(t *testing.T) decisionlog.Record {
	t.Helper()
	r.wait(t, 1)
	recs := r.srv.Decisions().Recent(1)
	require.Len(t, recs, 1)
	return recs[0]
}

// errorJSONBody is the router's fixed error body.
func errorJSONBody(message, kind, code string) string {
	return fmt.Sprintf(`{"error":{"message":%q,"type":%q,"param":null,"code":%q}}`, message, kind, code)
}
