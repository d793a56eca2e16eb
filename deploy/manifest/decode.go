package manifest

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

// Set is one rendered kustomization, every object decoded into its official type.
type Set struct {
	StatefulSets    []*appsv1.StatefulSet
	Services        []*corev1.Service
	ConfigMaps      []*corev1.ConfigMap
	Secrets         []*corev1.Secret // decoded so that the checks can refuse them: tokens are never committed
	Budgets         []*policyv1.PodDisruptionBudget
	ServiceMonitors []*monitoringv1.ServiceMonitor
}

// ErrDecode wraps every decoding failure.
var ErrDecode = errors.New("manifest does not decode")

// maxDocBytes bounds one YAML document; the StatefulSet is a few tens of KiB.
const maxDocBytes = 1 << 20

// Decode splits multi-document YAML and decodes each document strictly with the Kubernetes API
// machinery: an unknown or duplicated field, a wrong type, or a kind outside the Set is an error.
func Decode(data []byte) (*Set, error) {
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{corev1.AddToScheme, appsv1.AddToScheme,
		policyv1.AddToScheme, monitoringv1.AddToScheme} {
		if err := add(scheme); err != nil {
			return nil, err
		}
	}
	dec := serializer.NewCodecFactory(scheme, serializer.EnableStrict).UniversalDeserializer()
	set := &Set{}
	r := utilyaml.NewYAMLReader(bufio.NewReaderSize(bytes.NewReader(data), 64<<10))
	for n := 1; ; n++ {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return set, nil
		}
		if err != nil {
			return nil, fmt.Errorf("%w: document %d: %v", ErrDecode, n, err)
		}
		if len(doc) > maxDocBytes {
			return nil, fmt.Errorf("%w: document %d exceeds %d bytes", ErrDecode, n, maxDocBytes)
		}
		if len(bytes.TrimSpace(stripComments(doc))) == 0 {
			continue
		}
		obj, _, err := dec.Decode(doc, nil, nil)
		if err != nil {
			return nil, fmt.Errorf("%w: document %d: %v", ErrDecode, n, err)
		}
		if err := set.add(obj); err != nil {
			return nil, fmt.Errorf("%w: document %d: %v", ErrDecode, n, err)
		}
	}
}

func (s *Set) add(obj runtime.Object) error {
	switch o := obj.(type) {
	case *appsv1.StatefulSet:
		s.StatefulSets = append(s.StatefulSets, o)
	case *corev1.Service:
		s.Services = append(s.Services, o)
	case *corev1.ConfigMap:
		s.ConfigMaps = append(s.ConfigMaps, o)
	case *corev1.Secret:
		s.Secrets = append(s.Secrets, o)
	case *policyv1.PodDisruptionBudget:
		s.Budgets = append(s.Budgets, o)
	case *monitoringv1.ServiceMonitor:
		s.ServiceMonitors = append(s.ServiceMonitors, o)
	default:
		return fmt.Errorf("kind %s is not part of an Anvil deployment", obj.GetObjectKind().GroupVersionKind().Kind)
	}
	return nil
}

// stripComments drops whole-line comments and document markers, so a document of comments only
// counts as empty.
func stripComments(doc []byte) []byte {
	var out []byte
	for _, line := range bytes.Split(doc, []byte("\n")) {
		if t := bytes.TrimSpace(line); len(t) > 0 && t[0] != '#' && string(t) != "---" {
			out = append(out, line...)
			out = append(out, '\n')
		}
	}
	return out
}
