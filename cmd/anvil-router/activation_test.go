package main

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/anvil-llm/anvil/engine"
	"github.com/anvil-llm/anvil/fakevllm"
	"github.com/anvil-llm/anvil/internal/machinetool"
	"github.com/anvil-llm/anvil/internal/routerrig"
	"github.com/anvil-llm/anvil/router/config"
	"github.com/anvil-llm/anvil/router/listen"
)

// Bounds of the socket-activation tests: every wait has a deadline, every load a count.
const (
	activationDeadline = 60 * time.Second // one router start, one answer, one drain
	drainConns         = 16               // connections made while the old router drains
	downConns          = 16               // connections made while no router runs
)

// socketActivateTool is Debian's systemd-socket-activate (the systemd package, which .ci/run
// installs).
var socketActivateTool = machinetool.Tool{Name: "systemd-socket-activate", Commands: []string{"systemd-socket-activate"},
	Package: "systemd", Needed: "the socket-activation tests"}

// socketActivate finds systemd-socket-activate: without it the tests skip, except under CI, where
// they fail.
func socketActivate(t *testing.T) string {
	t.Helper()
	return machinetool.Find(t, socketActivateTool)
}

// heldSocket is a listening socket the test holds as systemd's socket unit does: it outlives every
// router process, which gets a duplicate as fd 3 (4, ...) and never the only copy.
type heldSocket struct {
	addr string
	file *os.File
}

func holdSocket(t *testing.T) heldSocket {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	f, err := ln.(*net.TCPListener).File()
	require.NoError(t, err)
	t.Cleanup(func() { _ = f.Close(); _ = ln.Close() })
	return heldSocket{addr: ln.Addr().String(), file: f}
}

// lockedBuffer collects a child's standard error for failure messages.
type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// activated is one router process started the way systemd starts a socket-activated service.
type activated struct {
	cmd    *exec.Cmd
	stderr *lockedBuffer
	done   chan struct{} // closed when the process has exited; err is then set
	err    error
}

// activate runs `anvil-router serve --config cfg` under systemd-socket-activate over the held
// sockets, named by names in order. systemd-socket-activate passes on the descriptors it inherits
// under the LISTEN_FDS protocol (LISTEN_PID must name it, hence the one-line exec helper that sets
// it to its own pid and execs), waits for the first connection on any of them as a socket unit
// does, and execs the router with LISTEN_FDS, LISTEN_PID and LISTEN_FDNAMES of its own.
func activate(t *testing.T, sa, bin, cfg string, names []string, socks ...heldSocket) *activated {
	t.Helper()
	helper := `LISTEN_PID=$$ exec "$0" "$@"`
	// systemd-socket-activate hands its child only the variables named by -E, as systemd hands a
	// service only its unit's Environment=.
	args := []string{"-c", helper, sa, "--fdname=" + strings.Join(names, ":"),
		"-E", config.EnvAPIToken, "-E", config.EnvAdminToken, bin, "serve", "--config", cfg}
	cmd := exec.Command("/bin/sh", args...)
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); !strings.HasPrefix(k, "LISTEN_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, fmt.Sprintf("LISTEN_FDS=%d", len(socks)),
		config.EnvAPIToken+"="+routerrig.CallerToken, config.EnvAdminToken+"="+routerrig.AdminToken)
	for _, s := range socks {
		cmd.ExtraFiles = append(cmd.ExtraFiles, s.file)
	}
	a := &activated{cmd: cmd, stderr: &lockedBuffer{}, done: make(chan struct{})}
	cmd.Stderr = a.stderr
	require.NoError(t, cmd.Start())
	go func() {
		a.err = cmd.Wait()
		close(a.done)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-a.done
	})
	return a
}

func (a *activated) running() bool {
	select {
	case <-a.done:
		return false
	default:
		return true
	}
}

