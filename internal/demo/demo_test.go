package demo

import (
	"bytes"
	"context"
	"encoding/binary"
	"io"
	"mime/multipart"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/anvil-llm/anvil/router/config"
)

// The embedded config renders around real members into a valid config with the three tiers, the
// given listen address and no member left on a placeholder.
func TestConfigRendersAroundTheMembers(t *testing.T) {
	members, err := StartMembers(context.Background(), 0)
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

func TestMemberBasePort(t *testing.T) {
	for addr, want := range map[string]int{"127.0.0.1:8080": 8081, "[::1]:9000": 9001, "127.0.0.1:0": 0, "nonsense": 0, ":65534": 0} {
		assert.Equal(t, want, MemberBasePort(addr), addr)
	}
	assert.Equal(t, DefaultListen, "127.0.0.1:8080", "demo.yaml's listen")
	assert.Contains(t, demoYAML, "listen: "+DefaultListen+"\n")
}

// TestMembersOnFixedPorts: with a base port the members listen on it and the next three, in the
// config's order; a busy port is refused, naming the rule.
func TestMembersOnFixedPorts(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer busy.Close()
	port := busy.Addr().(*net.TCPAddr).Port
	_, err = StartMembers(context.Background(), port)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "router's port + 1 to + 4")

	// A free run of four ports: the ephemeral members' own, released, tried a few times.
	var members *Members
	for range 5 {
		probe, err := StartMembers(context.Background(), 0)
		require.NoError(t, err)
		u, err := url.Parse(probe.List()[0].URL)
		require.NoError(t, err)
		probe.Close()
		base, _ := strconv.Atoi(u.Port())
		if members, err = StartMembers(context.Background(), base); err == nil {
			defer members.Close()
			var got []string
			for _, m := range members.List() {
				got = append(got, m.URL)
			}
			want := []string{}
			for i := range 4 {
				want = append(want, "http://127.0.0.1:"+strconv.Itoa(base+i))
			}
			assert.Equal(t, want, got)
			return
		}
	}
	t.Skip("no free run of four loopback ports")
}

// TestBannerListsMembersAndCompare: the banner names every member's URL and an anvil-bench
// comparison of the replicas against them.
func TestBannerListsMembersAndCompare(t *testing.T) {
	members, err := StartMembers(context.Background(), 0)
	require.NoError(t, err)
	defer members.Close()
	var out bytes.Buffer
	members.PrintBanner(&out, "http://127.0.0.1:8080", "caller-token-0123456789", "admin-token-0123456789", false)
	l := members.List()
	require.Len(t, l, 4)
	assert.Contains(t, out.String(), "  members:   demo-replicas/vllm-0 "+l[0].URL+", demo-replicas/vllm-1 "+l[1].URL+
		", demo-single "+l[2].URL+", demo-audio "+l[3].URL+"\n")
	assert.Contains(t, out.String(), "  compare:   ANVIL_API_TOKEN=caller-token-0123456789 anvil-bench compare --member "+l[0].URL+
		" --member "+l[1].URL+" --direct-model demo/llama-3.1-8b --url http://127.0.0.1:8080 --model demo-chat")
}
