package manifest

import (
	appsv1 "k8s.io/api/apps/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// rollout: an image or vLLM change rolls the hosts by itself, one at a time. The StatefulSet uses
// RollingUpdate (OnDelete would leave routine rolls to hand work) with maxUnavailable 1, and manages
// its pods in parallel: hosts are independent, and with OrderedReady a host whose models load slowly
// would hold back every host after it (maxUnavailable is not honoured there either). The controller
// counts every pod that is not Ready against maxUnavailable, so readiness must set a deliberate quiesce
// aside (the probes invariant).
func (c *checker) rollout() {
	spec := c.sts.Spec
	if p := spec.PodManagementPolicy; p != appsv1.ParallelPodManagement {
		c.bad(Rollout, "podManagementPolicy is %q, want %s: hosts are independent, and one loading slowly must not hold back the others", p, appsv1.ParallelPodManagement)
	}
	u := spec.UpdateStrategy
	if u.Type != "" && u.Type != appsv1.RollingUpdateStatefulSetStrategyType {
		c.bad(Rollout, "updateStrategy is %s, want RollingUpdate: an image change must roll the hosts without hand work", u.Type)
		return
	}
	if u.RollingUpdate == nil || u.RollingUpdate.MaxUnavailable == nil {
		return // the API's default: one at a time
	}
	if mu := u.RollingUpdate.MaxUnavailable; *mu != intstr.FromInt32(1) {
		c.bad(Rollout, "rollingUpdate.maxUnavailable is %s, want 1: one host at a time, like the PodDisruptionBudget", mu.String())
	}
}

// budget checks one PodDisruptionBudget that selects the router pods: drains take at most one host
// at a time, and a host that is not Ready (not up: readiness sets quiesce aside) may be evicted
// without waiting on the budget, so a stuck host never blocks node maintenance.
func (c *checker) budget(b *policyv1.PodDisruptionBudget) bool {
	mu := b.Spec.MaxUnavailable
	if b.Spec.MinAvailable != nil || mu == nil || (mu.Type == intstr.Int && mu.IntVal < 1) || (mu.Type == intstr.String && mu.StrVal == "0%") {
		c.bad(Service, "PodDisruptionBudget %s does not set maxUnavailable to at least one host", b.Name)
		return false
	}
	if p := b.Spec.UnhealthyPodEvictionPolicy; p == nil || *p != policyv1.AlwaysAllow {
		c.bad(Service, "PodDisruptionBudget %s: unhealthyPodEvictionPolicy is not AlwaysAllow; a host that is not up (models loading, no ready member) would block node drains while the budget is spent", b.Name)
		return false
	}
	return true
}
