package routing

import (
	"bytes"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/anvil-llm/anvil/router/admission"
	"github.com/anvil-llm/anvil/router/config"
	"github.com/anvil-llm/anvil/router/decisionlog"
	"github.com/anvil-llm/anvil/router/request"
)

func ptr[T any](v T) *T { return &v }

// walkConfig has a direct tier "hosted" (alias big, ceiling 1) and a capacity tier "pool" (alias chat,
// members m0 and m1 with ceiling 1, an output gate of 100 tokens).
func walkConfig(t *testing.T) config.Config {
	t.Helper()
	env := func(k string) (string, bool) { return "caller-token-aaaaaaaaaaaa", k == config.EnvAPIToken }
	cfg, err := config.Build(walkDocument(), config.Sources{LookupEnv: env})
	require.NoError(t, err)
	return cfg
}

func walkDocument() config.Document {
	return config.Document{
		Aliases: []config.AliasDoc{{ID: ptr("chat"), Tier: ptr("pool")}, {ID: ptr("big"), Tier: ptr("hosted")}},
		Tiers: []config.TierDoc{
			{ID: ptr("pool"), Kind: ptr("replica"), ServedModel: ptr("m"), Host: ptr("127.0.0.1"),
				Provenance: ptr("test"), ReplicaStrategy: ptr("capacity"),
				Gates: &config.GatesDoc{MaxContextTokens: ptr(int64(4096)), MaxOutputTokens: ptr(int64(100))},
				Members: []config.MemberDoc{
					{ID: ptr("m0"), Endpoint: ptr("http://127.0.0.1:9001"), MaxConcurrency: ptr(int64(1))},
					{ID: ptr("m1"), Endpoint: ptr("http://127.0.0.1:9002"), MaxConcurrency: ptr(int64(1))},
				}},
			{ID: ptr("hosted"), Kind: ptr("direct"), ServedModel: ptr("gpt"), Endpoint: ptr("https://api.example.com/v1"),
				Gates:          &config.GatesDoc{MaxContextTokens: ptr(int64(4096))},
				MaxConcurrency: ptr(int64(1))},
		},
	}
}

type readyAll struct{}

func (readyAll) Snapshot(string) map[string]bool { return map[string]bool{"m0": true, "m1": true} }

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func newWalk(t *testing.T) (*Router, *bytes.Buffer) {
	t.Helper()
	cfg := walkConfig(t)
	var sink bytes.Buffer
	log, err := NewDecisionLog(cfg, &sink)
	require.NoError(t, err)
	r, err := New(cfg, readyAll{}, nil, log)
	require.NoError(t, err)
	return r, &sink
}

func chat(model string, maxTokens int64) request.Request {
	return request.Request{Endpoint: request.ChatCompletions, Model: model, PromptTokens: 10, MaxOutput: maxTokens}
}

// TestAudioResolvesOnlyToDirectTiers: an audio request naming a replica tier's alias is refused by
// Resolve with the fixed endpoint refusal, recorded against the tier with nothing reserved; on a
// direct tier the media gate decides.
func TestAudioResolvesOnlyToDirectTiers(t *testing.T) {
	r, _ := newWalk(t)
	pool, _ := r.Admission().Tier("pool")
	for _, ep := range []request.Endpoint{request.AudioTranscriptions, request.AudioTranslations, request.AudioSpeech, request.Embeddings} {
		t.Run(ep.Path(), func(t *testing.T) {
			at := r.Begin("req-a", t0)
			_, err := at.Resolve(request.Request{Endpoint: ep, Model: "chat", Media: ep.Audio()})
			require.ErrorIs(t, err, request.ErrEndpointRefused)
			rec, err := at.Finish(t0, 400)
			require.NoError(t, err)
			assert.Equal(t, "pool", rec.Tier)
			assert.Equal(t, decisionlog.OutcomeRefused, rec.Outcome)
			assert.Zero(t, rec.Attempts)
			assert.Zero(t, pool.Snapshot().Acquired, "nothing was reserved")
		})
	}
	// The direct tier "hosted" does not allow media: audio is refused by the media gate.
	at := r.Begin("req-b", t0)
	_, err := at.Resolve(request.Request{Endpoint: request.AudioSpeech, Model: "big", Media: true})
	require.ErrorIs(t, err, request.ErrMediaRefused)
	_, err = at.Finish(t0, 400)
	require.NoError(t, err)
}

