package qualification

import (
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/anvil-llm/anvil/bench"
	"github.com/anvil-llm/anvil/scenarios"
)

// minimal is the smallest valid qualification file.
const minimal = `qualification: gpu1-llama
router:
  url: https://router.gpu1:8443
  alias: chat
  admin_token_file: /etc/anvil/admin-token
  caller_token_env: ANVIL_API_TOKEN
tier:
  id: llama-8b
  served_model: meta-llama/Llama-3.1-8B-Instruct
  strategy: capacity
  provenance:
    statement: vllm 0.12.0, Llama-3.1-8B-Instruct bf16, 1x H100
  members:
    - {id: vllm-0, url: "http://gpu1:8000", max_concurrency: 32}
    - {id: vllm-1, url: "http://gpu1:8001", max_concurrency: 16}
workload:
  closed: {clients: 16}
  prompt_tokens: {dist: uniform, min: 64, max: 1024}
  output_tokens: {dist: uniform, min: 16, max: 512}
phases:
  matched: {requests: 1000}
  sustained: {duration: 10m}
  failure: {duration: 5m}
slo:
  min_success: 0.999
`

func TestParseAppliesDefaults(t *testing.T) {
	p, err := Parse([]byte(minimal))
	require.NoError(t, err)
	assert.Equal(t, PlanFormat, p.Format)
	assert.Equal(t, DefaultOutput, p.Output)
	assert.Equal(t, uint64(1), p.Seed)
	assert.Equal(t, "chat", p.Endpoint)
	assert.Equal(t, bench.DefaultTimeout, p.RequestTimeout)
	assert.Equal(t, TokenSource{File: "/etc/anvil/admin-token"}, p.Router.AdminToken)
	assert.Equal(t, TokenSource{Env: "ANVIL_API_TOKEN"}, p.Router.CallerToken)
	assert.False(t, p.Tier.MemberToken.Set())
	assert.Equal(t, int64(0), p.Tier.MaxConcurrency)
	assert.Equal(t, int64(48), p.Tier.Ceiling, "capacity: the sum of member ceilings")
	assert.Equal(t, 48, p.Phases.SustainedClients)
	assert.Equal(t, Failure{Member: "vllm-0", Duration: 5 * time.Minute, Hold: DefaultHold, DrainWait: DefaultDrainWait}, p.Phases.Failure)
	assert.Equal(t, DefaultSampleEvery, p.Phases.SampleEvery)
	assert.Equal(t, DefaultRestoreTimeout, p.Phases.RestoreTimeout)
	assert.Equal(t, 1.0, *p.Workload.Streaming, "the scenario schema's default")
	assert.Empty(t, p.Approval)

	// The sustained and failure phases are a closed loop of the ceiling in clients; the failure
	// phase drops the workload's client cancellations.
	sp, fp := p.sustainedPlan(), p.failurePlan()
	assert.Equal(t, 48, sp.Workload.Closed.Clients)
	assert.Equal(t, 48, fp.Workload.Closed.Clients)
	assert.Nil(t, fp.Workload.Cancel)
	mp := p.matchedPlan()
	assert.Equal(t, 1000, mp.Requests)
	assert.Equal(t, 16, mp.Workload.Closed.Clients)

	rr, err := Parse([]byte(strings.Replace(minimal, "strategy: capacity", "strategy: round_robin", 1)))
	require.NoError(t, err)
	assert.Equal(t, int64(0), rr.Tier.Ceiling, "round robin without a tier ceiling has none")
	assert.Equal(t, 48, rr.Phases.SustainedClients, "held at the members' ceilings")
}

