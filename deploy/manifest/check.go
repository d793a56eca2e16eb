package manifest

import (
	"context"
	"fmt"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// Invariant names one property of the deployment; every Problem belongs to exactly one.
type Invariant string

// The invariants, in the order Check reports them.
const (
	Shape     Invariant = "shape"     // one StatefulSet with the anvil container and vLLM containers
	Config    Invariant = "config"    // the mounted config passes `anvil-router config check`
	Members   Invariant = "members"   // every replica tier and member is on 127.0.0.1
	Ports     Invariant = "ports"     // vLLM ports and served models agree with the tiers; the router listens on its port
	Probes    Invariant = "probes"    // probes on real routes, on the right ports; readiness sets quiesce aside; vLLM startup allows model load
	Grace     Invariant = "grace"     // shutdown_grace, preStop sleeps and terminationGracePeriodSeconds derived from upstream.timeout
	Rollout   Invariant = "rollout"   // a rolling update, one host at a time, hosts managed in parallel
	Secrets   Invariant = "secrets"   // tokens only from Secret files; never in env, never committed
	Intent    Invariant = "intent"    // intent_file on a persistent, writable volume
	Security  Invariant = "security"  // read-only root, no privilege escalation, no capabilities, seccomp RuntimeDefault
	Resources Invariant = "resources" // requests and limits; one GPU per vLLM container, none for the router
	Spread    Invariant = "spread"    // at most one pod per host
	Service   Invariant = "service"   // the Service, the headless Service and the PodDisruptionBudget
	Monitor   Invariant = "monitor"   // the ServiceMonitor scrapes /metrics and every replica's page with the observer token
	Reload    Invariant = "reload"    // a config change reaches the running router without rolling the pod
)

// Problem is one way the manifests break an invariant.
type Problem struct {
	Invariant Invariant
	Msg       string
}

func (p Problem) String() string { return string(p.Invariant) + ": " + p.Msg }

// Router answers for the real anvil-router binary. Check declares what it needs; tests and tools
// supply the binary.
type Router interface {
	// CheckConfig runs `anvil-router config check` on doc and returns the normalized config it prints.
	CheckConfig(ctx context.Context, doc []byte) ([]byte, error)
	// Get sends GET path, without credentials, to a running router whose members are ready, and
	// returns the status.
	Get(ctx context.Context, path string) (int, error)
}

// The contract the manifests are checked against.
const (
	AnvilContainer = "anvil"     // the router's container name
	LoopbackHost   = "127.0.0.1" // where every replica listens, inside the pod
	LivenessPath   = "/healthz"  // 200 while the router serves
	TrafficPath    = "/readyz"   // 200 once every replica tier admits and has a ready, admitting member
	// ReadinessPath is the pod's readiness: /readyz with quiesce set aside (200 once every replica tier
	// has a ready member). The Ready condition also gates the StatefulSet's rolling update and the
	// PodDisruptionBudget, which must not stall on a host an operator quiesced on purpose.
	ReadinessPath       = "/readyz/host"
	MemberMetricsPrefix = "/metrics/members/" // + TIER/MEMBER: a replica's own page, re-exposed by the router
	VLLMHealthPath      = "/health"           // vLLM's health route
	MetricsPath         = "/metrics"
	GPUResource         = "nvidia.com/gpu"
	HostnameKey         = "kubernetes.io/hostname"
	ModelLoadBudget     = 20 * time.Minute // the least time a vLLM startup probe must allow
)

// checker holds one run's decoded inputs and findings.
type checker struct {
	set      *Set
	router   Router
	problems []Problem

	sts      *appsv1.StatefulSet
	pod      *corev1.PodSpec
	anvil    *corev1.Container
	vllms    []*corev1.Container
	cfg      *routerConfig // nil when the config could not be checked
	auth     rawAuth
	admin    secretRef // the Secret and key the admin token file comes from
	observer secretRef // the same for the observer token file; zero when none
}

type secretRef struct{ name, key string }

// Check returns every problem it finds; none means the manifests hold every invariant.
func Check(ctx context.Context, s *Set, r Router) []Problem {
	c := &checker{set: s, router: r}
	if !c.shape() {
		return c.problems
	}
	c.config(ctx)
	c.members()
	c.ports()
	c.probes(ctx)
	c.grace()
	c.rollout()
	c.secrets()
	c.intent()
	c.security()
	c.resources()
	c.spread()
	c.services()
	c.monitors()
	c.reload()
	return c.problems
}

func (c *checker) bad(inv Invariant, format string, args ...any) {
	c.problems = append(c.problems, Problem{Invariant: inv, Msg: fmt.Sprintf(format, args...)})
}

// shape finds the StatefulSet, the router container and the vLLM containers; without them nothing
// else can be checked.
func (c *checker) shape() bool {
	if n := len(c.set.StatefulSets); n != 1 {
		c.bad(Shape, "want exactly one StatefulSet (one router pod per GPU host), found %d", n)
		return false
	}
	c.sts = c.set.StatefulSets[0]
	c.pod = &c.sts.Spec.Template.Spec
	for i := range c.pod.Containers {
		ctr := &c.pod.Containers[i]
		switch {
		case ctr.Name == AnvilContainer:
			c.anvil = ctr
		case len(ctr.Command) > 0 && ctr.Command[0] == "vllm":
			c.vllms = append(c.vllms, ctr)
		default:
			c.bad(Shape, "container %s is neither the router nor a vLLM replica (command vllm serve)", ctr.Name)
		}
	}
	if c.anvil == nil {
		c.bad(Shape, "no container named %s", AnvilContainer)
		return false
	}
	if len(c.vllms) == 0 {
		c.bad(Shape, "no vLLM container: the router's replicas must share its pod")
	}
	return true
}

// config finds the file the router is started with, follows its mount to the ConfigMap and runs the
// router's own check on it.
func (c *checker) config(ctx context.Context) {
	file, ok := flagValue(c.anvil.Args, "--config")
	if !ok || len(c.anvil.Args) == 0 || c.anvil.Args[0] != "serve" {
		c.bad(Config, "the router is not started as serve --config FILE (args %q)", c.anvil.Args)
		return
	}
	mount, vol := c.mountOf(c.anvil, file)
	if vol == nil || vol.ConfigMap == nil {
		c.bad(Config, "%s is not on a ConfigMap volume", file)
		return
	}
	rel := volumePath(mount, file)
	key := rel
	if len(vol.ConfigMap.Items) > 0 {
		key = ""
		for _, it := range vol.ConfigMap.Items {
			if it.Path == rel {
				key = it.Key
			}
		}
	}
	var doc string
	found := false
	for _, cm := range c.set.ConfigMaps {
		if cm.Name == vol.ConfigMap.Name {
			doc, found = cm.Data[key]
		}
	}
	if !found {
		c.bad(Config, "ConfigMap %s has no key %q for %s", vol.ConfigMap.Name, key, file)
		return
	}
	normalized, err := c.router.CheckConfig(ctx, []byte(doc))
	if err != nil {
		c.bad(Config, "anvil-router config check refuses %s: %v", file, err)
		return
	}
	cfg, err := parseRouterConfig(normalized)
	if err != nil {
		c.bad(Config, "%v", err)
		return
	}
	auth, err := parseRawAuth([]byte(doc))
	if err != nil {
		c.bad(Config, "%v", err)
		return
	}
	c.cfg, c.auth = cfg, auth
}

// members holds the same-host contract by construction: replicas are in this pod.
func (c *checker) members() {
	if c.cfg == nil {
		return
	}
	for _, t := range c.cfg.Tiers {
		if t.Kind != "replica" {
			continue
		}
		if t.Host != LoopbackHost {
			c.bad(Members, "tier %s declares host %s, want %s (its replicas share the router's pod)", t.ID, t.Host, LoopbackHost)
		}
		for _, m := range t.Members {
			host, _, err := endpointHostPort(m.Endpoint)
			if err != nil || host != LoopbackHost {
				c.bad(Members, "member %s/%s is not at %s", t.ID, m.ID, LoopbackHost)
			}
		}
	}
}

// vllmArgs are the flags of one vLLM container that the router depends on.
type vllmArgs struct {
	host, model string
	port        int32
	hasPort     bool
}

func parseVLLM(ctr *corev1.Container) vllmArgs {
	var a vllmArgs
	args := append(slices.Clone(ctr.Command[1:]), ctr.Args...)
	if len(args) > 0 && args[0] == "serve" {
		args = args[1:]
	}
	a.host, _ = flagValue(args, "--host")
	if p, ok := flagValue(args, "--port"); ok {
		if n, err := strconv.ParseUint(p, 10, 16); err == nil && n > 0 {
			a.port, a.hasPort = int32(n), true
		}
	}
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		a.model = args[0]
	}
	if m, ok := flagValue(args, "--served-model-name"); ok {
		a.model = m
	}
	return a
}