// wait waits for the process to exit and returns its exit code.
func (a *activated) wait(t *testing.T) int {
	t.Helper()
	select {
	case <-a.done:
	case <-time.After(activationDeadline):
		t.Fatalf("router did not exit\n%s", a.stderr.String())
	}
	if ee, ok := a.err.(*exec.ExitError); ok {
		return ee.ExitCode()
	}
	require.NoError(t, a.err, a.stderr.String())
	return 0
}

// stop sends SIGTERM and requires a clean exit.
func (a *activated) stop(t *testing.T) {
	t.Helper()
	require.NoError(t, a.cmd.Process.Signal(syscall.SIGTERM))
	require.Equal(t, 0, a.wait(t), a.stderr.String())
}

// conn is one raw client connection carrying one chat request, so the test knows exactly when
// each connection was made.
type conn struct {
	c net.Conn
	r *bufio.Reader
}

// dialChat connects to addr and writes one chat request for model; keepAlive leaves the connection
// open after the answer.
func dialChat(t *testing.T, addr, model string, keepAlive bool) *conn {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, activationDeadline)
	require.NoError(t, err, "connection refused: the held socket must accept while routers come and go")
	t.Cleanup(func() { _ = c.Close() })
	body := fmt.Sprintf(`{"model":%q,"messages":[{"role":"user","content":"hello"}],"max_tokens":4}`, model)
	req, err := http.NewRequest(http.MethodPost, "http://"+addr+"/v1/chat/completions", strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+routerrig.CallerToken)
	req.Header.Set("Content-Type", "application/json")
	req.Close = !keepAlive
	require.NoError(t, c.SetDeadline(time.Now().Add(3*activationDeadline)))
	require.NoError(t, req.Write(c), "the request is written into the kernel's buffers, accepted or not")
	return &conn{c: c, r: bufio.NewReader(c)}
}

// answerWhile reads the connection's answer like answer, but gives up as soon as every router in
// routers has exited: nobody is left to answer.
func (c *conn) answerWhile(t *testing.T, routers ...*activated) (int, bool, error) {
	t.Helper()
	type result struct {
		status int
		ok     bool
		err    error
	}
	got := make(chan result, 1)
	go func() {
		status, ok, err := c.answer()
		got <- result{status, ok, err}
	}()
	for _, r := range routers {
		select {
		case res := <-got:
			return res.status, res.ok, res.err
		case <-r.done:
		}
	}
	select {
	case res := <-got: // answered just before the last exit
		return res.status, res.ok, res.err
	default:
	}
	_ = c.c.Close()
	<-got
	var logs strings.Builder
	for _, r := range routers {
		logs.WriteString(r.stderr.String())
	}
	t.Fatalf("every router exited before answering\n%s", logs.String())
	return 0, false, nil
}

// answer reads the connection's answer: its status, and whether the body is a chat completion.
func (c *conn) answer() (int, bool, error) {
	resp, err := http.ReadResponse(c.r, nil)
	if err != nil {
		return 0, false, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, strings.Contains(string(b), `"chat.completion"`), err
}

// gate holds every chat request to the member it wraps until release is closed: the request the
// test keeps in flight so the old router's drain lasts as long as the test needs.
type gate struct {
	arrived chan struct{}
	release chan struct{}
	once    sync.Once
}

func (g *gate) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/chat/completions" {
			g.once.Do(func() { close(g.arrived) })
			select {
			case <-g.release:
			case <-r.Context().Done():
				return
			}
		}
		h.ServeHTTP(w, r)
	})
}

