package systemd

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// shipped reads the unit files beside this file.
func shipped(t *testing.T) map[string][]byte {
	t.Helper()
	units := map[string][]byte{}
	for _, name := range Names() {
		b, err := Units.ReadFile(name)
		require.NoError(t, err)
		units[name] = b
	}
	return units
}

func TestShippedUnitsKeepTheContract(t *testing.T) {
	assert.Empty(t, Check(shipped(t)))
}

// Each planted error is one edit of a shipped unit that Check must report.
func TestCheckCatchesPlantedErrors(t *testing.T) {
	tests := []struct {
		name, unit, old, new, want string
	}{
		{"front door unnamed", APISocketUnit, "FileDescriptorName=anvil-api\n", "", `anvil-router.socket: FileDescriptorName="", want "anvil-api"`},
		{"metrics socket misnamed", MetricsSocketUnit, "FileDescriptorName=anvil-metrics", "FileDescriptorName=metrics", `FileDescriptorName="metrics", want "anvil-metrics"`},
		{"no backlog", APISocketUnit, "Backlog=4096\n", "", "anvil-router.socket: no Backlog="},
		{"no address", MetricsSocketUnit, "ListenStream=127.0.0.1:9090\n", "", "anvil-router-metrics.socket: no ListenStream="},
		{"one process per connection", APISocketUnit, "NoDelay=yes", "Accept=yes", "Accept=yes: the router takes the listening socket"},
		{"socket activates another service", MetricsSocketUnit, "Service=anvil-router.service", "Service=other.service", `Service="other.service"`},
		{"service without the front door", ServiceUnit, "Sockets=anvil-router.socket", "Sockets=anvil-router-metrics.socket", "Sockets= does not name anvil-router.socket"},
		{"drop-in without the metrics socket", MetricsDropIn, "Sockets=anvil-router-metrics.socket", "Sockets=anvil-router.socket", "anvil-router.service.d/metrics.conf: Sockets= does not name anvil-router-metrics.socket"},
		{"service not bound to its socket", ServiceUnit, "Requires=anvil-router.socket\n", "", "Requires= does not name anvil-router.socket"},
		{"notify without notification", ServiceUnit, "Type=simple", "Type=notify", "Type=notify: the router sends no readiness notification"},
		{"reload restarts", ServiceUnit, "ExecReload=/bin/kill -HUP $MAINPID", "ExecReload=/bin/kill -TERM $MAINPID", "does not send SIGHUP"},
		{"stop by another signal", ServiceUnit, "KillSignal=SIGTERM", "KillSignal=SIGKILL", "KillSignal=SIGKILL"},
		{"stop shorter than the grace", ServiceUnit, "TimeoutStopSec=45s", "TimeoutStopSec=20s", "TimeoutStopSec=\"20s\" must be a duration longer"},
		{"not serve", ServiceUnit, "anvil-router serve --config", "anvil-router mcp --config", "does not run `anvil-router serve --config FILE`"},
		{"root", ServiceUnit, "User=anvil\n", "", "runs as root"},
		{"privilege escalation", ServiceUnit, "NoNewPrivileges=yes", "NoNewPrivileges=no", `NoNewPrivileges= must be "yes"`},
		{"writable system", ServiceUnit, "ProtectSystem=strict", "ProtectSystem=full", `ProtectSystem= must be "strict"`},
		{"capabilities", ServiceUnit, "CapabilityBoundingSet=\n", "CapabilityBoundingSet=CAP_NET_BIND_SERVICE\n", `CapabilityBoundingSet= must be ""`},
		{"continuation line", ServiceUnit, "ExecStart=/usr/local/bin/anvil-router serve", "ExecStart=/usr/local/bin/anvil-router \\\n serve", "continuation lines are not supported"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			units := shipped(t)
			src := string(units[tt.unit])
			require.Contains(t, src, tt.old, "the planted edit applies to the shipped unit")
			units[tt.unit] = []byte(strings.Replace(src, tt.old, tt.new, 1))
			problems := Check(units)
			require.NotEmpty(t, problems)
			assert.Contains(t, strings.Join(problems, "\n"), tt.want)
		})
	}
	t.Run("missing unit", func(t *testing.T) {
		units := shipped(t)
		delete(units, MetricsSocketUnit)
		assert.Equal(t, []string{"anvil-router-metrics.socket: missing"}, Check(units))
	})
}

// systemdAnalyze finds Debian's systemd-analyze. Without it the tests skip, except under CI (the
// CI variable set), where they fail: .ci/run installs the systemd package.
func systemdAnalyze(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("systemd-analyze")
	if err == nil {
		return p
	}
	if os.Getenv("CI") != "" {
		t.Fatal("no systemd-analyze on PATH and CI is set: .ci/run installs it (apt-get install systemd)")
	}
	t.Skip("no systemd-analyze on PATH (apt-get install systemd)")
	return ""
}

// installed copies the units into a directory, with ExecStart's binary replaced by an executable
// stub there (verify requires the binary to exist), and returns the directory.
func installed(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	stub := filepath.Join(dir, "anvil-router")
	require.NoError(t, os.WriteFile(stub, []byte("#!/bin/sh\n"), 0o755))
	require.NoError(t, os.Mkdir(filepath.Join(dir, ServiceUnit+".d"), 0o755))
	for name, b := range shipped(t) {
		b = []byte(strings.ReplaceAll(string(b), "/usr/local/bin/anvil-router", stub))
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), b, 0o644))
	}
	return dir
}

// systemd-analyze verify reads the units and the drop-in beside them and reports nothing; a
// planted mistake in any of them is reported, so the drop-in is read too.
func TestSystemdAnalyzeVerify(t *testing.T) {
	sa := systemdAnalyze(t)
	verify := func(t *testing.T, dir string) string {
		cmd := exec.Command(sa, "verify", "--man=no", "./"+ServiceUnit, "./"+APISocketUnit, "./"+MetricsSocketUnit)
		cmd.Dir = dir
		out, _ := cmd.CombinedOutput()
		return string(out)
	}
	t.Run("shipped", func(t *testing.T) {
		assert.Empty(t, verify(t, installed(t)), "verify reports nothing")
	})
	for _, name := range []string{ServiceUnit, APISocketUnit, MetricsDropIn} {
		t.Run("planted in "+name, func(t *testing.T) {
			dir := installed(t)
			f, err := os.OpenFile(filepath.Join(dir, name), os.O_APPEND|os.O_WRONLY, 0)
			require.NoError(t, err)
			_, err = f.WriteString("NoSuchSetting=1\n")
			require.NoError(t, err)
			require.NoError(t, f.Close())
			assert.Contains(t, verify(t, dir), "Unknown key 'NoSuchSetting'")
		})
	}
}

// The service's exposure (systemd-analyze security, offline) stays at most 2.0 of 10, "OK" in
// systemd's words; --threshold counts tenths.
func TestSystemdAnalyzeSecurity(t *testing.T) {
	sa := systemdAnalyze(t)
	dir := installed(t)
	cmd := exec.Command(sa, "security", "--offline=yes", "--threshold=20", "./"+ServiceUnit)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	assert.NoError(t, err, "%s", out)
	assert.Contains(t, string(out), "Overall exposure level for anvil-router.service")
}
