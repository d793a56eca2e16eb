package engine

import "time"

// stepAcc accumulates the composition of the step in flight.
type stepAcc struct {
	start, end    int64
	seqs, tokens  int
	prefillTokens int
	decodeSeqs    int
	contextTokens int
	preempted     int
}

func (a stepAcc) view(e *Engine) StepStats {
	if a.seqs == 0 {
		return StepStats{}
	}
	return StepStats{
		Start: e.at(a.start), End: e.at(a.end), Seqs: a.seqs, Tokens: a.tokens,
		PrefillTokens: a.prefillTokens, DecodeSeqs: a.decodeSeqs,
		ContextTokens: a.contextTokens, Preempted: a.preempted,
	}
}

// startStep composes a step at the clock, as vLLM V1's scheduler does:
// running requests first, oldest first, each taking what it still needs (one
// token for a decode, the rest of its prefill otherwise) within the token
// budget; a request whose KV blocks cannot grow preempts the newest running
// request, possibly itself. Only when nothing was preempted are waiting
// requests admitted, in order, while slots, budget and blocks allow. With
// nothing to schedule the engine goes idle.
func (e *Engine) startStep(dst []Event) []Event {
	acc := stepAcc{start: e.now}
	budget := e.p.MaxNumBatchedTokens
	i := 0
	for ; i < len(e.running) && budget > 0; i++ {
		idx := e.running[i]
		s := &e.slots[idx]
		if c := s.computed; s.generated > 0 && c == s.prompt+s.generated-1 && c < s.capTokens {
			// The common case, kept inline: a decode whose KV block has room.
			s.sched = 1
			acc.seqs++
			acc.tokens++
			acc.decodeSeqs++
			acc.contextTokens += int(c) + 1
			budget--
			continue
		}
		n := min(int(s.prompt+s.generated-s.computed), budget)
		for !e.fits(s, n) {
			victim := e.running[len(e.running)-1]
			e.running = e.running[:len(e.running)-1]
			dst = e.preempt(victim, dst)
			acc.preempted++
			if victim == idx {
				break
			}
		}
		if s.state != stateRunning {
			break // it preempted itself
		}
		e.schedule(s, n, &acc)
		budget -= n
	}
	for acc.preempted == 0 && budget > 0 && e.waiting.len() > 0 && len(e.running) < e.p.MaxNumSeqs {
		idx := e.waiting.front()
		s := &e.slots[idx]
		n := min(int(s.prompt+s.generated-s.computed), budget)
		if !e.fits(s, n) {
			break
		}
		e.waiting.popFront()
		s.state = stateRunning
		if s.firstSched < 0 {
			s.firstSched = e.now
		}
		e.running = append(e.running, idx)
		e.schedule(s, n, &acc)
		budget -= n
		i++
	}
	e.batchLen = i
	if acc.seqs == 0 {
		return dst
	}
	acc.end = e.now + e.stepTime(&acc)
	e.last = acc
	e.steps++
	e.inFlight, e.stepStart, e.stepEnd = true, acc.start, acc.end
	return dst
}

// fits reports whether s can hold n more tokens, allocating new blocks from
// the free pool if needed.
func (e *Engine) fits(s *slot, n int) bool {
	tokens := int(s.computed) + n
	if tokens <= int(s.capTokens) {
		return true
	}
	need := (tokens+e.p.BlockSize-1)/e.p.BlockSize - int(s.blocks)
	return need <= e.usable-e.used-e.reserved
}

func (e *Engine) schedule(s *slot, n int, acc *stepAcc) {
	tokens := int(s.computed) + n
	if tokens > int(s.capTokens) {
		blocks := (tokens + e.p.BlockSize - 1) / e.p.BlockSize
		e.used += blocks - int(s.blocks)
		s.blocks = int32(blocks)
		s.capTokens = int32(blocks * e.p.BlockSize)
	}
	s.sched = int32(n)
	acc.seqs++
	acc.tokens += n
	acc.contextTokens += tokens
	if n == 1 && s.generated > 0 && s.computed == s.prompt+s.generated-1 {
		acc.decodeSeqs++
	} else {
		acc.prefillTokens += n
	}
}