// TestWalkKeepsTheCallersIDBeside: the record's ID is the one Begin was given; Correlate only adds
// the caller's beside it, and the record stores it (an invalid one is dropped by the log).
func TestWalkKeepsTheCallersIDBeside(t *testing.T) {
	r, _ := newWalk(t)
	for _, c := range []struct{ given, stored string }{{"trace-7", "trace-7"}, {"", ""}, {"not valid", ""}} {
		at := r.Begin("req-own", t0)
		at.Correlate(c.given)
		_, err := at.Resolve(chat("nope", 1))
		require.ErrorIs(t, err, ErrUnknownAlias)
		rec, err := at.Finish(t0, 404)
		require.NoError(t, err)
		assert.Equal(t, "req-own", rec.RequestID)
		assert.Equal(t, c.given, rec.CallerRequestID, "the walk's record as given")
		stored := r.Decisions().Recent(1)[0]
		assert.Equal(t, "req-own", stored.RequestID)
		assert.Equal(t, c.stored, stored.CallerRequestID)
	}
}

func TestWalkRecordsEveryEnding(t *testing.T) {
	r, sink := newWalk(t)

	// An unknown alias: refused, no tier, nothing reserved.
	at := r.Begin("req-1", t0)
	_, err := at.Resolve(chat("nope", 1))
	require.ErrorIs(t, err, ErrUnknownAlias)
	rec, err := at.Finish(t0.Add(time.Millisecond), 404)
	require.NoError(t, err)
	assert.Equal(t, decisionlog.Record{RequestID: "req-1", Outcome: decisionlog.OutcomeRefused, Status: 404,
		Start: t0, Duration: time.Millisecond}, rec)

	// A gate refusal is recorded against the resolved tier.
	at = r.Begin("req-2", t0)
	_, err = at.Resolve(chat("chat", 101))
	require.ErrorIs(t, err, request.ErrOutputExceeded)
	rec, err = at.Finish(t0, 400)
	require.NoError(t, err)
	assert.Equal(t, "pool", rec.Tier)
	assert.Equal(t, decisionlog.RouteReplica, rec.Route)
	assert.Equal(t, decisionlog.StrategyCapacity, rec.Strategy)
	assert.Equal(t, decisionlog.OutcomeRefused, rec.Outcome)

	// Admitted and relayed: the member and the scheduler's decision are recorded, the lease released once.
	at = r.Begin("req-3", t0)
	tier, err := at.Resolve(chat("chat", 5))
	require.NoError(t, err)
	target, err := at.Admit(tier, t0)
	require.NoError(t, err)
	assert.Equal(t, "m0", target.Member)
	assert.Equal(t, "http://127.0.0.1:9001", target.BaseURL)
	pool, _ := r.Admission().Tier("pool")
	assert.Equal(t, int64(1), pool.Snapshot().Active)
	outcome, status := decisionlog.Terminal(decisionlog.EndCut, 200)
	at.Relayed(outcome, status, 3*time.Millisecond)
	rec, err = at.Finish(t0.Add(time.Second), 0)
	require.NoError(t, err)
	assert.Equal(t, decisionlog.OutcomeStreamTruncated, rec.Outcome)
	assert.Equal(t, 1, rec.Attempts)
	assert.Equal(t, 200, rec.Status)
	assert.Equal(t, "m0", rec.Member)
	require.NotNil(t, rec.ReplicaScheduler)
	sel, _ := rec.ReplicaScheduler.SelectedMemberID()
	assert.Equal(t, "m0", sel)
	s := pool.Snapshot()
	assert.Zero(t, s.Active)
	assert.Equal(t, uint64(1), s.Released)

	again, err := at.Finish(t0.Add(time.Hour), 500)
	require.NoError(t, err)
	assert.Equal(t, rec, again, "a second Finish changes nothing")
	assert.Zero(t, pool.Snapshot().ReleaseMisuse, "and releases nothing")

	// Not admitted: the direct tier's ceiling of one is taken.
	hold := r.Begin("req-4", t0)
	hosted, err := hold.Resolve(chat("big", 1))
	require.NoError(t, err)
	_, err = hold.Admit(hosted, t0)
	require.NoError(t, err)
	at = r.Begin("req-5", t0)
	_, err = at.Resolve(chat("big", 1))
	require.NoError(t, err)
	_, err = at.Admit(hosted, t0)
	require.ErrorIs(t, err, admission.ErrExhausted)
	rec, err = at.Finish(t0, 503)
	require.NoError(t, err)
	assert.Equal(t, decisionlog.OutcomeNotAdmitted, rec.Outcome)
	assert.Equal(t, decisionlog.RouteDirect, rec.Route)
	assert.Zero(t, rec.Attempts)
	assert.Empty(t, rec.Member)
	outcome, status = decisionlog.Terminal(decisionlog.EndComplete, 200)
	hold.Relayed(outcome, status, time.Millisecond)
	_, err = hold.Finish(t0, 0)
	require.NoError(t, err)

	stored, err := decisionlog.ReadJSONL(sink, 10)
	require.NoError(t, err)
	require.Len(t, stored, 5, "one record per walk, in finishing order")
	ids := []string{"req-1", "req-2", "req-3", "req-5", "req-4"}
	for i, rec := range stored {
		assert.Equal(t, ids[i], rec.RequestID)
	}
}

