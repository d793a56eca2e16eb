package scrape_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/anvil-llm/anvil/router/pressure"
	"github.com/anvil-llm/anvil/router/scheduler"
)

// busy is a valid sample: (1+1)/4 requests = 500000 ppm, KV 250000 ppm.
var busy = pressure.Sample{Running: present(1), Waiting: present(1), KVUsage: present(0.25)}

func mustPressure(t *testing.T, f scheduler.Freshness, ppm int64, hasPPM bool, req, kv scheduler.SignalState) scheduler.Pressure {
	t.Helper()
	p, err := scheduler.NewPressure(f, ppm, hasPPM, req, kv)
	require.NoError(t, err)
	return p
}

func freshBusy(t *testing.T) scheduler.Pressure {
	return mustPressure(t, scheduler.FreshnessFresh, 500_000, true, scheduler.SignalValid, scheduler.SignalValid)
}

func failed(t *testing.T) scheduler.Pressure {
	return mustPressure(t, scheduler.FreshnessFailed, 0, false, scheduler.SignalMissing, scheduler.SignalMissing)
}

// tier builds a capacity tier whose members have capacity 4 and distinct endpoints.
func tier(id string, members ...string) pressure.TierSpec {
	t := pressure.TierSpec{ID: id, ServedModel: llama}
	for i, m := range members {
		t.Members = append(t.Members, pressure.MemberSpec{
			ID: m, Endpoint: fmt.Sprintf("http://10.0.0.%d:8000", i+1), Capacity: 4,
		})
	}
	return t
}

// memberIDs returns n IDs m00, m01, ...
func memberIDs(n int) []string {
	ids := make([]string, n)
	for i := range ids {
		ids[i] = fmt.Sprintf("m%02d", i)
	}
	return ids
}
