// Package machinetool is the rule for tests that need a program of the machine's (a browser,
// systemd-socket-activate): without it a test skips on a developer's machine and fails under CI (the
// CI variable set), where .ci/run installs the program, so a missing one is a broken setup and never
// a reason to pass. MissingFailsUnderCI proves a test obeys the rule. For tests only.
package machinetool

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// Tool is a program a test looks up on PATH.
type Tool struct {
	Name     string   // as messages name it: "Chromium"
	Commands []string // the executables that will do, in order of preference
	Package  string   // the Debian package .ci/run installs it from
	Needed   string   // what needs it, for the skip message: "the status page's browser test"
}

// MissingMessage is the start of the failure under CI; MissingFailsUnderCI looks for it.
func (tl Tool) MissingMessage() string { return "no " + tl.Name + " on PATH and CI is set" }

// Find returns the path of the first of the tool's commands on PATH. Without any it fails the test
// under CI and skips it elsewhere.
func Find(t testing.TB, tl Tool) string {
	t.Helper()
	for _, name := range tl.Commands {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") != "" {
		t.Fatalf("%s: .ci/run installs it (apt-get install %s)", tl.MissingMessage(), tl.Package)
	}
	t.Skipf("no %s on PATH (apt-get install %s); %s needs it", tl.Name, tl.Package, tl.Needed)
	return ""
}

// MissingFailsUnderCI runs the test named test (which calls Find for tl) in a child of this test
// binary whose PATH holds nothing: with CI set it must fail with tl's message, without it skip.
func MissingFailsUnderCI(t *testing.T, test string, tl Tool) {
	for _, tc := range []struct {
		name string
		ci   bool
		want string
	}{
		{"CI set: fails", true, "--- FAIL: " + test},
		{"CI unset: skips", false, "--- SKIP: " + test},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^"+test+"$", "-test.v", "-test.count=1")
			env := []string{"PATH=" + t.TempDir()}
			for _, kv := range os.Environ() {
				if k, _, _ := strings.Cut(kv, "="); k != "PATH" && k != "CI" {
					env = append(env, kv)
				}
			}
			if tc.ci {
				env = append(env, "CI=true")
			}
			cmd.Env = env
			out, err := cmd.CombinedOutput()
			assert.Contains(t, string(out), tc.want)
			if tc.ci {
				assert.Error(t, err, "a failing test binary exits non-zero")
				assert.Contains(t, string(out), tl.MissingMessage())
			} else {
				assert.NoError(t, err, "%s", out)
			}
		})
	}
}
