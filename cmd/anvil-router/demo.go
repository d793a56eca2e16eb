package main

import (
	"bytes"
	"context"
	_ "embed"
	"fmt"
	"io"
	"net"
	"os"
	"text/template"

	"github.com/anvil-llm/anvil/fakevllm"
	"github.com/anvil-llm/anvil/internal/logwriter"
	"github.com/anvil-llm/anvil/router/config"
	"github.com/anvil-llm/anvil/router/config/load"
	"github.com/anvil-llm/anvil/router/server"
	"github.com/anvil-llm/anvil/router/statuspage"
)

//go:embed demo.yaml
var demoYAML string

// demoEnv holds the demo's members: the only place the router's binary holds fake upstreams.
type demoEnv struct {
	replicas *fakevllm.Cluster
	direct   *fakevllm.Cluster
	audio    *fakevllm.Cluster // a speech model: transcriptions, translations and speech
}

// demoAudioModel is the audio member's served model.
const demoAudioModel = "demo/whisper-large-v3"

func startDemoMembers(ctx context.Context) (*demoEnv, error) {
	replicas, err := fakevllm.StartCluster(ctx, fakevllm.Options{Models: []string{"demo/llama-3.1-8b"}, Seed: 1}, 2)
	if err != nil {
		return nil, err
	}
	direct, err := fakevllm.StartCluster(ctx, fakevllm.Options{Models: []string{"demo/qwen-2.5-7b"}, Seed: 2}, 1)
	if err != nil {
		_ = replicas.Close()
		return nil, err
	}
	audio, err := fakevllm.StartCluster(ctx, fakevllm.Options{Models: []string{demoAudioModel}, Seed: 3}, 1)
	if err != nil {
		_ = replicas.Close()
		_ = direct.Close()
		return nil, err
	}
	return &demoEnv{replicas: replicas, direct: direct, audio: audio}, nil
}

func (d *demoEnv) Close() {
	_ = d.replicas.Close()
	_ = d.direct.Close()
	_ = d.audio.Close()
}

// demoConfig renders the embedded demo config around the members' ephemeral addresses.
func demoConfig(d *demoEnv, listen, apiToken, adminToken string) (config.Config, error) {
	tmpl, err := template.New("demo").Option("missingkey=error").Parse(demoYAML)
	if err != nil {
		return config.Config{}, err
	}
	var buf bytes.Buffer
	if err := tmpl.Execute(&buf, map[string]any{"Replicas": d.replicas.URLs(), "Direct": d.direct.URLs()[0],
		"Audio": d.audio.URLs()[0], "AudioModel": demoAudioModel}); err != nil {
		return config.Config{}, err
	}
	over := map[string]string{config.EnvAPIToken: apiToken, config.EnvAdminToken: adminToken}
	if listen != "" {
		over[config.EnvListen] = listen
	}
	return load.Parse(buf.Bytes(), overlayEnv(over))
}

func runDemo(ctx context.Context, out io.Writer, f serveFlags) error {
	members, err := startDemoMembers(ctx)
	if err != nil {
		return err
	}
	defer members.Close()

	listen := f.listen
	if listen == "" && f.drive > 0 {
		listen = "127.0.0.1:0" // a driven demo must not collide with anything already on 8080
	}
	apiToken, adminToken := token(config.EnvAPIToken), token(config.EnvAdminToken)
	cfg, err := demoConfig(members, listen, apiToken, adminToken)
	if err != nil {
		return fmt.Errorf("demo config: %w", err)
	}
	logOut := io.Writer(io.Discard) // the driven demo prints its own report
	if f.drive == 0 {
		w := logwriter.New(os.Stderr, 0)
		defer w.Close()
		logOut = w
	}
	srv, err := server.New(cfg, server.Options{Logger: newLogger(logOut, cfg.Log())})
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", cfg.Listen())
	if err != nil {
		_ = srv.Close()
		return fmt.Errorf("listen: %w", err)
	}
	base := "http://" + ln.Addr().String()
	printBanner(out, base, apiToken, adminToken, f.drive > 0)

	if f.drive == 0 {
		return srv.Serve(ctx, ln)
	}
	serveCtx, stopServe := context.WithCancel(ctx)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(serveCtx, ln) }()
	report, driveErr := drive(ctx, base, apiToken, f.drive)
	stopServe()
	if err := <-served; err != nil {
		return err
	}
	printReport(out, report, members, srv)
	return driveErr
}

func printBanner(out io.Writer, base, apiToken, adminToken string, driven bool) {
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
