package readiness

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/anvil-llm/anvil/internal/pipenet"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// vllmList renders a /v1/models body in vLLM's shape (every field present, nulls included).
func vllmList(entries ...string) string {
	return `{"object":"list","data":[` + strings.Join(entries, ",") + `]}`
}

func base(id, root string) string {
	return `{"id":"` + id + `","object":"model","created":1,"owned_by":"vllm","root":"` + root +
		`","parent":null,"max_model_len":4096,"permission":[{"id":"modelperm-1","object":"model_permission"}]}`
}

func adapter(id, parent string) string {
	return `{"id":"` + id + `","object":"model","created":1,"owned_by":"vllm","root":"/adapters/` + id +
		`","parent":"` + parent + `","max_model_len":null,"permission":[]}`
}

func TestCheckModels(t *testing.T) {
	cases := []struct {
		name string
		body string
		want Verdict
	}{
		{"exact", `{"object":"list","data":[{"id":"m"}]}`, Ready},
		{"vllm shape", vllmList(base("m", "/models/llama")), Ready},
		{"two adapters of the served model", vllmList(base("m", "/models/llama"), adapter("sql-lora", "m"), adapter("chat-lora", "m")), Ready},
		{"an entry rooted in the served model", vllmList(base("m", "m"), base("m-alias", "m")), Ready},
		{"adapters listed first", vllmList(adapter("a", "m"), base("m", "m")), Ready},
		{"another base model", vllmList(base("m", "m"), base("other", "other")), ExtraModel},
		{"an adapter of another model", vllmList(base("m", "m"), adapter("a", "other")), ExtraModel},
		{"another model and adapters", vllmList(base("m", "m"), adapter("a", "m"), base("n", "n")), ExtraModel},
		{"other model only", vllmList(base("n", "n")), WrongModel},
		{"adapters of the served model, but not the model", vllmList(adapter("a", "m")), WrongModel},
		{"extra model, served model missing", vllmList(base("n", "n"), base("o", "o")), WrongModel},
		{"empty list", `{"object":"list","data":[]}`, WrongModel},
		{"case differs", `{"object":"list","data":[{"id":"M"}]}`, WrongModel},
		{"id key case differs", `{"data":[{"ID":"m"}]}`, WrongModel},
		{"duplicate id key", `{"data":[{"id":"n","id":"m"}]}`, WrongModel},
		{"duplicate data key", `{"data":[{"id":"m"}],"data":[]}`, WrongModel},
		{"parent of the wrong type", `{"data":[{"id":"m"},{"id":"a","parent":5}]}`, WrongModel},
		{"root of the wrong type", `{"data":[{"id":"m","root":["m"]}]}`, WrongModel},
		{"id of the wrong type", `{"data":[{"id":1}]}`, WrongModel},
		{"empty id", `{"data":[{"id":"m"},{"id":""}]}`, WrongModel},
		{"null entry", `{"data":[{"id":"m"},null]}`, WrongModel},
		{"data not a list", `{"data":"m"}`, WrongModel},
		{"no data", `{"object":"list"}`, WrongModel},
		{"trailing data", `{"data":[{"id":"m"}]} {}`, WrongModel},
		{"not json", `<html>`, WrongModel},
		{"truncated", `{"data":[{"id":"m"}`, WrongModel},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			assert.Equal(t, c.want, CheckModels([]byte(c.body), "m"))
		})
	}
}

func FuzzCheckModels(f *testing.F) {
	f.Add(vllmList(base("m", "m"), adapter("a", "m")))
	f.Add(vllmList(base("m", "m"), base("n", "n")))
	f.Add(`{"data":[{"id":"m","id":"n"}]}`)
	f.Add(`{"data":[{"id":"m"}]} x`)
	f.Add(`{"data":[{"id":"m"}],"Data":[{"id":"x"}]}`)
	f.Fuzz(func(t *testing.T, body string) {
		v := CheckModels([]byte(body), "m")
		require.Contains(t, []Verdict{Ready, WrongModel, ExtraModel}, v)
		if v == WrongModel {
			return
		}
		// Whatever the strict reader accepted, a plain exact-key decoding reads the same: the served
		// model is listed, and Ready means every other entry names it as its parent or root.
		var top map[string]any
		require.NoError(t, json.Unmarshal([]byte(body), &top))
		listed, others := false, false
		for _, e := range top["data"].([]any) {
			m := e.(map[string]any)
			switch {
			case m["id"] == "m":
				listed = true
			case m["parent"] == "m" || m["root"] == "m":
			default:
				others = true
			}
		}
		assert.True(t, listed)
		assert.Equal(t, v == ExtraModel, others)
	})
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

// newPipeNet is an in-memory network for a synctest bubble, closed when the test ends.
func newPipeNet(t *testing.T) *pipenet.Net {
	n := pipenet.New()
	t.Cleanup(n.Close)
	return n
}

// memberHandler answers /v1/models with model and /health with 200, or, when hang is set, holds
// /health until the probe gives up.
func memberHandler(model string, hang bool) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/v1/models":
			_, _ = w.Write([]byte(`{"object":"list","data":[{"id":"` + model + `"}]}`))
		case "/health":
			if hang {
				<-r.Context().Done()
				return
			}
			w.WriteHeader(http.StatusOK)
		default:
			http.NotFound(w, r)
		}
	})
}

