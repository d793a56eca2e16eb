package server_test

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/anvil-llm/anvil/engine"
	"github.com/anvil-llm/anvil/fakevllm"
	"github.com/anvil-llm/anvil/router/config/load"
	"github.com/anvil-llm/anvil/router/decisionlog"
	"github.com/anvil-llm/anvil/router/server"
)

// heldPastMemory is how much of a held file the cut tests send before they stop: past the 1 MiB a
// held file keeps in memory, so part of it is in a spool file.
const heldPastMemory = 3 << 19

// gate is a barrier on bytes read: reached closes at the first read that starts once at bytes were
// read, so everything before them has been handed on (to the form, and from it to the hold).
type gate struct {
	at      int64
	n       atomic.Int64
	once    sync.Once
	reached chan struct{}
}

func newGate(at int64) *gate { return &gate{at: at, reached: make(chan struct{})} }

func (g *gate) before() {
	if g.n.Load() >= g.at {
		g.once.Do(func() { close(g.reached) })
	}
}

type gatedBody struct {
	io.ReadCloser
	g *gate
}

func (b gatedBody) Read(p []byte) (int, error) {
	b.g.before()
	n, err := b.ReadCloser.Read(p)
	b.g.n.Add(int64(n))
	return n, err
}

type gatedListener struct {
	net.Listener
	g *gate
}

func (l gatedListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return gatedConn{c, l.g}, nil
}

type gatedConn struct {
	net.Conn
	g *gate
}

func (c gatedConn) Read(p []byte) (int, error) {
	c.g.before()
	n, err := c.Conn.Read(p)
	c.g.n.Add(int64(n))
	return n, err
}

// startHeldUpload sends a file-first form's start (the file's first heldPastMemory bytes) and no more;
// the returned function ends the upload the way the caller's context ends it.
func startHeldUpload(t *testing.T, url string) (<-chan *http.Response, context.CancelFunc) {
	t.Helper()
	return startHeldUploadAs(t, url, callerToken)
}

// startHeldUploadAs is startHeldUpload as the caller with token.
func startHeldUploadAs(t *testing.T, url, token string) (<-chan *http.Response, context.CancelFunc) {
	t.Helper()
	ct, body := fileFirstForm(t, "clip.wav", make([]byte, 2<<20), [2]string{"model", "whisper"})
	pr, pw := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	go func() { _, _ = pw.Write(body[:heldPastMemory+512]) }() // then nothing, until the end
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url+"/v1/audio/transcriptions", pr)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", ct)
	answered := make(chan *http.Response, 1)
	go func() {
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			answered <- nil
			return
		}
		_, _ = io.Copy(io.Discard, resp.Body) // keep the body for assertions on the status only
		_ = resp.Body.Close()
		answered <- resp
	}()
	t.Cleanup(func() { cancel(); _ = pw.Close() })
	return answered, func() { cancel(); _ = pw.CloseWithError(context.Canceled) }
}

// heldNow waits until the router has read the start of the upload (so it holds part of its file),
// failing if the upload was answered first.
func heldNow(t *testing.T, g *gate, answered <-chan *http.Response) {
	t.Helper()
	select {
	case <-g.reached:
	case resp := <-answered:
		if resp == nil {
			t.Fatal("the upload failed before the router held its file")
		}
		t.Fatalf("the upload was answered %d before the router held its file", resp.StatusCode)
	}
}

// TestHeldUploadCallerLeaves: a caller that goes away while its file is held (part of it spilled)
// leaves no spool file, no budget taken and no heap behind, and no member is ever contacted.
func TestHeldUploadCallerLeaves(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "spool")
	g := newGate(heldPastMemory)
	rig := startAudioRigWith(t, "", nil, routerOptions{server: server.Options{SpoolDir: dir},
		body: func(b io.ReadCloser) io.ReadCloser { return gatedBody{b, g} }})
	before := heapInUse()
	answered, leave := startHeldUpload(t, rig.r.http.URL)
	heldNow(t, g, answered)
	assert.Positive(t, rig.r.srv.SpoolBytes(), "the held file spilled past its memory bound")
	assert.Empty(t, spoolEntries(t, dir), "a spool file has no name: a kill leaves nothing")
	mem, disk := rig.r.srv.HeldBudgets()
	assert.Equal(t, int64(1<<20), mem, "the held file's memory is in the body budget")
	assert.Positive(t, disk, "its spilled part is in the spill budget")
	leave()
	assert.Nil(t, <-answered, "the caller left before any answer")
	rec := rig.r.lastRecord(t)
	assert.Zero(t, rec.Attempts)
	assert.Zero(t, rig.upstreamCalls(), "no member was contacted")
	assert.Empty(t, spoolEntries(t, dir), "the spool file is removed")
	assertHeldGiven(t, rig.r.srv)
	growth := heapInUse() - before
	t.Logf("heap in use after a held upload the caller left: %+d KiB", growth>>10)
	assert.Less(t, growth, int64(1<<20))
}

