package scenarios

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// minimal is the smallest valid scenario; tests patch it.
const minimal = `name: t
duration: 10s
tier:
  strategy: capacity
  members:
    - {id: a, max_concurrency: 2}
    - {id: b, max_concurrency: 2}
workload:
  closed: {clients: 2}
  prompt_tokens: {dist: constant, value: 16}
  output_tokens: {dist: constant, value: 8}
`

func TestEmbeddedScenariosParse(t *testing.T) {
	names := Names()
	want := []string{"burst-queue", "bursty-arrivals", "decisive-unknown", "engine-llamacpp", "engine-sglang", "engine-tgi", "engine-trtllm",
		"failing-member", "flapping-member", "heterogeneous", "live-reload", "member-drain", "metrics-outage",
		"outside-load", "prompt-mix", "restart-intent", "rotation", "sixteen-members-hour", "sixteen-members", "stale-telemetry", "tier-drain", "twenty-concurrent",
		"unequal-speed", "upstream-errors"}
	assert.Equal(t, want, names)
	for _, n := range names {
		t.Run(n, func(t *testing.T) {
			sc, err := Lookup(n)
			require.NoError(t, err)
			assert.Equal(t, n, sc.Name, "file name and scenario name agree")
			assert.NotEmpty(t, sc.Expect, "every shipped scenario has gates")
			assert.NotEmpty(t, sc.Description)
		})
	}
}

func TestLookupUnknown(t *testing.T) {
	_, err := Lookup("no-such-scenario")
	require.ErrorIs(t, err, ErrUnknown)
	assert.Contains(t, err.Error(), "twenty-concurrent", "the error lists the known names")
}

func TestDefaults(t *testing.T) {
	sc, err := Parse([]byte(minimal))
	require.NoError(t, err)
	assert.Equal(t, uint64(1), sc.Seed)
	assert.Equal(t, DefaultTierID, sc.Tier.ID)
	assert.Equal(t, DefaultAlias, sc.Tier.Alias)
	assert.Equal(t, DefaultServedModel, sc.Tier.ServedModel)
	assert.Equal(t, []string{StrategyCapacity}, sc.Strategies)
	assert.Equal(t, "8b-h100", sc.Tier.Members[0].Profile)
	assert.Equal(t, 1.0, sc.Tier.Members[0].StepScale)
	assert.Equal(t, int64(131072), sc.Tier.Gates.MaxContextTokens, "the smallest member's max_model_len")
	assert.Equal(t, DefaultBackoff, sc.Workload.Closed.Backoff)
	assert.Equal(t, 1.0, *sc.Workload.Streaming)
	assert.Equal(t, DefaultScrapeLatency, sc.Telemetry.ScrapeLatency)
}

func TestEventAndGateDefaults(t *testing.T) {
	doc := minimal + `strategies: [capacity, round_robin]
events:
  - {at: 1s, action: quiesce, member: a}
  - {at: 2s, action: errors, rate: 0.5}
expect:
  - {metric: tier.ceiling_violations, op: "==", value: 0}
  - {metric: e2e.p99, run: capacity, vs: round_robin, op: "<", value: 1}
`
	sc, err := Parse([]byte(doc))
	require.NoError(t, err)
	assert.Equal(t, DefaultReason, sc.Events[0].Reason)
	assert.Equal(t, DefaultErrorStatus, sc.Events[1].Status)
	assert.Equal(t, 10*time.Second, sc.Events[1].Until, "a window without until lasts to the end")
	assert.Equal(t, StrategyCapacity, sc.Expect[0].Run, "a gate without run reads the first run")
	assert.Equal(t, "capacity: tier.ceiling_violations == 0", sc.Expect[0].Name)
	assert.Equal(t, "capacity e2e.p99 / round_robin e2e.p99 < 1", sc.Expect[1].Name)
}

