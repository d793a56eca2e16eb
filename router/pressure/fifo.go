package pressure

// fifo is a fixed-capacity ring of member indexes. Its capacity is the registered
// membership and the single-flight marker admits each member at most once, so it
// can never fill up: the queue cannot grow past the membership by construction.
type fifo struct {
	buf  []int
	head int
	n    int
}

func newFIFO(capacity int) fifo { return fifo{buf: make([]int, capacity)} }

// push appends i. The caller guarantees room (one entry per member at most); a
// push into a full ring would be a single-flight bug, so it panics loudly rather
// than dropping work silently.
func (q *fifo) push(i int) {
	if q.n == len(q.buf) {
		panic("pressure: refresh queue overflow (single-flight marker violated)")
	}
	q.buf[(q.head+q.n)%len(q.buf)] = i
	q.n++
}

func (q *fifo) pop() (int, bool) {
	if q.n == 0 {
		return 0, false
	}
	i := q.buf[q.head]
	q.head = (q.head + 1) % len(q.buf)
	q.n--
	return i, true
}

func (q *fifo) len() int { return q.n }

func (q *fifo) clear() { q.head, q.n = 0, 0 }
