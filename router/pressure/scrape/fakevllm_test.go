package scrape_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/anvil-llm/anvil/fakevllm"
	"github.com/anvil-llm/anvil/internal/pipenet"
	"github.com/anvil-llm/anvil/router/pressure"
	"github.com/anvil-llm/anvil/router/pressure/scrape"
)

// startFake runs a real fake-vLLM member with the given /metrics fault on an in-memory network, for
// a synctest bubble: time passes only while every goroutine waits, so the fetch's 1 s timeout fires
// only for a member that really holds its answer, never for a busy machine.
func startFake(t *testing.T, legacy bool, fault fakevllm.MetricsFault) (*pipenet.Net, string) {
	t.Helper()
	member, err := fakevllm.NewServer(fakevllm.Options{Models: []string{llama}, LegacyMetrics: legacy})
	require.NoError(t, err)
	require.NoError(t, member.SetFaults(fakevllm.Faults{Metrics: fault}))
	n := pipenet.New()
	url := n.Serve("member:80", member.Handler())
	// Close the member first so hung handlers return, then the network.
	t.Cleanup(n.Close)
	t.Cleanup(member.Close)
	return n, url
}

func TestFetchFakeVLLM(t *testing.T) {
	idle := pressure.Sample{Running: present(0), Waiting: present(0), KVUsage: present(0)}
	tests := []struct {
		name   string
		legacy bool
		fault  fakevllm.MetricsFault
		// budget is the caller's deadline; the hung and slow cases use a short one so
		// the suite does not spend FetchTimeout of real time (the 1 s bound itself is
		// checked on fake time in TestFetchTimeoutIsOneSecond).
		budget time.Duration
		class  pressure.Class
		want   pressure.Sample
	}{
		{name: "healthy", class: pressure.ClassOK, want: idle},
		{name: "legacy KV name", legacy: true, class: pressure.ClassOK, want: idle},
		{name: "slow within budget", fault: fakevllm.MetricsFault{Mode: fakevllm.MetricsSlow, Delay: fakevllm.Duration(20 * time.Millisecond)},
			class: pressure.ClassOK, want: idle},
		{name: "slow past budget", fault: fakevllm.MetricsFault{Mode: fakevllm.MetricsSlow},
			budget: 150 * time.Millisecond, class: pressure.ClassFailed},
		{name: "hung", fault: fakevllm.MetricsFault{Mode: fakevllm.MetricsHang},
			budget: 150 * time.Millisecond, class: pressure.ClassFailed},
		{name: "500", fault: fakevllm.MetricsFault{Mode: fakevllm.MetricsError}, class: pressure.ClassFailed},
		{name: "malformed", fault: fakevllm.MetricsFault{Mode: fakevllm.MetricsMalformed}, class: pressure.ClassUnknown},
		{name: "oversized", fault: fakevllm.MetricsFault{Mode: fakevllm.MetricsOversized}, class: pressure.ClassUnknown},
		{name: "pressure families missing", fault: fakevllm.MetricsFault{Mode: fakevllm.MetricsMissing}, class: pressure.ClassUnknown},
		{name: "KV family missing", fault: fakevllm.MetricsFault{Mode: fakevllm.MetricsMissing,
			Missing: []string{fakevllm.MetricKVUsage}}, class: pressure.ClassOK,
			want: pressure.Sample{Running: present(0), Waiting: present(0)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				n, url := startFake(t, tt.legacy, tt.fault)
				ctx := t.Context()
				if tt.budget > 0 {
					var cancel context.CancelFunc
					ctx, cancel = context.WithTimeout(ctx, tt.budget)
					defer cancel()
				}
				s, cl := scrape.Fetch(ctx, n.Client(), url, llama)
				assert.Equal(t, tt.class, cl)
				assert.Equal(t, tt.want, s)
			})
		})
	}
}

func TestFetchFakeVLLMOtherModelIsUnknown(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n, url := startFake(t, false, fakevllm.MetricsFault{})
		s, cl := scrape.Fetch(t.Context(), n.Client(), url, "another-model")
		assert.Equal(t, pressure.ClassUnknown, cl)
		assert.Zero(t, s)
	})
}
