package manifest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

const (
	baseDir       = "../kubernetes/base"
	prometheusDir = "../kubernetes/overlays/prometheus"
)

// load renders a kustomization and decodes it; each call returns fresh objects to mutate.
func load(t *testing.T, dir string) *Set {
	t.Helper()
	out, err := Render(dir)
	require.NoError(t, err)
	set, err := Decode(out)
	require.NoError(t, err)
	return set
}

func invariants(ps []Problem) []Invariant {
	var out []Invariant
	for _, p := range ps {
		if !slices.Contains(out, p.Invariant) {
			out = append(out, p.Invariant)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

func TestShippedManifestsHoldEveryInvariant(t *testing.T) {
	for _, c := range []struct {
		dir      string
		monitors int
	}{{baseDir, 0}, {prometheusDir, 1}} {
		t.Run(filepath.Base(c.dir), func(t *testing.T) {
			set := load(t, c.dir)
			assert.Len(t, set.StatefulSets, 1)
			assert.Len(t, set.Services, 2)
			assert.Len(t, set.ConfigMaps, 1)
			assert.Len(t, set.Budgets, 1)
			assert.Empty(t, set.Secrets)
			assert.Len(t, set.ServiceMonitors, c.monitors)
			probs := Check(context.Background(), set, theRouter(t))
			assert.Empty(t, probs, "%v", probs)
		})
	}
}

// Every YAML file under deploy/kubernetes decodes strictly on its own, not only once rendered:
// manifests into the API types, kustomizations through kustomize (which refuses unknown fields), and
// the router config through the router's own check (in TestShippedManifestsHoldEveryInvariant).
func TestEveryFileDecodesStrictly(t *testing.T) {
	n := 0
	err := filepath.WalkDir("../kubernetes", func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".yaml") {
			return err
		}
		n++
		switch filepath.Base(path) {
		case "kustomization.yaml":
			_, err := Render(filepath.Dir(path))
			assert.NoError(t, err, path)
		case "router.yaml":
			_, err := theRouter(t).CheckConfig(context.Background(), mustRead(t, path))
			assert.NoError(t, err, path)
		default:
			_, err := Decode(mustRead(t, path))
			assert.NoError(t, err, path)
		}
		return nil
	})
	require.NoError(t, err)
	assert.GreaterOrEqual(t, n, 7)
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	return b
}

// container finds a container of the set's StatefulSet by name.
func container(s *Set, name string) *corev1.Container {
	pod := &s.StatefulSets[0].Spec.Template.Spec
	for i := range pod.Containers {
		if pod.Containers[i].Name == name {
			return &pod.Containers[i]
		}
	}
	panic("no container " + name)
}

func pod(s *Set) *corev1.PodSpec { return &s.StatefulSets[0].Spec.Template.Spec }

// editConfig rewrites the router config inside the generated ConfigMap.
func editConfig(old, new string) func(*Set) {
	return func(s *Set) {
		cm := s.ConfigMaps[0]
		doc := cm.Data["router.yaml"]
		if !strings.Contains(doc, old) {
			panic("config has no " + old)
		}
		cm.Data["router.yaml"] = strings.ReplaceAll(doc, old, new)
	}
}

func removeMount(ctr *corev1.Container, name string) {
	ctr.VolumeMounts = slices.DeleteFunc(ctr.VolumeMounts, func(m corev1.VolumeMount) bool { return m.Name == name })
}

func mount(ctr *corev1.Container, name string) *corev1.VolumeMount {
	for i := range ctr.VolumeMounts {
		if ctr.VolumeMounts[i].Name == name {
			return &ctr.VolumeMounts[i]
		}
	}
	panic("no mount " + name)
}

func ptr[T any](v T) *T { return &v }

// plant is one deliberate error and the one invariant that must report it.
type plant struct {
	name   string
	mutate func(*Set)
	want   Invariant
}

// Each planted error is reported, and only under its own invariant.
func TestPlantedErrorsFailExactlyTheirInvariant(t *testing.T) {
	cases := []plant{
		{"config the router refuses", editConfig("listen: 0.0.0.0:8080", "listen: nope"), Config},
		{"config with an unknown key", editConfig("shutdown_grace:", "shutdown_grce:"), Config},
		{"config not mounted", func(s *Set) { removeMount(container(s, "anvil"), "config") }, Config},
		{"router not started with --config", func(s *Set) { container(s, "anvil").Args = []string{"serve", "--demo"} }, Config},

		{"member endpoint on another host", func(s *Set) {
			editConfig("host: 127.0.0.1", "host: 10.0.0.5")(s)
			editConfig("http://127.0.0.1:", "http://10.0.0.5:")(s)
		}, Members},

		{"member port without a vLLM container", editConfig("http://127.0.0.1:8003", "http://127.0.0.1:8005"), Ports},
		{"replica serves another model", func(s *Set) {
			container(s, "vllm-1").Args[1] = "--served-model-name=Qwen/Qwen2.5-72B-Instruct"
		}, Ports},
		{"replica listens on all interfaces", func(s *Set) { container(s, "vllm-2").Args[2] = "--host=0.0.0.0" }, Ports},
		{"router listens on loopback only", editConfig("listen: 0.0.0.0:8080", "listen: 127.0.0.1:8080"), Ports},
		{"router container port differs from listen", func(s *Set) {
			editConfig("listen: 0.0.0.0:8080", "listen: 0.0.0.0:8081")(s)
			for _, p := range []*corev1.Probe{container(s, "anvil").LivenessProbe, container(s, "anvil").ReadinessProbe, container(s, "anvil").StartupProbe} {
				p.HTTPGet.Port = intstr.FromInt32(8081)
			}
			for _, svc := range s.Services {
				svc.Spec.Ports[0].TargetPort = intstr.FromInt32(8081)
			}
		}, Ports},

		{"readiness probe on a route that does not exist", func(s *Set) { container(s, "anvil").ReadinessProbe.HTTPGet.Path = "/nope" }, Probes},
		{"liveness probe on an authenticated route", func(s *Set) { container(s, "anvil").LivenessProbe.HTTPGet.Path = "/v1/models" }, Probes},
		{"readiness on the liveness route", func(s *Set) { container(s, "anvil").ReadinessProbe.HTTPGet.Path = "/healthz" }, Probes},
		{"probe on another port", func(s *Set) { container(s, "anvil").LivenessProbe.HTTPGet.Port = intstr.FromInt32(9090) }, Probes},
		{"no startup probe", func(s *Set) { container(s, "anvil").StartupProbe = nil }, Probes},
		{"vLLM startup too short for a model load", func(s *Set) { container(s, "vllm-0").StartupProbe.FailureThreshold = 10 }, Probes},
		{"vLLM probed over the pod IP", func(s *Set) {
			container(s, "vllm-3").LivenessProbe.Exec = nil
			container(s, "vllm-3").LivenessProbe.HTTPGet = &corev1.HTTPGetAction{Path: "/health", Port: intstr.FromInt32(8003)}
		}, Probes},
		{"vLLM probe fetches a neighbour", func(s *Set) {
			e := container(s, "vllm-1").StartupProbe.Exec
			e.Command[2] = strings.Replace(e.Command[2], ":8001/", ":8000/", 1)
		}, Probes},

		{"grace period below shutdown_grace", func(s *Set) { pod(s).TerminationGracePeriodSeconds = ptr(int64(60)) }, Grace},
		{"shutdown_grace raised past the grace period", editConfig("shutdown_grace: 6m5s", "shutdown_grace: 7m"), Grace},
		{"router without a preStop sleep", func(s *Set) { container(s, "anvil").Lifecycle = nil }, Grace},
		{"vLLM stops before the router drains", func(s *Set) { container(s, "vllm-2").Lifecycle.PreStop.Sleep.Seconds = 30 }, Grace},

		{"admin token as plain env", func(s *Set) {
			a := container(s, "anvil")
			a.Env = append(a.Env, corev1.EnvVar{Name: "ANVIL_ADMIN_TOKEN", Value: "plain-text-admin-token"})
		}, Secrets},
		{"caller tokens from a Secret, but as env", func(s *Set) {
			a := container(s, "anvil")
			a.Env = append(a.Env, corev1.EnvVar{Name: "ANVIL_API_TOKENS", ValueFrom: &corev1.EnvVarSource{
				SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "anvil-caller-tokens"}, Key: "tokens"}}})
		}, Secrets},
		{"a Hugging Face token in plain text", func(s *Set) {
			v := container(s, "vllm-0")
			v.Env = append(v.Env, corev1.EnvVar{Name: "HF_TOKEN", Value: "hf_plaintext"})
		}, Secrets},
		{"inline admin token in the config", editConfig("admin_token_file: /etc/anvil/secrets/admin/token", `admin_token: "inline-admin-token-0123456789"`), Secrets},
		{"caller tokens file off the Secret mount", editConfig("caller_tokens_file: /etc/anvil/secrets/caller/tokens", "caller_tokens_file: /etc/anvil/tokens"), Secrets},
		{"a committed Secret", func(s *Set) {
			s.Secrets = append(s.Secrets, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "anvil-admin-token"},
				StringData: map[string]string{"token": "committed-admin-token"}})
		}, Secrets},

		{"intent on the root filesystem", func(s *Set) { removeMount(container(s, "anvil"), "intent") }, Intent},
		{"intent on a read-only mount", func(s *Set) { mount(container(s, "anvil"), "intent").ReadOnly = true }, Intent},
		{"intent on an emptyDir", func(s *Set) {
			sts := s.StatefulSets[0]
			sts.Spec.VolumeClaimTemplates = slices.DeleteFunc(sts.Spec.VolumeClaimTemplates,
				func(p corev1.PersistentVolumeClaim) bool { return p.Name == "intent" })
			pod(s).Volumes = append(pod(s).Volumes, corev1.Volume{Name: "intent",
				VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}})
		}, Intent},
		{"no intent_file", editConfig("intent_file: /var/lib/anvil/intent.json", ""), Intent},

		{"router without readOnlyRootFilesystem", func(s *Set) { container(s, "anvil").SecurityContext.ReadOnlyRootFilesystem = nil }, Security},
		{"vLLM may escalate privileges", func(s *Set) { container(s, "vllm-2").SecurityContext.AllowPrivilegeEscalation = nil }, Security},
		{"a capability added", func(s *Set) {
			container(s, "vllm-1").SecurityContext.Capabilities.Add = []corev1.Capability{"SYS_ADMIN"}
		}, Security},
		{"capabilities not dropped", func(s *Set) { container(s, "anvil").SecurityContext.Capabilities = nil }, Security},
		{"seccomp unconfined", func(s *Set) {
			container(s, "anvil").SecurityContext.SeccompProfile = &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeUnconfined}
		}, Security},
		{"router as root", func(s *Set) {
			sc := container(s, "anvil").SecurityContext
			sc.RunAsNonRoot, sc.RunAsUser = ptr(false), ptr(int64(0))
		}, Security},
		{"privileged replica", func(s *Set) { container(s, "vllm-0").SecurityContext.Privileged = ptr(true) }, Security},
		{"service account token mounted", func(s *Set) { pod(s).AutomountServiceAccountToken = nil }, Security},
		{"host network", func(s *Set) { pod(s).HostNetwork = true }, Security},

		{"two GPUs for one replica", func(s *Set) {
			r := &container(s, "vllm-0").Resources
			r.Limits[GPUResource], r.Requests[GPUResource] = resource.MustParse("2"), resource.MustParse("2")
		}, Resources},
		{"replica without a GPU", func(s *Set) {
			r := &container(s, "vllm-3").Resources
			delete(r.Limits, GPUResource)
			delete(r.Requests, GPUResource)
		}, Resources},
		{"router without a memory limit", func(s *Set) { delete(container(s, "anvil").Resources.Limits, corev1.ResourceMemory) }, Resources},
		{"router takes a GPU", func(s *Set) { container(s, "anvil").Resources.Limits[GPUResource] = resource.MustParse("1") }, Resources},

		{"no anti-affinity", func(s *Set) { pod(s).Affinity = nil }, Spread},
		{"anti-affinity per zone, not per host", func(s *Set) {
			pod(s).Affinity.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution[0].TopologyKey = "topology.kubernetes.io/zone"
		}, Spread},

		{"no front Service", func(s *Set) {
			s.Services = slices.DeleteFunc(s.Services, func(v *corev1.Service) bool { return v.Spec.ClusterIP != corev1.ClusterIPNone })
		}, Service},
		{"front Service on the wrong port", func(s *Set) {
			for _, v := range s.Services {
				if v.Name == "anvil" {
					v.Spec.Ports[0].TargetPort = intstr.FromString("metrics")
				}
			}
		}, Service},
		{"front Service selects a label the pods lack", func(s *Set) {
			for _, v := range s.Services {
				if v.Name == "anvil" {
					v.Spec.Selector["anvil-serving"] = "yes"
				}
			}
		}, Service},
		{"no headless Service", func(s *Set) {
			s.Services = slices.DeleteFunc(s.Services, func(v *corev1.Service) bool { return v.Spec.ClusterIP == corev1.ClusterIPNone })
		}, Service},
		{"no PodDisruptionBudget", func(s *Set) { s.Budgets = nil }, Service},
		{"PodDisruptionBudget that blocks every drain", func(s *Set) { s.Budgets[0].Spec.MaxUnavailable = ptr(intstr.FromInt32(0)) }, Service},

		{"config under a generated (hashed) name", func(s *Set) {
			s.ConfigMaps[0].Name = "anvil-router-config-7m2c8k4f9d"
			for i := range pod(s).Volumes {
				if v := &pod(s).Volumes[i]; v.ConfigMap != nil {
					v.ConfigMap.Name = s.ConfigMaps[0].Name
				}
			}
		}, Reload},
		{"config mounted by subPath", func(s *Set) {
			m := mount(container(s, "anvil"), "config")
			m.MountPath, m.SubPath = "/etc/anvil/config/router.yaml", "router.yaml"
		}, Reload},
		{"router without --watch", func(s *Set) {
			container(s, "anvil").Args = []string{"serve", "--config", "/etc/anvil/config/router.yaml"}
		}, Reload},
		{"--watch turned off again", func(s *Set) {
			a := container(s, "anvil")
			a.Args = append(a.Args, "--watch=false")
		}, Reload},
		{"immutable config", func(s *Set) { s.ConfigMaps[0].Immutable = ptr(true) }, Reload},
		{"a checksum annotation rolls the pod on every edit", func(s *Set) {
			sum := sha256.Sum256([]byte(s.ConfigMaps[0].Data["router.yaml"]))
			s.StatefulSets[0].Spec.Template.Annotations = map[string]string{"checksum/config": hex.EncodeToString(sum[:])}
		}, Reload},

		{"a second StatefulSet", func(s *Set) { s.StatefulSets = append(s.StatefulSets, s.StatefulSets[0].DeepCopy()) }, Shape},
		{"an unknown sidecar", func(s *Set) {
			side := container(s, "anvil").DeepCopy()
			side.Name, side.Command = "debug", []string{"sh"}
			pod(s).Containers = append(pod(s).Containers, *side)
		}, Shape},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			set := load(t, baseDir)
			c.mutate(set)
			probs := Check(context.Background(), set, theRouter(t))
			assert.Equal(t, []Invariant{c.want}, invariants(probs), "%v", probs)
		})
	}
}

