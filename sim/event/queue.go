// Package event is the simulator's pure event queue: a binary min-heap of items ordered by
// (time, priority, sequence).
//
// Tie rules, which make every simulation deterministic:
//
//  1. An earlier time comes first.
//  2. At equal times, the lower priority value comes first. The simulator uses priorities to say
//     what happens "first" within one instant: for example an engine step that frees a lease at t
//     is processed before an arrival at t, so the arrival sees the freed capacity.
//  3. At equal time and priority, the item pushed first comes first (FIFO): the queue stamps each
//     Push with a sequence number that only grows.
//
// Times are virtual offsets from the simulation's epoch (time.Duration), never wall-clock readings.
// The package imports the standard library only, reads no clock, starts no goroutines and does no
// I/O. A Queue is not safe for concurrent use.
package event

import "time"

// Item is one queued event.
type Item[T any] struct {
	At       time.Duration // virtual time since the epoch
	Priority int           // lower runs first within one instant
	Seq      uint64        // push order, stamped by Push
	Value    T
}

// before is the strict (time, priority, sequence) order.
func (a *Item[T]) before(b *Item[T]) bool {
	if a.At != b.At {
		return a.At < b.At
	}
	if a.Priority != b.Priority {
		return a.Priority < b.Priority
	}
	return a.Seq < b.Seq
}

// Queue is a min-heap of items. The zero value is an empty queue ready to use.
type Queue[T any] struct {
	items []Item[T]
	seq   uint64
}

// Len returns the number of queued items.
func (q *Queue[T]) Len() int { return len(q.items) }

// Push queues v at time at with priority p and returns the sequence number it was given.
func (q *Queue[T]) Push(at time.Duration, p int, v T) uint64 {
	q.seq++
	q.items = append(q.items, Item[T]{At: at, Priority: p, Seq: q.seq, Value: v})
	q.up(len(q.items) - 1)
	return q.seq
}

// Peek returns the first item without removing it; false when the queue is empty.
func (q *Queue[T]) Peek() (Item[T], bool) {
	if len(q.items) == 0 {
		return Item[T]{}, false
	}
	return q.items[0], true
}

// Pop removes and returns the first item; false when the queue is empty.
func (q *Queue[T]) Pop() (Item[T], bool) {
	n := len(q.items)
	if n == 0 {
		return Item[T]{}, false
	}
	first := q.items[0]
	last := n - 1
	q.items[0] = q.items[last]
	var zero Item[T]
	q.items[last] = zero // drop references held by the value
	q.items = q.items[:last]
	if last > 0 {
		q.down(0)
	}
	return first, true
}

// Before reports whether an item at (at, p) pushed now would run before the queue's first item.
// A new item gets a larger sequence than everything queued, so at an equal time and priority it
// runs after; an empty queue has nothing to run first.
func (q *Queue[T]) Before(at time.Duration, p int) bool {
	if len(q.items) == 0 {
		return true
	}
	h := &q.items[0]
	if at != h.At {
		return at < h.At
	}
	return p < h.Priority
}

func (q *Queue[T]) up(i int) {
	for i > 0 {
		parent := (i - 1) / 2
		if !q.items[i].before(&q.items[parent]) {
			return
		}
		q.items[i], q.items[parent] = q.items[parent], q.items[i]
		i = parent
	}
}

func (q *Queue[T]) down(i int) {
	n := len(q.items)
	for {
		l := 2*i + 1
		if l >= n {
			return
		}
		small := l
		if r := l + 1; r < n && q.items[r].before(&q.items[l]) {
			small = r
		}
		if !q.items[small].before(&q.items[i]) {
			return
		}
		q.items[i], q.items[small] = q.items[small], q.items[i]
		i = small
	}
}
