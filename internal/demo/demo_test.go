package demo

import (
	"bytes"
	"context"
	"encoding/binary"
	"io"
	"mime/multipart"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/anvil-llm/anvil/router/config"
)

// The embedded config renders around real members into a valid config with the three tiers, the
// given listen address and no member left on a placeholder.
func TestConfigRendersAroundTheMembers(t *testing.T) {
	members, err := StartMembers(context.Background())
	require.NoError(t, err)
	defer members.Close()
	for name, listen := range map[string]string{"configured": "127.0.0.1:0", "default": ""} {
		t.Run(name, func(t *testing.T) {
			cfg, err := members.Config(listen, "caller-token-0123456789", "admin-token-0123456789")
			require.NoError(t, err)
			want := listen
			if want == "" {
				want = "127.0.0.1:8080"
			}
			assert.Equal(t, want, cfg.Listen())
			var ids []string
			for _, tier := range cfg.Tiers() {
				ids = append(ids, tier.ID)
			}
			assert.Equal(t, []string{"demo-replicas", "demo-single", "demo-audio"}, ids)
		})
	}
}

func TestToken(t *testing.T) {
	t.Setenv(config.EnvAPIToken, "from-env")
	assert.Equal(t, "from-env", Token(config.EnvAPIToken))
	t.Setenv(config.EnvAPIToken, "")
	a, b := Token(config.EnvAPIToken), Token(config.EnvAPIToken)
	assert.True(t, strings.HasPrefix(a, "anvil-") && len(a) == len("anvil-")+32, a)
	assert.NotEqual(t, a, b, "a fresh token each time")
}

// The uploaded clip is a complete WAV file that the speech check accepts, and the upload form carries
// the model first, the fields, then the file.
func TestClipAndUploadForm(t *testing.T) {
	wav := func(b []byte, ct string) *http.Response {
		return &http.Response{Header: http.Header{"Content-Type": {ct}}, Body: io.NopCloser(bytes.NewReader(b))}
	}
	assert.NoError(t, checkWAV(wav(demoClip, "audio/wav")))
	assert.Error(t, checkWAV(wav(demoClip, "application/json")))
	assert.Error(t, checkWAV(wav(demoClip[:len(demoClip)-2], "audio/wav")), "a cut file")
	assert.Equal(t, uint32(len(demoClip)-44), binary.LittleEndian.Uint32(demoClip[40:44]))

	body, ct, err := uploadForm(shot{alias: "demo-whisper", body: "language=en", upload: "clip.wav"})
	require.NoError(t, err)
	_, params, ok := strings.Cut(ct, "boundary=")
	require.True(t, ok, ct)
	r := multipart.NewReader(bytes.NewReader(body), params)
	var names []string
	for {
		p, err := r.NextPart()
		if err == io.EOF {
			break
		}
		require.NoError(t, err)
		names = append(names, p.FormName())
	}
	assert.Equal(t, []string{"model", "language", "file"}, names)
}