// ports: each replica member is one vLLM container of this pod, on the member's port, serving the
// tier's model; the router listens on all interfaces on its container port.
func (c *checker) ports() {
	if c.cfg == nil {
		return
	}
	type member struct{ tier, id, model string }
	want := map[int32]member{}
	for _, t := range c.cfg.Tiers {
		for _, m := range t.Members {
			if _, port, err := endpointHostPort(m.Endpoint); err == nil && t.Kind == "replica" {
				want[port] = member{t.ID, m.ID, t.ServedModel}
			}
		}
	}
	seen := map[int32]string{}
	for _, v := range c.vllms {
		a := parseVLLM(v)
		if !a.hasPort {
			c.bad(Ports, "%s has no numeric --port", v.Name)
			continue
		}
		if a.host != LoopbackHost {
			c.bad(Ports, "%s listens on host %q, want --host=%s (nothing outside the pod reaches a replica)", v.Name, a.host, LoopbackHost)
		}
		if other, dup := seen[a.port]; dup {
			c.bad(Ports, "%s and %s both listen on port %d", other, v.Name, a.port)
		}
		seen[a.port] = v.Name
		m, ok := want[a.port]
		switch {
		case !ok:
			c.bad(Ports, "%s listens on port %d, which no replica tier member names", v.Name, a.port)
		case a.model != m.model:
			c.bad(Ports, "%s serves %q but member %s/%s expects %q", v.Name, a.model, m.tier, m.id, m.model)
		}
		if a.port == c.cfg.listenPort {
			c.bad(Ports, "%s listens on the router's port %d", v.Name, a.port)
		}
	}
	for port, m := range want {
		if _, ok := seen[port]; !ok {
			c.bad(Ports, "member %s/%s at port %d has no vLLM container listening there", m.tier, m.id, port)
		}
	}
	if !slices.ContainsFunc(c.anvil.Ports, func(p corev1.ContainerPort) bool { return p.ContainerPort == c.cfg.listenPort }) {
		c.bad(Ports, "the router listens on %d but its container declares no such port", c.cfg.listenPort)
	}
	if h := c.cfg.listenHost; h != "" && h != "0.0.0.0" && h != "::" {
		c.bad(Ports, "the router listens on %s only; the kubelet and the Service reach the pod IP", h)
	}
}

