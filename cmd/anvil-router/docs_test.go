package main

import (
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/anvil-llm/anvil/internal/doccheck"
)

// Every anvil-router command the docs quote (README.md, docs/**/*.md) names a real subcommand, with flags
// the command has. The module root's docs test requires this test.
func TestDocsQuoteRealCommands(t *testing.T) {
	files, err := doccheck.Load("../..")
	require.NoError(t, err)
	invs := doccheck.Invocations(doccheck.Quotes(files), "anvil-router")
	for _, p := range doccheck.Check(newRoot(console{stdin: strings.NewReader(""), isTerminal: func() bool { return false },
		lookupEnv: func(string) (string, bool) { return "", false }, doer: http.DefaultClient}), invs) {
		t.Error(p)
	}
}
