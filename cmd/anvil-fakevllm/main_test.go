package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"mime/multipart"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// startServe runs the serve command until the returned cancel is called; it
// returns the member URLs as printed on stdout and the exit code channel.
func startServe(t *testing.T, members int, args ...string) ([]string, context.CancelFunc, <-chan int) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	var stderr bytes.Buffer
	code := make(chan int, 1)
	go func() {
		code <- run(ctx, append([]string{"serve"}, args...), pw, &stderr)
		_ = pw.Close()
	}()
	var urls []string
	sc := bufio.NewScanner(pr)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		require.Len(t, f, 3, "line %q", sc.Text())
		require.Equal(t, "member", f[0])
		urls = append(urls, f[2])
		if len(urls) == members {
			break
		}
	}
	go func() { _, _ = io.Copy(io.Discard, pr) }()
	require.NotEmpty(t, urls, "stderr: %s", stderr.String())
	return urls, cancel, code
}

func TestServeMembersAndGracefulStop(t *testing.T) {
	dir := t.TempDir()
	faults := filepath.Join(dir, "faults.yaml")
	require.NoError(t, os.WriteFile(faults, []byte("kv_blocks: 8\nmetrics: {mode: missing}\n"), 0o600))
	urls, cancel, code := startServe(t, 2, "--model", "m1,m2", "--profile", "tiny", "--members", "2",
		"--faults", faults, "--fault-kv-blocks", "16", "--fault-http-error", "503=0", "--legacy-metrics", "--seed", "3")
	require.Len(t, urls, 2)
	for _, u := range urls {
		resp, err := http.Get(u + "/health")
		require.NoError(t, err)
		resp.Body.Close()
		assert.Equal(t, http.StatusOK, resp.StatusCode)
	}
	resp, err := http.Get(urls[1] + "/admin/faults")
	require.NoError(t, err)
	var f map[string]any
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&f))
	resp.Body.Close()
	assert.Equal(t, float64(16), f["kv_blocks"], "a flag overrides the file")
	assert.Equal(t, map[string]any{"mode": "missing"}, f["metrics"], "the file's other faults stay")

	resp, err = http.Get(urls[0] + "/v1/models")
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.Contains(t, string(body), `"id":"m2"`)

	cancel()
	assert.Equal(t, 0, <-code)
}

func TestServeAdaptersExtraModelsAndAudioLimit(t *testing.T) {
	urls, cancel, code := startServe(t, 1, "--model", "m1", "--lora", "l1", "--lora", "l2,l3", "--extra-model", "other",
		"--profile", "tiny", "--max-audio-bytes", "1000")
	resp, err := http.Get(urls[0] + "/v1/models")
	require.NoError(t, err)
	var list struct {
		Data []struct {
			ID     string  `json:"id"`
			Root   string  `json:"root"`
			Parent *string `json:"parent"`
		} `json:"data"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&list))
	resp.Body.Close()
	var got []string
	for _, c := range list.Data {
		parent := "-"
		if c.Parent != nil {
			parent = *c.Parent
		}
		got = append(got, c.ID+" "+c.Root+" "+parent)
	}
	assert.Equal(t, []string{"m1 m1 -", "other other -", "l1 /adapters/l1 m1", "l2 /adapters/l2 m1", "l3 /adapters/l3 m1"}, got)

	var body bytes.Buffer
	w := multipart.NewWriter(&body)
	fw, err := w.CreateFormFile("file", "a.wav")
	require.NoError(t, err)
	_, err = fw.Write(make([]byte, 1001))
	require.NoError(t, err)
	require.NoError(t, w.Close())
	resp, err = http.Post(urls[0]+"/v1/audio/transcriptions", w.FormDataContentType(), &body)
	require.NoError(t, err)
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.Equal(t, http.StatusBadRequest, resp.StatusCode)
	assert.Contains(t, string(b), `"param":"audio_filesize_mb"`)

	cancel()
	assert.Equal(t, 0, <-code)
}

func TestServeUsageErrors(t *testing.T) {
	dir := t.TempDir()
	badFaults := filepath.Join(dir, "bad.yaml")
	require.NoError(t, os.WriteFile(badFaults, []byte("nonsense: 1\n"), 0o600))
	tests := map[string][]string{
		"missing model":                {"serve"},
		"unknown profile":              {"serve", "--model", "m", "--profile", "huge"},
		"bad http error flag":          {"serve", "--model", "m", "--fault-http-error", "503"},
		"bad rate":                     {"serve", "--model", "m", "--fault-http-error", "503=2"},
		"bad faults file":              {"serve", "--model", "m", "--faults", badFaults},
		"missing faults file":          {"serve", "--model", "m", "--faults", filepath.Join(dir, "none.yaml")},
		"too many members":             {"serve", "--model", "m", "--members", "1000"},
		"port range":                   {"serve", "--model", "m", "--members", "3", "--base-port", "65534"},
		"kv beyond profile":            {"serve", "--model", "m", "--profile", "tiny", "--fault-kv-blocks", "1000"},
		"unknown flag":                 {"serve", "--model", "m", "--nope"},
		"bad metrics mode":             {"serve", "--model", "m", "--fault-metrics", "sleepy"},
		"both profile sources":         {"serve", "--model", "m", "--profile", "tiny", "--profile-file", badFaults},
		"adapter named like the model": {"serve", "--model", "m", "--lora", "m"},
		"extra model twice":            {"serve", "--model", "m", "--extra-model", "x", "--extra-model", "x"},
		"bad audio limit":              {"serve", "--model", "m", "--max-audio-bytes", "-1"},
	}
	for name, args := range tests {
		t.Run(name, func(t *testing.T) {
			var out, errb bytes.Buffer
			code := run(context.Background(), args, &out, &errb)
			assert.Equal(t, 2, code, "stderr: %s", errb.String())
			assert.Contains(t, errb.String(), "anvil-fakevllm:")
			assert.Empty(t, out.String())
		})
	}
}
