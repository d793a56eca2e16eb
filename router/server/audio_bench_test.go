package server_test

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"

	"github.com/anvil-llm/anvil/router/server"
)

// BenchmarkAudioOrders: one transcription through the real router on loopback to an upstream that
// reads the form and answers, with the model first (streamed through) and the file first (held: in
// memory at 512 KiB, spilled past the 1 MiB memory bound at 4 MiB). B/op and allocs/op are the whole
// process's (client, router, upstream); compare the orders with each other, not with the file size.
func BenchmarkAudioOrders(b *testing.B) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"text":"ok"}`)
	}))
	b.Cleanup(up.Close)
	r := startRouterWith(b, "listen: 127.0.0.1:0\nshutdown_grace: 5s\naliases:\n  - {id: whisper, tier: audio}\ntiers:\n"+
		"  - id: audio\n    kind: direct\n    served_model: served/whisper\n    endpoint: "+up.URL+
		"\n    gates: {max_context_tokens: 4096, media_allowed: true}\n",
		routerOptions{server: server.Options{SpoolDir: filepath.Join(b.TempDir(), "spool")}})
	for _, c := range []struct {
		name      string
		size      int
		fileFirst bool
	}{
		{"model first/512KiB", 512 << 10, false},
		{"file first/512KiB in memory", 512 << 10, true},
		{"model first/4MiB", 4 << 20, false},
		{"file first/4MiB spilled", 4 << 20, true},
	} {
		b.Run(c.name, func(b *testing.B) {
			var ct string
			var body []byte
			if c.fileFirst {
				ct, body = fileFirstForm(b, "clip.wav", make([]byte, c.size), [2]string{"model", "whisper"})
			} else {
				ct, body = audioForm(b, [][2]string{{"model", "whisper"}}, "clip.wav", make([]byte, c.size))
			}
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			for b.Loop() {
				req, err := http.NewRequest(http.MethodPost, r.http.URL+"/v1/audio/transcriptions", bytes.NewReader(body))
				if err != nil {
					b.Fatal(err)
				}
				req.Header.Set("Authorization", "Bearer "+callerToken)
				req.Header.Set("Content-Type", ct)
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					b.Fatal(err)
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				_ = resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					b.Fatalf("status %d", resp.StatusCode)
				}
				<-r.done
			}
		})
	}
}
