package main

import (
	"bufio"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// readmeCompare is the README's comparison against the demo: the caller token it exports and the
// anvil-bench compare arguments (continuation lines joined).
func readmeCompare(t *testing.T) (token string, args []string) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	require.NoError(t, err)
	lines := strings.Split(string(data), "\n")
	for i, line := range lines {
		if v, ok := strings.CutPrefix(line, "export ANVIL_API_TOKEN="); ok {
			token = strings.Fields(v)[0]
		}
		if token == "" || !strings.HasPrefix(line, "anvil-bench compare --member http://127.0.0.1:8081") {
			continue
		}
		cmd := line
		for strings.HasSuffix(cmd, `\`) && i+1 < len(lines) {
			i++
			cmd = strings.TrimSuffix(cmd, `\`) + " " + strings.TrimSpace(lines[i])
		}
		return token, strings.Fields(cmd)[1:]
	}
	t.Fatal("README.md has no anvil-bench compare line against the demo")
	return "", nil
}

// portsFree reports whether the demo's default ports (the router's 8080, the members' 8081-8084)
// can be listened on now.
func portsFree() bool {
	for _, p := range []string{"8080", "8081", "8082", "8083", "8084"} {
		ln, err := net.Listen("tcp", "127.0.0.1:"+p)
		if err != nil {
			return false
		}
		_ = ln.Close()
	}
	return true
}

// TestReadmeCompareAgainstTheDemo runs the README's demo comparison: the real anvil-router serve
// --demo (built from this tree) with the README's token, then the README's anvil-bench compare line,
// verbatim when the demo's default ports are free (else with the ports the demo's banner prints).
func TestReadmeCompareAgainstTheDemo(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the router")
	}
	token, args := readmeCompare(t)
	bin := filepath.Join(t.TempDir(), "anvil-router")
	build := exec.Command("go", "build", "-o", bin, "./cmd/anvil-router")
	build.Dir = filepath.Join("..", "..")
	out, err := build.CombinedOutput()
	require.NoError(t, err, "%s", out)

	verbatim := portsFree()
	demoArgs := []string{"serve", "--demo"}
	if !verbatim {
		demoArgs = append(demoArgs, "--listen", "127.0.0.1:0")
	}
	cmd := exec.Command(bin, demoArgs...)
	cmd.Env = append(os.Environ(), "ANVIL_API_TOKEN="+token, "ANVIL_LISTEN=")
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	cmd.Stderr = io.Discard
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Signal(syscall.SIGTERM); _ = cmd.Wait() })

	banner := map[string]string{}
	sc := bufio.NewScanner(stdout)
	for sc.Scan() && sc.Text() != "" {
		if base, ok := strings.CutPrefix(sc.Text(), "anvil-router demo listening on "); ok {
			banner["http://127.0.0.1:8080"] = base
		}
		if m, ok := strings.CutPrefix(sc.Text(), "  members:   "); ok {
			for i, entry := range strings.Split(m, ", ") {
				banner["http://127.0.0.1:"+[]string{"8081", "8082", "8083", "8084"}[i]] = strings.Fields(entry)[1]
			}
		}
	}
	go func() { _, _ = io.Copy(io.Discard, stdout) }()
	require.Len(t, banner, 5, "the banner names the router and its four members")
	if verbatim {
		for readme, printed := range banner {
			assert.Equal(t, readme, printed, "the demo listens where the README says")
		}
	} else {
		t.Log("the demo's default ports are busy: running the README's line on the ports the banner printed")
		for i, a := range args {
			if printed, ok := banner[a]; ok {
				args[i] = printed
			}
		}
	}
	t.Setenv("ANVIL_API_TOKEN", token)
	t.Setenv("VLLM_API_KEY", "")
	code, report, stderr := runCLI(t, args...)
	require.Equal(t, 0, code, "anvil-bench %s\n%s\n%s", strings.Join(args, " "), report, stderr)
	assert.Contains(t, report, "direct")
	assert.Contains(t, report, "routed")
	assert.NotContains(t, stderr, "401 Unauthorized")
}