// TestHeldUploadShutdown: a shutdown while a file is held (part of it spilled) answers the caller
// 503 shutting_down at once (no wait for its connection to be dropped), Serve returns, and no spool
// file, budget or heap is left behind.
func TestHeldUploadShutdown(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "spool")
	m := startMemberWith(t, fakevllm.Options{Models: []string{whisperModel}, Profile: engine.TinyProfile(), Seed: 7})
	yaml := "listen: 127.0.0.1:0\nshutdown_grace: 0s\naliases:\n  - {id: whisper, tier: audio}\ntiers:\n" +
		"  - id: audio\n    kind: direct\n    served_model: " + whisperModel + "\n    endpoint: " + m.URL() +
		"\n    gates: {max_context_tokens: 4096, media_allowed: true}\n"
	cfg, err := load.Parse([]byte(yaml), env)
	require.NoError(t, err)
	srv, err := server.New(cfg, server.Options{SpoolDir: dir})
	require.NoError(t, err)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	g := newGate(heldPastMemory)
	ctx, shutdown := context.WithCancel(context.Background())
	defer shutdown()
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ctx, gatedListener{ln, g}) }()

	before := heapInUse()
	answered, _ := startHeldUpload(t, "http://"+ln.Addr().String())
	heldNow(t, g, answered)
	require.Positive(t, srv.SpoolBytes(), "the held file spilled past its memory bound")
	shutdown()
	resp := <-answered
	require.NotNil(t, resp, "the held upload is answered")
	assert.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
	require.NoError(t, <-served)
	recs := srv.Decisions().Recent(1)
	require.Len(t, recs, 1)
	assert.Equal(t, http.StatusServiceUnavailable, recs[0].Status)
	assert.Zero(t, recs[0].Attempts)
	assert.Zero(t, m.calls.Load(), "no member was contacted")
	assert.Empty(t, spoolEntries(t, dir), "the spool file is removed")
	assertHeldGiven(t, srv)
	growth := heapInUse() - before
	t.Logf("heap in use after a shutdown during a held upload: %+d KiB", growth>>10)
	assert.Less(t, growth, int64(1<<20))
}

// TestStaleSpoolFilesSwept: a router starting over a spool directory removes the files a crash left
// between a spool file's create and its unlink (and the PID-named files of earlier routers, whatever
// the PID: a live router holds only descriptors), and only those: other names and a link stay.
func TestStaleSpoolFilesSwept(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "spool")
	require.NoError(t, os.Mkdir(dir, 0o700))
	stale := []string{"held-0123456789abcdef.part", heldName(os.Getpid(), "0123456789abcdef"), heldName(1, "00000000000000aa")}
	kept := []string{heldName(12345678, "fedcba9876543210"), "held-1-notHex.part", "notes.txt"}
	for _, n := range append(append([]string{}, stale...), kept...) {
		require.NoError(t, os.WriteFile(filepath.Join(dir, n), []byte("x"), 0o600))
	}
	target := filepath.Join(t.TempDir(), "target")
	require.NoError(t, os.WriteFile(target, []byte("x"), 0o600))
	link := heldName(os.Getpid(), "1111111111111111")
	require.NoError(t, os.Symlink(target, filepath.Join(dir, link)))
	startAudioRigWith(t, "", nil, routerOptions{server: server.Options{SpoolDir: dir}})
	got := spoolEntries(t, dir)
	assert.ElementsMatch(t, append(kept, link), got, "only the stale spool files are removed")
	assert.FileExists(t, target, "a link is never followed")
}

func heldName(pid int, hex string) string { return "held-" + strconv.Itoa(pid) + "-" + hex + ".part" }

// panickyBody panics at its first read once at bytes were read: a panic while the file is held.
type panickyBody struct {
	io.ReadCloser
	n, at int64
}

func (b *panickyBody) Read(p []byte) (int, error) {
	if b.n >= b.at {
		panic(plantedPanic)
	}
	n, err := b.ReadCloser.Read(p)
	b.n += int64(n)
	return n, err
}

// TestHeldUploadPanic: a panic while a file is held (part of it spilled) is the fixed 500, and leaves
// no spool file and no budget taken behind.
func TestHeldUploadPanic(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "spool")
	rig := startAudioRigWith(t, "", nil, routerOptions{server: server.Options{SpoolDir: dir},
		body: func(b io.ReadCloser) io.ReadCloser { return &panickyBody{ReadCloser: b, at: heldPastMemory} }})
	ct, body := fileFirstForm(t, "clip.wav", make([]byte, 2<<20), [2]string{"model", "whisper"})
	resp, got, err := rig.r.postRaw(t, context.Background(), "/v1/audio/transcriptions", ct, io.MultiReader(bytes.NewReader(body)), true)
	require.NoError(t, err)
	assert.Equal(t, http.StatusInternalServerError, resp.StatusCode)
	assert.NotContains(t, string(got), plantedPanic)
	rec := rig.r.lastRecord(t)
	assert.Equal(t, http.StatusInternalServerError, rec.Status)
	assert.Equal(t, decisionlog.OutcomeRefused, rec.Outcome, "a panic before admission is a refusal (the walk's rule)")
	assert.Zero(t, rec.Attempts)
	assert.Zero(t, rig.upstreamCalls())
	assert.Empty(t, spoolEntries(t, dir), "the spool file is removed")
	assertHeldGiven(t, rig.r.srv)
}