// activationConfig writes a router config over two fake members (alias chat) and a third behind
// g (alias held). metrics is its metrics.listen ("" for none).
func activationConfig(t *testing.T, g *gate, metrics string) string {
	t.Helper()
	urls := routerrig.Fakes(t, 2)
	fake, err := fakevllm.NewServer(fakevllm.Options{Models: []string{routerrig.Model}, Profile: engine.TinyProfile(), Seed: 3})
	require.NoError(t, err)
	hs := httptest.NewServer(g.wrap(fake.Handler()))
	t.Cleanup(func() { hs.CloseClientConnections(); hs.Close(); fake.Close() })
	extra := "shutdown_grace: 60s\n"
	if metrics != "" {
		extra += "metrics: {listen: \"" + metrics + "\"}\n"
	}
	y := strings.Replace(routerrig.YAML(append(urls, hs.URL), extra),
		"aliases: [{id: chat, tier: replicas}]", "aliases: [{id: chat, tier: replicas}, {id: held, tier: solo}]", 1)
	// The config's own address is one no socket can bind: a router that served did so on the
	// socket systemd passed, never on listen.
	y = strings.Replace(y, "listen: 127.0.0.1:0", "listen: 192.0.2.1:80", 1)
	path := filepath.Join(t.TempDir(), "router.yaml")
	require.NoError(t, os.WriteFile(path, []byte(y), 0o600))
	return path
}

// TestSocketActivation runs the real binary under systemd-socket-activate over sockets the test
// holds, as a socket unit holds them across restarts of its service.
func TestSocketActivation(t *testing.T) {
	sa := socketActivate(t)
	if testing.Short() && os.Getenv("CI") == "" {
		t.Skip("builds and runs the real binary")
	}
	bin := buildRouter(t)
	t.Run("restart drops nothing", func(t *testing.T) { testRestartDropsNothing(t, sa, bin) })
	t.Run("without a held socket a restart refuses", func(t *testing.T) { testRestartWithoutHeldSocket(t, bin) })
	t.Run("two sockets by name", func(t *testing.T) { testTwoSockets(t, sa, bin) })
	t.Run("unknown socket name refuses startup", func(t *testing.T) { testUnknownSocketName(t, sa, bin) })
}

// A restart under a held socket refuses no connection: connections made while the old router
// drains (it has closed its listener: its idle keep-alive connection was closed by the shutdown)
// and while no router runs at all wait in the kernel's backlog, and the next router serves every
// one. The request in flight when the old router was stopped finishes too.
func testRestartDropsNothing(t *testing.T, sa, bin string) {
	g := &gate{arrived: make(chan struct{}), release: make(chan struct{})}
	cfg := activationConfig(t, g, "")
	sock := holdSocket(t)

	// Generation 1 starts on the first connection, as socket activation starts a service.
	old := activate(t, sa, bin, cfg, []string{listen.APIName}, sock)
	idle := dialChat(t, sock.addr, "chat", true)
	status, ok, err := idle.answerWhile(t, old)
	require.NoError(t, err, old.stderr.String())
	require.Equal(t, http.StatusOK, status, old.stderr.String())
	require.True(t, ok)
	assert.Contains(t, old.stderr.String(), "msg=\"socket activation\" sockets=["+listen.APIName+"]")

	inFlight := dialChat(t, sock.addr, "held", false)
	select {
	case <-g.arrived:
	case <-time.After(activationDeadline):
		t.Fatalf("the held request never reached its member\n%s", old.stderr.String())
	}

	// Stop generation 1. Its shutdown closes its listener, then its idle connections: the idle
	// connection's end proves the old router accepts nothing more while it drains.
	require.NoError(t, old.cmd.Process.Signal(syscall.SIGTERM))
	_, err = idle.r.ReadByte()
	require.ErrorIs(t, err, io.EOF, "the draining router closes its idle connection")
	require.True(t, old.running(), "the old router drains: its held request is still in flight")

	var conns []*conn
	for range drainConns {
		conns = append(conns, dialChat(t, sock.addr, "chat", false))
	}
	require.True(t, old.running(), "every drain-time connection was made while the old router ran")

	close(g.release)
	status, ok, err = inFlight.answerWhile(t, old)
	require.NoError(t, err)
	assert.Equal(t, http.StatusOK, status, "the request in flight finishes during the drain")
	assert.True(t, ok)
	require.Equal(t, 0, old.wait(t), old.stderr.String())

	// No router runs now; connections still succeed, into the backlog.
	for range downConns {
		conns = append(conns, dialChat(t, sock.addr, "chat", false))
	}

	// Generation 2 starts on the waiting connections and serves every one of them.
	started := time.Now()
	next := activate(t, sa, bin, cfg, []string{listen.APIName}, sock)
	served, refused := 0, 0
	for i, c := range conns {
		status, ok, err := c.answerWhile(t, next)
		if assert.NoError(t, err, "connection %d", i) && assert.Equal(t, http.StatusOK, status, "connection %d", i) && assert.True(t, ok) {
			served++
		} else {
			refused++
		}
	}
	t.Logf("restart: %d connections made while the old router drained, %d while none ran: %d served, %d refused; "+
		"the next router answered them all within %s of its start", drainConns, downConns, served, refused, time.Since(started).Round(time.Millisecond))
	assert.Equal(t, drainConns+downConns, served, next.stderr.String())
	assert.Zero(t, refused)
	next.stop(t)
}