func TestPlantedServiceMonitorErrors(t *testing.T) {
	sm := func(s *Set) *monitoringv1.ServiceMonitor { return s.ServiceMonitors[0] }
	cases := []plant{
		{"scrapes another path", func(s *Set) { sm(s).Spec.Endpoints[0].Path = "/stats" }, Monitor},
		{"without the observer token", func(s *Set) { sm(s).Spec.Endpoints[0].Authorization = nil }, Monitor},
		{"with another Secret", func(s *Set) { sm(s).Spec.Endpoints[0].Authorization.Credentials.Name = "anvil-caller-tokens" }, Monitor},
		{"with the admin token", func(s *Set) {
			sm(s).Spec.Endpoints[2].Authorization.Credentials = &corev1.SecretKeySelector{
				LocalObjectReference: corev1.LocalObjectReference{Name: "anvil-admin-token"}, Key: "token"}
		}, Monitor},
		{"with the admin token, and the router reading it as its observer token too", func(s *Set) {
			editConfig("observer_tokens_file: /etc/anvil/secrets/observer/token", "observer_tokens_file: /etc/anvil/secrets/admin/token")(s)
			for i := range sm(s).Spec.Endpoints {
				sm(s).Spec.Endpoints[i].Authorization.Credentials.Name = "anvil-admin-token"
			}
		}, Monitor},
		{"a router without observer tokens", editConfig("observer_tokens_file: /etc/anvil/secrets/observer/token", ""), Monitor},
		{"a replica's page not scraped", func(s *Set) { sm(s).Spec.Endpoints = sm(s).Spec.Endpoints[:4] }, Monitor},
		{"a replica's page scraped twice", func(s *Set) {
			sm(s).Spec.Endpoints = append(sm(s).Spec.Endpoints, sm(s).Spec.Endpoints[1])
		}, Monitor},
		{"a page of no configured member", func(s *Set) { sm(s).Spec.Endpoints[4].Path = "/metrics/members/qwen-7b/vllm-9" }, Monitor},
		{"a replica's series without its member label", func(s *Set) {
			sm(s).Spec.Endpoints[3].RelabelConfigs = sm(s).Spec.Endpoints[3].RelabelConfigs[:1]
		}, Monitor},
		{"a replica's series labelled as another member", func(s *Set) {
			sm(s).Spec.Endpoints[3].RelabelConfigs[1].Replacement = ptr("vllm-0")
		}, Monitor},
		{"observer token file off the Secret mount", editConfig("observer_tokens_file: /etc/anvil/secrets/observer/token",
			"observer_tokens_file: /etc/anvil/observer-token"), Secrets},
		{"selects both Services", func(s *Set) {
			delete(sm(s).Spec.Selector.MatchLabels, "app.kubernetes.io/component")
		}, Monitor},
		{"on a port the Service lacks", func(s *Set) { sm(s).Spec.Endpoints[0].Port = "metrics" }, Monitor},
		// The admin token file off its Secret is the secrets invariant's finding, reported once.
		{"admin token file off the Secret mount", editConfig("admin_token_file: /etc/anvil/secrets/admin/token",
			"admin_token_file: /etc/anvil/admin-token"), Secrets},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			set := load(t, prometheusDir)
			c.mutate(set)
			probs := Check(context.Background(), set, theRouter(t))
			assert.Equal(t, []Invariant{c.want}, invariants(probs), "%v", probs)
		})
	}
}

