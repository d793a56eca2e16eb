package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/anvil-llm/anvil/internal/routerrig"
	"github.com/anvil-llm/anvil/router/config"
	"github.com/anvil-llm/anvil/router/manage"
)

// buildRouter builds this command into a temporary directory: the restart tests run the real binary.
func buildRouter(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "anvil-router")
	out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput()
	require.NoError(t, err, string(out))
	return bin
}

// process is one running anvil-router serve.
type process struct {
	cmd   *exec.Cmd
	url   string
	done  chan error
	lines chan string // every log line, for tests that wait on one; full, lines are dropped
}

var servingAddr = regexp.MustCompile(`msg=serving addr=(\S+)`)

// serveBinary starts `anvil-router serve --config cfg [args]` and waits for its "serving" line.
func serveBinary(t *testing.T, bin, cfg string, args ...string) *process {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"serve", "--config", cfg}, args...)...)
	cmd.Env = append(os.Environ(), config.EnvAPIToken+"="+routerrig.CallerToken, config.EnvAdminToken+"="+routerrig.AdminToken)
	stderr, err := cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	p := &process{cmd: cmd, done: make(chan error, 1), lines: make(chan string, 4096)}
	addr := make(chan string, 1)
	var logs strings.Builder
	scanned := make(chan struct{})
	go func() {
		defer close(scanned)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			logs.WriteString(sc.Text() + "\n")
			select {
			case p.lines <- sc.Text():
			default:
			}
			if m := servingAddr.FindStringSubmatch(sc.Text()); m != nil {
				addr <- m[1]
			}
		}
	}()
	go func() {
		<-scanned
		p.done <- cmd.Wait()
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-scanned
	})
	select {
	case a := <-addr:
		p.url = "http://" + a
	case err := <-p.done:
		t.Fatalf("router exited before serving: %v\n%s", err, logs.String())
	case <-time.After(60 * time.Second):
		_ = cmd.Process.Kill()
		<-scanned
		t.Fatalf("router did not start serving\n%s", logs.String())
	}
	return p
}

// stop sends SIGTERM and waits for a clean exit.
func (p *process) stop(t *testing.T) {
	t.Helper()
	require.NoError(t, p.cmd.Process.Signal(syscall.SIGTERM))
	select {
	case err := <-p.done:
		require.NoError(t, err, "a SIGTERM shutdown exits 0")
	case <-time.After(60 * time.Second):
		t.Fatal("router did not stop")
	}
}

// runBinary runs the binary to completion and returns its exit code and standard error.
func runBinary(t *testing.T, bin string, args ...string) (int, string) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), config.EnvAPIToken+"="+routerrig.CallerToken, config.EnvAdminToken+"="+routerrig.AdminToken)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode(), stderr.String()
	}
	require.NoError(t, err)
	return 0, stderr.String()
}

func (p *process) cli() cli { return cli{e: &ephemeral{url: p.url}} }

func status(t *testing.T, c cli, member string) manage.Scope {
	t.Helper()
	args := []string{"transition-status", "--tier", "replicas", "--output", "json"}
	if member != "" {
		args = append(args, "--member", member)
	}
	code, out, errOut := c.run(t, args...)
	require.Equal(t, 0, code, errOut)
	var resp manage.Response
	require.NoError(t, json.Unmarshal([]byte(out), &resp))
	return resp.Scope
}

func must(t *testing.T, c cli, args ...string) {
	t.Helper()
	code, _, errOut := c.run(t, append(args, "--yes")...)
	require.Equal(t, 0, code, "%v: %s", args, errOut)
}

// TestRealBinary builds anvil-router once and runs it: restarts that keep intent, and the MCP tool
// over standard input and output.
func TestRealBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the real binary")
	}
	bin := buildRouter(t)
	t.Run("restart keeps intent", func(t *testing.T) { testRestartKeepsIntent(t, bin) })
	t.Run("mcp over stdio", func(t *testing.T) { testMCPOverStdio(t, bin) })
	t.Run("reload command and SIGHUP", func(t *testing.T) { testReloadCommand(t, bin) })
	t.Run("serve --watch", func(t *testing.T) { testServeWatch(t, bin) })
}

