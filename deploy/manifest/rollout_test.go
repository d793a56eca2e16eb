package manifest

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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
