package server

import (
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestBudget(t *testing.T) {
	b := newBudget(10)
	assert.True(t, b.take(0))
	assert.True(t, b.take(10))
	assert.False(t, b.take(1), "full")
	b.give(4)
	assert.False(t, b.take(5))
	assert.True(t, b.take(4))
	b.give(10)
	assert.Zero(t, b.inUse())
}

// TestBudgetNeverOverCommits: concurrent takers never hold more than the limit together.
func TestBudgetNeverOverCommits(t *testing.T) {
	b := newBudget(100)
	var wg sync.WaitGroup
	var mu sync.Mutex
	peak := int64(0)
	for g := range 8 {
		wg.Go(func() {
			for i := range 2000 {
				n := int64((g*31+i)%40 + 1)
				if !b.take(n) {
					continue
				}
				mu.Lock()
				peak = max(peak, b.inUse())
				mu.Unlock()
				b.give(n)
			}
		})
	}
	wg.Wait()
	assert.LessOrEqual(t, peak, int64(100))
	assert.Zero(t, b.inUse())
}
