package server_test

import (
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/anvil-llm/anvil/router/decisionlog"
)

// plantedPanic is the value a planted panic carries: it must never reach a caller, a log or a record.
const plantedPanic = "PLANTED-PANIC-raw-error-9c1e dial tcp 10.9.8.7:8000: boom"

// panicWriter is a response writer that panics once, the first time the router touches the response
// after the upstream member received the request: so the panic comes after admission and inside the
// relay, from code the router really runs (a buggy writer in front of the handler is how such panics
// happen). onWrite picks the moment: false panics on Header(), before anything is written; true on
// the first body Write, after the status was committed.
type panicWriter struct {
	http.ResponseWriter
	armed   *atomic.Bool
	onWrite bool
}

func (w panicWriter) Header() http.Header {
	if !w.onWrite && w.armed.CompareAndSwap(true, false) {
		panic(plantedPanic)
	}
	return w.ResponseWriter.Header()
}

func (w panicWriter) Write(b []byte) (int, error) {
	if w.onWrite && w.armed.CompareAndSwap(true, false) {
		panic(plantedPanic)
	}
	return w.ResponseWriter.Write(b)
}

func (w panicWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// armedBy returns a flag that reads true once any member has received a generation request (and
// then only once: the first reader that swaps it wins).
func armedBy(ms []*member, armed *atomic.Bool) *atomic.Bool {
	for _, m := range ms {
		if m.arrived.Swap(false) {
			armed.Store(true)
		}
	}
	return armed
}

// A panic after admission is recorded by the walk with its true attempt count, outcome internal_error
// and the captured selection; the lease is released once; the caller gets the fixed 500 when nothing
// was written yet, and a broken connection (never a clean end) once the status was committed.
func TestPanicAfterAdmission(t *testing.T) {
	cases := []struct {
		name    string
		onWrite bool
		status  int // recorded
	}{
		{"before anything is written", false, http.StatusInternalServerError},
		{"after the status was committed", true, http.StatusOK},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ms := startMembers(t, 2)
			logs := &lockedBuffer{}
			r := startRouterWith(t, replicaYAML(ms, tierOpts{strategy: "capacity", memberCeiling: 2}),
				routerOptions{logger: jsonLogger(logs), writer: lazyPanicWriter(ms, c.onWrite)})

			resp, err := http.DefaultClient.Do(chatRequest(t, r))
			var body []byte
			if err == nil {
				body, err = io.ReadAll(resp.Body)
				resp.Body.Close()
			}
			r.wait(t, 1)
			if c.onWrite {
				assert.Error(t, err, "a response cut by a panic never ends cleanly")
			} else {
				require.NoError(t, err)
				assert.Equal(t, http.StatusInternalServerError, resp.StatusCode)
				assert.JSONEq(t, `{"error":{"message":"internal error","type":"server_error","param":null,"code":"internal_error"}}`, string(body))
			}

			recs := r.srv.Decisions().Recent(10)
			require.Len(t, recs, 1)
			rec := recs[0]
			assert.Equal(t, decisionlog.OutcomeInternalError, rec.Outcome)
			assert.Equal(t, 1, rec.Attempts, "the member was called: one attempt")
			assert.Equal(t, c.status, rec.Status)
			require.NotNil(t, rec.ReplicaScheduler, "the captured selection is kept")
			sel, _ := rec.ReplicaScheduler.SelectedMemberID()
			assert.Equal(t, rec.Member, sel)
			assert.EqualValues(t, 1, totalCalls(ms), "exactly one upstream call, no retry")
			assertSettled(t, r.snapshot(t, "replicas"))
			assert.Contains(t, logs.String(), `"msg":"handler panic"`)
			assert.NotContains(t, logs.String(), plantedPanic)
			assert.NotContains(t, string(body), plantedPanic)
		})
	}
}

// lazyPanicWriter arms the panic on the request whose member has been reached: the member sets its
// arrived flag before it answers, and the relay touches the response only after the answer arrives.
func lazyPanicWriter(ms []*member, onWrite bool) func(http.ResponseWriter, *http.Request) http.ResponseWriter {
	armed := &atomic.Bool{}
	return func(w http.ResponseWriter, _ *http.Request) http.ResponseWriter {
		return lazyWriter{panicWriter{ResponseWriter: w, armed: armed, onWrite: onWrite}, ms}
	}
}

// lazyWriter checks the members' arrival flags at every call, so the arming happens at the first
// call after a member was reached.
type lazyWriter struct {
	panicWriter
	ms []*member
}

func (w lazyWriter) Header() http.Header {
	armedBy(w.ms, w.armed)
	return w.panicWriter.Header()
}

func (w lazyWriter) Write(b []byte) (int, error) {
	armedBy(w.ms, w.armed)
	return w.panicWriter.Write(b)
}

func chatRequest(t *testing.T, r *router) *http.Request {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, r.http.URL+"/v1/chat/completions", strings.NewReader(chatBody(2, false)))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+callerToken)
	return req
}

func jsonLogger(w io.Writer) *slog.Logger {
	return slog.New(slog.NewJSONHandler(w, &slog.HandlerOptions{Level: slog.LevelDebug}))
}
