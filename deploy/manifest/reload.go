package manifest

import (
	"crypto/sha256"
	"encoding/hex"
	"maps"
	"slices"
	"strings"
)

// The contract of a live config change.
const (
	// ConfigMapName is the router config's ConfigMap, a name that never changes: kustomize's hash
	// suffix (off for this one generator) would rename it on every edit, and the renamed reference in
	// the pod template would roll the pod, restarting the host's vLLM containers with the router.
	ConfigMapName = "anvil-router-config"
	// WatchFlag makes `anvil-router serve` reload its config file when its content changes on disk,
	// which is how the kubelet's update of the ConfigMap volume reaches the running router.
	WatchFlag = "--watch"
)

// reload: a config edit changes the ConfigMap's data and nothing in the pod template, and reaches
// the running router: the ConfigMap keeps its name and is not immutable, its volume is mounted as a
// directory (the kubelet never updates a subPath mount), the router runs serve --watch, and no pod
// template annotation carries the config's digest (a checksum annotation rolls the pod on every edit).
func (c *checker) reload() {
	file, ok := flagValue(c.anvil.Args, "--config")
	if !ok {
		return // the config invariant reports it
	}
	if !c.watches() {
		c.bad(Reload, "the router does not run serve %s: a ConfigMap update would not reach it until the pod restarts", WatchFlag)
	}
	mount, vol := c.mountOf(c.anvil, file)
	if vol == nil || vol.ConfigMap == nil {
		return // the config invariant reports it
	}
	if mount.SubPath != "" || mount.SubPathExpr != "" {
		c.bad(Reload, "%s is mounted with subPath %q: the kubelet never updates a subPath mount; mount the ConfigMap as a directory", file, mount.SubPath+mount.SubPathExpr)
	}
	if name := vol.ConfigMap.Name; name != ConfigMapName {
		c.bad(Reload, "the config volume names ConfigMap %s, want %s: a generated name (kustomize's hash suffix) changes with every edit and rolls the pod", name, ConfigMapName)
	}
	for _, cm := range c.set.ConfigMaps {
		if cm.Name != vol.ConfigMap.Name {
			continue
		}
		if cm.Immutable != nil && *cm.Immutable {
			c.bad(Reload, "ConfigMap %s is immutable: an edit cannot reach the mounted file", cm.Name)
		}
		annotations := c.sts.Spec.Template.Annotations
		for _, key := range slices.Sorted(maps.Keys(annotations)) {
			if slices.ContainsFunc(slices.Collect(maps.Values(cm.Data)), func(doc string) bool {
				sum := sha256.Sum256([]byte(doc))
				return strings.Contains(annotations[key], hex.EncodeToString(sum[:]))
			}) {
				c.bad(Reload, "pod template annotation %s carries the config's digest: every edit would roll the pod", key)
			}
		}
	}
}

// watches reports whether the router's args turn --watch on (the flag alone, or =true).
func (c *checker) watches() bool {
	on := false
	for _, a := range c.anvil.Args {
		switch a {
		case WatchFlag, WatchFlag + "=true":
			on = true
		case WatchFlag + "=false":
			on = false
		}
	}
	return on
}
