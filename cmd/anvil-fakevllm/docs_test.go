package main

import (
	"io"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/anvil-llm/anvil/internal/doccheck"
)

// Every anvil-fakevllm command the docs quote (README.md, docs/**/*.md) names a real subcommand, with flags
// the command has. The module root's docs test requires this test.
func TestDocsQuoteRealCommands(t *testing.T) {
	files, err := doccheck.Load("../..")
	require.NoError(t, err)
	invs := doccheck.Invocations(doccheck.Quotes(files), "anvil-fakevllm")
	for _, p := range doccheck.Check(newRootCmd(io.Discard, io.Discard), invs) {
		t.Error(p)
	}
}
