package manifest

import (
	"context"
	"fmt"
	"net/http"
	"path"
	"regexp"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// probes: the router's probes are HTTP GETs of the routes that mean live and ready, on its port, and
// a running router answers them; each vLLM replica is probed from inside its container (it listens on
// 127.0.0.1, and the kubelet probes the pod IP), and its startup probe allows a model load.
func (c *checker) probes(ctx context.Context) {
	for _, p := range []struct {
		kind  string
		probe *corev1.Probe
		paths []string
	}{
		{"livenessProbe", c.anvil.LivenessProbe, []string{LivenessPath}},
		{"readinessProbe", c.anvil.ReadinessProbe, []string{ReadinessPath}},
		// Readiness waits for the models (up to ModelLoadBudget); a startup probe on it would restart
		// the router, and its restored quiesce, in a loop while they load.
		{"startupProbe", c.anvil.StartupProbe, []string{LivenessPath}},
	} {
		c.routerProbe(ctx, p.kind, p.probe, p.paths)
	}
	for _, v := range c.vllms {
		a := parseVLLM(v)
		for _, p := range []struct {
			kind  string
			probe *corev1.Probe
		}{{"startupProbe", v.StartupProbe}, {"livenessProbe", v.LivenessProbe}} {
			c.vllmProbe(v.Name, p.kind, p.probe, a)
		}
		if v.StartupProbe != nil {
			if b := budget(v.StartupProbe); b < ModelLoadBudget {
				c.bad(Probes, "%s startupProbe allows %s, want at least %s for a model load", v.Name, b, ModelLoadBudget)
			}
		}
	}
}

func (c *checker) routerProbe(ctx context.Context, kind string, p *corev1.Probe, paths []string) {
	if p == nil || p.HTTPGet == nil {
		c.bad(Probes, "the router has no HTTP %s", kind)
		return
	}
	g := p.HTTPGet
	switch {
	case kind == "readinessProbe" && g.Path == TrafficPath:
		c.bad(Probes, "router readinessProbe GETs %s, which follows quiesce: a quiesced host would stall every rolling update and count against the PodDisruptionBudget; want %s", TrafficPath, ReadinessPath)
	case !slices.Contains(paths, g.Path):
		c.bad(Probes, "router %s GETs %s, want %s", kind, g.Path, strings.Join(paths, " or "))
	}
	if g.Host != "" {
		c.bad(Probes, "router %s sets host %s; it must probe the pod", kind, g.Host)
	}
	if c.cfg != nil {
		if port, ok := portOf(c.anvil, g.Port); !ok || port != c.cfg.listenPort {
			c.bad(Probes, "router %s port %s is not the listen port %d", kind, g.Port.String(), c.cfg.listenPort)
		}
		want := corev1.URISchemeHTTP
		if c.cfg.TLS != nil {
			want = corev1.URISchemeHTTPS
		}
		if scheme := g.Scheme; scheme != want && (scheme != "" || want != corev1.URISchemeHTTP) {
			c.bad(Probes, "router %s uses %s, the router serves %s", kind, scheme, want)
		}
	}
	status, err := c.router.Get(ctx, g.Path)
	switch {
	case err != nil:
		c.bad(Probes, "router %s: GET %s failed: %v", kind, g.Path, err)
	case status != http.StatusOK:
		c.bad(Probes, "router %s: a running, ready router answers GET %s with %d, not 200", kind, g.Path, status)
	}
}

// probeURL finds the URL an exec probe fetches.
var probeURL = regexp.MustCompile(`https?://([^/\s'"]+)(/[^\s'"]*)?`)

func (c *checker) vllmProbe(name, kind string, p *corev1.Probe, a vllmArgs) {
	if p == nil {
		c.bad(Probes, "%s has no %s", name, kind)
		return
	}
	if p.Exec == nil {
		c.bad(Probes, "%s %s must run inside the container: the replica listens on %s, the kubelet probes the pod IP", name, kind, LoopbackHost)
		return
	}
	m := probeURL.FindStringSubmatch(strings.Join(p.Exec.Command, " "))
	want := fmt.Sprintf("%s:%d", LoopbackHost, a.port)
	if m == nil || m[1] != want || m[2] != VLLMHealthPath {
		c.bad(Probes, "%s %s does not fetch http://%s%s", name, kind, want, VLLMHealthPath)
	}
}

// budget is how long a startup probe lets a container start, with the API's defaults.
func budget(p *corev1.Probe) time.Duration {
	period, failures := p.PeriodSeconds, p.FailureThreshold
	if period == 0 {
		period = 10
	}
	if failures == 0 {
		failures = 3
	}
	return time.Duration(p.InitialDelaySeconds+period*failures) * time.Second
}

func preStopSleep(ctr *corev1.Container) (int64, bool) {
	if ctr.Lifecycle == nil || ctr.Lifecycle.PreStop == nil || ctr.Lifecycle.PreStop.Sleep == nil {
		return 0, false
	}
	return ctr.Lifecycle.PreStop.Sleep.Seconds, true
}

// tokenEnv are the router's credential variables, which the manifests never set: tokens come from
// Secret files, so they never appear in a pod spec, `kubectl describe` or the process environment.
var tokenEnv = regexp.MustCompile(`^ANVIL_(API_TOKENS?|ADMIN_TOKEN|OBSERVER_TOKENS)$`)

// secretName flags variables whose name says they hold a secret.
var secretName = regexp.MustCompile(`(?i)(token|secret|password|passwd|api_?key|credential)`)

func (c *checker) secrets() {
	if len(c.set.Secrets) > 0 {
		c.bad(Secrets, "the manifests carry %d Secret object(s); tokens are created out of band, never committed", len(c.set.Secrets))
	}
	for _, ctr := range c.allContainers() {
		for _, e := range ctr.Env {
			switch {
			case tokenEnv.MatchString(e.Name):
				c.bad(Secrets, "%s sets %s; the router reads its tokens from mounted Secret files", ctr.Name, e.Name)
			case e.ValueFrom == nil && secretName.MatchString(e.Name):
				c.bad(Secrets, "%s sets %s in plain text; take it from a Secret", ctr.Name, e.Name)
			}
		}
	}
	for _, ef := range c.anvil.EnvFrom {
		if ef.SecretRef != nil {
			c.bad(Secrets, "the router takes environment from Secret %s; its tokens come from files", ef.SecretRef.Name)
		}
	}
	if c.cfg == nil {
		return
	}
	a := c.auth.Auth
	if len(a.CallerTokens) > 0 || a.AdminToken != "" || len(a.ObserverTokens) > 0 {
		c.bad(Secrets, "the config holds tokens inline; use auth.caller_tokens_file, auth.admin_token_file and auth.observer_tokens_file")
	}
	c.secretFile("auth.caller_tokens_file", a.CallerTokensFile)
	if ref, ok := c.secretFile("auth.admin_token_file", a.AdminTokenFile); ok {
		c.admin = ref
	}
	if a.ObserverFile != "" { // optional: without it the monitor invariant refuses a ServiceMonitor
		if ref, ok := c.secretFile("auth.observer_tokens_file", a.ObserverFile); ok {
			c.observer = ref
		}
	}
	for _, t := range c.cfg.Tiers {
		if t.APIKeyEnv != "" && !slices.ContainsFunc(c.anvil.Env, func(e corev1.EnvVar) bool {
			return e.Name == t.APIKeyEnv && e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil
		}) {
			c.bad(Secrets, "tier %s's %s is not taken from a Secret", t.ID, t.APIKeyEnv)
		}
	}
}

// secretFile checks that a token file is a key of a Secret mounted read-only into the router.
func (c *checker) secretFile(key, file string) (secretRef, bool) {
	if file == "" {
		c.bad(Secrets, "%s is not set; the admin API (rolling a host) and scraping need it", key)
		return secretRef{}, false
	}
	m, vol := c.mountOf(c.anvil, file)
	if vol == nil || vol.Secret == nil || !m.ReadOnly {
		c.bad(Secrets, "%s %s is not on a read-only Secret volume", key, file)
		return secretRef{}, false
	}
	rel := strings.TrimPrefix(file, strings.TrimSuffix(m.MountPath, "/")+"/")
	if len(vol.Secret.Items) == 0 {
		return secretRef{vol.Secret.SecretName, rel}, true
	}
	for _, it := range vol.Secret.Items {
		if it.Path == rel {
			return secretRef{vol.Secret.SecretName, it.Key}, true
		}
	}
	c.bad(Secrets, "%s %s is not a key of Secret %s", key, file, vol.Secret.SecretName)
	return secretRef{}, false
}

// intent: quiesce intent must outlive the pod, so intent_file sits on a volume claim of the
// StatefulSet (it follows the pod's identity), mounted writable; the root filesystem is read-only.
func (c *checker) intent() {
	if c.cfg == nil {
		return
	}
	if c.cfg.IntentFile == "" {
		c.bad(Intent, "intent_file is not set: quiesce intent would not survive a pod restart")
		return
	}
	m, _ := c.mountOf(c.anvil, c.cfg.IntentFile)
	claims := map[string]bool{}
	for _, t := range c.sts.Spec.VolumeClaimTemplates {
		claims[t.Name] = true
	}
	switch {
	case m == nil:
		c.bad(Intent, "intent_file %s is on the read-only root filesystem", c.cfg.IntentFile)
	case m.ReadOnly:
		c.bad(Intent, "intent_file %s is on a read-only mount", c.cfg.IntentFile)
	case !claims[m.Name] || slices.ContainsFunc(c.pod.Volumes, func(v corev1.Volume) bool { return v.Name == m.Name }):
		c.bad(Intent, "intent_file %s is on volume %s, which is not a volume claim template and dies with the pod", c.cfg.IntentFile, m.Name)
	}
	if p := c.cfg.DecisionLog.JSONLPath; p != "" {
		if m, _ := c.mountOf(c.anvil, p); m == nil || m.ReadOnly {
			c.bad(Intent, "decision_log.jsonl_path %s is not on a writable volume", path.Clean(p))
		}
	}
}

func (c *checker) allContainers() []*corev1.Container {
	var out []*corev1.Container
	for i := range c.pod.InitContainers {
		out = append(out, &c.pod.InitContainers[i])
	}
	for i := range c.pod.Containers {
		out = append(out, &c.pod.Containers[i])
	}
	return out
}

// security: every container runs with a read-only root, no privilege escalation, no capabilities and
// the runtime's default seccomp profile; the router also runs as a non-root user and gets no service
// account token (it makes no Kubernetes API calls).
func (c *checker) security() {
	p := c.pod
	if p.HostNetwork || p.HostPID || p.HostIPC {
		c.bad(Security, "the pod shares the host's network, PID or IPC namespace")
	}
	if p.AutomountServiceAccountToken == nil || *p.AutomountServiceAccountToken {
		c.bad(Security, "automountServiceAccountToken is not false; Anvil needs no API access")
	}
	var podSeccomp *corev1.SeccompProfile
	if p.SecurityContext != nil {
		podSeccomp = p.SecurityContext.SeccompProfile
	}
	for _, ctr := range c.allContainers() {
		sc := ctr.SecurityContext
		if sc == nil {
			c.bad(Security, "%s has no securityContext", ctr.Name)
			continue
		}
		if sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
			c.bad(Security, "%s does not set allowPrivilegeEscalation: false", ctr.Name)
		}
		if sc.Privileged != nil && *sc.Privileged {
			c.bad(Security, "%s is privileged", ctr.Name)
		}
		if sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem {
			c.bad(Security, "%s does not set readOnlyRootFilesystem: true", ctr.Name)
		}
		if sc.Capabilities == nil || !slices.Contains(sc.Capabilities.Drop, "ALL") || len(sc.Capabilities.Add) > 0 {
			c.bad(Security, "%s does not drop ALL capabilities (and add none)", ctr.Name)
		}
		seccomp := podSeccomp
		if sc.SeccompProfile != nil {
			seccomp = sc.SeccompProfile
		}
		if seccomp == nil || seccomp.Type != corev1.SeccompProfileTypeRuntimeDefault {
			c.bad(Security, "%s does not run with seccomp RuntimeDefault", ctr.Name)
		}
	}
	if !c.nonRoot() {
		c.bad(Security, "the router container does not run as a non-root user")
	}
}

