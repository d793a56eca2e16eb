package readiness

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestListsExactly(t *testing.T) {
	cases := []struct {
		name string
		body string
		want bool
	}{
		{"exact", `{"object":"list","data":[{"id":"m"}]}`, true},
		{"other model", `{"object":"list","data":[{"id":"n"}]}`, false},
		{"extra model", `{"object":"list","data":[{"id":"m"},{"id":"lora"}]}`, false},
		{"empty list", `{"object":"list","data":[]}`, false},
		{"case differs", `{"object":"list","data":[{"id":"M"}]}`, false},
		{"not json", `<html>`, false},
		{"wrong type", `{"data":"m"}`, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			assert.Equal(t, c.want, ListsExactly([]byte(c.body), "m"))
		})
	}
}

// member is a controllable upstream: its model list and health status can change between probes.
type member struct {
	models atomic.Value // string body
	health atomic.Int32
	hang   chan struct{} // when non-nil, /health blocks until closed or the request is cancelled
	calls  atomic.Int32
}

func newMember(t *testing.T, model string) (*member, *httptest.Server) {
	m := &member{}
	m.models.Store(`{"object":"list","data":[{"id":"` + model + `"}]}`)
	m.health.Store(200)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		m.calls.Add(1)
		switch r.URL.Path {
		case "/v1/models":
			_, _ = w.Write([]byte(m.models.Load().(string)))
		case "/health":
			if m.hang != nil {
				select {
				case <-m.hang:
				case <-r.Context().Done():
					return
				}
			}
			w.WriteHeader(int(m.health.Load()))
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	return m, srv
}

func TestProberVerdicts(t *testing.T) {
	good, goodSrv := newMember(t, "llama")
	_, wrongSrv := newMember(t, "mistral")
	sick, sickSrv := newMember(t, "llama")
	sick.health.Store(503)
	deadSrv := httptest.NewServer(http.NotFoundHandler())
	deadURL := deadSrv.URL
	deadSrv.Close()

	targets := []Target{
		{Tier: "t", Member: "a", BaseURL: goodSrv.URL, ServedModel: "llama"},
		{Tier: "t", Member: "b", BaseURL: wrongSrv.URL, ServedModel: "llama"},
		{Tier: "t", Member: "c", BaseURL: sickSrv.URL, ServedModel: "llama"},
		{Tier: "t", Member: "d", BaseURL: deadURL, ServedModel: "llama"},
	}
	p := NewProber(http.DefaultClient, targets, time.Second, 2*time.Second)
	assert.Equal(t, map[string]bool{"a": false, "b": false, "c": false, "d": false}, p.State().Snapshot("t"),
		"nothing is ready before the first completed probe")

	p.ProbeAll(context.Background())
	assert.Equal(t, map[string]bool{"a": true, "b": false, "c": false, "d": false}, p.State().Snapshot("t"))
	assert.Equal(t, []MemberVerdict{{"a", Ready}, {"b", WrongModel}, {"c", Unhealthy}, {"d", Unreachable}},
		p.State().Verdicts("t"))

	// The member changes its served model: the next round takes it out.
	good.models.Store(`{"object":"list","data":[{"id":"other"}]}`)
	v, err := p.ProbeMember(context.Background(), "t", "a")
	require.NoError(t, err)
	assert.Equal(t, WrongModel, v)
	assert.False(t, p.State().Snapshot("t")["a"])

	_, err = p.ProbeMember(context.Background(), "t", "zz")
	assert.ErrorIs(t, err, ErrUnknownMember)
	assert.Nil(t, p.State().Snapshot("nope"))
}

func TestSnapshotIsDetached(t *testing.T) {
	s := NewState([]Target{{Tier: "t", Member: "a"}})
	require.NoError(t, s.Record("t", "a", Ready))
	snap := s.Snapshot("t")
	snap["a"] = false
	snap["x"] = true
	assert.Equal(t, map[string]bool{"a": true}, s.Snapshot("t"))
	assert.ErrorIs(t, s.Record("t", "x", Ready), ErrUnknownMember)
	assert.ErrorIs(t, s.Record("u", "a", Ready), ErrUnknownMember)
}

// A hung member is bounded by the probe timeout and does not delay its peer's verdict.
func TestHungMemberIsBoundedAndIsolated(t *testing.T) {
	hung, hungSrv := newMember(t, "llama")
	hung.hang = make(chan struct{})
	defer close(hung.hang)
	_, okSrv := newMember(t, "llama")
	targets := []Target{
		{Tier: "t", Member: "a", BaseURL: hungSrv.URL, ServedModel: "llama"},
		{Tier: "t", Member: "b", BaseURL: okSrv.URL, ServedModel: "llama"},
	}
	p := NewProber(http.DefaultClient, targets, time.Second, 50*time.Millisecond)
	done := make(chan struct{})
	go func() {
		p.ProbeAll(context.Background())
		close(done)
	}()
	<-done
	assert.Equal(t, map[string]bool{"a": false, "b": true}, p.State().Snapshot("t"))
	assert.Equal(t, Unreachable, p.State().Verdicts("t")[0].Verdict)
}

func TestOversizedModelsBodyIsNotTrusted(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/models" {
			_, _ = w.Write([]byte(`{"data":[{"id":"m"}],"pad":"` + strings.Repeat("x", maxModelsBody) + `"}`))
			return
		}
		w.WriteHeader(200)
	}))
	defer srv.Close()
	p := NewProber(http.DefaultClient, []Target{{Tier: "t", Member: "a", BaseURL: srv.URL, ServedModel: "m"}}, time.Second, 2*time.Second)
	assert.Equal(t, WrongModel, p.Probe(context.Background(), p.targets[0]))
}

func TestRunStopsWithContext(t *testing.T) {
	probed := make(chan struct{}, 8)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/models" {
			_, _ = w.Write([]byte(`{"data":[{"id":"m"}]}`))
			return
		}
		w.WriteHeader(200)
		probed <- struct{}{}
	}))
	defer srv.Close()
	p := NewProber(http.DefaultClient, []Target{{Tier: "t", Member: "a", BaseURL: srv.URL, ServedModel: "m"}}, time.Hour, time.Second)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { p.Run(ctx); close(done) }()
	<-probed // the first round starts at once, not after an interval
	cancel()
	<-done
}
