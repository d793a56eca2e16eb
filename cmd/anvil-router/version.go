package main

import (
	"fmt"
	"runtime/debug"

	"github.com/spf13/cobra"

	cmdline "github.com/anvil-llm/anvil/internal/cli"
)

// The linker sets these for release builds and images (make build, make image, the Dockerfile):
//
//	go build -ldflags "-X main.version=0.1.0 -X main.revision=<commit>" ./cmd/anvil-router
//
// They are never assigned at run time. Left empty, buildVersion falls back to what the Go toolchain
// stamped into the binary.
var (
	version  = ""
	revision = ""
)

// buildInfo is what `anvil-router version` prints; an image's OCI labels carry the same two values.
type buildInfo struct {
	Version  string `json:"version"`
	Revision string `json:"revision"`
}

// buildVersion prefers the linker-set strings. Otherwise it reads the module version (set by `go
// install ...@vX`) and the VCS revision Go stamps into builds from a checkout, marking a build from a
// modified tree "-dirty", so a binary never claims a cleaner origin than it has.
func buildVersion(linkVersion, linkRevision string, bi *debug.BuildInfo, ok bool) buildInfo {
	out := buildInfo{Version: linkVersion, Revision: linkRevision}
	var vcsRevision string
	var modified bool
	if ok {
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				vcsRevision = s.Value
			case "vcs.modified":
				modified = s.Value == "true"
			}
		}
	}
	if out.Version == "" {
		out.Version = "devel"
		if ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			out.Version = bi.Main.Version
		}
	}
	if out.Revision == "" {
		out.Revision = "unknown"
		if vcsRevision != "" {
			out.Revision = vcsRevision
			if modified {
				out.Revision += "-dirty"
			}
		}
	}
	return out
}

// currentVersion is this binary's buildVersion, as `anvil-router version` prints it and
// anvil_router_build_info labels it.
func currentVersion() buildInfo {
	bi, ok := debug.ReadBuildInfo()
	return buildVersion(version, revision, bi, ok)
}

func (b buildInfo) String() string {
	return fmt.Sprintf("anvil-router %s (revision %s)", b.Version, b.Revision)
}

func newVersion() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print the version and source revision of this binary",
		Long: "Print the version and source revision of this binary as\n\n" +
			"  anvil-router VERSION (revision REVISION)\n\n" +
			"or, with --json, as {\"version\":...,\"revision\":...}. A container image's\n" +
			"org.opencontainers.image.version and .revision labels carry the same two values.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			bi, ok := debug.ReadBuildInfo()
			info := buildVersion(version, revision, bi, ok)
			if asJSON {
				return cmdline.WriteJSON(cmd.OutOrStdout(), info)
			}
			_, err := fmt.Fprintln(cmd.OutOrStdout(), info)
			return err
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print version and revision as JSON")
	return cmd
}