// preempt frees a running request's blocks and puts it at the front of the
// waiting queue. Like vLLM V1 (recompute), it loses its computed tokens and
// will prefill prompt plus output again.
func (e *Engine) preempt(idx int32, dst []Event) []Event {
	s := &e.slots[idx]
	e.used -= int(s.blocks)
	s.blocks, s.capTokens, s.computed, s.sched = 0, 0, 0, 0
	s.state = stateWaiting
	e.waiting.pushFront(idx)
	e.preemptions++
	return append(dst, Event{Kind: EventPreempt, ID: s.id, At: e.at(e.now), Generated: int(s.generated)})
}

// stepTime is β0 + β1·prefill + β2·decodes + β3·context, then scaled and
// jittered. The profile limits keep the integer products inside int64.
func (e *Engine) stepTime(acc *stepAcc) int64 {
	d := int64(e.p.StepBase) +
		int64(e.p.PrefillPerToken)*int64(acc.prefillTokens) +
		int64(e.p.DecodePerSeq)*int64(acc.decodeSeqs) +
		int64(e.p.ContextPerToken)*int64(acc.contextTokens)
	f := e.scale
	if e.p.Jitter > 0 {
		f *= 1 + e.p.Jitter*(2*e.rng.float()-1)
	}
	if f != 1 {
		d = int64(float64(d)*f + 0.5)
	}
	return min(max(d, 1), maxStep)
}

// endStep applies the step in flight at its end (the clock): every
// scheduled request that completed its context emits one token; finished
// requests leave.
func (e *Engine) endStep(dst []Event) []Event {
	end := e.now
	at := e.at(end)
	var backToBack uint64 // tokens whose previous token ended the previous step
	var emitted uint64
	finished := false
	for _, idx := range e.running[:e.batchLen] {
		s := &e.slots[idx]
		s.computed += s.sched
		s.sched = 0
		if s.computed < s.prompt+s.generated {
			continue // a prefill chunk that did not reach the end of the context
		}
		s.generated++
		emitted++
		switch {
		case s.generated == 1:
			e.promptTokens += uint64(s.prompt)
			e.ttft.observe(time.Duration(end-s.arrival), 1)
			dst = append(dst, Event{Kind: EventFirstToken, ID: s.id, At: at, Generated: 1})
		case s.lastToken == e.stepStart:
			backToBack++
			if s.tokenEvents {
				dst = append(dst, Event{Kind: EventToken, ID: s.id, At: at, Generated: int(s.generated)})
			}
		default:
			e.itl.observe(time.Duration(end-s.lastToken), 1)
			if s.tokenEvents {
				dst = append(dst, Event{Kind: EventToken, ID: s.id, At: at, Generated: int(s.generated)})
			}
		}
		s.lastToken = end
		if s.generated == s.maxTokens || s.generated == s.stopAfter {
			dst = e.finish(idx, finishReason(s), dst)
			finished = true
		}
	}
	e.genTokens += emitted
	// Requests decoding in consecutive steps share one inter-token latency:
	// the step duration. Recording them at once keeps the cost per step flat.
	e.itl.observe(time.Duration(end-e.stepStart), backToBack)
	e.batchLen = 0
	if finished {
		e.compactRunning()
	}
	return dst
}

// finishReason applies vLLM's check_stop order: length before stop.
func finishReason(s *slot) FinishReason {
	if s.generated >= s.maxTokens {
		return FinishLength
	}
	return FinishStop
}

// finish releases a request's blocks and slot and records its metrics. The
// caller removes it from the running set or the waiting queue.
func (e *Engine) finish(idx int32, r FinishReason, dst []Event) []Event {
	s := &e.slots[idx]
	e.used -= int(s.blocks)
	e.success.add(r)
	e.e2e.observe(time.Duration(e.now-s.arrival), 1)
	queued := e.now - s.arrival
	if s.firstSched >= 0 {
		queued = s.firstSched - s.arrival
	}
	e.queue.observe(time.Duration(queued), 1)
	dst = append(dst, Event{Kind: EventFinish, ID: s.id, At: e.at(e.now), Generated: int(s.generated), Reason: r})
	delete(e.ids, s.id)
	*s = slot{}
	e.free = append(e.free, idx)
	return dst
}

// compactRunning drops freed slots, keeping admission order.
func (e *Engine) compactRunning() {
	kept := e.running[:0]
	for _, idx := range e.running {
		if e.slots[idx].state == stateRunning {
			kept = append(kept, idx)
		}
	}
	e.running = kept
}
