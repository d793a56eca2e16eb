package server_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/anvil-llm/anvil/internal/pipenet"
	"github.com/anvil-llm/anvil/router/admission"
	"github.com/anvil-llm/anvil/router/config/load"
	"github.com/anvil-llm/anvil/router/decisionlog"
	"github.com/anvil-llm/anvil/router/server"
)

// queueRig is a router in front of one held upstream, all on an in-memory network inside a synctest
// bubble: the direct tier "solo" has a ceiling of one and a queue of two with a 5 s timeout, and the
// upstream answers a request only when the test releases it, so the test decides when leases end.
type queueRig struct {
	net      *pipenet.Net
	srv      *server.Server
	router   string
	mu       sync.Mutex
	arrived  []string                 // the callers' request IDs, in the order the upstream received them
	releases map[string]chan struct{} // per request ID: close to let the upstream answer
	served   chan error               // Serve's result, when the rig runs Serve
}

const queueConfig = `
listen: 127.0.0.1:0
shutdown_grace: 1s
aliases: [{id: chat, tier: solo}]
tiers:
  - id: solo
    kind: direct
    served_model: test/llama
    endpoint: http://upstream:80
    max_concurrency: 1
    queue: {max_waiting: 2, timeout: 5s}
    gates: {max_context_tokens: 4096}
`

func newQueueRig(t *testing.T) *queueRig { return startQueueRig(t, nil) }

// startQueueRig is newQueueRig; with a non-nil ctx the router runs its own Serve on the in-memory
// network until ctx ends (served then receives Serve's result), so shutdown is the real one.
func startQueueRig(t *testing.T, ctx context.Context) *queueRig {
	return startQueueRigWith(t, ctx, queueConfig, server.Options{})
}

// startQueueRigWith is startQueueRig with its own config and server options (Dial is the rig's).
func startQueueRigWith(t *testing.T, ctx context.Context, yaml string, opts server.Options) *queueRig {
	rig := &queueRig{net: pipenet.New(), releases: map[string]chan struct{}{}, served: make(chan error, 1)}
	rig.net.Serve("upstream:80", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// The router forwards its own request ID, never the caller's: the test's ID rides in the body,
		// which the router relays as it is.
		var tag struct{ User string }
		_ = json.NewDecoder(r.Body).Decode(&tag)
		_, _ = io.Copy(io.Discard, r.Body)
		id := tag.User
		rig.mu.Lock()
		rig.arrived = append(rig.arrived, id)
		release := rig.release(id)
		rig.mu.Unlock()
		select {
		case <-release:
		case <-r.Context().Done():
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"id":"c1","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"ok"}}]}`)
	}))
	cfg, err := load.Parse([]byte(yaml), env)
	require.NoError(t, err)
	opts.Dial = rig.net.Dial
	rig.srv, err = server.New(cfg, opts)
	require.NoError(t, err)
	if ctx != nil {
		ln := rig.net.Listen("router:80")
		rig.router = "http://router:80"
		go func() { rig.served <- rig.srv.Serve(ctx, ln) }()
	} else {
		rig.srv.Start()
		rig.router = rig.net.Serve("router:80", rig.srv.Handler())
	}
	t.Cleanup(func() {
		_ = rig.srv.Close()
		rig.net.Close()
	})
	return rig
}

// release returns the channel that lets the upstream answer id (the caller holds rig.mu).
func (rig *queueRig) release(id string) chan struct{} {
	ch, ok := rig.releases[id]
	if !ok {
		ch = make(chan struct{})
		rig.releases[id] = ch
	}
	return ch
}

func (rig *queueRig) answer(id string) {
	rig.mu.Lock()
	defer rig.mu.Unlock()
	close(rig.release(id))
}

type reply struct {
	status     int
	body       string
	retryAfter string
	err        error
}

// send posts one chat completion with the request ID id and delivers the reply on the channel.
func (rig *queueRig) send(ctx context.Context, id string) <-chan reply {
	out := make(chan reply, 1)
	go func() {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, rig.router+"/v1/chat/completions",
			strings.NewReader(strings.Replace(chatBody(1, false), `{`, `{"user":"`+id+`",`, 1)))
		req.Header.Set("Authorization", "Bearer "+callerToken)
		req.Header.Set("X-Request-Id", id)
		resp, err := rig.net.Client().Do(req)
		if err != nil {
			out <- reply{err: err}
			return
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		out <- reply{status: resp.StatusCode, body: string(b), retryAfter: resp.Header.Get("Retry-After")}
	}()
	return out
}