// Decoding refuses what the API server would refuse, and what kubectl would silently drop.
func TestDecodeRefuses(t *testing.T) {
	rendered, err := Render(baseDir)
	require.NoError(t, err)
	text := string(rendered)
	cases := []struct{ name, old, new string }{
		{"unknown field", "  serviceName: anvil-hosts\n", "  serviceName: anvil-hosts\n  replicass: 3\n"},
		{"field with the wrong case", "  serviceName: anvil-hosts\n", "  ServiceName: anvil-hosts\n"},
		{"duplicate field", "  serviceName: anvil-hosts\n", "  serviceName: anvil-hosts\n  serviceName: other\n"},
		{"wrong type", "  replicas: 2\n", "  replicas: two\n"},
		{"unknown field in a container", "        name: anvil\n", "        name: anvil\n        imagePullPolicyy: Always\n"},
		{"an unknown API group", "apiVersion: policy/v1", "apiVersion: policy.example.com/v1"},
		{"not YAML", "kind: ConfigMap", "kind: [ConfigMap"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			require.True(t, strings.Contains(text, c.old), "the planted edit must apply")
			_, err := Decode([]byte(strings.Replace(text, c.old, c.new, 1)))
			assert.ErrorIs(t, err, ErrDecode)
		})
	}
	for _, doc := range []string{
		"apiVersion: v1\nkind: Namespace\nmetadata:\n  name: anvil\n",
		"apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: anvil\n",
	} {
		t.Run("a kind outside the deployment: "+strings.Fields(doc)[3], func(t *testing.T) {
			_, err := Decode([]byte(text + "---\n" + doc))
			assert.ErrorIs(t, err, ErrDecode)
			assert.ErrorContains(t, err, "is not part of an Anvil deployment")
		})
	}
}

