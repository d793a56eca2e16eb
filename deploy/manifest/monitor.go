package manifest

import (
	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// monitors: a ServiceMonitor (optional overlay) scrapes, through exactly one Service that reaches the
// router, the router's /metrics and every replica member's page under MemberMetricsPrefix (one endpoint
// per member, relabelled with its tier and member), each with the observer token from the Secret the
// router reads it from, never the admin token: the scraper needs no right to quiesce or drain.
func (c *checker) monitors() {
	for _, sm := range c.set.ServiceMonitors {
		var matched []*corev1.Service
		for _, s := range c.set.Services {
			if selects(&sm.Spec.Selector, labels.Set(s.Labels)) {
				matched = append(matched, s)
			}
		}
		if len(matched) != 1 {
			c.bad(Monitor, "ServiceMonitor %s selects %d Services, want exactly one (each pod scraped once)", sm.Name, len(matched))
			continue
		}
		if len(sm.Spec.Endpoints) == 0 {
			c.bad(Monitor, "ServiceMonitor %s has no endpoints", sm.Name)
		}
		want := c.scrapePaths()
		seen := map[string]int{}
		for _, ep := range sm.Spec.Endpoints {
			seen[ep.Path]++
			c.endpoint(sm.Name, matched[0], ep, want)
		}
		for path := range want {
			if n := seen[path]; n != 1 {
				c.bad(Monitor, "ServiceMonitor %s scrapes %s %d times, want once", sm.Name, path, n)
			}
		}
	}
}

// scrapePaths maps every path a ServiceMonitor must scrape to the tier and member labels its series
// need (none for the router's own page); nil when the config could not be read.
func (c *checker) scrapePaths() map[string][2]string {
	if c.cfg == nil {
		return nil
	}
	want := map[string][2]string{MetricsPath: {}}
	for _, t := range c.cfg.Tiers {
		if t.Kind != "replica" {
			continue
		}
		for _, m := range t.Members {
			want[MemberMetricsPrefix+t.ID+"/"+m.ID] = [2]string{t.ID, m.ID}
		}
	}
	return want
}

func (c *checker) endpoint(name string, svc *corev1.Service, ep monitoringv1.Endpoint, want map[string][2]string) {
	ids, known := want[ep.Path]
	if want != nil && !known {
		c.bad(Monitor, "ServiceMonitor %s scrapes %q, want %s or %sTIER/MEMBER of a configured replica member", name, ep.Path, MetricsPath, MemberMetricsPrefix)
	}
	if known && ids != [2]string{} {
		for i, label := range []string{"tier", "member"} {
			if !setsLabel(ep.RelabelConfigs, label, ids[i]) {
				c.bad(Monitor, "ServiceMonitor %s endpoint %s does not relabel %s=%q: the replica's series would not say whose they are", name, ep.Path, label, ids[i])
			}
		}
	}
	reaches := false
	for _, p := range svc.Spec.Ports {
		if p.Name == ep.Port {
			one := *svc
			one.Spec.Ports = []corev1.ServicePort{p}
			reaches = c.targetsRouter(&one)
		}
	}
	if !reaches {
		c.bad(Monitor, "ServiceMonitor %s port %q is not a port of Service %s that reaches the router", name, ep.Port, svc.Name)
	}
	c.credentials(name, ep)
}

// credentials: the endpoint presents the observer token as a bearer token (authorization, not the
// deprecated bearerTokenSecret), and never the admin token.
func (c *checker) credentials(name string, ep monitoringv1.Endpoint) {
	var ref *corev1.SecretKeySelector
	if a := ep.Authorization; a != nil && (a.Type == "" || a.Type == "Bearer") {
		ref = a.Credentials
	}
	at := func(r secretRef) bool { return ref != nil && r.name != "" && ref.Name == r.name && ref.Key == r.key }
	switch {
	case at(c.admin):
		c.bad(Monitor, "ServiceMonitor %s endpoint %s presents the admin token (Secret %s): the scraper could quiesce and drain every tier; use the observer token (auth.observer_tokens_file)", name, ep.Path, c.admin.name)
	case c.cfg != nil && c.auth.Auth.ObserverFile == "":
		c.bad(Monitor, "ServiceMonitor %s: the router has no auth.observer_tokens_file on a Secret, so scraping would need the admin token", name)
	case c.observer.name != "" && !at(c.observer): // unresolved: the secrets invariant reports it
		c.bad(Monitor, "ServiceMonitor %s endpoint %s does not present the observer token (Secret %s, key %s) as a bearer token", name, ep.Path, c.observer.name, c.observer.key)
	}
}

// setsLabel reports whether relabelings set label to exactly value on every target (a replace with no
// source labels, or with the default regex matching anything).
func setsLabel(rs []monitoringv1.RelabelConfig, label, value string) bool {
	set := false
	for _, r := range rs {
		if r.TargetLabel != label {
			continue
		}
		action := r.Action
		unconditional := len(r.SourceLabels) == 0 && (r.Regex == "" || r.Regex == "(.*)")
		set = (action == "" || action == "replace" || action == "Replace") && unconditional &&
			r.Replacement != nil && *r.Replacement == value
	}
	return set
}
