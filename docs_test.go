package anvil_test

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/anvil-llm/anvil/internal/doccheck"
)

// programs are the module's binaries. Each one's own test checks the docs' invocations of it
// against its command tree (doccheck.Check); this test checks that each has such a test.
var programs = []string{"anvil-router", "anvil-sim", "anvil-bench", "anvil-qualify", "anvil-fakevllm"}

func docs(t *testing.T) []doccheck.File {
	t.Helper()
	files, err := doccheck.Load(".")
	require.NoError(t, err)
	require.Greater(t, len(files), 5, "README.md and docs/ are read")
	return files
}

// TestDocLinksResolve: every relative link in README.md and docs/**/*.md names a file of the
// repository, and every #anchor a heading of the Markdown file it points into.
func TestDocLinksResolve(t *testing.T) {
	for _, p := range doccheck.BrokenLinks(".", docs(t)) {
		t.Error(p)
	}
}

// TestDocCommandsExist: every quoted `make X` is a Makefile target, every ./path a quoted `go run`,
// `go test` or `go build` names exists, and every program the docs invoke is one of the module's,
// whose own test checks its subcommands and flags.
func TestDocCommandsExist(t *testing.T) {
	quotes := doccheck.Quotes(docs(t))
	makefile, err := os.ReadFile("Makefile")
	require.NoError(t, err)
	targets := doccheck.MakeTargets(string(makefile))
	require.True(t, targets["test"] && targets["demo"], "the Makefile's targets are read")
	for _, inv := range doccheck.Makes(quotes) {
		for _, target := range inv.Args {
			assert.True(t, targets[target], "%s: the Makefile has no target %s", inv.Quote, target)
		}
	}
	for _, inv := range doccheck.Packages(quotes) {
		dir := "."
		if m := regexp.MustCompile(`\bcd (\S+) &&`).FindStringSubmatch(inv.Quote.Text); m != nil {
			dir = m[1] // a command run in another module's directory (deploy/)
		}
		for _, pkg := range inv.Args {
			info, err := os.Stat(filepath.Join(dir, pkg))
			assert.True(t, err == nil && info.IsDir(), "%s: %s is not a package directory", inv.Quote, pkg)
		}
	}
	invoked := regexp.MustCompile(`(?:^|\s|/)(anvil-[a-z]+) [a-z-]+`)
	for _, q := range quotes {
		for _, m := range invoked.FindAllStringSubmatch(q.Text, -1) {
			if strings.Contains(q.Text, "cd deploy") || m[1] == "anvil-image" {
				continue // the deploy module's builder, documented with its own module
			}
			assert.True(t, slices.Contains(programs, m[1]), "%s: %s is not one of the module's programs", q, m[1])
		}
	}
	for _, p := range programs {
		tests, err := filepath.Glob(filepath.Join("cmd", p, "*_test.go"))
		require.NoError(t, err)
		found := false
		for _, f := range tests {
			data, err := os.ReadFile(f)
			require.NoError(t, err)
			found = found || strings.Contains(string(data), "doccheck.Check(")
		}
		assert.True(t, found, "cmd/%s has no test checking the docs' invocations of it (doccheck.Check)", p)
	}
}

// The checks can fail: a broken link, a missing anchor, an unknown target and an unknown flag are
// all caught on planted text.
func TestDocCheckCatchesPlantedMistakes(t *testing.T) {
	files := []doccheck.File{{Path: "docs/x.md", Lines: []string{
		"# Title", "## A section", "See [gone](nowhere.md) and [here](#a-section) and [there](#no-such).",
		"[ok](../README.md#anvil) [bad anchor](../README.md#nope)",
		"```sh", "make no-such-target", "anvil-bench run --no-such-flag \\", "  --url x", "```",
		"Use `anvil-bench nosub` or `anvil-bench run --url U --model M`.",
	}}, {Path: "README.md", Lines: []string{"# Anvil"}}}
	broken := doccheck.BrokenLinks(".", files)
	assert.Len(t, broken, 3, "%v", broken)
	quotes := doccheck.Quotes(files)
	makes := doccheck.Makes(quotes)
	require.Len(t, makes, 1)
	assert.Equal(t, []string{"no-such-target"}, makes[0].Args)
	invs := doccheck.Invocations(quotes, "anvil-bench")
	require.Len(t, invs, 3)
	assert.Equal(t, []string{"run", "--no-such-flag", "--url", "x"}, invs[0].Args, "continuation lines are joined")
	assert.Equal(t, "a-section", doccheck.Slug("A section"))
	assert.Equal(t, "the-cli-and-mcp", doccheck.Slug("The `CLI` and MCP!"))
}
