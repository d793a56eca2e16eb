// Package image builds the anvil-router container image without a Docker daemon and without pulling
// a base image: an empty image plus one layer holding the static binary, a CA bundle and the passwd
// and group entries of the non-root user, written as an OCI layout and a `docker load`-able tarball
// with go-containerregistry.
//
// spec.go is the single source of truth for what the image promises (user, entrypoint, default
// command, exposed port, labels, file paths); deploy/Dockerfile repeats those fields for Docker users,
// and a test holds the two in agreement.
package image

import (
	_ "embed"
	"fmt"
	"strconv"
)

// Identity and layout of the image.
const (
	UID      = 65532 // distroless's "nonroot"; numeric, so Kubernetes can verify runAsNonRoot
	GID      = 65532
	UserName = "nonroot"

	BinaryPath   = "/usr/local/bin/anvil-router"
	CABundlePath = "/etc/ssl/certs/ca-certificates.crt"
	PasswdPath   = "/etc/passwd"
	GroupPath    = "/etc/group"
	// StateDir is an empty directory owned by the non-root user: the mount point for the volume that
	// holds the router's intent_file, so a fresh volume mounted there is writable by the router.
	StateDir = "/var/lib/anvil"
	// ConfigPath is where the default command looks for the router config (a mounted ConfigMap).
	ConfigPath = "/etc/anvil/config/router.yaml"
	// Port is the port the image documents (EXPOSE); the config's listen address must use it.
	Port = 8080

	Title       = "anvil-router"
	Description = "Anvil: a per-host LLM-serving router over vLLM replicas"
	Source      = "https://github.com/anvil-llm/anvil"

	// DefaultCABundle is where Debian's ca-certificates package keeps the bundle the image copies in.
	DefaultCABundle = "/etc/ssl/certs/ca-certificates.crt"
)

// OCI annotation keys used as image labels.
const (
	LabelTitle       = "org.opencontainers.image.title"
	LabelDescription = "org.opencontainers.image.description"
	LabelSource      = "org.opencontainers.image.source"
	LabelVersion     = "org.opencontainers.image.version"
	LabelRevision    = "org.opencontainers.image.revision"
)

// The passwd and group files of the image; deploy/Dockerfile copies these same files.
var (
	//go:embed rootfs/etc/passwd
	passwd []byte
	//go:embed rootfs/etc/group
	group []byte
)

// Passwd returns the image's /etc/passwd.
func Passwd() []byte { return append([]byte(nil), passwd...) }

// Group returns the image's /etc/group.
func Group() []byte { return append([]byte(nil), group...) }

// User is the image's USER: numeric uid:gid.
func User() string { return strconv.Itoa(UID) + ":" + strconv.Itoa(GID) }

// Entrypoint is the image's ENTRYPOINT (exec form: there is no shell).
func Entrypoint() []string { return []string{BinaryPath} }

// Cmd is the image's default CMD: serve the mounted config.
func Cmd() []string { return []string{"serve", "--config", ConfigPath} }

// ExposedPort is the image's EXPOSE entry.
func ExposedPort() string { return fmt.Sprintf("%d/tcp", Port) }

// Labels returns the image's labels for one build; version and revision are the same strings the
// linker puts into the binary, so `anvil-router version` and the labels agree.
func Labels(version, revision string) map[string]string {
	return map[string]string{
		LabelTitle:       Title,
		LabelDescription: Description,
		LabelSource:      Source,
		LabelVersion:     version,
		LabelRevision:    revision,
	}
}