func TestParseErrors(t *testing.T) {
	cases := []struct {
		name, doc, path, msg string
	}{
		{"empty", "", "", "empty document"},
		{"not a mapping", "- 1\n", "", "document must be a mapping"},
		{"syntax", "name: [\n", "", "invalid YAML syntax"},
		{"two documents", minimal + "---\nname: u\n", "", "multiple YAML documents"},
		{"unknown key", minimal + "colour: red\n", "colour", "unknown key"},
		{"unknown nested key", strings.Replace(minimal, "clients: 2", "clients: 2, thinks: 1s", 1), "workload.closed.thinks", "unknown key"},
		{"odd key not echoed", minimal + "\"a b c\": 1\n", "document", "unknown key on line"},
		{"duplicate key", minimal + "seed: 1\nseed: 2\n", "seed", "duplicate key"},
		{"anchor", minimal + "description: &x hi\n", "description", "anchors"},
		{"wrong type", strings.Replace(minimal, "clients: 2", "clients: two", 1), "workload.closed.clients", "must be an integer"},
		{"float for int", strings.Replace(minimal, "clients: 2", "clients: 2.5", 1), "workload.closed.clients", "must be an integer"},
		{"negative seed", minimal + "seed: -1\n", "seed", "non-negative integer"},
		{"bad duration", strings.Replace(minimal, "duration: 10s", "duration: 10", 1), "duration", "duration such as"},
		{"nan", strings.Replace(minimal, "value: 16", "value: .nan", 1), "workload.prompt_tokens.value", "finite"},
		{"null pointer", minimal + "  cancel: null\n", "workload.cancel", "must not be null"},
		{"bad name", strings.Replace(minimal, "name: t", "name: T!", 1), "name", "is required"},
		{"short duration", strings.Replace(minimal, "duration: 10s", "duration: 10ms", 1), "duration", "1s to 24h"},
		{"no strategy", strings.Replace(minimal, "strategy: capacity", "strategy: fastest", 1), "tier.strategy", "round_robin or capacity"},
		{"one member", strings.Replace(minimal, "    - {id: b, max_concurrency: 2}\n", "", 1), "tier.members", "2-16 members"},
		{"duplicate member", strings.Replace(minimal, "id: b,", "id: a,", 1), "tier.members[1].id", "duplicate member id"},
		{"unknown profile", strings.Replace(minimal, "{id: b, max_concurrency: 2}", "{id: b, max_concurrency: 2, profile: gpt9}", 1), "tier.members[1].profile", "unknown engine profile"},
		{"negative outside load", strings.Replace(minimal, "{id: b, max_concurrency: 2}", "{id: b, max_concurrency: 2, outside_rate: -1}", 1), "tier.members[1].outside_rate", "requests per second"},
		{"outside load too high", strings.Replace(minimal, "{id: b, max_concurrency: 2}", "{id: b, max_concurrency: 2, outside_rate: 1001}", 1), "tier.members[1].outside_rate", "requests per second"},
		{"both loops", strings.Replace(minimal, "closed: {clients: 2}", "closed: {clients: 2}\n  open: {process: poisson, rate: 1}", 1), "workload", "exactly one of closed and open"},
		{"bad process", strings.Replace(minimal, "closed: {clients: 2}", "open: {process: burst, rate: 1}", 1), "workload.open.process", "poisson, gamma or constant"},
		{"gamma needs shape", strings.Replace(minimal, "closed: {clients: 2}", "open: {process: gamma, rate: 1}", 1), "workload.open.shape", "required for gamma"},
		{"dist bounds", strings.Replace(minimal, "{dist: constant, value: 8}", "{dist: uniform, min: 9, max: 8}", 1), "workload.output_tokens", "min <= max"},
		{"dist stray field", strings.Replace(minimal, "{dist: constant, value: 8}", "{dist: uniform, min: 1, max: 8, sigma: 1}", 1), "workload.output_tokens", "does not apply"},
		{"streaming share", minimal + "  streaming: 2\n", "workload.streaming", "share from 0 to 1"},
		{"cancel window", minimal + "  cancel: {share: 0.1, after_min: 2s, after_max: 1s}\n", "workload.cancel", "after_min <= after_max"},
		{"event member unknown", minimal + "events: [{at: 1s, action: quiesce, member: zz}]\n", "events[0].member", "names no tier member"},
		{"kill needs member", minimal + "events: [{at: 1s, action: kill}]\n", "events[0].member", "is required"},
		{"event field not applicable", minimal + "events: [{at: 1s, action: drain, rate: 0.5}]\n", "events[0].rate", "does not apply to action drain"},
		{"unknown action", minimal + "events: [{at: 1s, action: reboot}]\n", "events[0].action", "must be quiesce"},
		{"restart names no member", minimal + "events: [{at: 1s, action: restart, member: a}]\n", "events[0].member", "does not apply to restart"},
		{"event after run", minimal + "events: [{at: 11s, action: drain}]\n", "events[0].at", "within the run"},
		{"window order", minimal + "events: [{at: 5s, action: errors, rate: 0.5, until: 4s}]\n", "events[0].until", "after from"},
		{"bad status", minimal + "events: [{at: 5s, action: errors, rate: 0.5, status: 200}]\n", "events[0].status", "400-599"},
		{"bad reason", minimal + "events: [{at: 5s, action: quiesce, reason: Bad Reason}]\n", "events[0].reason", "reason code"},
		{"fault mode", minimal + "telemetry: {faults: [{member: a, mode: flaky}]}\n", "telemetry.faults[0].mode", "outage, slow"},
		{"slow needs latency", minimal + "telemetry: {faults: [{member: a, mode: slow}]}\n", "telemetry.faults[0].latency", "required"},
		{"gate op", minimal + "expect: [{metric: tier.requests, op: '=', value: 1}]\n", "expect[0].op", "one of"},
		{"gate metric", minimal + "expect: [{metric: 'Tier Requests', op: '==', value: 1}]\n", "expect[0].metric", "report metric name"},
		{"gate run", minimal + "expect: [{metric: tier.requests, run: round_robin, op: '==', value: 1}]\n", "expect[0].run", "names no run"},
		{"gate vs itself", minimal + "expect: [{metric: tier.requests, vs: capacity, op: '==', value: 1}]\n", "expect[0].vs", "another run"},
		{"duplicate strategy", minimal + "strategies: [capacity, capacity]\n", "strategies[1]", "duplicate strategy"},
		{"negative first byte timeout", minimal + "upstream: {first_byte_timeout: -1s}\n", "upstream.first_byte_timeout", "router default"},
		{"timeout too long", minimal + "upstream: {timeout: 25h}\n", "upstream.timeout", "to 24h"},
		{"open loop too much work", strings.Replace(strings.Replace(minimal, "closed: {clients: 2}", "open: {process: poisson, rate: 1000}", 1),
			"duration: 10s", "duration: 14h", 1), "workload", "more than 50000000 requests"},
		{"closed loop too much work", strings.Replace(strings.Replace(minimal, "clients: 2", "clients: 100000, backoff: 1ms", 1),
			"duration: 10s", "duration: 1h", 1), "workload", "more than 50000000 requests"},
		{"closed loop too much work on a fast engine", strings.Replace(strings.Replace(minimal, "clients: 2", "clients: 20000, think: 1us, backoff: 1h", 1),
			"duration: 10s", "duration: 24h", 1) + "events: [{at: 0s, action: slow, member: a, factor: 0.001}]\n", "workload", "more than 50000000 requests"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse([]byte(c.doc))
			require.Error(t, err)
			require.ErrorIs(t, err, ErrInvalid)
			var e *Error
			require.True(t, errors.As(err, &e))
			assert.Equal(t, c.path, e.Path)
			assert.Contains(t, e.Msg, c.msg)
		})
	}
}