func (c *checker) nonRoot() bool {
	var nonRoot *bool
	var uid *int64
	if ps := c.pod.SecurityContext; ps != nil {
		nonRoot, uid = ps.RunAsNonRoot, ps.RunAsUser
	}
	if sc := c.anvil.SecurityContext; sc != nil {
		if sc.RunAsNonRoot != nil {
			nonRoot = sc.RunAsNonRoot
		}
		if sc.RunAsUser != nil {
			uid = sc.RunAsUser
		}
	}
	return nonRoot != nil && *nonRoot && (uid == nil || *uid != 0)
}

// resources: every container requests and limits CPU and memory; each vLLM replica gets exactly one
// GPU, the router none.
func (c *checker) resources() {
	for _, ctr := range c.allContainers() {
		r := ctr.Resources
		for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
			if q, ok := r.Requests[name]; !ok || q.IsZero() {
				c.bad(Resources, "%s requests no %s", ctr.Name, name)
			}
			if q, ok := r.Limits[name]; !ok || q.IsZero() {
				c.bad(Resources, "%s has no %s limit", ctr.Name, name)
			}
		}
	}
	one := resource.MustParse("1")
	for _, v := range c.vllms {
		lim, ok := v.Resources.Limits[GPUResource]
		req, hasReq := v.Resources.Requests[GPUResource]
		if !ok || lim.Cmp(one) != 0 || (hasReq && req.Cmp(one) != 0) {
			c.bad(Resources, "%s must have exactly one %s", v.Name, GPUResource)
		}
	}
	if _, ok := c.anvil.Resources.Limits[GPUResource]; ok {
		c.bad(Resources, "the router asks for a GPU")
	}
	if _, ok := c.anvil.Resources.Requests[GPUResource]; ok {
		c.bad(Resources, "the router asks for a GPU")
	}
}

// spread: a required anti-affinity on the hostname keeps two router pods (and so two claims on one
// host's GPUs) off one node.
func (c *checker) spread() {
	if r := c.sts.Spec.Replicas; r != nil && *r < 1 {
		c.bad(Spread, "replicas is %d", *r)
	}
	podLabels := labels.Set(c.sts.Spec.Template.Labels)
	a := c.pod.Affinity
	ok := a != nil && a.PodAntiAffinity != nil && slices.ContainsFunc(a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution,
		func(t corev1.PodAffinityTerm) bool {
			return t.TopologyKey == HostnameKey && selects(t.LabelSelector, podLabels)
		})
	if !ok {
		c.bad(Spread, "no required pod anti-affinity on %s against the router's own pods", HostnameKey)
	}
}

// selects reports whether a non-empty label selector matches set.
func selects(sel *metav1.LabelSelector, set labels.Set) bool {
	if sel == nil || (len(sel.MatchLabels) == 0 && len(sel.MatchExpressions) == 0) {
		return false
	}
	s, err := metav1.LabelSelectorAsSelector(sel)
	return err == nil && s.Matches(set)
}
