package policy

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"
)

// Names of the placement policies a comparison can run. Capacity and RoundRobin are the router's
// own strategies (the production walk, unchanged); the others are this package's references.
const (
	Capacity         = "capacity"
	RoundRobin       = "round_robin"
	LeastConnections = "least_connections"
	Random           = "random"
	PowerOfTwo       = "power_of_two"
	QueueKV          = "queue_kv"
	Oracle           = "oracle"
)

// All is every policy, in report order: capacity first (the ratios' base), the oracle last.
func All() []string {
	return []string{Capacity, RoundRobin, LeastConnections, Random, PowerOfTwo, QueueKV, Oracle}
}

// Reference reports whether name is one of this package's reference policies (not a router strategy).
func Reference(name string) bool {
	switch name {
	case LeastConnections, Random, PowerOfTwo, QueueKV, Oracle:
		return true
	}
	return false
}

// Parse's refusals. Neither error carries the input: an unknown name is refused with the list of
// the known ones, a repeated one is named (it is a known name).
var (
	ErrUnknown  = errors.New("policy: unknown policy")
	ErrRepeated = errors.New("policy: listed twice")
)

// Parse reads a comma-separated policy list; "all" is All(). Names may not repeat. The order is
// kept, except that capacity always comes first: every ratio is to it.
func Parse(list string) ([]string, error) {
	if strings.TrimSpace(list) == "all" {
		return All(), nil
	}
	var out []string
	for _, n := range strings.Split(list, ",") {
		n = strings.TrimSpace(n)
		if !slices.Contains(All(), n) {
			return nil, fmt.Errorf("%w (want one of %s, or all)", ErrUnknown, strings.Join(All(), ", "))
		}
		if slices.Contains(out, n) {
			return nil, fmt.Errorf("%w: %s", ErrRepeated, n)
		}
		out = append(out, n)
	}
	if i := slices.Index(out, Capacity); i != 0 {
		if i > 0 {
			out = slices.Delete(out, i, i+1)
		}
		out = append([]string{Capacity}, out...)
	}
	return out, nil
}

// Never is the oracle's completion for a member where the request would not complete (the member
// would fail it, or the forward run reached its bound).
const Never = time.Duration(math.MaxInt64)

// Load is one engine sample as a policy's own telemetry saw it: vLLM's num_requests_running,
// num_requests_waiting and kv_cache_usage_perc.
type Load struct {
	Known            bool          // a sample exists
	Age              time.Duration // since the sample was taken
	Running, Waiting int64
	KV               float64 // 0..1
}

// Member is one configured member as a policy sees it at one arrival.
type Member struct {
	ID       string
	Eligible bool  // admission's own rule (see the package comment)
	Active   int64 // router-local leases: the requests this router has in flight there
	Ceiling  int64 // the member's max_concurrency
	Load     Load  // the policy's own last sample of the engine (PowerOfTwo, QueueKV)
	// Completion is the oracle's input: when this request would complete if placed here now, by a
	// forward run of a copy of the member's true engine state (Never: it would not).
	Completion time.Duration
}

// eligible returns the indices of the eligible members.
func eligible(ms []Member) []int {
	var out []int
	for i := range ms {
		if ms[i].Eligible {
			out = append(out, i)
		}
	}
	return out
}