// TestErrorsDoNotEchoValues: errors name paths (and plain-word unknown keys, to point at typos)
// but never repeat a value.
func TestErrorsDoNotEchoValues(t *testing.T) {
	secret := "SECRET_value_123"
	docs := []string{
		minimal + "\"" + secret + " x\": 1\n",
		strings.Replace(minimal, "name: t", "name: "+secret, 1),
		strings.Replace(minimal, "clients: 2", "clients: "+secret, 1),
		minimal + "events: [{at: 1s, action: " + secret + "}]\n",
	}
	for _, d := range docs {
		_, err := Parse([]byte(d))
		require.Error(t, err)
		assert.NotContains(t, err.Error(), secret)
	}
}

func TestTooLarge(t *testing.T) {
	_, err := Parse(make([]byte, MaxBytes+1))
	require.ErrorIs(t, err, ErrInvalid)
}

func TestGateHolds(t *testing.T) {
	cases := []struct {
		op   string
		v    float64
		want bool
	}{
		{"==", 1, true}, {"==", 2, false}, {"!=", 2, true}, {"<", 0.5, true}, {"<", 1, false},
		{"<=", 1, true}, {">", 1, false}, {">", 1.5, true}, {">=", 1, true}, {"??", 1, false},
	}
	for _, c := range cases {
		g := Gate{Op: c.op, Value: 1}
		assert.Equal(t, c.want, g.Holds(c.v), "%v %s 1", c.v, c.op)
	}
}

func FuzzParse(f *testing.F) {
	for _, n := range Names() {
		data, err := Source(n)
		require.NoError(f, err)
		f.Add(data)
	}
	f.Add([]byte(minimal))
	f.Add([]byte("name: x\nduration: 1s\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		sc, err := Parse(data)
		if err != nil {
			require.ErrorIs(t, err, ErrInvalid)
			return
		}
		// A scenario that parses is complete: defaults applied, references resolved.
		require.NotEmpty(t, sc.Strategies)
		require.NotNil(t, sc.Workload.Streaming)
		require.NotZero(t, sc.Tier.Gates.MaxContextTokens)
		for _, g := range sc.Expect {
			require.NotEmpty(t, g.Name)
			require.NotEmpty(t, g.Run)
		}
		for _, m := range sc.Tier.Members {
			require.True(t, m.OutsideRate >= 0 && m.OutsideRate <= MaxOutsideRate)
		}
		require.LessOrEqual(t, sc.ExpectedWork(), float64(MaxRequests))
		for _, e := range sc.Events {
			if e.Member != "" {
				_, ok := sc.EverMember(e.Member)
				require.True(t, ok)
				require.True(t, sc.ConfiguredAt(e.Member, e.At))
			}
		}
	})
}

