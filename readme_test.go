package anvil_test

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// shellLines are the lines of README.md's fenced code blocks, with their line numbers.
func shellLines(t *testing.T) (lines []string, at []int) {
	t.Helper()
	data, err := os.ReadFile("README.md")
	require.NoError(t, err)
	fenced := false
	for i, line := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(line, "```") {
			fenced = !fenced
			continue
		}
		if fenced {
			lines, at = append(lines, line), append(at, i+1)
		}
	}
	return lines, at
}

// TestReadmeBuildsBeforeItCallsTheBinaries: README.md says how to build the programs (and put them
// on PATH) before any command calls one by name; the Quick start's two commands stay as they are.
func TestReadmeBuildsBeforeItCallsTheBinaries(t *testing.T) {
	lines, at := shellLines(t)
	build, firstCall := 0, 0
	called := regexp.MustCompile(`^(\$ )?anvil-(router|bench|qualify|sim|fakevllm) `)
	for i, line := range lines {
		if build == 0 && strings.HasPrefix(line, `make build && export PATH="$PWD/bin:$PATH"`) {
			build = at[i]
		}
		if firstCall == 0 && called.MatchString(line) {
			firstCall = at[i]
		}
	}
	require.NotZero(t, build, "the README has the build step")
	require.NotZero(t, firstCall)
	assert.Less(t, build, firstCall, "the build step (line %d) comes before the first call by name (line %d)", build, firstCall)
	require.GreaterOrEqual(t, len(lines), 2)
	assert.True(t, strings.HasPrefix(lines[0], "make demo   # ") && strings.HasPrefix(lines[1], "make test   # "),
		"the Quick start's two commands come first: %q", lines[:2])
}
