package server

import "sync/atomic"

// budget bounds the request-body bytes being read and parsed at once, in total and per caller. It
// never queues: a request that does not fit is refused at once (503 and Retry-After), so a burst of
// large bodies costs a bounded amount of memory and waiting callers hold nothing. It is lock-free.
//
// The per-caller share is what keeps one caller from starving the others (issue 26): a caller's
// bodies together never hold more than the share, so the rest of the budget stays open to everyone
// else however many slow bodies that caller keeps open.
//
// The same type bounds the disk of held audio files (limits.max_spill_bytes, spill.go), counting a
// caller's part in its holder's spilled instead of used.
type budget struct {
	limit atomic.Int64 // a reload may move it: bodies in flight keep what they took
	share atomic.Int64 // the most one caller may hold; 0: no per-caller bound
	used  atomic.Int64
	count func(*holder) *atomic.Int64 // the holder's counter of this budget
}

// holder is one caller's part of the budget. It outlives generations (the generation that built it
// hands it to the next while the caller's token stays configured), so a reload never forgets what a
// caller's bodies in flight hold.
type holder struct {
	used    atomic.Int64
	spilled atomic.Int64 // disk of the caller's held audio files (the spill budget)
}

// A refusal of take.
type budgetRefusal uint8

const (
	budgetOK          budgetRefusal = iota
	budgetCallerShare               // the caller's bodies already hold its share
	budgetExhausted                 // the whole budget is held
)

func newBudget(limit int64) *budget {
	b := &budget{count: func(h *holder) *atomic.Int64 { return &h.used }}
	b.limit.Store(limit)
	return b
}

// newSpillBudget is the budget of held audio files on disk.
func newSpillBudget(limit int64) *budget {
	b := &budget{count: func(h *holder) *atomic.Int64 { return &h.spilled }}
	b.limit.Store(limit)
	return b
}

// setLimits moves the bounds. Bytes already taken stay taken; a lowered bound refuses new bodies
// until the ones in flight are under it.
func (b *budget) setLimits(limit, share int64) {
	b.limit.Store(limit)
	b.share.Store(share)
}

// callerShare is the most one caller may hold under limit: percent of it, but never less than one
// largest body (maxBody), which must always be readable; 0 when the share is off (percent 0) or
// there is nobody to share with (fewer than two callers).
func callerShare(limit, percent, maxBody int64, callers int) int64 {
	if percent == 0 || callers < 2 {
		return 0
	}
	return min(limit, max(limit*percent/100, maxBody))
}

// take reserves n bytes for h: first within h's share, then within the whole budget. A refusal
// reserves nothing.
func (b *budget) take(h *holder, n int64) budgetRefusal {
	held := b.count(h)
	if share := b.share.Load(); share > 0 {
		if !reserve(held, n, share) {
			return budgetCallerShare
		}
	} else {
		held.Add(n) // counted still, for the metrics and for a share switched on later
	}
	if !reserve(&b.used, n, b.limit.Load()) {
		held.Add(-n)
		return budgetExhausted
	}
	return budgetOK
}

// reserve adds n to used when the sum stays within limit.
func reserve(used *atomic.Int64, n, limit int64) bool {
	for {
		u := used.Load()
		if u+n > limit {
			return false
		}
		if used.CompareAndSwap(u, u+n) {
			return true
		}
	}
}

// give returns n bytes h took earlier.
func (b *budget) give(h *holder, n int64) {
	b.count(h).Add(-n)
	b.used.Add(-n)
}

// inUse reports the bytes reserved now, for tests and operator surfaces.
func (b *budget) inUse() int64 { return b.used.Load() }

// held reports the bytes h's bodies hold now.
func (h *holder) held() int64 { return h.used.Load() }