// TestHungMemberIsBoundedAndIsolated: a hung member's probe takes exactly the probe timeout, and its
// peer's verdict is recorded at once, while the hung probe still waits. A prober that probed members
// one after another would record the peer only after the timeout, and fail the first check.
func TestHungMemberIsBoundedAndIsolated(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		pn := newPipeNet(t)
		targets := []Target{
			{Tier: "t", Member: "a", BaseURL: pn.Serve("member-a:80", memberHandler("llama", true)), ServedModel: "llama"},
			{Tier: "t", Member: "b", BaseURL: pn.Serve("member-b:80", memberHandler("llama", false)), ServedModel: "llama"},
		}
		const timeout = 5 * time.Second
		p := NewProber(pn.Client(), targets, time.Hour, timeout)
		start := time.Now()
		done := make(chan struct{})
		go func() {
			p.ProbeAll(context.Background())
			close(done)
		}()
		synctest.Wait() // everything that can happen without time passing has happened
		assert.Equal(t, map[string]bool{"a": false, "b": true}, p.State().Snapshot("t"),
			"the peer's verdict does not wait for the hung member")
		assert.Equal(t, Unprobed, p.State().Verdicts("t")[0].Verdict, "the hung probe is still waiting")
		select {
		case <-done:
			t.Fatal("the round ended before the hung probe's timeout")
		default:
		}
		<-done
		assert.Equal(t, timeout, time.Since(start), "the hung member costs exactly the probe timeout")
		assert.Equal(t, Unreachable, p.State().Verdicts("t")[0].Verdict)
	})
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

// TestProbesNeverFollowRedirects: a member whose /v1/models or /health answers with a redirect is
// not ready, with its reason, whether the prober has its own client or the caller's; the redirect
// target, which would answer as a perfect member, is never contacted.
func TestProbesNeverFollowRedirects(t *testing.T) {
	target, elsewhere := newMember(t, "m")
	for _, path := range []string{"/v1/models", "/health"} {
		for name, caller := range map[string]*http.Client{"own client": nil, "caller's client": http.DefaultClient} {
			t.Run(path+" "+name, func(t *testing.T) {
				redirecting := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					if r.URL.Path == path {
						http.Redirect(w, r, elsewhere.URL+path, http.StatusFound)
						return
					}
					memberHandler("m", false).ServeHTTP(w, r)
				}))
				defer redirecting.Close()
				p := NewProber(caller, []Target{{Tier: "t", Member: "a", BaseURL: redirecting.URL, ServedModel: "m"}}, time.Hour, 2*time.Second)
				p.ProbeAll(context.Background())
				assert.Equal(t, []MemberVerdict{{"a", Redirected}}, p.State().Verdicts("t"))
			})
		}
	}
	assert.Zero(t, target.calls.Load(), "the redirect target was never contacted")
}

// TestVerdictNames pins the reasons operators see: they are part of the admission view's contract.
func TestVerdictNames(t *testing.T) {
	want := []string{"unprobed", "ready", "unreachable", "unhealthy", "wrong_model", "extra_model", "redirected"}
	for i, name := range want {
		assert.Equal(t, name, Verdict(i).String())
	}
	assert.Equal(t, "invalid", Verdict(len(want)).String())
}

// TestRunStopsWithContext: the first round starts at once, the next after the interval, and once the
// context ends Run returns and probes no more, however much time passes.
func TestRunStopsWithContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		pn := newPipeNet(t)
		var rounds atomic.Int32
		url := pn.Serve("member-a:80", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/v1/models" {
				_, _ = w.Write([]byte(`{"data":[{"id":"m"}]}`))
				return
			}
			rounds.Add(1)
			w.WriteHeader(http.StatusOK)
		}))
		p := NewProber(pn.Client(), []Target{{Tier: "t", Member: "a", BaseURL: url, ServedModel: "m"}}, time.Minute, time.Second)
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { p.Run(ctx); close(done) }()
		synctest.Wait()
		assert.Equal(t, int32(1), rounds.Load(), "the first round starts at once, not after an interval")
		<-time.After(time.Minute) // fake time: one interval
		synctest.Wait()
		assert.Equal(t, int32(2), rounds.Load(), "the next round comes one interval later")
		cancel()
		synctest.Wait()
		select {
		case <-done:
		default:
			t.Fatal("Run did not return after its context ended")
		}
		<-time.After(time.Hour) // fake time
		synctest.Wait()
		assert.Equal(t, int32(2), rounds.Load(), "no round after the stop")
	})
}

// TestPassedProbesAreAnnounced: every recorded Ready verdict, from a round or a single member's probe,
// reaches the WithPassed hook; other verdicts do not.
func TestPassedProbesAreAnnounced(t *testing.T) {
	_, okSrv := newMember(t, "llama")
	_, wrongSrv := newMember(t, "mistral")
	var mu sync.Mutex
	var passed []string
	p := NewProber(http.DefaultClient, []Target{
		{Tier: "t", Member: "a", BaseURL: okSrv.URL, ServedModel: "llama"},
		{Tier: "t", Member: "b", BaseURL: wrongSrv.URL, ServedModel: "llama"},
	}, time.Hour, 2*time.Second, WithPassed(func(tier, member string) {
		mu.Lock()
		defer mu.Unlock()
		passed = append(passed, tier+"/"+member)
	}))
	p.ProbeAll(context.Background())
	_, err := p.ProbeMember(context.Background(), "t", "a")
	require.NoError(t, err)
	_, err = p.ProbeMember(context.Background(), "t", "b")
	require.NoError(t, err)
	assert.Equal(t, []string{"t/a", "t/a"}, passed)
}