func TestRenderRefusesABrokenKustomization(t *testing.T) {
	dir := t.TempDir()
	for _, f := range []string{"statefulset.yaml", "service.yaml", "pdb.yaml", "router.yaml", "kustomization.yaml"} {
		require.NoError(t, os.WriteFile(filepath.Join(dir, f), mustRead(t, filepath.Join(baseDir, f)), 0o644))
	}
	_, err := Render(dir)
	require.NoError(t, err, "the copy renders")
	k := filepath.Join(dir, "kustomization.yaml")
	require.NoError(t, os.WriteFile(k, []byte(strings.Replace(string(mustRead(t, k)), "resources:", "resourcez:", 1)), 0o644))
	_, err = Render(dir)
	assert.ErrorContains(t, err, "resourcez")
}

// The typed fixtures this file builds on must keep their meaning; a guard against a silent rename.
func TestFixtureShape(t *testing.T) {
	set := load(t, baseDir)
	var _ *appsv1.StatefulSet = set.StatefulSets[0]
	var _ *policyv1.PodDisruptionBudget = set.Budgets[0]
	names := []string{}
	for _, c := range pod(set).Containers {
		names = append(names, c.Name)
	}
	assert.Equal(t, []string{"anvil", "vllm-0", "vllm-1", "vllm-2", "vllm-3"}, names)
}
