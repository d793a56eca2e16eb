package manifest

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The deploy module does not import the router's, so BodyReadBound repeats the router's body read
// bound; this reads the router's source and holds the two equal. A router that reads bodies for
// longer needs a longer shutdown_grace, and this test says so.
func TestBodyReadBoundIsTheRouters(t *testing.T) {
	path := filepath.Join("..", "..", "router", "server", "uploadrate.go")
	f, err := parser.ParseFile(token.NewFileSet(), path, nil, 0)
	require.NoError(t, err)
	var got string
	ast.Inspect(f, func(n ast.Node) bool {
		if vs, ok := n.(*ast.ValueSpec); ok && len(vs.Names) == 1 && vs.Names[0].Name == "bodyReadTimeout" && len(vs.Values) == 1 {
			if sel, ok := vs.Values[0].(*ast.SelectorExpr); ok {
				got = sel.Sel.Name
			}
		}
		return true
	})
	require.Equal(t, "Minute", got, "router/server's bodyReadTimeout is no longer time.Minute: update BodyReadBound")
	assert.Equal(t, "1m0s", BodyReadBound.String())
}
