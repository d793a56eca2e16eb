package pressure

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/anvil-llm/anvil/router/scheduler"
)

func TestAdopt(t *testing.T) {
	t0 := time.Unix(1000, 0)
	spec := func(endpoint1 string, cap1 int64, engine string) []TierSpec {
		return []TierSpec{{ID: "t", ServedModel: "m", Engine: engine, Members: []MemberSpec{
			{ID: "a", Endpoint: "http://10.0.0.1:1", Capacity: 4},
			{ID: "b", Endpoint: endpoint1, Capacity: cap1},
		}}}
	}
	old, err := NewCore(spec("http://10.0.0.1:2", 4, "vllm"))
	require.NoError(t, err)
	_, err = old.Snapshot("t", t0)
	require.NoError(t, err)
	var jobs []Job
	for {
		j, ok := old.Next(t0)
		if !ok {
			break
		}
		jobs = append(jobs, j)
	}
	require.Len(t, jobs, 2)
	for _, j := range jobs {
		old.Complete(j, t0.Add(time.Millisecond), Sample{Running: scheduler.Metric{Value: 1, Present: true},
			Waiting: scheduler.Metric{Value: 0, Present: true}}, ClassOK)
	}
	before, err := old.Peek("t", t0.Add(time.Second))
	require.NoError(t, err)
	require.Equal(t, scheduler.FreshnessFresh, before["b"].Freshness(), "the carried sample is a real one")
	tests := []struct {
		name     string
		endpoint string
		capacity int64
		engine   string
		kept     bool
	}{
		{"unchanged identity keeps the sample", "http://10.0.0.1:2", 4, "vllm", true},
		{"a moved endpoint reads unknown", "http://10.0.0.1:3", 4, "vllm", false},
		{"a moved ceiling reads unknown", "http://10.0.0.1:2", 8, "vllm", false},
		{"another engine reads unknown", "http://10.0.0.1:2", 4, "sglang", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			next, err := NewCore(spec(tt.endpoint, tt.capacity, tt.engine))
			require.NoError(t, err)
			next.Adopt(old)
			got, err := next.Peek("t", t0.Add(time.Second))
			require.NoError(t, err)
			if tt.engine == "vllm" {
				assert.Equal(t, before["a"], got["a"])
			} else {
				assert.Equal(t, scheduler.UnknownPressure(), got["a"], "the engine is the tier's: every member")
			}
			if tt.kept {
				assert.Equal(t, before["b"], got["b"])
			} else {
				assert.Equal(t, scheduler.UnknownPressure(), got["b"])
			}
			// An old job's late completion never lands in the new core.
			next.Complete(jobs[0], t0.Add(2*time.Millisecond), Sample{}, ClassFailed)
			again, err := next.Peek("t", t0.Add(time.Second))
			require.NoError(t, err)
			assert.Equal(t, got, again)
		})
	}
}