func (rig *queueRig) tier(t *testing.T) *admission.TierAdmission {
	tier, ok := rig.srv.Admission().Tier("solo")
	require.True(t, ok)
	return tier
}

func (rig *queueRig) record(t *testing.T, id string) decisionlog.Record {
	for _, rec := range rig.srv.Decisions().Recent(100) {
		if rec.CallerRequestID == id {
			return rec
		}
	}
	t.Fatalf("no record for %s", id)
	return decisionlog.Record{}
}

// TestQueueIsFIFOAndBounded: a burst above the ceiling waits and succeeds in arrival order, a full
// queue refuses at once, and every lease reconciles.
func TestQueueIsFIFOAndBounded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rig := newQueueRig(t)
		a := rig.send(t.Context(), "req-a")
		synctest.Wait() // a holds the one slot
		b := rig.send(t.Context(), "req-b")
		synctest.Wait() // b waits, durably, in the queue
		c := rig.send(t.Context(), "req-c")
		synctest.Wait()
		assert.Equal(t, 2, rig.tier(t).Snapshot().Waiting)

		start := time.Now()
		full := <-rig.send(t.Context(), "req-d")
		assert.Equal(t, http.StatusServiceUnavailable, full.status, "a full queue refuses at once")
		assert.Equal(t, "1", full.retryAfter)
		assert.Zero(t, time.Since(start), "without waiting")

		for i, id := range []string{"req-a", "req-b", "req-c"} {
			synctest.Wait()
			rig.mu.Lock()
			assert.Len(t, rig.arrived, i+1, "one request at a time reaches the upstream: the others wait")
			rig.mu.Unlock()
			<-time.After(time.Second) // fake time passes while each request is served
			rig.answer(id)
		}
		for _, ch := range []<-chan reply{a, b, c} {
			r := <-ch
			require.NoError(t, r.err)
			assert.Equal(t, http.StatusOK, r.status, r.body)
		}
		synctest.Wait()
		assert.Equal(t, []string{"req-a", "req-b", "req-c"}, rig.arrived, "FIFO: admitted in arrival order")
		assert.Equal(t, time.Second, rig.record(t, "req-b").Queued, "b waited while a was served")
		assert.Equal(t, 2*time.Second, rig.record(t, "req-c").Queued)
		assert.Zero(t, rig.record(t, "req-a").Queued, "a never queued")
		s := rig.tier(t).Snapshot()
		assert.Zero(t, s.Active)
		assert.Zero(t, s.Waiting)
		assert.Equal(t, uint64(3), s.Acquired)
		assert.Equal(t, s.Acquired, s.Released)
		assert.Equal(t, uint64(1), s.QueueFull)
	})
}

// TestQueueTimeoutRefusesAfterTheTimeout: a request that waits its 5 s without a lease gets the
// same 503 and Retry-After as without a queue, exactly at the timeout, and reserved nothing.
func TestQueueTimeoutRefusesAfterTheTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rig := newQueueRig(t)
		a := rig.send(t.Context(), "req-a")
		synctest.Wait()
		start := time.Now()
		r := <-rig.send(t.Context(), "req-b")
		assert.Equal(t, 5*time.Second, time.Since(start), "refused at the timeout, not before")
		assert.Equal(t, http.StatusServiceUnavailable, r.status)
		assert.Equal(t, "1", r.retryAfter)
		assert.Contains(t, r.body, `"code":"capacity_exhausted"`)
		rec := rig.record(t, "req-b")
		assert.Equal(t, decisionlog.OutcomeNotAdmitted, rec.Outcome)
		assert.Equal(t, 5*time.Second, rec.Queued)
		assert.Zero(t, rig.tier(t).Snapshot().Waiting)
		rig.answer("req-a")
		require.Equal(t, http.StatusOK, (<-a).status)
		assert.Equal(t, []string{"req-a"}, rig.arrived, "the refused request never reached the upstream")
	})
}