// The contrast: a router that binds its own listener takes it down with it, so a connection made
// between the old process's exit and the next one's start is refused.
func testRestartWithoutHeldSocket(t *testing.T, bin string) {
	cfg := filepath.Join(t.TempDir(), "router.yaml")
	require.NoError(t, os.WriteFile(cfg, []byte(routerrig.YAML(routerrig.Fakes(t, 3), "")), 0o600))
	p := serveBinary(t, bin, cfg)
	addr := strings.TrimPrefix(p.url, "http://")
	p.stop(t)
	_, err := net.DialTimeout("tcp", addr, activationDeadline)
	assert.ErrorIs(t, err, syscall.ECONNREFUSED)
}

// A unit with two sockets: the front door and the metrics socket are matched by name, whatever
// the config's addresses say.
func testTwoSockets(t *testing.T, sa, bin string) {
	g := &gate{arrived: make(chan struct{}), release: make(chan struct{})}
	close(g.release)
	cfg := activationConfig(t, g, "192.0.2.1:9090")
	metrics, api := holdSocket(t), holdSocket(t)
	r := activate(t, sa, bin, cfg, []string{listen.MetricsName, listen.APIName}, metrics, api)

	c := dialChat(t, api.addr, "chat", false)
	status, ok, err := c.answerWhile(t, r)
	require.NoError(t, err, r.stderr.String())
	assert.Equal(t, http.StatusOK, status)
	assert.True(t, ok)

	resp, err := (&http.Client{Timeout: activationDeadline}).Get("http://" + metrics.addr + "/metrics")
	require.NoError(t, err)
	b, err := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	require.NoError(t, err)
	assert.Equal(t, http.StatusOK, resp.StatusCode, "the metrics socket serves /metrics without a token")
	assert.Contains(t, string(b), "anvil_router_")
	assert.Contains(t, r.stderr.String(), "sockets=\"["+listen.MetricsName+" "+listen.APIName+"]\"")
	r.stop(t)
}

// A socket whose name the router does not know (a unit without FileDescriptorName= is named after
// the socket unit) refuses startup with a usage error that names it.
func testUnknownSocketName(t *testing.T, sa, bin string) {
	g := &gate{arrived: make(chan struct{}), release: make(chan struct{})}
	cfg := activationConfig(t, g, "")
	sock := holdSocket(t)
	r := activate(t, sa, bin, cfg, []string{"anvil-router.socket"}, sock)
	c, err := net.DialTimeout("tcp", sock.addr, activationDeadline) // starts the service
	require.NoError(t, err)
	defer c.Close()
	assert.Equal(t, exitUsage, r.wait(t))
	assert.Contains(t, r.stderr.String(), `socket "anvil-router.socket": the router takes only sockets named "anvil-api" or "anvil-metrics"`)
}

// TestSocketActivationFailsUnderCIWithoutTheTool: without systemd-socket-activate on PATH the
// socket-activation test fails under CI (a CI machine without systemd is broken, not green) and
// skips elsewhere.
func TestSocketActivationFailsUnderCIWithoutTheTool(t *testing.T) {
	machinetool.MissingFailsUnderCI(t, "TestSocketActivation", socketActivateTool)
}
