package adapter_test

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/anvil-llm/anvil/router/pressure"
	"github.com/anvil-llm/anvil/router/pressure/adapter"
	"github.com/anvil-llm/anvil/router/scheduler"
)

// TestSGLangGroupsAddReplicasDoNot: on any page of data-parallel groups, each printed by any
// number of tensor-parallel ranks, running is the sum over groups of the group's largest rank,
// and another model's series change nothing.
func TestSGLangGroupsAddReplicasDoNot(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		groups := rapid.SliceOfN(rapid.SliceOfN(rapid.IntRange(0, 1000), 1, 4), 1, 8).Draw(t, "groups")
		var b strings.Builder
		b.WriteString("# TYPE sglang:num_running_reqs gauge\n")
		want := 0
		for dp, ranks := range groups {
			high := 0
			for tp, v := range ranks {
				fmt.Fprintf(&b, "sglang:num_running_reqs{dp_rank=\"%d\",model_name=%q,tp_rank=\"%d\"} %d\n", dp, llama, tp, v)
				fmt.Fprintf(&b, "sglang:num_running_reqs{dp_rank=\"%d\",model_name=\"other\",tp_rank=\"%d\"} 7\n", dp, tp)
				high = max(high, v)
			}
			want += high
		}
		got, cl := read(t, adapter.SGLang, []byte(b.String()), llama)
		require.Equal(t, pressure.ClassOK, cl)
		require.Equal(t, pressure.Sample{Running: present(float64(want))}, got)
	})
}

// TestTRTLLMVersionsAdd: on any page of model versions, running and waiting are the versions'
// sums whether the backend prints waiting or only active, and KV is the fullest version's
// used/max.
func TestTRTLLMVersionsAdd(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(1, 6).Draw(t, "versions")
		printsWaiting := rapid.Bool().Draw(t, "printsWaiting")
		var rows, kvRows []string
		running, waiting, high := 0, 0, 0.0
		for v := 1; v <= n; v++ {
			sched, wait := rapid.IntRange(0, 500).Draw(t, "scheduled"), rapid.IntRange(0, 500).Draw(t, "waiting")
			total := rapid.IntRange(1, 10000).Draw(t, "max")
			used := rapid.IntRange(0, total).Draw(t, "used")
			rows = append(rows, fmt.Sprintf("%d scheduled %d", v, sched), fmt.Sprintf("%d active %d", v, sched+wait))
			if printsWaiting {
				rows = append(rows, fmt.Sprintf("%d waiting %d", v, wait))
			}
			kvRows = append(kvRows, fmt.Sprintf("%d used %d", v, used), fmt.Sprintf("%d max %d", v, total))
			running, waiting, high = running+sched, waiting+wait, max(high, float64(used)/float64(total))
		}
		got, cl := read(t, adapter.TRTLLM, []byte(reqs(rows...)+kv(kvRows...)), triton)
		require.Equal(t, pressure.ClassOK, cl)
		require.Equal(t, pressure.Sample{Running: present(float64(running)), Waiting: present(float64(waiting)), KVUsage: present(high)}, got)
	})
}

// TestBlockFractionIsBounded: any used/total pair is a fraction in 0..1, missing, or malformed,
// and valid exactly when both are integral counts with 0 <= used <= total and total > 0.
func TestBlockFractionIsBounded(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		used, total := rapid.Float64().Draw(t, "used"), rapid.Float64().Draw(t, "total")
		if rapid.Bool().Draw(t, "integral") {
			used, total = float64(rapid.IntRange(-3, 1<<40).Draw(t, "u")), float64(rapid.IntRange(-3, 1<<40).Draw(t, "t"))
		}
		m := adapter.BlockFraction(present(used), present(total))
		valid := total > 0 && !math.IsInf(total, 0) && used >= 0 && used <= total && math.Trunc(used) == used && math.Trunc(total) == total
		if !valid {
			require.Equal(t, scheduler.MalformedMetric(), m)
			return
		}
		require.True(t, m.Present && !m.Malformed && m.Value >= 0 && m.Value <= 1, "%v", m)
	})
}
