package server

import "sync/atomic"

// budget bounds the request-body bytes being read and parsed at once. It never queues: a request that
// does not fit is refused at once (503 and Retry-After), so a burst of large bodies costs a bounded
// amount of memory and waiting callers hold nothing. It is lock-free.
type budget struct {
	limit atomic.Int64 // a reload may move it: bodies in flight keep what they took
	used  atomic.Int64
}

func newBudget(limit int64) *budget {
	b := &budget{}
	b.limit.Store(limit)
	return b
}

// setLimit moves the bound. Bytes already taken stay taken; a lowered bound refuses new bodies until
// the ones in flight are under it.
func (b *budget) setLimit(limit int64) { b.limit.Store(limit) }

// take reserves n bytes, or reports false when they do not fit.
func (b *budget) take(n int64) bool {
	for {
		used := b.used.Load()
		if used+n > b.limit.Load() {
			return false
		}
		if b.used.CompareAndSwap(used, used+n) {
			return true
		}
	}
}

// give returns n bytes taken earlier.
func (b *budget) give(n int64) { b.used.Add(-n) }

// inUse reports the bytes reserved now, for tests and operator surfaces.
func (b *budget) inUse() int64 { return b.used.Load() }
