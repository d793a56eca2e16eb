package manifest

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// binRouter is the real anvil-router, built from the root module: its `config check`, and a running
// `serve --demo` (fake vLLM members on loopback, every member ready) to ask which routes it serves.
type binRouter struct {
	bin  string
	base string // the running demo router
}

// theRouter builds and starts the real router once, on first use (fuzzing never needs it); TestMain
// stops it after the last test.
func theRouter(t testing.TB) *binRouter {
	t.Helper()
	shared.once.Do(func() {
		shared.dir, shared.err = os.MkdirTemp("", "anvil-manifest-*")
		if shared.err == nil {
			shared.router, shared.stop, shared.err = startRouter(shared.dir)
		}
	})
	if shared.err != nil {
		t.Fatalf("starting the real router: %v", shared.err)
	}
	return shared.router
}

var shared struct {
	once   sync.Once
	dir    string
	router *binRouter
	stop   func()
	err    error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if shared.stop != nil {
		shared.stop()
	}
	if shared.dir != "" {
		_ = os.RemoveAll(shared.dir)
	}
	os.Exit(code)
}

func startRouter(dir string) (*binRouter, func(), error) {
	bin := filepath.Join(dir, "anvil-router")
	build := exec.Command("go", "build", "-o", bin, "./cmd/anvil-router")
	build.Dir = filepath.Join("..", "..") // the root module
	build.Env = append(os.Environ(), "GOFLAGS=")
	if out, err := build.CombinedOutput(); err != nil {
		return nil, nil, fmt.Errorf("go build: %v\n%s", err, out)
	}
	cmd := exec.Command(bin, "serve", "--demo", "--listen", "127.0.0.1:0")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, nil, err
	}
	cmd.Stderr = io.Discard
	if err := cmd.Start(); err != nil {
		return nil, nil, err
	}
	stop := func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
	}
	// The banner's first line names the address: "anvil-router demo listening on http://HOST:PORT".
	sc := bufio.NewScanner(stdout)
	if !sc.Scan() {
		stop()
		return nil, nil, fmt.Errorf("the demo router printed no banner")
	}
	base, ok := strings.CutPrefix(sc.Text(), "anvil-router demo listening on ")
	if !ok {
		stop()
		return nil, nil, fmt.Errorf("unexpected banner %q", sc.Text())
	}
	go func() { _, _ = io.Copy(io.Discard, stdout) }()
	return &binRouter{bin: bin, base: base}, stop, nil
}

// CheckConfig runs the binary's config check on doc. The tokens the config names come from Secrets
// that exist only in a cluster, so the check supplies fresh tokens through the environment, which the
// router prefers to the files, and skips the start files (the intent volume is the pod's); the
// document itself is checked exactly as written.
func (r *binRouter) CheckConfig(ctx context.Context, doc []byte) ([]byte, error) {
	f, err := os.CreateTemp("", "router-*.yaml")
	if err != nil {
		return nil, err
	}
	defer os.Remove(f.Name())
	if _, err := f.Write(doc); err != nil {
		_ = f.Close()
		return nil, err
	}
	if err := f.Close(); err != nil {
		return nil, err
	}
	// --skip-files: the TLS pair, the decision log and the intent volume exist only in the pod.
	cmd := exec.CommandContext(ctx, r.bin, "config", "check", "--skip-files", f.Name())
	cmd.Env = append(os.Environ(), "ANVIL_API_TOKEN="+randomToken(), "ANVIL_ADMIN_TOKEN="+randomToken(),
		"ANVIL_OBSERVER_TOKENS="+randomToken())
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("%v: %s", err, strings.TrimSpace(stderr.String()))
	}
	return out, nil
}

func (r *binRouter) Get(ctx context.Context, path string) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, r.base+path, nil)
	if err != nil {
		return 0, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	return resp.StatusCode, nil
}

func randomToken() string {
	var b [24]byte
	_, _ = rand.Read(b[:])
	return "t-" + hex.EncodeToString(b[:])
}
