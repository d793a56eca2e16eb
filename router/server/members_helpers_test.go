package server_test

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/anvil-llm/anvil/engine"
	"github.com/anvil-llm/anvil/fakevllm"
)

// The fake members every router test runs against: real fake-vLLM servers on loopback, with the
// counters and gates the tests read and set.

// member is one real fake-vLLM server on loopback, with a counter of the generation requests that
// reached it (the router must call exactly one member once per admitted request).
type member struct {
	model   string // the model flood and warmMember ask for; "" = servedModel
	fake    *fakevllm.Server
	srv     *httptest.Server
	calls   atomic.Int64
	entered chan struct{} // receives (without blocking) when a generation request arrives
	arrived atomic.Bool   // set when a generation request arrives, before it is answered
	scrapes atomic.Int64  // GET /metrics requests (pressure scrapes) that reached it
	// nanRunning makes its real /metrics page carry NaN as vllm:num_requests_running, as a broken
	// exporter would: the page still parses, the series is malformed.
	nanRunning atomic.Bool
	// planted, when set, is appended to its real /metrics page: raw metric text no surface may echo.
	planted atomic.Pointer[string]
	// gate, when set, holds every generation request (after it is counted) until the channel is
	// closed or the request ends: the test decides when leases end.
	gate atomic.Pointer[chan struct{}]
	// drained makes a gated generation request read its whole body before it waits (then receive on
	// bodyRead, without blocking): an upstream that has the complete request and has not answered.
	drained  atomic.Bool
	bodyRead chan struct{}

	mu  sync.Mutex
	ids []string // the X-Request-Id of every generation request, in arrival order
}

// received reports whether a generation request with X-Request-Id id reached the member.
func (m *member) received(id string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Contains(m.ids, id)
}

// requestIDs returns the X-Request-Id of every generation request the member received.
func (m *member) requestIDs() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]string(nil), m.ids...)
}

func (m *member) URL() string { return m.srv.URL }

// served is the model requests sent straight to the member name.
func (m *member) served() string {
	if m.model == "" {
		return servedModel
	}
	return m.model
}

func startMember(t *testing.T, model string, seed uint64) *member {
	t.Helper()
	return startMemberWith(t, fakevllm.Options{Models: []string{model}, Profile: engine.TinyProfile(), Seed: seed})
}

// startMemberWith starts a member with the given options (models, adapters, audio bound).
func startMemberWith(t *testing.T, opts fakevllm.Options) *member {
	t.Helper()
	fake, err := fakevllm.NewServer(opts)
	require.NoError(t, err)
	m := &member{fake: fake, entered: make(chan struct{}, 64), bodyRead: make(chan struct{}, 64)}
	m.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := m.fake.Handler() // the fake in force: a restart on the same port replaces it
		if r.Method != http.MethodPost || !strings.HasPrefix(r.URL.Path, "/v1/") {
			if r.URL.Path == "/metrics" {
				m.scrapes.Add(1)
				if m.nanRunning.Load() {
					serveNaNRunning(w, r, h)
					return
				}
				if extra := m.planted.Load(); extra != nil {
					rec := httptest.NewRecorder()
					h.ServeHTTP(rec, r)
					w.Header().Set("Content-Type", rec.Header().Get("Content-Type"))
					_, _ = io.WriteString(w, rec.Body.String()+*extra)
					return
				}
			}
			h.ServeHTTP(w, r)
			return
		}
		m.calls.Add(1)
		m.mu.Lock()
		m.ids = append(m.ids, r.Header.Get("X-Request-Id"))
		m.mu.Unlock()
		m.arrived.Store(true)
		select {
		case m.entered <- struct{}{}:
		default:
		}
		if g := m.gate.Load(); g != nil {
			if m.drained.Load() && !drainBody(r, m.bodyRead) {
				return
			}
			select {
			case <-*g:
			case <-r.Context().Done():
				return
			}
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(func() {
		m.srv.CloseClientConnections()
		m.srv.Close()
		m.fake.Close()
	})
	return m
}

// drainBody reads r's whole body, puts it back for the handler and tells read; false when the body
// could not be read.
func drainBody(r *http.Request, read chan<- struct{}) bool {
	b, err := io.ReadAll(r.Body)
	if err != nil {
		return false
	}
	r.Body = io.NopCloser(bytes.NewReader(b))
	select {
	case read <- struct{}{}:
	default:
	}
	return true
}

// serveNaNRunning serves the fake's real metrics page with every vllm:num_requests_running value
// replaced by NaN.
func serveNaNRunning(w http.ResponseWriter, r *http.Request, h http.Handler) {
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, r)
	lines := strings.Split(rec.Body.String(), "\n")
	for i, l := range lines {
		if strings.HasPrefix(l, "vllm:num_requests_running{") {
			lines[i] = l[:strings.LastIndexByte(l, ' ')] + " NaN"
		}
	}
	w.Header().Set("Content-Type", rec.Header().Get("Content-Type"))
	_, _ = io.WriteString(w, strings.Join(lines, "\n"))
}

// slow stretches the member's engine steps by factor (the fake's step-time fault).
func slow(t *testing.T, m *member, factor float64) {
	t.Helper()
	f := m.fake.Faults()
	f.StepTimeMultiplier = factor
	require.NoError(t, m.fake.SetFaults(f))
}

// fault replaces the member's faults.
func fault(t *testing.T, m *member, f fakevllm.Faults) {
	t.Helper()
	require.NoError(t, m.fake.SetFaults(f))
}

func startMembers(t *testing.T, n int) []*member {
	ms := make([]*member, n)
	for i := range ms {
		ms[i] = startMember(t, servedModel, uint64(i+1))
	}
	return ms
}
