package adapter

import (
	dto "github.com/prometheus/client_model/go"

	"github.com/anvil-llm/anvil/router/pressure"
)

// ReadTGI reads text-generation-inference's page, which names no model: it belongs to the one
// model the member serves, as the readiness check verified from /v1/models, and servedModel only
// has to be non-empty. Running is tgi_batch_current_size (requests in the batch being generated),
// waiting tgi_queue_size. TGI prints no KV-cache usage; the KV signal is the share of the KV token
// budget the current batch reserves, tgi_batch_current_max_tokens / tgi_batch_max_total_tokens:
// each request reserves its prompt plus max_new_tokens, so this is at least the tokens the batch
// really holds (an upper estimate). With prefix caching a shared prefix is reserved once per request
// that reuses it, so the reservation can exceed the budget: that reads as a full cache (1), not as
// a malformed page. It is missing before TGI 2.3.1 (no budget on the page) and until the first
// batch; a budget of 0 is malformed. TGI prints these series without labels: a labelled one makes
// its signal malformed (CountSignalAll, SingleValue).
func ReadTGI(families map[string]*dto.MetricFamily, _ string) pressure.Sample {
	return pressure.Sample{
		Running: CountSignalAll(families[tgiRunning]),
		Waiting: CountSignalAll(families[tgiWaiting]),
		KVUsage: ReservationFraction(SingleValue(families[tgiBatchTokens]), SingleValue(families[tgiTotalTokens])),
	}
}