// Every refusal names its path in fixed words and never echoes the file.
func TestParseRefusals(t *testing.T) {
	const secret = "s3cr3t-value"
	cases := []struct {
		name, old, new, path string
	}{
		{"no name", "qualification: gpu1-llama", "qualification: GPU1", "qualification"},
		{"long name", "qualification: gpu1-llama", "qualification: " + strings.Repeat("a", 49), "qualification"},
		{"unknown key", "qualification: gpu1-llama", "qualification: gpu1-llama\ntoken: " + secret, "token"},
		{"router url with credentials", "https://router.gpu1:8443", "https://u:" + secret + "@router", "router.url"},
		{"router url with a query", "https://router.gpu1:8443", "https://router?x=" + secret, "router.url"},
		{"bad alias", "alias: chat", "alias: Chat!", "router.alias"},
		{"two admin sources", "admin_token_file: /etc/anvil/admin-token", "admin_token_file: /x\n  admin_token_env: ADMIN", "router.admin_token_env"},
		{"no caller source", "  caller_token_env: ANVIL_API_TOKEN\n", "", "router.caller_token_env"},
		{"lower-case env", "caller_token_env: ANVIL_API_TOKEN", "caller_token_env: " + secret, "router.caller_token_env"},
		{"bad tier", "id: llama-8b", "id: Llama", "tier.id"},
		{"model with a space", "served_model: meta-llama/Llama-3.1-8B-Instruct", "served_model: a b", "tier.served_model"},
		{"no strategy", "  strategy: capacity\n", "", "tier.strategy"},
		{"tier ceiling", "strategy: capacity", "strategy: capacity\n  max_concurrency: -1", "tier.max_concurrency"},
		{"no provenance", "    statement: vllm 0.12.0, Llama-3.1-8B-Instruct bf16, 1x H100\n", "    engine_version: x\n", "tier.provenance.statement"},
		{"provenance space", "statement: vllm 0.12.0, Llama-3.1-8B-Instruct bf16, 1x H100", `statement: " lead"`, "tier.provenance.statement"},
		{"one member", "    - {id: vllm-1, url: \"http://gpu1:8001\", max_concurrency: 16}\n", "", "tier.members"},
		{"duplicate member", "id: vllm-1,", "id: vllm-0,", "tier.members[1].id"},
		{"duplicate url", "http://gpu1:8001", "http://gpu1:8000", "tier.members[1].url"},
		{"no member ceiling", ", max_concurrency: 16}", "}", "tier.members[1].max_concurrency"},
		{"member ceiling too high", "max_concurrency: 16}", "max_concurrency: 100001}", "tier.members[1].max_concurrency"},
		{"bad workload", "closed: {clients: 16}", "closed: {clients: 0}", "workload.closed.clients"},
		{"both loops", "closed: {clients: 16}", "closed: {clients: 16}\n  open: {process: poisson, rate: 1}", "workload"},
		{"matched both sizes", "matched: {requests: 1000}", "matched: {requests: 1000, duration: 1m}", "phases.matched"},
		{"matched short", "matched: {requests: 1000}", "matched: {duration: 500ms}", "phases.matched.duration"},
		{"no sustained", "  sustained: {duration: 10m}\n", "", "phases.sustained"},
		{"failure member", "failure: {duration: 5m}", "failure: {duration: 5m, member: vllm-9}", "phases.failure.member"},
		{"failure without duration", "failure: {duration: 5m}", "failure: {hold: 1s}", "phases.failure.duration"},
		{"fractional drain wait", "failure: {duration: 5m}", "failure: {duration: 5m, drain_wait: 1500ms}", "phases.failure.drain_wait"},
		{"sample too often", "failure: {duration: 5m}", "failure: {duration: 5m}\n  sample_every: 1ms", "phases.sample_every"},
		{"no min success", "  min_success: 0.999\n", "  e2el_p99: 1s\n", "slo.min_success"},
		{"min success above 1", "min_success: 0.999", "min_success: 1.5", "slo.min_success"},
		{"negative slo", "min_success: 0.999", "min_success: 0.999\n  ttft_p99: -1s", "slo.ttft_p99"},
		{"bad digest", "min_success: 0.999\n", "min_success: 0.999\napproval: {digest: \"sha256:" + secret + "\"}\n", "approval.digest"},
		{"endpoint", "qualification: gpu1-llama", "qualification: gpu1-llama\nendpoint: embeddings", "endpoint"},
		{"timeout", "qualification: gpu1-llama", "qualification: gpu1-llama\nrequest_timeout: 0s1", "request_timeout"},
		{"null", "alias: chat", "alias: null", "router.alias"},
		{"anchor", "  alias: chat", "  alias: &a chat", "router.alias"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			doc := strings.Replace(minimal, c.old, c.new, 1)
			require.NotEqual(t, minimal, doc, "the case changes the file")
			p, err := Parse([]byte(doc))
			require.Error(t, err)
			assert.Nil(t, p)
			assert.True(t, errors.Is(err, ErrInvalid) || errors.Is(err, scenarios.ErrInvalid), "%v", err)
			var qe *Error
			var se *scenarios.Error
			switch {
			case errors.As(err, &qe):
				assert.Equal(t, c.path, qe.Path, "%v", err)
			case errors.As(err, &se):
				assert.Equal(t, c.path, se.Path, "%v", err)
			default:
				t.Fatalf("untyped error %v", err)
			}
			assert.NotContains(t, err.Error(), secret)
		})
	}
}

