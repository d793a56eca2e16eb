package manifest

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// edit replaces old by new, once, in one file of the base kustomization.
type edit struct{ file, old, new string }

// renderEdited renders a copy of the base kustomization with edits applied.
func renderEdited(t *testing.T, edits ...edit) *Set {
	t.Helper()
	dir := t.TempDir()
	entries, err := os.ReadDir(baseDir)
	require.NoError(t, err)
	for _, e := range entries {
		require.NoError(t, os.WriteFile(filepath.Join(dir, e.Name()), mustRead(t, filepath.Join(baseDir, e.Name())), 0o644))
	}
	for _, e := range edits {
		p := filepath.Join(dir, e.file)
		src := string(mustRead(t, p))
		require.Contains(t, src, e.old, "the edit applies to the shipped %s", e.file)
		require.NoError(t, os.WriteFile(p, []byte(strings.Replace(src, e.old, e.new, 1)), 0o644))
	}
	out, err := Render(dir)
	require.NoError(t, err)
	set, err := Decode(out)
	require.NoError(t, err)
	return set
}

// template is the StatefulSet's pod template, serialized: the StatefulSet controller rolls the pods
// exactly when it changes (the update revision is computed from it).
func template(t *testing.T, s *Set) string {
	t.Helper()
	b, err := json.Marshal(s.StatefulSets[0].Spec.Template)
	require.NoError(t, err)
	return string(b)
}

// A config edit (a member ceiling, a gate) changes the ConfigMap's data under the same name and no
// pod template: the pods do not roll, the router's --watch picks the change up. An image or a vLLM
// argument changes the pod template: the pods roll, as before. With kustomize's hash suffix back on,
// the same ceiling edit rolls the pods, and the checks report it.
func TestConfigEditsDoNotRollThePods(t *testing.T) {
	shipped := renderEdited(t)
	ceiling := edit{"router.yaml", "max_concurrency: 32\n      - id: vllm-1", "max_concurrency: 24\n      - id: vllm-1"}
	cases := []struct {
		name  string
		edits []edit
		rolls bool
	}{
		{"a member ceiling", []edit{ceiling}, false},
		{"a gate", []edit{{"router.yaml", "max_output_tokens: 4096", "max_output_tokens: 2048"}}, false},
		{"the router image", []edit{{"kustomization.yaml", "newTag: 0.0.0-dev", "newTag: 0.0.1"}}, true},
		{"the vLLM image", []edit{{"statefulset.yaml", "image: vllm/vllm-openai:v0.12.0", "image: vllm/vllm-openai:v0.12.1"}}, true},
		{"a vLLM argument", []edit{{"statefulset.yaml", "            - --port=8000\n", "            - --port=8000\n            - --max-model-len=16384\n"}}, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			edited := renderEdited(t, c.edits...)
			if c.rolls {
				assert.NotEqual(t, template(t, shipped), template(t, edited), "the pods roll")
				return
			}
			assert.Equal(t, template(t, shipped), template(t, edited), "no pod template change: the pods do not roll")
			require.Len(t, edited.ConfigMaps, 1)
			assert.Equal(t, ConfigMapName, edited.ConfigMaps[0].Name, "the same ConfigMap")
			assert.NotEqual(t, shipped.ConfigMaps[0].Data, edited.ConfigMaps[0].Data, "the change is in its data")
			assert.Empty(t, Check(context.Background(), edited, theRouter(t)))
		})
	}
	t.Run("with the hash suffix back on, a ceiling edit rolls the pods", func(t *testing.T) {
		hashed := edit{"kustomization.yaml", "      disableNameSuffixHash: true\n", ""}
		before, after := renderEdited(t, hashed), renderEdited(t, hashed, ceiling)
		assert.NotEqual(t, template(t, before), template(t, after), "the renamed ConfigMap reference changes the template")
		assert.Equal(t, []Invariant{Reload}, invariants(Check(context.Background(), after, theRouter(t))))
	})
}

