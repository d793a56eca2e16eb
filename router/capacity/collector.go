package capacity

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/anvil-llm/anvil/router/admission"
	"github.com/anvil-llm/anvil/router/decisionlog"
	"github.com/anvil-llm/anvil/router/health"
	"github.com/anvil-llm/anvil/router/ident"
	"github.com/anvil-llm/anvil/router/readiness"
	"github.com/anvil-llm/anvil/router/scheduler"
)

// AdmissionReader returns one snapshot per tier (admission.Set).
type AdmissionReader interface {
	Snapshots() []admission.Snapshot
}

// ReadinessReader returns a tier's latest completed readiness verdicts (readiness.State).
type ReadinessReader interface {
	Verdicts(tier string) []readiness.MemberVerdict
}

// StatsReader returns the decision log's counters (decisionlog.Log).
type StatsReader interface {
	Stats() decisionlog.Stats
}

// SampleAgeReader returns the age of each capacity member's published pressure sample, read without
// scheduling anything (scrape.Cache.SampleAges); members never sampled are absent.
type SampleAgeReader interface {
	SampleAges(tier string) (map[string]time.Duration, error)
}

// Sources are the runtime owners the views read. A nil source contributes nothing (a nil Pressure
// makes every capacity member's telemetry unknown; a nil Health shows no passive health; nil
// SampleAges emits no sample age).
type Sources struct {
	Admission  AdmissionReader
	Pressure   PressureReader
	SampleAges SampleAgeReader
	Health     HealthReader
	Readiness  ReadinessReader
	Decisions  StatsReader
}

// Collector is a prometheus.Collector that reads Sources at scrape time: the same validated
// projection as the capacity JSON (Build), member readiness and the decision log's counters. It keeps
// no state between scrapes, so every scrape shows the current moment, and a scrape never schedules,
// reserves, releases or reranks anything. Register it on the router's own registry.
type Collector struct {
	plan []TierSpec
	src  Sources
	view func() ([]TierSpec, Sources) // NewLiveCollector: plan and src are read from it per scrape
	d    descs
}

// descs are the collector's metric families.
type descs struct {
	// The spec's capacity gauges (capacity tiers only).
	tierActive, tierCeiling, memberActive, memberCeiling, pressurePPM, freshness *prometheus.Desc
	// The age of each capacity member's pressure sample, beside its freshness class.
	sampleAge *prometheus.Desc
	// The admission gauges of direct and round-robin tiers.
	plainTierActive, plainTierCeiling, plainMemberActive, plainMemberCeiling *prometheus.Desc
	// The admission gauges of every tier, one family per concept with a strategy label (families.go).
	tierActive2, tierCeiling2, memberActive2, memberCeiling2 *prometheus.Desc
	// pressureRatio is pressurePPM in base units (0-1); tierInfo is 1 for every configured tier.
	pressureRatio, tierInfo *prometheus.Desc
	readiness               *prometheus.Desc
	// The admission queue of tiers that have one, and passive health of replica members.
	queueWaiting, queueMax, queueFull, passiveHealth, ejections         *prometheus.Desc
	records, evidenceDiscarded, linesWritten, linesDropped, writeErrors *prometheus.Desc
}

