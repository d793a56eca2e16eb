package doccheck

import (
	"testing"

	"github.com/spf13/cobra"
	"github.com/stretchr/testify/assert"
)

func tree() *cobra.Command {
	root := &cobra.Command{Use: "tool"}
	root.PersistentFlags().String("router", "", "")
	run := &cobra.Command{Use: "run"}
	run.Flags().StringP("file", "f", "", "")
	run.Flags().Bool("approve", false, "")
	cfg := &cobra.Command{Use: "config"}
	cfg.AddCommand(&cobra.Command{Use: "check FILE"})
	root.AddCommand(run, cfg, &cobra.Command{Use: "stop", Aliases: []string{"halt"}})
	return root
}

func TestCheck(t *testing.T) {
	cases := []struct {
		text string
		ok   bool
	}{
		{"tool run -f QUAL.yaml --approve", true},
		{"tool run --file=QUAL.yaml --router URL", true},
		{"tool run --approve extra positional --approve", true},
		{"tool config check FILE", true},
		{"tool run|stop|halt --help", true},
		{"TOKEN=x ./bin/tool run -f F | jq .x --not-a-flag", true},
		{"tool run [--approve] (-f F | --file F)", true},
		{"tool run --approve --nope", false},
		{"tool run -x", false},
		{"tool config nope FILE", false},
		{"tool run|nope", false},
		{"tool nope", false},
		{"go run ./cmd/tool config check --strict", false},
	}
	assert.Empty(t, Invocations([]Quote{{Text: "tool 1.2.0 (revision abc)"}, {Text: "tool SUBCOMMAND"}}, "tool"),
		"the program's output and placeholders are not calls")
	for _, c := range cases {
		t.Run(c.text, func(t *testing.T) {
			invs := Invocations([]Quote{{File: "f.md", Line: 1, Text: c.text}}, "tool")
			assert.Len(t, invs, 1)
			problems := Check(tree(), invs)
			assert.Equal(t, c.ok, len(problems) == 0, "%v", problems)
		})
	}
}

func TestQuotesAndAnchors(t *testing.T) {
	f := File{Path: "docs/a.md", Lines: []string{
		"# Top", "Run `tool run` here.", "```json", `{"command": "tool", "args": ["nope"]}`, "```",
		"```", "tool stop", "```", "## Top", "### Why `tool`?", "#not a heading",
	}}
	var texts []string
	for _, q := range Quotes([]File{f}) {
		texts = append(texts, q.Text)
	}
	assert.Equal(t, []string{"tool run", "tool stop", "tool"}, texts, "JSON blocks hold no commands; headings' code spans count")
	assert.Equal(t, map[string]bool{"top": true, "top-1": true, "why-tool": true}, Anchors(f))
	targets := MakeTargets("all: build\n.PHONY: all\nbuild:\n\tgo build\nVAR := x\nimage: a b\n")
	assert.True(t, targets["all"] && targets["build"] && targets["image"])
	assert.False(t, targets["VAR"])
}