func TestPlanAgreesWithTheConfig(t *testing.T) {
	cfg := walkConfig(t)
	specs := AdmissionSpecs(cfg)
	require.Len(t, specs, 2)
	assert.Equal(t, admission.TierSpec{ID: "pool", Kind: admission.KindReplica, Strategy: admission.StrategyCapacity,
		Members: []admission.MemberSpec{{ID: "m0", MaxConcurrency: 1, Endpoint: "http://127.0.0.1:9001"},
			{ID: "m1", MaxConcurrency: 1, Endpoint: "http://127.0.0.1:9002"}}}, specs[0])
	assert.Equal(t, admission.TierSpec{ID: "hosted", Kind: admission.KindDirect, MaxConcurrency: 1}, specs[1])
	p := PressureSpecs(cfg)
	require.Len(t, p, 1, "only capacity tiers are scraped")
	assert.Equal(t, "pool", p[0].ID)
	assert.Equal(t, int64(1), p[0].Members[1].Capacity)
	assert.Equal(t, map[string]map[string]int64{"pool": {"m0": 1, "m1": 1}}, Membership(cfg))
}

// TestWalkQueues: with a queue on the tier, a request that finds no capacity waits (ErrQueued) until
// a release lets it in, and its record carries the time queued; one still waiting at its deadline is
// refused then, even if capacity freed at that very instant: nothing is admitted past its deadline.
func TestWalkQueues(t *testing.T) {
	doc := walkDocument()
	doc.Tiers[1].Queue = &config.QueueDoc{MaxWaiting: ptr(int64(2)), Timeout: ptr(5 * time.Second)}
	env := func(k string) (string, bool) { return "caller-token-aaaaaaaaaaaa", k == config.EnvAPIToken }
	cfg, err := config.Build(doc, config.Sources{LookupEnv: env})
	require.NoError(t, err)
	r, err := New(cfg, readyAll{}, nil, nil)
	require.NoError(t, err)

	hold := r.Begin("req-1", t0)
	hosted, err := hold.Resolve(chat("big", 1))
	require.NoError(t, err)
	_, err = hold.Admit(hosted, t0)
	require.NoError(t, err)

	waiter := r.Begin("req-2", t0)
	_, err = waiter.Resolve(chat("big", 1))
	require.NoError(t, err)
	_, err = waiter.Admit(hosted, t0)
	require.ErrorIs(t, err, ErrQueued)
	wake, deadline := waiter.Wait()
	assert.Equal(t, t0.Add(5*time.Second), deadline)
	_, err = waiter.Admit(hosted, t0.Add(time.Second))
	require.ErrorIs(t, err, ErrQueued, "still no capacity: it keeps its place")

	outcome, status := decisionlog.Terminal(decisionlog.EndComplete, 200)
	hold.Relayed(outcome, status, time.Millisecond)
	_, err = hold.Finish(t0.Add(2*time.Second), 0)
	require.NoError(t, err)
	select {
	case <-wake:
	default:
		t.Fatal("a release wakes the head")
	}
	_, err = waiter.Admit(hosted, t0.Add(2*time.Second))
	require.NoError(t, err)
	waiter.Relayed(outcome, status, time.Millisecond)
	rec, err := waiter.Finish(t0.Add(3*time.Second), 0)
	require.NoError(t, err)
	assert.Equal(t, 2*time.Second, rec.Queued)

	// At the deadline: refused, though the slot is free.
	blocker := r.Begin("req-3", t0)
	_, _ = blocker.Resolve(chat("big", 1))
	_, err = blocker.Admit(hosted, t0)
	require.NoError(t, err)
	late := r.Begin("req-4", t0)
	_, _ = late.Resolve(chat("big", 1))
	_, err = late.Admit(hosted, t0)
	require.ErrorIs(t, err, ErrQueued)
	_, err = blocker.Finish(t0.Add(5*time.Second), 499)
	require.NoError(t, err)
	_, err = late.Admit(hosted, t0.Add(5*time.Second))
	require.ErrorIs(t, err, ErrQueueTimeout)
	require.ErrorIs(t, err, admission.ErrExhausted, "the same refusal as without a queue")
	rec, err = late.Finish(t0.Add(5*time.Second), 503)
	require.NoError(t, err)
	assert.Equal(t, decisionlog.OutcomeNotAdmitted, rec.Outcome)
	assert.Equal(t, 5*time.Second, rec.Queued)
	hosted2, _ := r.Admission().Tier("hosted")
	s := hosted2.Snapshot()
	assert.Zero(t, s.Waiting)
	assert.Zero(t, s.Active)
}