// TestQueuedCallerWhoLeavesReleasesNothing: a caller that disconnects while queued leaves the queue
// at once, reserves and releases nothing, and is recorded as canceled with no attempt.
func TestQueuedCallerWhoLeavesReleasesNothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rig := newQueueRig(t)
		a := rig.send(t.Context(), "req-a")
		synctest.Wait()
		ctx, cancel := context.WithCancel(t.Context())
		b := rig.send(ctx, "req-b")
		synctest.Wait()
		require.Equal(t, 1, rig.tier(t).Snapshot().Waiting)
		cancel()
		synctest.Wait()
		assert.Error(t, (<-b).err)
		s := rig.tier(t).Snapshot()
		assert.Zero(t, s.Waiting, "the caller left the queue at once")
		assert.Equal(t, uint64(1), s.Acquired, "and never reserved")
		rec := rig.record(t, "req-b")
		assert.Equal(t, decisionlog.OutcomeClientCanceled, rec.Outcome)
		assert.Zero(t, rec.Attempts)
		assert.Equal(t, decisionlog.StatusClientClosed, rec.Status)
		rig.answer("req-a")
		require.Equal(t, http.StatusOK, (<-a).status)
		s = rig.tier(t).Snapshot()
		assert.Equal(t, s.Acquired, s.Released)
		assert.Zero(t, s.ReleaseMisuse)
	})
}

// TestQuiesceRefusesTheQueue: quiescing the tier while requests wait refuses them with the quiesced
// answer; none is ever admitted into the quiesced tier.
func TestQuiesceRefusesTheQueue(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rig := newQueueRig(t)
		a := rig.send(t.Context(), "req-a")
		synctest.Wait()
		b := rig.send(t.Context(), "req-b")
		c := rig.send(t.Context(), "req-c")
		synctest.Wait()
		require.NoError(t, rig.tier(t).Quiesce("maintenance"))
		for _, ch := range []<-chan reply{b, c} {
			r := <-ch
			assert.Equal(t, http.StatusServiceUnavailable, r.status)
			assert.Contains(t, r.body, "quiesced")
		}
		assert.Zero(t, rig.tier(t).Snapshot().Waiting)
		rig.answer("req-a")
		require.Equal(t, http.StatusOK, (<-a).status, "the request in flight is never cancelled")
		assert.Equal(t, []string{"req-a"}, rig.arrived)
	})
}

// TestShutdownRefusesTheQueue: when a shutdown's grace runs out, a request still waiting in the queue
// is answered 503 shutting_down with Retry-After (it held nothing) and recorded as not admitted with
// the time it waited; the request in flight is cut and recorded as outcome shutdown.
func TestShutdownRefusesTheQueue(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, stop := context.WithCancel(t.Context())
		rig := startQueueRig(t, ctx)
		a := rig.send(t.Context(), "req-a")
		synctest.Wait()
		b := rig.send(t.Context(), "req-b")
		synctest.Wait()
		require.Equal(t, 1, rig.tier(t).Snapshot().Waiting)
		start := time.Now()
		stop()
		rb := <-b
		assert.Equal(t, time.Second, time.Since(start), "refused when the 1 s grace ran out, not before")
		assert.Equal(t, http.StatusServiceUnavailable, rb.status)
		assert.Equal(t, "1", rb.retryAfter)
		assert.Contains(t, rb.body, `"code":"shutting_down"`)
		ra := <-a
		assert.Equal(t, http.StatusServiceUnavailable, ra.status)
		assert.Contains(t, ra.body, `"code":"shutdown"`)
		require.NoError(t, <-rig.served)

		rec := rig.record(t, "req-b")
		assert.Equal(t, decisionlog.OutcomeNotAdmitted, rec.Outcome)
		assert.Zero(t, rec.Attempts)
		assert.Equal(t, time.Second, rec.Queued)
		assert.Equal(t, decisionlog.OutcomeShutdown, rig.record(t, "req-a").Outcome)
		s := rig.tier(t).Snapshot()
		assert.Zero(t, s.Waiting)
		assert.Equal(t, uint64(1), s.Acquired, "the queued request never reserved")
		assert.Equal(t, s.Acquired, s.Released)
		assert.Equal(t, []string{"req-a"}, rig.arrived)
	})
}
