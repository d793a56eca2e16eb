package qualification_test

import (
	"context"
	"fmt"
	"net"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/anvil-llm/anvil/engine"
	"github.com/anvil-llm/anvil/engine/profile"
	"github.com/anvil-llm/anvil/fakevllm"
	"github.com/anvil-llm/anvil/qualification"
	"github.com/anvil-llm/anvil/router/config/load"
	"github.com/anvil-llm/anvil/router/server"
)

const (
	rigModel      = "qual/llama-3.1-8b"
	rigCaller     = "rig-caller-token-0123456789"
	rigAdmin      = "rig-admin-token-0123456789"
	rigApproval   = "rig-approval-token-0123456789"
	rigTier       = "pool"
	rigMemberSeed = 11
)

// rig is a real router on loopback in front of two real fake-vLLM members: the tier a test
// qualifies. The router persists quiesce intent, so restoration is checked against what survives
// a restart too.
type rig struct {
	srv     *server.Server
	url     string
	members []*fakevllm.Member
	intent  string
}

// rigOptions vary the rig: the model each member serves (default rigModel) and the members'
// engine profile (default tiny).
type rigOptions struct {
	models  [2]string
	profile *engine.Profile
}

func startRig(t *testing.T, o rigOptions) *rig {
	t.Helper()
	ctx := t.Context()
	tiny, err := profile.Lookup("tiny")
	require.NoError(t, err)
	if o.profile != nil {
		tiny = *o.profile
	}
	rg := &rig{intent: filepath.Join(t.TempDir(), "intent.json")}
	for i, model := range o.models {
		if model == "" {
			model = rigModel
		}
		c, err := fakevllm.StartCluster(ctx, fakevllm.Options{Models: []string{model}, Profile: tiny, Seed: uint64(rigMemberSeed + i)}, 1)
		require.NoError(t, err)
		t.Cleanup(func() { _ = c.Close() })
		rg.members = append(rg.members, c.Members()...)
	}
	cfg, err := load.Parse([]byte(rg.routerYAML()), func(string) (string, bool) { return "", false })
	require.NoError(t, err)
	rg.srv, err = server.New(cfg, server.Options{})
	require.NoError(t, err)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	rg.url = "http://" + ln.Addr().String()
	serveCtx, stop := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- rg.srv.Serve(serveCtx, ln) }()
	t.Cleanup(func() {
		stop()
		require.NoError(t, <-served)
	})
	return rg
}

// routerYAML is a capacity tier over the two members, ceilings 2 + 2, with an admission queue deep
// enough that a closed loop at the ceiling waits instead of being refused. No time in it is a
// threshold a slow machine could cross: the tests' outcomes depend on events, not on speed.
func (rg *rig) routerYAML() string {
	var b strings.Builder
	fmt.Fprintf(&b, `listen: 127.0.0.1:0
shutdown_grace: 5s
auth:
  caller_tokens: [%s]
  admin_token: %s
decision_log:
  ring_size: 10000
intent_file: %s
readiness:
  interval: 30s # probed before serving; no later probe may time out on a loaded machine
  timeout: 30s
aliases:
  - id: chat
    tier: %s
tiers:
  - id: %s
    kind: replica
    served_model: %s
    host: 127.0.0.1
    provenance: anvil-qualify test rig, fake vLLM
    replica_strategy: capacity
    queue:
      max_waiting: 64
      timeout: 10m # a waiting request is never refused for the machine's slowness
    gates:
      max_context_tokens: 1024
    members:
`, rigCaller, rigAdmin, rg.intent, rigTier, rigTier, rigModel)
	for i, m := range rg.members {
		fmt.Fprintf(&b, "      - id: m%d\n        endpoint: %s\n        max_concurrency: 2\n", i, m.URL())
	}
	return b.String()
}

// rigFailure is the rig's failure phase: its duration only bounds the load, which ends when the
// member is readmitted, so it is far longer than any run takes.
const rigFailure = "{member: m1, duration: 10m, hold: 200ms, drain_wait: 10m}"

// qualYAML is a qualification file for the rig with short phases and the given failure phase,
// approved with rigApproval. It sets no latency SLO: a verdict must not hang on this machine's speed
// (gate_test covers the latency checks).
func (rg *rig) qualYAML(t *testing.T, output, failure string) string {
	t.Helper()
	return rg.qualYAMLWith(t, output, failure, qualExtra{})
}

// qualExtra varies qualYAML: more phases keys (indented under phases:), such as a calibration, and
// another output length distribution (a flow mapping).
type qualExtra struct {
	phases, outputTokens string
}

// qualYAMLWith is qualYAML varied by x.
func (rg *rig) qualYAMLWith(t *testing.T, output, failure string, x qualExtra) string {
	t.Helper()
	if x.outputTokens == "" {
		x.outputTokens = "{dist: uniform, min: 16, max: 48}"
	}
	body := fmt.Sprintf(`qualification: rig
output: %s
seed: 5
router:
  url: %s
  alias: chat
  admin_token_env: RIG_ADMIN
  caller_token_env: RIG_CALLER
tier:
  id: %s
  served_model: %s
  strategy: capacity
  provenance:
    statement: anvil-qualify test rig, fake vLLM
    engine_version: %s
    max_model_len: 1024
  members:
    - {id: m0, url: %s, max_concurrency: 2}
    - {id: m1, url: %s, max_concurrency: 2}
workload:
  closed: {clients: 4}
  prompt_tokens: {dist: constant, value: 16}
  output_tokens: %s
  streaming: 0.7
phases:
  matched: {requests: 40, warmup: 4}
  sustained: {duration: 1s}
  failure: %s
%s  sample_every: 100ms
  restore_timeout: 10m
slo:
  min_success: 0.99
`, output, rg.url, rigTier, rigModel, fakevllm.VLLMVersion, rg.members[0].URL(), rg.members[1].URL(), x.outputTokens, failure, x.phases)
	p, err := qualification.Parse([]byte(body))
	require.NoError(t, err)
	d, err := qualification.Digest(rigApproval, p.Fingerprint())
	require.NoError(t, err)
	return body + "approval:\n  digest: " + d + "\n"
}

// secrets are the rig's tokens as a run holds them.
func rigSecrets() qualification.Secrets {
	return qualification.Secrets{Admin: rigAdmin, Caller: rigCaller}
}
