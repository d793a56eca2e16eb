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
	"net"
	"os"
	"strconv"
	"strings"
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

// ReplicaModel is the replica tier's served model, the direct model of an anvil-bench comparison.
const ReplicaModel = "demo/llama-3.1-8b"

// DefaultListen is the demo router's address when neither --listen nor ANVIL_LISTEN names one
// (demo.yaml's listen).
const DefaultListen = "127.0.0.1:8080"

// memberCount is how many members the demo runs: two replicas, the direct chat one, the audio one.
const memberCount = 4

// StartMembers starts every demo member on loopback: on ports basePort to basePort+3 (the two
// replicas, the direct chat member, the audio member), or on ephemeral ports when basePort is 0.
func StartMembers(ctx context.Context, basePort int) (*Members, error) {
	lns, err := listenMembers(ctx, basePort)
	if err != nil {
		return nil, err
	}
	replicas, err := fakevllm.StartClusterOn(fakevllm.Options{Models: []string{ReplicaModel}, Seed: 1}, lns[0:2])
	if err != nil {
		closeAll(lns[2:])
		return nil, err
	}
	direct, err := fakevllm.StartClusterOn(fakevllm.Options{Models: []string{"demo/qwen-2.5-7b"}, Seed: 2}, lns[2:3])
	if err != nil {
		_ = replicas.Close()
		closeAll(lns[3:])
		return nil, err
	}
	audio, err := fakevllm.StartClusterOn(fakevllm.Options{Models: []string{audioModel}, Seed: 3}, lns[3:4])
	if err != nil {
		_ = replicas.Close()
		_ = direct.Close()
		return nil, err
	}
	return &Members{replicas: replicas, direct: direct, audio: audio}, nil
}

// listenMembers opens the members' listeners.
func listenMembers(ctx context.Context, basePort int) ([]net.Listener, error) {
	if basePort < 0 || basePort+memberCount-1 > 65535 {
		return nil, fmt.Errorf("demo members: ports %d-%d are out of range", basePort, basePort+memberCount-1)
	}
	var lc net.ListenConfig
	lns := make([]net.Listener, 0, memberCount)
	for i := range memberCount {
		port := 0
		if basePort > 0 {
			port = basePort + i
		}
		ln, err := lc.Listen(ctx, "tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		if err != nil {
			closeAll(lns)
			return nil, fmt.Errorf("demo members (on the router's port + 1 to + %d): %w", memberCount, err)
		}
		lns = append(lns, ln)
	}
	return lns, nil
}

func closeAll(lns []net.Listener) {
	for _, ln := range lns {
		_ = ln.Close()
	}
}

// MemberBasePort is the first member port of a demo whose router listens on addr: the router's
// port + 1, or 0 (ephemeral member ports) when the router's port is 0 or addr has none.
func MemberBasePort(addr string) int {
	_, p, err := net.SplitHostPort(addr)
	if err != nil {
		return 0
	}
	port, err := strconv.Atoi(p)
	if err != nil || port <= 0 || port+memberCount > 65535 {
		return 0
	}
	return port + 1
}

// Member is one demo member as the banner lists it.
type Member struct {
	Scope string // tier, or tier/member for a replica
	URL   string
}

// List lists the members with their URLs, in the config's order.
func (d *Members) List() []Member {
	r := d.replicas.URLs()
	return []Member{{"demo-replicas/vllm-0", r[0]}, {"demo-replicas/vllm-1", r[1]},
		{"demo-single", d.direct.URLs()[0]}, {"demo-audio", d.audio.URLs()[0]}}
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

// PrintBanner tells the person who started the demo where it listens, its tokens, its members and
// what to try, an anvil-bench comparison of the replicas directly and through the router included.
func (d *Members) PrintBanner(out io.Writer, base, apiToken, adminToken string, driven bool) {
	fmt.Fprintf(out, "anvil-router demo listening on %s\n", base)
	fmt.Fprintf(out, "  caller token: %s\n  admin token:  %s\n", apiToken, adminToken)
	var members []string
	for _, m := range d.List() {
		members = append(members, m.Scope+" "+m.URL)
	}
	fmt.Fprintf(out, "  members:   %s\n", strings.Join(members, ", "))
	fmt.Fprintf(out, "  try: curl -sS %s/v1/chat/completions -H 'Authorization: Bearer %s' "+
		"-H 'Content-Type: application/json' "+
		`-d '{"model":"demo-chat","messages":[{"role":"user","content":"hello"}],"max_tokens":16}'`+"\n", base, apiToken)
	fmt.Fprintf(out, "  transcribe: curl -sS %s/v1/audio/transcriptions -H 'Authorization: Bearer %s' "+
		"-F model=demo-whisper -F file=@clip.wav\n", base, apiToken)
	r := d.replicas.URLs()
	fmt.Fprintf(out, "  compare:   ANVIL_API_TOKEN=%s anvil-bench compare --member %s --member %s --direct-model %s "+
		"--url %s --model demo-chat --clients 4 --requests 40 --output-tokens 16\n", apiToken, r[0], r[1], ReplicaModel, base)
	fmt.Fprintf(out, "  capacity:  curl -sS %s/admin/v1/capacity -H 'Authorization: Bearer %s'\n", base, adminToken)
	fmt.Fprintf(out, "  metrics:   curl -sS %s/metrics -H 'Authorization: Bearer %s'\n", base, adminToken)
	fmt.Fprintf(out, "  status page: %s%s (sign in with the admin token above)\n", base, statuspage.Index)
	if driven {
		fmt.Fprintf(out, "  (this driven demo exits when its requests are done; `anvil-router serve --demo` stays up for the page)\n")
	}
	fmt.Fprintln(out)
}