func newDescs() descs {
	tier, member := []string{"tier"}, []string{"tier", "member"}
	g := func(name, help string, labels []string) *prometheus.Desc {
		return prometheus.NewDesc(name, help, labels, nil)
	}
	d := descs{
		tierActive:    g("anvil_router_replica_tier_active_requests", "Active leases of a capacity-scheduled replica tier (the sum of its members').", tier),
		tierCeiling:   g("anvil_router_replica_tier_max_concurrency", "Effective aggregate ceiling of a capacity-scheduled replica tier.", tier),
		memberActive:  g("anvil_router_replica_member_active_requests", "Active leases of a member of a capacity-scheduled replica tier.", member),
		memberCeiling: g("anvil_router_replica_member_max_concurrency", "Configured ceiling of a member of a capacity-scheduled replica tier.", member),
		pressurePPM:   g("anvil_router_replica_member_pressure_ppm", "Normalized upstream pressure of a member in parts per million; present only while its telemetry is fresh.", member),
		freshness: g("anvil_router_replica_member_pressure_freshness", "Freshness class of a member's cached upstream pressure: 1 for the current class, 0 for the others.",
			[]string{"tier", "member", "freshness"}),
		sampleAge: g("anvil_router_replica_member_pressure_sample_age_seconds", "Age of a capacity member's last published pressure sample (successful or failed), counted from its scrape's start; absent before the first.",
			member),
		plainTierActive:    g("anvil_router_tier_active_requests", "Active leases of a direct or round-robin tier.", tier),
		plainTierCeiling:   g("anvil_router_tier_max_concurrency", "Configured ceiling of a direct or round-robin tier; absent when it has none.", tier),
		plainMemberActive:  g("anvil_router_member_active_requests", "Active leases of a member of a round-robin tier.", member),
		plainMemberCeiling: g("anvil_router_member_max_concurrency", "Configured ceiling of a member of a round-robin tier; absent when it has none.", member),
		readiness: g("anvil_router_member_readiness", "Latest completed readiness verdict of a replica member: 1 for the current verdict, 0 for the others.",
			[]string{"tier", "member", "state"}),
		queueWaiting:      g("anvil_router_admission_queue_waiting", "Requests waiting in a tier's admission queue.", tier),
		queueMax:          g("anvil_router_admission_queue_max_waiting", "The bound of a tier's admission queue (queue.max_waiting).", tier),
		queueFull:         g("anvil_router_admission_queue_full_total", "Requests refused because the tier's admission queue was full.", tier),
		passiveHealth:     g("anvil_router_member_passive_health", "Passive-health state of a replica member: 1 for the current state, 0 for the others.", []string{"tier", "member", "state"}),
		ejections:         g("anvil_router_member_passive_health_ejections_total", "Passive-health ejections of a replica member since start.", member),
		records:           g("anvil_router_decision_log_records_total", "Decision records stored in the ring, or rejected for breaking a record invariant.", []string{"result"}),
		evidenceDiscarded: g("anvil_router_decision_log_evidence_discarded_total", "Malformed or misplaced scheduler evidence dropped from otherwise valid records.", nil),
		linesWritten:      g("anvil_router_decision_log_lines_written_total", "Decision lines written in full to the JSONL sink.", nil),
		linesDropped:      g("anvil_router_decision_log_lines_dropped_total", "Decision lines not written to the JSONL sink, by reason.", []string{"reason"}),
		writeErrors:       g("anvil_router_decision_log_write_errors_total", "Failed or short JSONL sink writes and failed flushes.", nil),
	}
	unifiedDescs(&d)
	return d
}

func (d descs) all() []*prometheus.Desc {
	return []*prometheus.Desc{d.tierActive, d.tierCeiling, d.memberActive, d.memberCeiling, d.pressurePPM,
		d.freshness, d.sampleAge, d.plainTierActive, d.plainTierCeiling, d.plainMemberActive, d.plainMemberCeiling,
		d.tierActive2, d.tierCeiling2, d.memberActive2, d.memberCeiling2, d.pressureRatio, d.tierInfo,
		d.readiness, d.queueWaiting, d.queueMax, d.queueFull, d.passiveHealth, d.ejections, d.records, d.evidenceDiscarded, d.linesWritten, d.linesDropped, d.writeErrors}
}

// NewCollector returns a collector of plan's tiers over src. The plan is copied.
func NewCollector(plan []TierSpec, src Sources) *Collector {
	cp := make([]TierSpec, len(plan))
	for i, t := range plan {
		t.Members = append([]MemberSpec(nil), t.Members...)
		cp[i] = t
	}
	return &Collector{plan: cp, src: src, d: newDescs()}
}