// Member intent survives a restart of the real binary while tier intent that was readmitted does
// not come back; member readmission removed only its own entry. Malformed intent refuses startup
// and is left byte-identical; a save that cannot be written leaves the previous file intact.
func testRestartKeepsIntent(t *testing.T, bin string) {
	urls := routerrig.Fakes(t, 3)
	dir := filepath.Join(t.TempDir(), "state")
	require.NoError(t, os.MkdirAll(dir, 0o700))
	intentPath := filepath.Join(dir, "intent.json")
	cfg := filepath.Join(t.TempDir(), "router.yaml")
	require.NoError(t, os.WriteFile(cfg, []byte(routerrig.YAML(urls, "intent_file: "+intentPath+"\n")), 0o600))

	t.Run("restart", func(t *testing.T) {
		p := serveBinary(t, bin, cfg)
		c := p.cli()
		must(t, c, "quiesce", "--tier", "replicas", "--member", "m00", "--reason", "upgrade")
		must(t, c, "quiesce", "--tier", "replicas", "--member", "m01", "--reason", "swap")
		must(t, c, "quiesce", "--tier", "replicas", "--reason", "maintenance")
		must(t, c, "readmit", "--tier", "replicas") // tier readmission leaves member intent
		must(t, c, "readmit", "--tier", "replicas", "--member", "m01")
		must(t, c, "quiesce", "--tier", "solo", "--reason", "maintenance")
		p.stop(t)

		p = serveBinary(t, bin, cfg)
		c = p.cli()
		assert.Equal(t, manage.Scope{State: "admitting"}, status(t, c, ""), "the tier is not quiesced")
		assert.Equal(t, manage.Scope{State: "quiesced", Reason: "upgrade"}, status(t, c, "m00"), "the member still is")
		assert.Equal(t, manage.Scope{State: "admitting"}, status(t, c, "m01"), "member readmission removed its own intent only")
		code, out, errOut := c.run(t, "transition-status", "--tier", "solo")
		require.Equal(t, 0, code, errOut)
		assert.Contains(t, out, "quiesced")
		p.stop(t)
	})

	t.Run("malformed intent refuses startup", func(t *testing.T) {
		for name, content := range map[string]string{
			"malformed":     `{"tiers":{"replicas":"x"`,
			"duplicate key": `{"members":{"replicas":{"m00":"a","m00":"b"}}}`,
			"wrongly typed": `{"members":{"replicas":{"m00":["upgrade"]}}}`,
			"null":          `{"members":null}`,
			"oversized":     `{"tiers":{}}` + strings.Repeat(" ", 1<<20),
		} {
			t.Run(name, func(t *testing.T) {
				bad := filepath.Join(t.TempDir(), "intent.json")
				require.NoError(t, os.WriteFile(bad, []byte(content), 0o600))
				badCfg := filepath.Join(t.TempDir(), "router.yaml")
				require.NoError(t, os.WriteFile(badCfg, []byte(routerrig.YAML(urls, "intent_file: "+bad+"\n")), 0o600))
				code, stderr := runBinary(t, bin, "serve", "--config", badCfg)
				assert.Equal(t, exitUsage, code, stderr)
				assert.Contains(t, stderr, "anvil-router: server: intent file "+bad+": invalid intent document: ")
				b, err := os.ReadFile(bad)
				require.NoError(t, err)
				assert.Equal(t, content, string(b), "the refused file is byte-identical")
			})
		}
	})

	t.Run("failed write leaves the previous file", func(t *testing.T) {
		p := serveBinary(t, bin, cfg)
		c := p.cli()
		before, err := os.ReadFile(intentPath)
		require.NoError(t, err)

		// The directory is replaced by a plain file: no temporary file can be created in it, for
		// root too. The previous intent file moves away with its directory and is checked there.
		moved := dir + ".moved"
		require.NoError(t, os.Rename(dir, moved))
		require.NoError(t, os.WriteFile(dir, nil, 0o600))
		code, _, errOut := c.run(t, "quiesce", "--tier", "replicas", "--member", "m01", "--reason", "swap", "--yes")
		assert.Equal(t, exitFailure, code)
		assert.Contains(t, errOut, "[intent_not_persisted]")
		assert.Equal(t, manage.Scope{State: "quiesced", Reason: "swap"}, status(t, c, "m01"), "the transition stands in memory")
		entries, err := os.ReadDir(moved)
		require.NoError(t, err)
		require.Len(t, entries, 1, "nothing else was written")
		after, err := os.ReadFile(filepath.Join(moved, "intent.json"))
		require.NoError(t, err)
		assert.Equal(t, string(before), string(after), "the previous file is intact")
		require.NoError(t, os.Remove(dir))
		require.NoError(t, os.Rename(moved, dir))

		// A read-only directory: the same failure where permissions bind (not for root).
		require.NoError(t, os.Chmod(dir, 0o500))
		defer func() { _ = os.Chmod(dir, 0o700) }()
		if probe, err := os.CreateTemp(dir, "probe-*"); err == nil {
			_ = probe.Close()
			_ = os.Remove(probe.Name())
			t.Log("running as root: a read-only directory does not stop writes; the replaced directory above covers the failure")
		} else {
			code, _, errOut = c.run(t, "readmit", "--tier", "replicas", "--member", "m01", "--yes")
			assert.Equal(t, exitFailure, code)
			assert.Contains(t, errOut, "[intent_not_persisted]")
			after, err = os.ReadFile(intentPath)
			require.NoError(t, err)
			assert.Equal(t, string(before), string(after), "the previous file is intact")
		}
		p.stop(t)
	})
}

// anvil-router mcp speaks the protocol over standard input and output of the real binary.
func testMCPOverStdio(t *testing.T, bin string) {
	urls := routerrig.Fakes(t, 3)
	cfg := filepath.Join(t.TempDir(), "router.yaml")
	require.NoError(t, os.WriteFile(cfg, []byte(routerrig.YAML(urls, "")), 0o600))
	p := serveBinary(t, bin, cfg)

	cmd := exec.Command(bin, "mcp")
	cmd.Env = append(os.Environ(), EnvRouterURL+"="+p.url, config.EnvAdminToken+"="+routerrig.AdminToken)
	cmd.Stderr = io.Discard
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	session, err := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "1"}, nil).Connect(ctx, &sdk.CommandTransport{Command: cmd}, nil)
	require.NoError(t, err)
	defer session.Close()
	tools, err := session.ListTools(ctx, &sdk.ListToolsParams{})
	require.NoError(t, err)
	require.Len(t, tools.Tools, 1)
	assert.Equal(t, "router_transition", tools.Tools[0].Name)
	res, err := session.CallTool(ctx, &sdk.CallToolParams{Name: "router_transition",
		Arguments: map[string]any{"action": "quiesce", "tier": "replicas", "member_id": "m01", "reason": "upgrade"}})
	require.NoError(t, err)
	require.False(t, res.IsError)
	assert.Equal(t, manage.Scope{State: "quiesced", Reason: "upgrade"}, status(t, p.cli(), "m01"))
	p.stop(t)
}
