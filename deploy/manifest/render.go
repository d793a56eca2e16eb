// Package manifest renders Anvil's Kubernetes manifests (deploy/kubernetes) with kustomize, decodes
// every object strictly into the official API types, and checks the invariants the per-host shape
// depends on: probes on real routes (readiness with quiesce set aside), a config the router accepts,
// replicas on 127.0.0.1 at the ports their vLLM containers listen on, grace periods derived from
// upstream.timeout (Derive), a rolling update one host at a time, tokens only from mounted Secrets,
// intent on a persistent volume, a restricted security context, requests and limits, one pod per
// host, the Service, the PodDisruptionBudget, in its overlay the ServiceMonitor (the router's page and
// every replica's, with the observer token), and a config that reaches the running router without
// rolling the pod (a fixed-name ConfigMap mounted as a directory, serve --watch).
//
// The checks are a pure function of the decoded objects and a Router that answers for the real
// anvil-router binary (config check, and which routes a running router serves), so tests can plant
// one error at a time and see exactly that invariant fail.
package manifest

import (
	"fmt"

	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
)

// Render builds the kustomization in dir with kustomize's own library (what `kubectl apply -k` runs)
// and returns the resulting multi-document YAML.
func Render(dir string) ([]byte, error) {
	k := krusty.MakeKustomizer(krusty.MakeDefaultOptions())
	m, err := k.Run(filesys.MakeFsOnDisk(), dir)
	if err != nil {
		return nil, fmt.Errorf("kustomize %s: %w", dir, err)
	}
	out, err := m.AsYaml()
	if err != nil {
		return nil, fmt.Errorf("kustomize %s: %w", dir, err)
	}
	return out, nil
}
