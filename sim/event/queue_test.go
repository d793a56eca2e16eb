package event

import (
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"
)

func TestTieRules(t *testing.T) {
	var q Queue[string]
	q.Push(2*time.Second, 0, "late")
	q.Push(time.Second, 5, "low-priority")
	q.Push(time.Second, 1, "first-of-pair")
	q.Push(time.Second, 1, "second-of-pair")
	q.Push(0, 9, "earliest")
	var got []string
	for q.Len() > 0 {
		it, ok := q.Pop()
		require.True(t, ok)
		got = append(got, it.Value)
	}
	assert.Equal(t, []string{"earliest", "first-of-pair", "second-of-pair", "low-priority", "late"}, got)
}

func TestEmptyQueue(t *testing.T) {
	var q Queue[int]
	_, ok := q.Pop()
	assert.False(t, ok)
	_, ok = q.Peek()
	assert.False(t, ok)
	assert.True(t, q.Before(time.Hour, 100))
}

func TestPeekDoesNotRemove(t *testing.T) {
	var q Queue[int]
	q.Push(time.Second, 0, 7)
	it, ok := q.Peek()
	require.True(t, ok)
	assert.Equal(t, 7, it.Value)
	assert.Equal(t, 1, q.Len())
}

func TestBefore(t *testing.T) {
	var q Queue[int]
	q.Push(time.Second, 2, 0)
	cases := []struct {
		name string
		at   time.Duration
		p    int
		want bool
	}{
		{"earlier time", time.Second - 1, 9, true},
		{"later time", time.Second + 1, 0, false},
		{"same time, lower priority value", time.Second, 1, true},
		{"same time and priority loses to the queued item", time.Second, 2, false},
		{"same time, higher priority value", time.Second, 3, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			assert.Equal(t, c.want, q.Before(c.at, c.p))
		})
	}
}

func TestSequencesGrow(t *testing.T) {
	var q Queue[int]
	a := q.Push(time.Second, 0, 1)
	b := q.Push(0, 0, 2)
	assert.Less(t, a, b)
}

// TestMatchesStableSort checks the heap against the specification: popping everything yields the
// pushed items stably sorted by (time, priority), whatever the interleaving of pushes and pops.
func TestMatchesStableSort(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		var q Queue[int]
		var pending []Item[int]
		var popped, want []Item[int]
		steps := rapid.IntRange(1, 200).Draw(t, "steps")
		for i := range steps {
			if q.Len() > 0 && rapid.Bool().Draw(t, "pop") {
				slices.SortStableFunc(pending, cmpItems)
				want = append(want, pending[0])
				pending = pending[1:]
				it, ok := q.Pop()
				require.True(t, ok)
				popped = append(popped, it)
				continue
			}
			at := time.Duration(rapid.IntRange(0, 10).Draw(t, "at"))
			p := rapid.IntRange(0, 3).Draw(t, "priority")
			seq := q.Push(at, p, i)
			pending = append(pending, Item[int]{At: at, Priority: p, Seq: seq, Value: i})
		}
		for q.Len() > 0 {
			slices.SortStableFunc(pending, cmpItems)
			want = append(want, pending[0])
			pending = pending[1:]
			it, _ := q.Pop()
			popped = append(popped, it)
		}
		require.Equal(t, want, popped)
	})
}

func cmpItems(a, b Item[int]) int {
	switch {
	case a.At != b.At:
		return int(a.At - b.At)
	case a.Priority != b.Priority:
		return a.Priority - b.Priority
	}
	return int(a.Seq) - int(b.Seq)
}

func BenchmarkPushPop(b *testing.B) {
	var q Queue[uint64]
	for i := range 64 {
		q.Push(time.Duration(i)*time.Millisecond, i%4, uint64(i))
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		it, _ := q.Pop()
		q.Push(it.At+time.Duration(i%97)*time.Millisecond, it.Priority, it.Value)
	}
}
