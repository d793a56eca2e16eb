package sim

import (
	"time"

	"github.com/anvil-llm/anvil/router/decisionlog"
)

// Timer kinds: the relay's two upstream timers, both started at dispatch.
const (
	timerFirstByte = iota // upstream.first_byte_timeout: until the first response body byte
	timerOverall          // upstream.timeout: the whole attempt
	numTimers
)

// deadlines are the pending timers of one kind. Every request gets the same duration and requests
// are dispatched in time order, so deadlines arrive sorted: a FIFO replaces one heap event per
// request. At most one event per kind is queued, for the earliest deadline still able to fire;
// requests that ended (or, for the first-byte timer, got their first byte) are dropped from the
// front without an event, so a timer that never fires costs an append.
type deadlines struct {
	after time.Duration // the configured timeout
	ids   []int32
	at    []time.Duration
	head  int
	armed bool // an evTimeout for this kind is queued
}

// startTimers arms both upstream timers for a request just dispatched to its member.
func (w *world) startTimers(id int) {
	for k := range w.timers {
		d := &w.timers[k]
		d.ids, d.at = append(d.ids, int32(id)), append(d.at, w.now+d.after)
		if !d.armed {
			w.armTimer(k)
		}
	}
}

// armTimer drops the front entries that can no longer fire and queues one event for the next.
func (w *world) armTimer(k int) {
	d := &w.timers[k]
	for d.head < len(d.ids) && !w.timerLive(k, int(d.ids[d.head])) {
		d.head++
	}
	d.compact()
	if d.head == len(d.ids) {
		d.armed = false
		return
	}
	d.armed = true
	w.push(d.at[d.head], prioRequest, ev{kind: evTimeout, a: int32(k)})
}

// timerLive reports whether timer k of request id could still end it.
func (w *world) timerLive(k, id int) bool {
	if !w.reqs[id].active {
		return false
	}
	r := &w.res.Requests[id]
	return k != timerFirstByte || !(r.Stream && r.FirstToken >= 0)
}

// fireTimers ends every request whose timer k expired by now, as the relay's timer would cancel
// the upstream call, then re-arms for the next deadline.
func (w *world) fireTimers(k int) {
	d := &w.timers[k]
	for d.head < len(d.ids) && d.at[d.head] <= w.now {
		id := int(d.ids[d.head])
		d.head++
		if w.timerLive(k, id) {
			end := decisionlog.EndTimeout
			if k == timerFirstByte {
				end = decisionlog.EndFirstByteTimeout
			}
			r := &w.res.Requests[id]
			outcome, status := Classify(end, r.Stream, r.FirstToken >= 0, 0)
			w.abort(id, outcome, status)
		}
	}
	w.armTimer(k)
}

// compact reclaims the consumed front once it is most of the slices.
func (d *deadlines) compact() {
	if d.head < 4096 || d.head < len(d.ids)/2 {
		return
	}
	n := copy(d.ids, d.ids[d.head:])
	copy(d.at, d.at[d.head:])
	d.ids, d.at, d.head = d.ids[:n], d.at[:n], 0
}
