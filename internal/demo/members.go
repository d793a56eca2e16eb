// Package demo is anvil-router's embedded demo: fake vLLM members on loopback (two replicas of a
// chat model, one direct chat member, one speech member), the router config around their
// ephemeral addresses (demo.yaml), and the load driver of `serve --demo --drive N`, which sends
// routed requests over real HTTP, checks every answer end to end and reports what each member
// served. It is the only place the router's binary holds fake upstreams, and only
// cmd/anvil-router imports it; the command owns the server, its listener and its lifetime.
package demo

import (
	"bytes"
	"context"
	"crypto/rand"
	_ "embed"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"text/template"

	"github.com/anvil-llm/anvil/fakevllm"
	"github.com/anvil-llm/anvil/router/config"
	"github.com/anvil-llm/anvil/router/config/load"
	"github.com/anvil-llm/anvil/router/statuspage"
)

//go:embed demo.yaml
var demoYAML string

// Members are the demo's fake upstreams.
type Members struct {
	replicas *fakevllm.Cluster
	direct   *fakevllm.Cluster
	audio    *fakevllm.Cluster // a speech model: transcriptions, translations and speech
}

// audioModel is the audio member's served model.
const audioModel = "demo/whisper-large-v3"

// StartMembers starts every demo member on an ephemeral loopback port.
func StartMembers(ctx context.Context) (*Members, error) {
	replicas, err := fakevllm.StartCluster(ctx, fakevllm.Options{Models: []string{"demo/llama-3.1-8b"}, Seed: 1}, 2)
	if err != nil {
		return nil, err
	}
	direct, err := fakevllm.StartCluster(ctx, fakevllm.Options{Models: []string{"demo/qwen-2.5-7b"}, Seed: 2}, 1)
	if err != nil {
		_ = replicas.Close()
		return nil, err
	}
	audio, err := fakevllm.StartCluster(ctx, fakevllm.Options{Models: []string{audioModel}, Seed: 3}, 1)
	if err != nil {
		_ = replicas.Close()
		_ = direct.Close()
		return nil, err
	}
	return &Members{replicas: replicas, direct: direct, audio: audio}, nil
}

// Close stops every member.
func (d *Members) Close() {
	_ = d.replicas.Close()
	_ = d.direct.Close()
	_ = d.audio.Close()
}

// Config renders the embedded demo config around the members' ephemeral addresses, with the two
// tokens and, when listen is not empty, the listen address layered over the environment.
func (d *Members) Config(listen, apiToken, adminToken string) (config.Config, error) {
	tmpl, err := template.New("demo").Option("missingkey=error").Parse(demoYAML)
	if err != nil {
		return config.Config{}, err
	}
	var buf bytes.Buffer
	if err := tmpl.Execute(&buf, map[string]any{"Replicas": d.replicas.URLs(), "Direct": d.direct.URLs()[0],
		"Audio": d.audio.URLs()[0], "AudioModel": audioModel}); err != nil {
		return config.Config{}, err
	}
	over := map[string]string{config.EnvAPIToken: apiToken, config.EnvAdminToken: adminToken}
	if listen != "" {
		over[config.EnvListen] = listen
	}
	return load.Parse(buf.Bytes(), func(k string) (string, bool) {
		if v, ok := over[k]; ok {
			return v, true
		}
		return os.LookupEnv(k)
	})
}

// Token returns the environment's value for key, or a fresh random token.
func Token(key string) string {
	if v, ok := os.LookupEnv(key); ok && v != "" {
		return v
	}
	var b [16]byte
	_, _ = rand.Read(b[:])
	return "anvil-" + hex.EncodeToString(b[:])
}

// PrintBanner tells the person who started the demo where it listens, its tokens and what to try.
func PrintBanner(out io.Writer, base, apiToken, adminToken string, driven bool) {
	fmt.Fprintf(out, "anvil-router demo listening on %s\n", base)
	fmt.Fprintf(out, "  caller token: %s\n  admin token:  %s\n", apiToken, adminToken)
	fmt.Fprintf(out, "  try: curl -sS %s/v1/chat/completions -H 'Authorization: Bearer %s' "+
		"-H 'Content-Type: application/json' "+
		`-d '{"model":"demo-chat","messages":[{"role":"user","content":"hello"}],"max_tokens":16}'`+"\n", base, apiToken)
	fmt.Fprintf(out, "  transcribe: curl -sS %s/v1/audio/transcriptions -H 'Authorization: Bearer %s' "+
		"-F model=demo-whisper -F file=@clip.wav\n", base, apiToken)
	fmt.Fprintf(out, "  capacity:  curl -sS %s/admin/v1/capacity -H 'Authorization: Bearer %s'\n", base, adminToken)
	fmt.Fprintf(out, "  metrics:   curl -sS %s/metrics -H 'Authorization: Bearer %s'\n", base, adminToken)
	fmt.Fprintf(out, "  status page: %s%s (sign in with the admin token above)\n", base, statuspage.Index)
	if driven {
		fmt.Fprintf(out, "  (this driven demo exits when its requests are done; `anvil-router serve --demo` stays up for the page)\n")
	}
	fmt.Fprintln(out)
}
