package report

import (
	"github.com/anvil-llm/anvil/scenarios"
	"github.com/anvil-llm/anvil/sim"
)

// AdmissionQueue is what the tier's admission queue did in a run; the report has it only when the
// scenario's tier has a queue.
type AdmissionQueue struct {
	MaxWaiting int       `json:"max_waiting"`
	TimeoutS   float64   `json:"timeout_s"`
	Enqueued   uint64    `json:"enqueued"`
	Admitted   uint64    `json:"admitted"` // of the enqueued, those that got a lease
	Timeouts   uint64    `json:"timeouts"`
	Full       uint64    `json:"full"` // refused at once: the queue was full
	Peak       int       `json:"peak"`
	Wait       Quantiles `json:"wait_s"` // time queued, over every request that queued
}

func admissionQueue(sc *scenarios.Scenario, res *sim.Result) *AdmissionQueue {
	q := sc.Tier.Queue
	if q == nil {
		return nil
	}
	out := &AdmissionQueue{MaxWaiting: int(q.MaxWaiting), TimeoutS: q.Timeout.Seconds(),
		Enqueued: res.Queue.Enqueued, Timeouts: res.Queue.Timeouts, Full: res.Queue.Full, Peak: res.Queue.Peak}
	var waits sample
	for i := range res.Requests {
		r := &res.Requests[i]
		if r.Queued > 0 {
			waits.add(r.Queued.Seconds())
			if r.Outcome.Admitted() {
				out.Admitted++
			}
		}
	}
	out.Wait = waits.quantiles()
	return out
}

func queueMetrics(m *metricSet, q *AdmissionQueue) {
	if q == nil {
		return
	}
	m.add("admission_queue.enqueued", float64(q.Enqueued))
	m.add("admission_queue.admitted", float64(q.Admitted))
	m.add("admission_queue.timeouts", float64(q.Timeouts))
	m.add("admission_queue.full", float64(q.Full))
	m.add("admission_queue.peak", float64(q.Peak))
	m.add("admission_queue.timeout_s", q.TimeoutS)
	m.quantiles("admission_queue.wait", q.Wait)
}