// TestWalkRecordsAPanic: a panic is recorded with what the walk had reached. After admission it is
// internal_error with its true attempt count and the captured selection, and Finish releases the
// lease once; before admission nothing was held and the refusal stands.
func TestWalkRecordsAPanic(t *testing.T) {
	cases := []struct {
		name       string
		admit      bool
		dispatched bool
		outcome    decisionlog.Outcome
		attempts   int
	}{
		{"before admission", false, false, decisionlog.OutcomeRefused, 0},
		{"after admission, before the relay", true, false, decisionlog.OutcomeInternalError, 0},
		{"inside the relay", true, true, decisionlog.OutcomeInternalError, 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r, sink := newWalk(t)
			at := r.Begin("req-p", t0)
			tier, err := at.Resolve(chat("chat", 5))
			require.NoError(t, err)
			if c.admit {
				_, err = at.Admit(tier, t0)
				require.NoError(t, err)
			}
			if c.dispatched {
				at.Dispatched()
			}
			at.Panicked()
			rec, err := at.Finish(t0.Add(time.Millisecond), 500)
			require.NoError(t, err)
			assert.Equal(t, c.outcome, rec.Outcome)
			assert.Equal(t, c.attempts, rec.Attempts)
			assert.Equal(t, 500, rec.Status)
			pool, _ := r.Admission().Tier("pool")
			s := pool.Snapshot()
			assert.Zero(t, s.Active)
			assert.Equal(t, s.Acquired, s.Released, "released exactly once")
			assert.Zero(t, s.ReleaseMisuse)
			stored, err := decisionlog.ReadJSONL(sink, 10)
			require.NoError(t, err)
			require.Len(t, stored, 1)
			assert.Equal(t, c.outcome, stored[0].Outcome)
			assert.Equal(t, c.admit, stored[0].ReplicaScheduler != nil, "the selection is kept exactly when one was made")
		})
	}
}

// TestDispatchedBeforeAdmissionCountsNothing: no attempt can be made without a lease.
func TestDispatchedBeforeAdmissionCountsNothing(t *testing.T) {
	r, _ := newWalk(t)
	at := r.Begin("req-d", t0)
	_, err := at.Resolve(chat("chat", 5))
	require.NoError(t, err)
	at.Dispatched()
	rec, err := at.Finish(t0, 400)
	require.NoError(t, err)
	assert.Zero(t, rec.Attempts)
}

// TestUsedRecordsTheMembersCounts: an admitted attempt's record carries the counts its member
// reported; before admission there is no member to report, so nothing is recorded.
func TestUsedRecordsTheMembersCounts(t *testing.T) {
	r, _ := newWalk(t)
	u := decisionlog.Usage{Prompt: 12, Completion: 34, Reported: true}
	at := r.Begin("req-u", t0)
	tier, err := at.Resolve(chat("chat", 5))
	require.NoError(t, err)
	_, err = at.Admit(tier, t0)
	require.NoError(t, err)
	outcome, status := decisionlog.Terminal(decisionlog.EndComplete, 200)
	at.Relayed(outcome, status, time.Millisecond)
	at.Used(u)
	rec, err := at.Finish(t0.Add(time.Second), 0)
	require.NoError(t, err)
	assert.Equal(t, u, rec.Usage)
	assert.Equal(t, u, r.Decisions().Recent(1)[0].Usage, "stored as recorded")

	at = r.Begin("req-v", t0)
	_, err = at.Resolve(chat("chat", 101)) // refused by a gate: no attempt
	require.Error(t, err)
	at.Used(u)
	rec, err = at.Finish(t0, 400)
	require.NoError(t, err)
	assert.Equal(t, decisionlog.Usage{}, rec.Usage)
}