func TestParseDocumentRefusals(t *testing.T) {
	for name, doc := range map[string]string{
		"empty":        "",
		"not a map":    "- a\n- b\n",
		"two docs":     minimal + "---\nqualification: x\n",
		"syntax":       "qualification: [",
		"too large":    strings.Repeat("#", MaxFileBytes+1),
		"wrong type":   strings.Replace(minimal, "seed", "seed", 1) + "seed: many\n",
		"duplicate":    minimal + "qualification: again\n",
		"merge key":    minimal + "x: &a {b: 1}\ny:\n  <<: *a\n",
		"nested bogus": strings.Replace(minimal, "matched: {requests: 1000}", "matched: {requests: 1000, rounds: 2}", 1),
	} {
		t.Run(name, func(t *testing.T) {
			_, err := Parse([]byte(doc))
			require.ErrorIs(t, err, ErrInvalid)
		})
	}
}

// The fingerprint covers everything a run does, and nothing else: not the approval digest.
func TestFingerprint(t *testing.T) {
	p, err := Parse([]byte(minimal))
	require.NoError(t, err)
	fp := p.Fingerprint()
	assert.Regexp(t, `^sha256:[0-9a-f]{64}$`, fp)
	again, err := Parse([]byte(minimal))
	require.NoError(t, err)
	assert.Equal(t, fp, again.Fingerprint(), "deterministic")
	withDigest, err := Parse([]byte(minimal + "approval:\n  digest: hmac-sha256:" + strings.Repeat("ab", 32) + "\n"))
	require.NoError(t, err)
	assert.Equal(t, fp, withDigest.Fingerprint(), "the approval is not part of the plan")
	assert.NotContains(t, string(withDigest.JSON()), "hmac-sha256", "nor of its JSON")
	for _, change := range [][2]string{
		{"min_success: 0.999", "min_success: 0.99"},
		{"http://gpu1:8001", "http://gpu1:8002"},
		{"failure: {duration: 5m}", "failure: {duration: 5m, member: vllm-1}"},
		{"clients: 16", "clients: 17"},
	} {
		q, err := Parse([]byte(strings.Replace(minimal, change[0], change[1], 1)))
		require.NoError(t, err)
		assert.NotEqual(t, fp, q.Fingerprint(), "changing %q changes the fingerprint", change[0])
	}
}

// The digest is HMAC-SHA256 of the context line and the fingerprint under the token, in hex; the
// expected value was computed outside Go (Python's hmac), so an operator can reproduce it with any
// HMAC tool.
func TestDigestKnownAnswer(t *testing.T) {
	const token, fp = "approval-token-0123456789", "sha256:0000000000000000000000000000000000000000000000000000000000000000"
	d, err := Digest(token, fp)
	require.NoError(t, err)
	assert.Equal(t, "hmac-sha256:2bf3c4c3b6fafbb2d473e42ce7f2a66c6781ee896d21bf409a0e25ef225d17d5", d)
	assert.True(t, validDigest(d))
	_, err = Digest("short", fp)
	assert.ErrorIs(t, err, ErrTokenForm)
}

