package server

import (
	"runtime"
	"runtime/debug"
	"slices"
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/anvil-llm/anvil/router/config"
	"github.com/anvil-llm/anvil/router/decisionlog"
)

// Every labelled counter and histogram the server records into starts with the label sets the
// configuration in force makes known, at 0, so rate() and increase() see the first burst instead
// of a series that appears with its first event. A reload seeds what it adds and deletes the
// series of what it removes (tiers, members, aliases, queues, capacity strategies): the page keeps
// to the configuration in force, however many reloads came before. A request still in flight on a
// removed tier when the reload applies brings its series back when it finishes, until the next
// reload.

// known is the label sets one configuration makes known.
type known struct {
	tiers    map[string]bool
	members  map[[2]string]bool // tier, member ("" for a direct tier)
	aliases  map[[2]string]bool // alias, tier
	queued   map[string]bool    // tiers with an admission queue
	capacity map[string]bool    // capacity-strategy tiers (the pressure scrapes)
}

func knownOf(cfg config.Config) known {
	k := known{tiers: map[string]bool{}, members: map[[2]string]bool{}, aliases: map[[2]string]bool{},
		queued: map[string]bool{}, capacity: map[string]bool{}}
	for _, t := range cfg.Tiers() {
		id := idLabel(t.ID)
		k.tiers[id] = true
		k.queued[id] = t.Queue.MaxWaiting > 0
		k.capacity[id] = t.Strategy == config.StrategyCapacity
		if t.Kind != config.KindReplica {
			k.members[[2]string{id, ""}] = true
		}
		for _, m := range t.Members {
			k.members[[2]string{id, idLabel(m.ID)}] = true
		}
	}
	for _, a := range cfg.Aliases() {
		k.aliases[[2]string{a.ID, idLabel(a.Tier)}] = true
	}
	return k
}

// admissionReasons are the reason labels of anvil_router_admission_refusals_total.
func admissionReasons() []string {
	var out []string
	for _, r := range refusals {
		if r.stage == stageAdmission && r.label != "" && !slices.Contains(out, r.label) {
			out = append(out, r.label)
		}
	}
	return append(out, "other")
}

// seeder remembers what the previous seed made known.
type seeder struct {
	mu      sync.Mutex
	last    *known
	callers []string // the caller labels seedCallers last made known
}

// seed makes every label set cfg knows present and deletes the series of what the previous
// configuration knew and cfg does not.
func (m *metrics) seed(cfg config.Config) {
	k := knownOf(cfg)
	m.seeded.mu.Lock()
	defer m.seeded.mu.Unlock()
	if old := m.seeded.last; old != nil {
		m.forget(*old, k)
	}
	m.seeded.last = &k
	m.requests.WithLabelValues("", "", "", string(decisionlog.OutcomeRefused), "4xx")
	for am := range k.aliases {
		alias, tier := am[0], am[1]
		m.requests.WithLabelValues(alias, tier, "", string(decisionlog.OutcomeRefused), "4xx")
		m.requests.WithLabelValues(alias, tier, "", string(decisionlog.OutcomeNotAdmitted), "5xx")
		for tm := range k.members {
			if tm[0] == tier {
				m.requests.WithLabelValues(alias, tier, tm[1], string(decisionlog.OutcomeSuccess), "2xx")
			}
		}
	}
	for tm := range k.members {
		m.attempts.WithLabelValues(tm[0], tm[1])
		m.duration.WithLabelValues(tm[0], tm[1])
		m.firstByte.WithLabelValues(tm[0], tm[1])
		if k.capacity[tm[0]] {
			for _, r := range []string{"ok", "failed", "unknown"} {
				m.scrapes.WithLabelValues(tm[0], tm[1], r)
			}
		}
	}
	for tier := range k.tiers {
		for _, r := range admissionReasons() {
			m.refusals.WithLabelValues(tier, r)
		}
		if k.queued[tier] {
			m.queueWait.WithLabelValues(tier)
		}
		if k.capacity[tier] {
			m.scrapeSeconds.WithLabelValues(tier)
		}
	}
}

// forget deletes the series of every tier, member, alias, queue and capacity strategy old knew and
// k does not, whatever their other labels.
func (m *metrics) forget(old, k known) {
	byTier := []interface{ DeletePartialMatch(prometheus.Labels) int }{m.requests, m.duration, m.firstByte,
		m.attempts, m.usage.tokens, m.usage.unknown, m.refusals, m.queueWait, m.scrapes, m.scrapeSeconds}
	for tier := range old.tiers {
		if !k.tiers[tier] {
			for _, v := range byTier {
				v.DeletePartialMatch(prometheus.Labels{"tier": tier})
			}
			continue
		}
		if old.queued[tier] && !k.queued[tier] {
			m.queueWait.DeletePartialMatch(prometheus.Labels{"tier": tier})
		}
		if old.capacity[tier] && !k.capacity[tier] {
			m.scrapes.DeletePartialMatch(prometheus.Labels{"tier": tier})
			m.scrapeSeconds.DeletePartialMatch(prometheus.Labels{"tier": tier})
		}
	}
	for tm := range old.members {
		if k.tiers[tm[0]] && !k.members[tm] {
			l := prometheus.Labels{"tier": tm[0], "member": tm[1]}
			for _, v := range byTier[:6] {
				v.DeletePartialMatch(l)
			}
			m.scrapes.DeletePartialMatch(l)
		}
	}
	for at := range old.aliases {
		if !k.aliases[at] {
			m.requests.DeletePartialMatch(prometheus.Labels{"alias": at[0], "tier": at[1]})
		}
	}
}

// buildInfo registers anvil_router_build_info: 1, labelled with the version and revision (the
// linker's, as `anvil-router version` prints them; "" reads what the Go toolchain stamped, as that
// command does) and the Go version.
func (m *metrics) buildInfo(version, revision string) {
	bi, ok := debug.ReadBuildInfo()
	if version == "" {
		version = "devel"
		if ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			version = bi.Main.Version
		}
	}
	if revision == "" {
		revision = vcsRevision(bi, ok)
	}
	g := prometheus.NewGauge(prometheus.GaugeOpts{Name: "anvil_router_build_info",
		Help:        "Always 1; its labels are the router's version, source revision and Go version.",
		ConstLabels: prometheus.Labels{"version": version, "revision": revision, "goversion": runtime.Version()}})
	g.Set(1)
	m.registry.MustRegister(g)
}

// vcsRevision is the revision Go stamped into a build from a checkout ("-dirty" when modified), else
// "unknown".
func vcsRevision(bi *debug.BuildInfo, ok bool) string {
	rev, modified := "unknown", false
	if !ok {
		return rev
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			modified = s.Value == "true"
		}
	}
	if modified && rev != "unknown" {
		rev += "-dirty"
	}
	return rev
}
