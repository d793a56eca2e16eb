package config

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

const adminTok = "admin-SECRET-cccccccccccccccccc"

func TestSecret(t *testing.T) {
	var zero Secret
	assert.True(t, zero.IsZero())
	assert.False(t, zero.Matches(""), "a zero secret matches nothing")
	assert.Equal(t, "", zero.String())
	s := Secret{value: adminTok}
	assert.True(t, s.Matches(adminTok))
	assert.False(t, s.Matches(adminTok+"x"))
	assert.False(t, s.Matches(adminTok[:len(adminTok)-1]))
	assert.False(t, s.Matches(""))
	assert.Equal(t, adminTok, s.Reveal())
}
