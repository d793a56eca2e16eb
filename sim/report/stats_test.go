package report

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/anvil-llm/anvil/engine"
)

func TestQuantiles(t *testing.T) {
	var s sample
	for i := 100; i >= 1; i-- {
		s.add(float64(i))
	}
	q := s.quantiles()
	assert.Equal(t, 100, q.N)
	assert.Equal(t, 50.5, q.Mean)
	assert.Equal(t, 50.0, q.P50)
	assert.Equal(t, 90.0, q.P90)
	assert.Equal(t, 99.0, q.P99)
	assert.Equal(t, 100.0, q.P999)
	assert.Equal(t, Quantiles{}, (&sample{}).quantiles())
}

func TestWeightedQuantiles(t *testing.T) {
	var s sample
	s.addWeighted(10, 1)
	s.addWeighted(1, 9) // nine gaps of 1, one of 10
	q := s.quantiles()
	assert.Equal(t, 1.0, q.P50)
	assert.Equal(t, 1.0, q.P90)
	assert.Equal(t, 10.0, q.P99)
	assert.InDelta(t, 1.9, q.Mean, 1e-12)
}

func TestJain(t *testing.T) {
	assert.Equal(t, 1.0, jain([]float64{3, 3, 3}))
	assert.InDelta(t, 1.0/3, jain([]float64{9, 0, 0}), 1e-12)
	assert.Equal(t, 0.0, jain([]float64{0, 0}))
	assert.Equal(t, 0.0, jain(nil))
}

func TestQueueTimeIsTheExactMeanOnly(t *testing.T) {
	h := engine.Histogram{N: 3, Count: 11, Sum: 11 * time.Second}
	h.UpperBounds[0], h.UpperBounds[1], h.UpperBounds[2] = 0.3, 1, 10
	h.Cumulative[0], h.Cumulative[1], h.Cumulative[2] = 5, 10, 10
	assert.Equal(t, QueueTime{N: 11, Mean: 1}, queueTime(h), "sum over count; no bucket bound posing as a quantile")
	assert.Equal(t, QueueTime{}, queueTime(engine.Histogram{}))
}

func TestMergeHist(t *testing.T) {
	a := engine.Histogram{}
	b := engine.Histogram{N: 1, Count: 2, Sum: time.Second}
	b.Cumulative[0] = 2
	mergeHist(&a, b)
	mergeHist(&a, b)
	assert.Equal(t, uint64(4), a.Count)
	assert.Equal(t, uint64(4), a.Cumulative[0])
	assert.Equal(t, 2*time.Second, a.Sum)
}