// Quiesce and Kubernetes: readiness sets a deliberate quiesce aside, so the rolling update, one host
// at a time, never stalls on a quiesced host and the budget does not count it; each planted departure
// from that combination fails exactly its invariant.
func TestPlantedRolloutAndBudgetErrors(t *testing.T) {
	cases := []plant{
		{"readiness on the traffic route, which follows quiesce", func(s *Set) {
			container(s, "anvil").ReadinessProbe.HTTPGet.Path = TrafficPath
		}, Probes},
		{"startup on readiness: restarts while the models load", func(s *Set) {
			container(s, "anvil").StartupProbe.HTTPGet.Path = ReadinessPath
		}, Probes},
		{"rolls left to hand work", func(s *Set) {
			s.StatefulSets[0].Spec.UpdateStrategy = appsv1.StatefulSetUpdateStrategy{Type: appsv1.OnDeleteStatefulSetStrategyType}
		}, Rollout},
		{"two hosts at a time", func(s *Set) {
			s.StatefulSets[0].Spec.UpdateStrategy.RollingUpdate.MaxUnavailable = ptr(intstr.FromInt32(2))
		}, Rollout},
		{"ordered pod management", func(s *Set) { s.StatefulSets[0].Spec.PodManagementPolicy = appsv1.OrderedReadyPodManagement }, Rollout},
		{"a budget that makes a loading host block drains", func(s *Set) {
			s.Budgets[0].Spec.UnhealthyPodEvictionPolicy = ptr(policyv1.IfHealthyBudget)
		}, Service},
		{"a budget by minAvailable", func(s *Set) {
			s.Budgets[0].Spec.MaxUnavailable, s.Budgets[0].Spec.MinAvailable = nil, ptr(intstr.FromInt32(1))
		}, Service},

		{"upstream.timeout raised past shutdown_grace", editConfig("timeout: 5m #", "timeout: 9m #"), Grace},
		{"upstream.timeout no shutdown_grace can cover", editConfig("timeout: 5m #", "timeout: 20m #"), Grace},
		{"shutdown_grace lowered below the longest stream", editConfig("shutdown_grace: 6m5s", "shutdown_grace: 6m"), Grace},
		{"a vLLM preStop just short of the derived one", func(s *Set) { container(s, "vllm-1").Lifecycle.PreStop.Sleep.Seconds = 319 }, Grace},
		{"a grace period short of the replicas' shutdown", func(s *Set) { pod(s).TerminationGracePeriodSeconds = ptr(int64(330)) }, Grace},

		{"observer tokens as env", func(s *Set) {
			a := container(s, "anvil")
			a.Env = append(a.Env, corev1.EnvVar{Name: "ANVIL_OBSERVER_TOKENS", ValueFrom: &corev1.EnvVarSource{
				SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "anvil-observer-token"}, Key: "token"}}})
		}, Secrets},
		{"inline observer tokens", editConfig("observer_tokens_file: /etc/anvil/secrets/observer/token",
			`observer_tokens: ["inline-observer-token-0123456789"]`), Secrets},
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

// The shipped timings are exactly what Derive renders from the shipped config's upstream.timeout: the
// config's shutdown_grace, every vLLM preStop and the pod's grace period.
func TestShippedTimingsAreDerivedFromTheConfig(t *testing.T) {
	set := load(t, baseDir)
	normalized, err := theRouter(t).CheckConfig(context.Background(), []byte(set.ConfigMaps[0].Data["router.yaml"]))
	require.NoError(t, err)
	cfg, err := parseRouterConfig(normalized)
	require.NoError(t, err)
	router, ok := preStopSleep(container(set, AnvilContainer))
	require.True(t, ok)
	d := Derive(cfg.timeout, router)
	assert.Equal(t, d.ShutdownGrace, cfg.grace, "shutdown_grace")
	for _, name := range []string{"vllm-0", "vllm-1", "vllm-2", "vllm-3"} {
		s, _ := preStopSleep(container(set, name))
		assert.Equal(t, d.ReplicaPreStop, s, name)
	}
	assert.Equal(t, d.TerminationGracePeriod, *pod(set).TerminationGracePeriodSeconds)
	assert.Equal(t, Timings{ShutdownGrace: 365 * time.Second, ReplicaPreStop: 380, TerminationGracePeriod: 395}, d,
		"the figures docs/DEPLOYMENT.md quotes")
	// The router's default upstream.timeout (10m) leaves no room: shutdown_grace is at most 10m.
	assert.Greater(t, Derive(10*time.Minute, router).ShutdownGrace, MaxShutdownGrace)
}
