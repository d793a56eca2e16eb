package manifest

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// services: a Service spreads callers over the host pods on the router's port (the cross-host layer is
// Kubernetes'); the StatefulSet's headless Service exists; a PodDisruptionBudget lets voluntary
// disruptions take hosts one at a time.
func (c *checker) services() {
	podLabels := labels.Set(c.sts.Spec.Template.Labels)
	front, headless := false, false
	for _, s := range c.set.Services {
		if len(s.Spec.Selector) == 0 || !labels.SelectorFromSet(s.Spec.Selector).Matches(podLabels) {
			continue
		}
		if s.Spec.ClusterIP == corev1.ClusterIPNone {
			headless = headless || s.Name == c.sts.Spec.ServiceName
			continue
		}
		if c.targetsRouter(s) {
			front = true
		}
	}
	if !front {
		c.bad(Service, "no Service selects the router pods on the router's listen port")
	}
	if !headless {
		c.bad(Service, "the StatefulSet's serviceName %q is not a headless Service selecting its pods", c.sts.Spec.ServiceName)
	}
	budget := false
	for _, b := range c.set.Budgets {
		if !selects(b.Spec.Selector, podLabels) {
			continue
		}
		mu := b.Spec.MaxUnavailable
		if mu == nil || (mu.Type == intstr.Int && mu.IntVal < 1) || (mu.Type == intstr.String && mu.StrVal == "0%") {
			c.bad(Service, "PodDisruptionBudget %s does not set maxUnavailable to at least one host", b.Name)
			continue
		}
		budget = true
	}
	if !budget {
		c.bad(Service, "no PodDisruptionBudget selects the router pods")
	}
}

// targetsRouter reports whether some port of s reaches the router's listen port.
func (c *checker) targetsRouter(s *corev1.Service) bool {
	if c.cfg == nil {
		return true // the config check already failed; the port cannot be known
	}
	for _, p := range s.Spec.Ports {
		target := p.TargetPort
		if target.IntValue() == 0 && target.StrVal == "" {
			target.IntVal = p.Port
		}
		if port, ok := portOf(c.anvil, target); ok && port == c.cfg.listenPort {
			return true
		}
	}
	return false
}

// monitors: a ServiceMonitor (optional overlay) scrapes /metrics of exactly one Service that reaches
// the router, with the admin token from the Secret the router reads it from.
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
		svc := matched[0]
		if len(sm.Spec.Endpoints) == 0 {
			c.bad(Monitor, "ServiceMonitor %s has no endpoints", sm.Name)
		}
		for _, ep := range sm.Spec.Endpoints {
			if ep.Path != MetricsPath {
				c.bad(Monitor, "ServiceMonitor %s scrapes %q, want %s", sm.Name, ep.Path, MetricsPath)
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
				c.bad(Monitor, "ServiceMonitor %s port %q is not a port of Service %s that reaches the router", sm.Name, ep.Port, svc.Name)
			}
			var ref *corev1.SecretKeySelector // authorization, not the deprecated bearerTokenSecret
			if a := ep.Authorization; a != nil && (a.Type == "" || a.Type == "Bearer") {
				ref = a.Credentials
			}
			// Without a resolved admin token file the secrets invariant has already failed.
			if c.admin.name != "" && (ref == nil || ref.Name != c.admin.name || ref.Key != c.admin.key) {
				c.bad(Monitor, "ServiceMonitor %s does not present the admin token (Secret %s, key %s) as a bearer token", sm.Name, c.admin.name, c.admin.key)
			}
		}
	}
}