func TestApprove(t *testing.T) {
	const token = "approval-token-0123456789"
	p, err := Parse([]byte(minimal))
	require.NoError(t, err)
	d, err := Digest(token, p.Fingerprint())
	require.NoError(t, err)
	approved, err := Parse([]byte(minimal + "approval:\n  digest: " + d + "\n"))
	require.NoError(t, err)
	cases := []struct {
		name    string
		p       *Plan
		approve bool
		token   string
		want    error
	}{
		{"approved", approved, true, token, nil},
		{"no --approve", approved, false, token, ErrNotApproved},
		{"no token", approved, true, "", ErrNoToken},
		{"token with a space", approved, true, "approval token 0123456789", ErrTokenForm},
		{"short token", approved, true, "0123456789", ErrTokenForm},
		{"wrong token", approved, true, token + "x", ErrDigestMismatch},
		{"no digest", p, true, token, ErrNoDigest},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a, err := c.p.Approve(c.approve, c.token)
			if c.want != nil {
				assert.ErrorIs(t, err, c.want)
				assert.Equal(t, Approval{}, a)
				assert.NotContains(t, err.Error(), token)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, approved.Fingerprint(), a.fingerprint)
		})
	}
	// An approval is bound to its plan: Run refuses another plan's before sending anything.
	a, err := approved.Approve(true, token)
	require.NoError(t, err)
	other, err := Parse([]byte(strings.Replace(minimal, "clients: 16", "clients: 8", 1)))
	require.NoError(t, err)
	_, err = Run(t.Context(), other, a, Options{Secrets: Secrets{Admin: "a-admin-token", Caller: "a-caller-token"}})
	assert.ErrorIs(t, err, ErrApproval)
	_, err = Run(t.Context(), other, Approval{}, Options{})
	assert.ErrorIs(t, err, ErrApproval)
}

func TestResolveSecrets(t *testing.T) {
	p, err := Parse([]byte(minimal))
	require.NoError(t, err)
	files := map[string]string{"/etc/anvil/admin-token": "admin-token-1\n# comment\n"}
	src := func(env map[string]string) Sources {
		return Sources{
			LookupEnv: func(k string) (string, bool) { v, ok := env[k]; return v, ok },
			ReadFile: func(path string) ([]byte, error) {
				if v, ok := files[path]; ok {
					return []byte(v), nil
				}
				return nil, errors.New("no such file")
			},
		}
	}
	s, err := p.Resolve(src(map[string]string{"ANVIL_API_TOKEN": " caller-token-1 "}))
	require.NoError(t, err)
	assert.Equal(t, Secrets{Admin: "admin-token-1", Caller: "caller-token-1"}, s)
	assert.Equal(t, map[string]string{"router.admin_token": "set", "router.caller_token": "set"},
		p.Availability(src(map[string]string{"ANVIL_API_TOKEN": "caller-token-1"})))

	for name, env := range map[string]map[string]string{
		"caller not set":    {},
		"caller empty":      {"ANVIL_API_TOKEN": "  "},
		"caller not token":  {"ANVIL_API_TOKEN": "two words"},
		"same as the admin": {"ANVIL_API_TOKEN": "admin-token-1"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := p.Resolve(src(env))
			require.ErrorIs(t, err, ErrSecret)
			assert.NotContains(t, err.Error(), "admin-token-1")
			assert.NotContains(t, err.Error(), "two words")
		})
	}
	files = map[string]string{}
	assert.Equal(t, map[string]string{"router.admin_token": "unreadable", "router.caller_token": "not set"}, p.Availability(src(nil)))
}

// The documented example is a valid file, and its plan is what the methodology says it is.
func TestExampleFileIsValid(t *testing.T) {
	data, err := os.ReadFile("../docs/examples/qualification.yaml")
	require.NoError(t, err)
	p, err := Parse(data)
	require.NoError(t, err)
	assert.Equal(t, int64(128), p.Tier.Ceiling)
	assert.Equal(t, 128, p.Phases.SustainedClients)
	assert.Equal(t, "vllm-2", p.Phases.Failure.Member)
	require.NotNil(t, p.Phases.Calibration)
	assert.Len(t, p.Phases.Calibration.Steps(), 17, "1, 4, 8, ... 64")
	assert.Equal(t, 80*time.Millisecond, p.Phases.Calibration.SLO.TPOT, "0 is the gate's own TPOT p99")
	assert.Empty(t, p.Approval, "the example records no approval")
}
