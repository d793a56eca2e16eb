package cli

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseEnvFile(t *testing.T) {
	got, err := ParseEnvFile([]byte("# comment\n\nA=1\r\nB_2=x=y # not a comment\n  # indented comment\nEMPTY=\n"))
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"A": "1", "B_2": "x=y # not a comment", "EMPTY": ""}, got)

	for doc, want := range map[string]string{
		"A=1\nSECRET-VALUE\n":  "line 2: not NAME=VALUE",
		"export A=SECRET\n":    "line 1: the name must be",
		" A=SECRET\n":          "line 1: the name must be",
		"1A=SECRET\n":          "line 1: the name must be",
		"A=SECRET\nA=SECRET\n": "line 2: A is set twice",
	} {
		_, err := ParseEnvFile([]byte(doc))
		require.ErrorIs(t, err, ErrEnvFile, doc)
		assert.Contains(t, err.Error(), want, doc)
		assert.NotContains(t, err.Error(), "SECRET", "values are never echoed")
	}
	_, err = ParseEnvFile([]byte(strings.Repeat("#", MaxEnvFileBytes+1)))
	assert.ErrorIs(t, err, ErrEnvFile)
}

// FuzzParseEnvFile: never panics; a refusal wraps ErrEnvFile and never quotes a value; every
// accepted name is a valid name whose value holds no newline.
func FuzzParseEnvFile(f *testing.F) {
	for _, seed := range []string{"A=1\n", "# c\nB=x=y\r\n", "=x\n", "A\n", "A=1\nA=2\n", "\xff=\x00\n", "  \n\t#\nZ_9=\n"} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		got, err := ParseEnvFile(data)
		if err != nil {
			require.ErrorIs(t, err, ErrEnvFile)
			return
		}
		for k, v := range got {
			require.True(t, envName.MatchString(k), k)
			require.NotContains(t, v, "\n")
		}
	})
}
