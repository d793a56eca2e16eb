package image

import (
	"bytes"
	"fmt"
	"os"
	"path"
	"slices"
	"strings"
	"testing"

	"github.com/moby/buildkit/frontend/dockerfile/instructions"
	"github.com/moby/buildkit/frontend/dockerfile/parser"
	"github.com/moby/buildkit/frontend/dockerfile/shell"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// dockerfileProblems parses a Dockerfile with BuildKit's own parser and lists every way its final
// stage differs from spec.go: base, user, entrypoint, command, port, labels (expanded with the build
// args VERSION and REVISION), the files it copies and the linker flags of its build stage.
func dockerfileProblems(src []byte) []string {
	ast, err := parser.Parse(bytes.NewReader(src))
	if err != nil {
		return []string{"parse: " + err.Error()}
	}
	stages, _, err := instructions.Parse(ast.AST, nil)
	if err != nil {
		return []string{"parse: " + err.Error()}
	}
	if len(stages) < 2 {
		return []string{"want a build stage and a final stage"}
	}
	const version, revision = "7.7.7-test", "cafe0123-test"
	lex := shell.NewLex(parser.DefaultEscapeToken)
	env := shell.EnvsFromSlice([]string{"VERSION=" + version, "REVISION=" + revision})
	expand := func(w string) (string, error) {
		out, _, err := lex.ProcessWord(w, env)
		return out, err
	}

	var probs []string
	bad := func(format string, args ...any) { probs = append(probs, fmt.Sprintf(format, args...)) }
	final := stages[len(stages)-1]
	if final.BaseName != "scratch" {
		bad("final stage starts FROM %s, want scratch (an empty image)", final.BaseName)
	}
	var user string
	var entrypoint, cmd, ports []string
	labels := map[string]string{}
	copies := map[string]*instructions.CopyCommand{}
	for _, c := range final.Commands {
		if e, ok := c.(instructions.SupportsSingleWordExpansion); ok {
			if err := e.Expand(expand); err != nil {
				bad("%s: %v", c.Name(), err)
			}
		}
		switch c := c.(type) {
		case *instructions.UserCommand:
			user = c.User
		case *instructions.EntrypointCommand:
			if c.PrependShell {
				bad("ENTRYPOINT is in shell form; the image has no shell")
			}
			entrypoint = c.CmdLine
		case *instructions.CmdCommand:
			if c.PrependShell {
				bad("CMD is in shell form; the image has no shell")
			}
			cmd = c.CmdLine
		case *instructions.ExposeCommand:
			for _, p := range c.Ports {
				if !strings.Contains(p, "/") {
					p += "/tcp" // Docker's default protocol
				}
				ports = append(ports, p)
			}
		case *instructions.LabelCommand:
			for _, kv := range c.Labels {
				labels[kv.Key] = kv.Value
			}
		case *instructions.CopyCommand:
			copies[path.Clean(c.DestPath)] = c
		case *instructions.ArgCommand:
		default:
			bad("unexpected %s in the final stage", strings.ToUpper(c.Name()))
		}
	}
	if user != User() {
		bad("USER %q, want %q", user, User())
	}
	if !slices.Equal(entrypoint, Entrypoint()) {
		bad("ENTRYPOINT %q, want %q", entrypoint, Entrypoint())
	}
	if !slices.Equal(cmd, Cmd()) {
		bad("CMD %q, want %q", cmd, Cmd())
	}
	if !slices.Equal(ports, []string{ExposedPort()}) {
		bad("EXPOSE %q, want %q", ports, ExposedPort())
	}
	want := Labels(version, revision)
	for k, v := range want {
		if got, ok := labels[k]; !ok {
			bad("LABEL %s missing", k)
		} else if got != v {
			bad("LABEL %s=%q, want %q", k, got, v)
		}
	}
	for k := range labels {
		if _, ok := want[k]; !ok {
			bad("LABEL %s is not in spec.go", k)
		}
	}
	probs = append(probs, copyProblems(copies)...)
	probs = append(probs, buildStageProblems(stages[:len(stages)-1], expand)...)
	return probs
}

// copyProblems checks that the final stage copies exactly the image's files, the passwd and group
// files from the same sources the builder embeds, and the state directory with its owner and mode.
func copyProblems(copies map[string]*instructions.CopyCommand) []string {
	var probs []string
	want := map[string]string{ // destination -> the context source it must come from ("" = a build stage)
		PasswdPath:   "deploy/image/rootfs/etc/passwd",
		GroupPath:    "deploy/image/rootfs/etc/group",
		CABundlePath: "",
		BinaryPath:   "",
		StateDir:     "",
	}
	for dest, src := range want {
		c, ok := copies[dest]
		switch {
		case !ok:
			probs = append(probs, "no COPY to "+dest)
		case src != "" && (c.From != "" || !slices.Equal(c.SourcePaths, []string{src})):
			probs = append(probs, fmt.Sprintf("COPY to %s from %q, want the context file %s", dest, c.SourcePaths, src))
		case src == "" && c.From == "":
			probs = append(probs, "COPY to "+dest+" must come from the build stage")
		}
	}
	for dest := range copies {
		if _, ok := want[dest]; !ok {
			probs = append(probs, "COPY to "+dest+" is not a file of the image")
		}
	}
	if c, ok := copies[StateDir]; ok && (c.Chown != User() || c.Chmod != "0700") {
		probs = append(probs, fmt.Sprintf("COPY to %s has --chown=%s --chmod=%s, want %s and 0700", StateDir, c.Chown, c.Chmod, User()))
	}
	if c, ok := copies[CABundlePath]; ok && !slices.Equal(c.SourcePaths, []string{DefaultCABundle}) {
		probs = append(probs, fmt.Sprintf("CA bundle copied from %q, want Debian's %s", c.SourcePaths, DefaultCABundle))
	}
	return probs
}

// buildStageProblems checks that the binary is static and linked with the same VERSION and REVISION
// the labels carry.
func buildStageProblems(stages []instructions.Stage, expand func(string) (string, error)) []string {
	var runs []string
	for _, s := range stages {
		for _, c := range s.Commands {
			if r, ok := c.(*instructions.RunCommand); ok {
				line, err := expand(strings.Join(r.CmdLine, " "))
				if err != nil {
					return []string{"RUN: " + err.Error()}
				}
				runs = append(runs, line)
			}
		}
	}
	all := strings.Join(runs, "\n")
	var probs []string
	for _, want := range []string{"CGO_ENABLED=0 go build", "-X main.version=7.7.7-test", "-X main.revision=cafe0123-test", "./cmd/anvil-router"} {
		if !strings.Contains(all, want) {
			probs = append(probs, "the build stage does not run "+want)
		}
	}
	return probs
}

func TestDockerfileAgreesWithTheBuilder(t *testing.T) {
	src, err := os.ReadFile("../Dockerfile")
	require.NoError(t, err)
	assert.Empty(t, dockerfileProblems(src))
}

// Each planted difference is caught, with the message that names it.
func TestDockerfileCheckCatchesDrift(t *testing.T) {
	src, err := os.ReadFile("../Dockerfile")
	require.NoError(t, err)
	text := string(src)
	cases := []struct{ name, old, new, want string }{
		{"root user", "USER 65532:65532", "USER root", `USER "root"`},
		{"shell-form entrypoint", `ENTRYPOINT ["/usr/local/bin/anvil-router"]`, "ENTRYPOINT /usr/local/bin/anvil-router", "shell form"},
		{"another command", `CMD ["serve", "--config", "/etc/anvil/config/router.yaml"]`, `CMD ["serve", "--demo"]`, "CMD"},
		{"another port", "EXPOSE 8080", "EXPOSE 9090", "EXPOSE"},
		{"title label", `title="anvil-router"`, `title="anvil"`, "LABEL org.opencontainers.image.title"},
		{"revision label from the wrong arg", `revision="${REVISION}"`, `revision="${VERSION}"`, "LABEL org.opencontainers.image.revision"},
		{"extra label", `LABEL org.opencontainers.image.title`, "LABEL vendor=x org.opencontainers.image.title", "LABEL vendor is not in spec.go"},
		{"passwd from elsewhere", "COPY deploy/image/rootfs/etc/passwd /etc/passwd", "COPY --from=build /etc/passwd /etc/passwd", "/etc/passwd"},
		{"state dir owned by root", "--chown=65532:65532 --chmod=0700", "--chmod=0700", "/var/lib/anvil"},
		{"a shell copied in", "USER 65532:65532", "COPY --from=build /bin/sh /bin/sh\nUSER 65532:65532", "COPY to /bin/sh"},
		{"a base image", "FROM scratch", "FROM debian:13-slim", "FROM debian:13-slim"},
		{"cgo on", "CGO_ENABLED=0 go build", "go build", "CGO_ENABLED=0"},
		{"version not linked", "-X main.version=${VERSION} ", "", "main.version"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			require.Contains(t, text, c.old, "the planted edit must apply")
			probs := dockerfileProblems([]byte(strings.Replace(text, c.old, c.new, 1)))
			require.NotEmpty(t, probs)
			assert.Contains(t, strings.Join(probs, "\n"), c.want)
		})
	}
}
