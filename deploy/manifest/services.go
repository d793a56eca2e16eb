package manifest

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
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
		if c.budget(b) {
			budget = true
		}
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