// flagValue finds --name VALUE or --name=VALUE; a value may carry a trailing "# comment" only in YAML,
// never here.
func flagValue(args []string, name string) (string, bool) {
	for i, a := range args {
		if a == name && i+1 < len(args) {
			return args[i+1], true
		}
		if v, ok := strings.CutPrefix(a, name+"="); ok {
			return v, true
		}
	}
	return "", false
}

// mountOf returns the mount of ctr that holds file (the deepest one) and its pod volume.
func (c *checker) mountOf(ctr *corev1.Container, file string) (*corev1.VolumeMount, *corev1.Volume) {
	var best *corev1.VolumeMount
	for i := range ctr.VolumeMounts {
		m := &ctr.VolumeMounts[i]
		dir := strings.TrimSuffix(m.MountPath, "/")
		holds := strings.HasPrefix(path.Clean(file), dir+"/") || path.Clean(file) == dir // a subPath mounts one file
		if holds && (best == nil || len(dir) > len(best.MountPath)) {
			best = m
		}
	}
	if best == nil {
		return nil, nil
	}
	for i := range c.pod.Volumes {
		if c.pod.Volumes[i].Name == best.Name {
			return best, &c.pod.Volumes[i]
		}
	}
	return best, nil
}

// volumePath is where file, seen through mount, lies inside the mount's volume.
func volumePath(mount *corev1.VolumeMount, file string) string {
	rest := strings.TrimPrefix(strings.TrimPrefix(path.Clean(file), strings.TrimSuffix(mount.MountPath, "/")), "/")
	if mount.SubPath == "" {
		return rest
	}
	return path.Join(mount.SubPath, rest)
}

// portOf resolves a probe's or Service's target port against a container's declared ports.
func portOf(ctr *corev1.Container, p intstr.IntOrString) (int32, bool) {
	if p.Type == intstr.Int {
		return p.IntVal, true
	}
	for _, cp := range ctr.Ports {
		if cp.Name == p.StrVal {
			return cp.ContainerPort, true
		}
	}
	return 0, false
}
