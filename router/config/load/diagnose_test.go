package load

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/anvil-llm/anvil/router/config"
)

// TestDiagnoseLines: Line finds the line of a key path's setting (an entry's own line for an
// index), and 0 for what the document does not hold.
func TestDiagnoseLines(t *testing.T) {
	doc := "listen: x\n" +
		"tiers:\n" +
		"  - id: t\n" +
		"    members:\n" +
		"      - id: m0\n" +
		"      - id: m1\n" +
		"        endpoint: y\n"
	d := diagnose([]byte(doc), config.Sources{})
	for path, want := range map[string]int{
		"listen": 1, "tiers": 2, "tiers[0]": 3, "tiers[0].id": 3, "tiers[0].members[1]": 6,
		"tiers[0].members[1].endpoint": 7, "tiers[0].members[2]": 0, "tiers[1]": 0, "tiers[x]": 0,
		"listen.deeper": 0, "auth": 0, "ANVIL_API_TOKENS[1]": 0, "": 0, "document": 0,
	} {
		assert.Equal(t, want, d.Line(path), path)
	}
	assert.Zero(t, Diagnosis{}.Line("listen"), "no document, no line")
}

// TestDiagnoseFirstIsParseError: the first problem is exactly the error a load returns, and the
// rest follow in the load's order.
func TestDiagnoseFirstIsParseError(t *testing.T) {
	doc := baseDoc + "shutdown_grace: 99h\nlog: {level: loud}\n"
	_, want := ParseWith([]byte(doc), config.Sources{LookupEnv: envMap(baseEnv())})
	require.Error(t, want)
	d := diagnose([]byte(doc), config.Sources{LookupEnv: envMap(baseEnv())})
	require.Len(t, d.Problems, 2)
	assert.Equal(t, want.Error(), d.Problems[0].Error())
	assert.Equal(t, "config: log.level: must be debug, info, warn or error", d.Problems[1].Error())
	assert.NotNil(t, d.Document)

	path := filepath.Join(t.TempDir(), "absent.yaml")
	d = Diagnose(path, nil)
	require.Len(t, d.Problems, 1)
	assert.ErrorIs(t, d.Problems[0], config.ErrUnreadable)
	assert.True(t, errors.Is(d.Problems[0], os.ErrNotExist))
	assert.Nil(t, d.Document)
}