// Outside load is work too: a scenario whose members' outside_rate alone would send more than
// MaxRequests is refused at load time like an open loop that would.
func TestExpectedWorkCountsOutsideLoad(t *testing.T) {
	doc := strings.Replace(strings.Replace(minimal, "{id: b, max_concurrency: 2}", "{id: b, max_concurrency: 2, outside_rate: 1000}", 1),
		"duration: 10s", "duration: 13h", 1)
	_, err := Parse([]byte(doc))
	require.ErrorIs(t, err, ErrInvalid)
	assert.Contains(t, err.Error(), "would send more than")
	sc, err := Parse([]byte(strings.Replace(minimal, "{id: b, max_concurrency: 2}", "{id: b, max_concurrency: 2, outside_rate: 10}", 1)))
	require.NoError(t, err)
	closed := *sc
	closed.Tier.Members = append([]Member(nil), sc.Tier.Members...)
	closed.Tier.Members[1].OutsideRate = 0
	assert.InDelta(t, 10*10, sc.ExpectedWork()-closed.ExpectedWork(), 1e-9, "rate x duration on top of the router's load")
}

func TestExpectedWork(t *testing.T) {
	sc, err := Parse([]byte(strings.Replace(strings.Replace(minimal, "closed: {clients: 2}", "open: {process: poisson, rate: 1000}", 1),
		"duration: 10s", "duration: 13h", 1)))
	require.NoError(t, err, "46.8 million requests are within the bound")
	assert.Equal(t, 1000*13*3600.0, sc.ExpectedWork())

	sc, err = Parse([]byte(strings.Replace(minimal, "clients: 2", "clients: 10, think: 1s, backoff: 2s", 1)))
	require.NoError(t, err)
	// The shortest cycle is a success: 1 s of thinking plus one 5.75 ms step of the default profile.
	assert.InDelta(t, 10*10/1.00575, sc.ExpectedWork(), 1e-9)
	sc.Workload.Closed.Backoff = 100 * time.Millisecond
	assert.InDelta(t, 10*10/0.1, sc.ExpectedWork(), 1e-9, "or a refusal's backoff, when shorter")
}

func TestUpstreamTimeouts(t *testing.T) {
	sc, err := Parse([]byte(minimal + "upstream: {first_byte_timeout: 3s, timeout: 15s}\n"))
	require.NoError(t, err)
	assert.Equal(t, Upstream{FirstByteTimeout: 3 * time.Second, Timeout: 15 * time.Second}, sc.Upstream)
	sc, err = Parse([]byte(minimal))
	require.NoError(t, err)
	assert.Equal(t, Upstream{}, sc.Upstream, "zero keeps the router's defaults")
}

// TestParseOverrideDuration: a shorter duration reads as if the file said it, so "until the end"
// follows the new end and anything past it is refused, as Parse would refuse it.
func TestParseOverrideDuration(t *testing.T) {
	doc := minimal + "windows: [{name: late, from: 2s}]\nevents: [{at: 3s, action: errors, rate: 0.5}]\n"
	cases := []struct {
		name     string
		doc      string
		duration time.Duration
		path     string // "" when it parses
	}{
		{"kept", doc, 0, ""},
		{"shortened", doc, 4 * time.Second, ""},
		{"lengthened", doc, time.Minute, ""},
		{"event past the new end", doc, 2500 * time.Millisecond, "events[0].at"},
		{"window past the new end", minimal + "windows: [{name: late, from: 2s}]\n", 2 * time.Second, "windows[0]"},
		{"below the minimum", doc, time.Millisecond, "duration"},
		{"above the maximum", doc, 25 * time.Hour, "duration"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			sc, err := ParseOverride([]byte(c.doc), Override{Duration: c.duration})
			if c.path != "" {
				var se *Error
				require.ErrorAs(t, err, &se)
				assert.Equal(t, c.path, se.Path)
				return
			}
			require.NoError(t, err)
			want := 10 * time.Second
			if c.duration != 0 {
				want = c.duration
			}
			assert.Equal(t, want, sc.Duration)
			assert.Equal(t, want, sc.Windows[0].Until, "the window runs until the new end")
			assert.Equal(t, want, sc.Events[0].Until, "the error window runs until the new end")
		})
	}
	plain, err := Parse([]byte(doc))
	require.NoError(t, err)
	same, err := ParseOverride([]byte(doc), Override{})
	require.NoError(t, err)
	assert.Equal(t, plain, same, "no override is Parse")
}