// NewLiveCollector returns a collector that asks view, at every scrape, for the plan and sources in
// force: a router that reloads its configuration hands over the current generation's. view must not
// modify what it returned before.
func NewLiveCollector(view func() ([]TierSpec, Sources)) *Collector {
	return &Collector{view: view, d: newDescs()}
}

// Describe sends every family the collector may emit.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range c.d.all() {
		ch <- d
	}
}

// Collect reads the sources once and emits the current values. Unavailable tiers emit nothing (an
// absent series, never a 0), and only safe IDs become labels.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	if c.view != nil {
		plan, src := c.view()
		c = &Collector{plan: plan, src: src, d: c.d}
	}
	e := emitter{ch}
	if c.src.Admission != nil {
		for _, t := range Read(c.plan, c.src).Tiers {
			if t.Retiring {
				continue // not configured: its ID may repeat a configured tier's (a kind change)
			}
			t.Members = configured(t.Members)
			c.tier(e, t)
			c.queue(e, t)
			c.health(e, t)
		}
	}
	c.info(e)
	if c.src.Readiness != nil {
		c.readiness(e)
	}
	if c.src.Decisions != nil {
		c.decisions(e, c.src.Decisions.Stats())
	}
}

func (c *Collector) tier(e emitter, t Tier) {
	if !t.Available {
		return
	}
	c.unified(e, t)
	if t.Kind == admission.KindReplica && t.Strategy == admission.StrategyCapacity {
		c.capacityTier(e, t)
		return
	}
	// The existing direct and round-robin families, their bytes unchanged (the spec's T011).
	e.gauge(c.d.plainTierActive, float64(t.Active), t.ID)
	if t.MaxConcurrency > 0 {
		e.gauge(c.d.plainTierCeiling, float64(t.MaxConcurrency), t.ID)
	}
	for _, m := range t.Members {
		e.gauge(c.d.plainMemberActive, float64(m.Active), t.ID, m.ID)
		if m.MaxConcurrency > 0 {
			e.gauge(c.d.plainMemberCeiling, float64(m.MaxConcurrency), t.ID, m.ID)
		}
	}
}

// freshnessClasses are the one-hot label values, in the spec's order.
var freshnessClasses = [...]scheduler.Freshness{scheduler.FreshnessFresh, scheduler.FreshnessStale,
	scheduler.FreshnessFailed, scheduler.FreshnessUnknown}

func (c *Collector) capacityTier(e emitter, t Tier) {
	e.gauge(c.d.tierActive, float64(t.Active), t.ID)
	e.gauge(c.d.tierCeiling, float64(t.MaxConcurrency), t.ID)
	for _, m := range t.Members {
		e.gauge(c.d.memberActive, float64(m.Active), t.ID, m.ID)
		e.gauge(c.d.memberCeiling, float64(m.MaxConcurrency), t.ID, m.ID)
		if m.Telemetry == nil {
			continue
		}
		if m.Telemetry.PressurePPM != nil {
			e.gauge(c.d.pressurePPM, float64(*m.Telemetry.PressurePPM), t.ID, m.ID)
			e.gauge(c.d.pressureRatio, float64(*m.Telemetry.PressurePPM)/1e6, t.ID, m.ID)
		}
		for _, f := range freshnessClasses {
			e.gauge(c.d.freshness, oneHot(m.Telemetry.Freshness == f), t.ID, m.ID, f.String())
		}
	}
	c.sampleAges(e, t)
}

// maxSampleAge bounds a shown age: a sample older than a year is a clock fault, not an age.
const maxSampleAge = 365 * 24 * time.Hour

