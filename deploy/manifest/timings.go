package manifest

import (
	"time"

	corev1 "k8s.io/api/core/v1"
)

// The margins the termination timings are derived with (Derive).
const (
	// BodyReadBound is the router's bound on reading an ordinary request's head and body (the main
	// listener's ReadTimeout, router/server's bodyReadTimeout; TestBodyReadBoundIsTheRouters pins it).
	// A request still reading its body at SIGTERM is admitted only after it, and then runs its
	// upstream.timeout: shutdown_grace covers both.
	BodyReadBound = time.Minute
	// StreamMargin follows upstream.timeout in shutdown_grace: a request admitted just before SIGTERM
	// runs at most upstream.timeout (one attempt, streaming included; a queued one is refused at once),
	// and then needs its answer, its lease release and its decision record.
	StreamMargin = 5 * time.Second
	// ReplicaMargin keeps the vLLM containers serving a moment past the router's last stream.
	ReplicaMargin = 5 * time.Second
	// ExitMargin follows the longest preStop sleep in the grace period: the containers' own SIGTERM
	// shutdown, the decision sink's flush and the trace flush after it (at most 3 s,
	// router/server.DefaultTraceFlushCap).
	ExitMargin = 15 * time.Second
	// MaxShutdownGrace is the most shutdown_grace the router accepts.
	MaxShutdownGrace = 10 * time.Minute
)

// Timings are a pod's termination timings, derived from the longest stream the router config allows.
type Timings struct {
	ShutdownGrace          time.Duration // the router's shutdown_grace: BodyReadBound + upstream.timeout + StreamMargin
	ReplicaPreStop         int64         // seconds: router preStop + shutdown_grace + ReplicaMargin
	TerminationGracePeriod int64         // seconds: ReplicaPreStop + ExitMargin
}

// Derive renders the timings for a router config's upstream.timeout and the router's preStop sleep
// (seconds); the shipped manifests hold exactly these values, and grace refuses less.
func Derive(upstreamTimeout time.Duration, routerPreStop int64) Timings {
	return deriveFrom(BodyReadBound+upstreamTimeout+StreamMargin, routerPreStop)
}

// deriveFrom is Derive for a given shutdown_grace.
func deriveFrom(shutdownGrace time.Duration, routerPreStop int64) Timings {
	grace := int64((shutdownGrace + time.Second - 1) / time.Second)
	replica := routerPreStop + grace + int64(ReplicaMargin/time.Second)
	return Timings{ShutdownGrace: shutdownGrace, ReplicaPreStop: replica,
		TerminationGracePeriod: replica + int64(ExitMargin/time.Second)}
}

// grace orders pod termination around the longest stream the config allows (Derive): the router's
// preStop sleep lets the Service and balancers stop sending while it still accepts; then SIGTERM gives
// in-flight requests shutdown_grace, which must cover a body still being read and then upstream.timeout; the vLLM replicas sleep through
// both so they serve until the router is done; and the kubelet's grace period outlasts all of it.
func (c *checker) grace() {
	if c.cfg == nil {
		return
	}
	tgps := int64(corev1.DefaultTerminationGracePeriodSeconds)
	if c.pod.TerminationGracePeriodSeconds != nil {
		tgps = *c.pod.TerminationGracePeriodSeconds
	}
	router, ok := preStopSleep(c.anvil)
	if !ok || router < 1 {
		c.bad(Grace, "the router has no preStop sleep: the Service would still send to it after it stops accepting")
		return
	}
	if d := Derive(c.cfg.timeout, router); c.cfg.grace < d.ShutdownGrace {
		if d.ShutdownGrace > MaxShutdownGrace {
			c.bad(Grace, "upstream.timeout %s allows streams no shutdown_grace can wait for (at most %s): lower it to %s or less", c.cfg.timeout, MaxShutdownGrace, MaxShutdownGrace-BodyReadBound-StreamMargin)
		} else {
			c.bad(Grace, "shutdown_grace %s cuts streams on every roll: a body may take %s to read and upstream.timeout %s allows a stream that long after it; want at least %s", c.cfg.grace, BodyReadBound, c.cfg.timeout, d.ShutdownGrace)
		}
	}
	// The sleeps and the grace period follow the configured shutdown_grace, whatever it is.
	d := deriveFrom(c.cfg.grace, router)
	longest := router
	for _, v := range c.vllms {
		s, ok := preStopSleep(v)
		if !ok || s < d.ReplicaPreStop {
			c.bad(Grace, "%s preStop sleep is %ds; want at least %ds (the router's preStop %ds + shutdown_grace + %s) so in-flight requests finish", v.Name, s, d.ReplicaPreStop, router, ReplicaMargin)
		}
		longest = max(longest, s)
	}
	if want := max(d.TerminationGracePeriod, longest+int64(ExitMargin/time.Second)); tgps < want {
		c.bad(Grace, "terminationGracePeriodSeconds %d; want at least %d (the longest preStop sleep, %ds, + %s for the containers' own shutdown)", tgps, want, longest, ExitMargin)
	}
}
