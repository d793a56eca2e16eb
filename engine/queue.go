package engine

// deque is the waiting queue: a growable ring of slot indexes. New requests
// join at the back; preempted ones return to the front, as in vLLM.
type deque struct {
	buf  []int32
	head int
	n    int
}

func (q *deque) len() int { return q.n }

func (q *deque) at(i int) int32 { return q.buf[(q.head+i)%len(q.buf)] }

func (q *deque) front() int32 { return q.buf[q.head] }

func (q *deque) grow() {
	if q.n < len(q.buf) {
		return
	}
	nb := make([]int32, max(16, 2*len(q.buf)))
	for i := 0; i < q.n; i++ {
		nb[i] = q.at(i)
	}
	q.buf, q.head = nb, 0
}

func (q *deque) pushBack(v int32) {
	q.grow()
	q.buf[(q.head+q.n)%len(q.buf)] = v
	q.n++
}

func (q *deque) pushFront(v int32) {
	q.grow()
	q.head = (q.head - 1 + len(q.buf)) % len(q.buf)
	q.buf[q.head] = v
	q.n++
}

func (q *deque) popFront() int32 {
	v := q.buf[q.head]
	q.head = (q.head + 1) % len(q.buf)
	q.n--
	return v
}

// remove deletes v, keeping the order of the others. It reports whether v
// was queued. Linear, but only aborts of waiting requests call it.
func (q *deque) remove(v int32) bool {
	for i := 0; i < q.n; i++ {
		if q.at(i) != v {
			continue
		}
		for j := i; j < q.n-1; j++ {
			q.buf[(q.head+j)%len(q.buf)] = q.at(j + 1)
		}
		q.n--
		return true
	}
	return false
}

// splitmix is SplitMix64: a tiny, seeded, deterministic generator, so the
// engine needs no global or shared random source.
type splitmix struct{ s uint64 }

func (r *splitmix) next() uint64 {
	r.s += 0x9e3779b97f4a7c15
	z := r.s
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// float returns a uniform value in [0, 1).
func (r *splitmix) float() float64 { return float64(r.next()>>11) / (1 << 53) }