// sampleAges emits the pressure sample age of each configured member of an available capacity
// tier, read once; an age for a member the tier does not have, or outside 0..maxSampleAge, is
// left out.
func (c *Collector) sampleAges(e emitter, t Tier) {
	if c.src.SampleAges == nil {
		return
	}
	ages, err := c.src.SampleAges.SampleAges(t.ID)
	if err != nil {
		return
	}
	for _, m := range t.Members {
		if age, ok := ages[m.ID]; ok && age >= 0 && age <= maxSampleAge {
			e.gauge(c.d.sampleAge, age.Seconds(), t.ID, m.ID)
		}
	}
}

// queue emits an available tier's admission queue, when it has one.
func (c *Collector) queue(e emitter, t Tier) {
	if !t.Available || t.Queue == nil {
		return
	}
	e.gauge(c.d.queueWaiting, float64(t.Queue.Waiting), t.ID)
	e.gauge(c.d.queueMax, float64(t.Queue.MaxWaiting), t.ID)
	e.counter(c.d.queueFull, t.Queue.RefusedFull, t.ID)
}

// healthStates are passive health's one-hot label values.
var healthStates = [...]health.State{health.Healthy, health.Ejected, health.HalfOpen}

// health emits the passive-health state and ejections of every member that has one.
func (c *Collector) health(e emitter, t Tier) {
	for _, m := range t.Members {
		if m.PassiveHealth == nil {
			continue
		}
		for _, s := range healthStates {
			e.gauge(c.d.passiveHealth, oneHot(m.PassiveHealth.State == s.String()), t.ID, m.ID, s.String())
		}
		e.counter(c.d.ejections, m.PassiveHealth.Ejections, t.ID, m.ID)
	}
}

// readiness emits the one-hot verdict of every configured replica member the readiness source
// knows, over every verdict the readiness package defines.
func (c *Collector) readiness(e emitter) {
	for _, spec := range shown(c.plan) {
		if spec.Kind != admission.KindReplica || !spec.membersUsable() {
			continue
		}
		verdicts := map[string]readiness.Verdict{}
		for _, v := range c.src.Readiness.Verdicts(spec.ID) {
			if _, configured := spec.ceiling(v.Member); configured && ident.ValidID(v.Member) {
				verdicts[v.Member] = v.Verdict
			}
		}
		for _, id := range spec.sortedMemberIDs() {
			got, ok := verdicts[id]
			if !ok || got.String() == "invalid" {
				continue
			}
			// Verdicts are numbered from 0; String says "invalid" past the last one.
			for v := readiness.Verdict(0); v.String() != "invalid"; v++ {
				e.gauge(c.d.readiness, oneHot(v == got), spec.ID, id, v.String())
			}
		}
	}
}

func (c *Collector) decisions(e emitter, st decisionlog.Stats) {
	e.counter(c.d.records, st.Added, "stored")
	e.counter(c.d.records, st.Rejected, "rejected")
	e.counter(c.d.evidenceDiscarded, st.EvidenceDiscarded)
	e.counter(c.d.linesWritten, st.SinkLines)
	e.counter(c.d.linesDropped, st.SinkDropped, "queue_full")
	e.counter(c.d.linesDropped, st.SinkOversize, "oversize")
	e.counter(c.d.linesDropped, st.SinkAfterClose, "after_close")
	e.counter(c.d.writeErrors, st.SinkErrors)
}

func oneHot(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// emitter sends const metrics; a value the client library refuses is skipped, never a panic in a
// scrape.
type emitter struct{ ch chan<- prometheus.Metric }

func (e emitter) gauge(d *prometheus.Desc, v float64, labels ...string) {
	if m, err := prometheus.NewConstMetric(d, prometheus.GaugeValue, v, labels...); err == nil {
		e.ch <- m
	}
}

func (e emitter) counter(d *prometheus.Desc, v uint64, labels ...string) {
	if m, err := prometheus.NewConstMetric(d, prometheus.CounterValue, float64(v), labels...); err == nil {
		e.ch <- m
	}
}
