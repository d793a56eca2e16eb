package ident

import (
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestValidID(t *testing.T) {
	tests := []struct {
		id   string
		want bool
	}{
		{"a", true},
		{"0", true},
		{"gpu0", true},
		{"a.b_c-d", true},
		{"10.0.0", true},
		{"1.2.3.4.5", true},
		{"v1.2.3", true},
		{strings.Repeat("a", MaxIDLength), true},
		{strings.Repeat("a", MaxIDLength+1), false},
		{"", false},
		{".a", false},
		{"-a", false},
		{"_a", false},
		{"A", false},
		{"a/b", false},
		{"a:b", false},
		{"a b", false},
		{"é", false},
		{"a\x00", false},
		{"10.0.0.5", false}, // an address literal is never an ID
		{"127.0.0.1", false},
		{"0.0.0.0", false},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, ValidID(tt.id), "%q", tt.id)
	}
}

func TestValidReason(t *testing.T) {
	tests := []struct {
		reason string
		want   bool
	}{
		{"maintenance", true},
		{"0", true},
		{"gpu-swap_2.b", true},
		{"10.0.0.5", true}, // a reason is free text in the grammar, never an identity
		{strings.Repeat("a", MaxReasonLength), true},
		{"", false},
		{strings.Repeat("a", MaxReasonLength+1), false},
		{"-lead", false},
		{".lead", false},
		{"Upper", false},
		{"has space", false},
		{"slash/no", false},
		{"colon:no", false},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, ValidReason(tt.reason), "%q", tt.reason)
	}
}

func TestValidAlias(t *testing.T) {
	for _, ok := range []string{"chat", "meta-llama/llama-3.1-8b-instruct", "qwen2.5:7b", "a.b_c-d",
		strings.Repeat("a", MaxAliasLength)} {
		assert.True(t, ValidAlias(ok), ok)
	}
	for _, bad := range []string{"", "Chat", "/chat", ":chat", "a b", "http://x", "https://h/v1",
		"a//b", "10.0.0.1", "10.0.0.1:8000", "fe80::1", "127.0.0.1:1", "a@b", "a?b", "a=b",
		strings.Repeat("a", MaxAliasLength+1), "-invalid-"} {
		assert.False(t, ValidAlias(bad), bad)
	}
}

func TestValidRequestID(t *testing.T) {
	for _, ok := range []string{"a", "Z9", "0b6f6d1e-8c1f-4b7a-9b9e-2f1c1d2e3f4a", "req_1.2-3",
		strings.Repeat("A", MaxRequestIDLength)} {
		assert.True(t, ValidRequestID(ok), ok)
	}
	for _, bad := range []string{"", "-lead", ".lead", "_lead", "a b", "a/b", "a:b", "a@b", "a=b", "a\nb",
		"ä", "Bearer abc", "10.0.0.1", strings.Repeat("A", MaxRequestIDLength+1), "-invalid-"} {
		assert.False(t, ValidRequestID(bad), bad)
	}
}

// FuzzGrammars checks each hand-written grammar against the regular expression it documents, plus
// its address rule: a hand-written matcher that drifted from its documented pattern would fail here.
func FuzzGrammars(f *testing.F) {
	for _, s := range []string{"a", "m0", "10.0.0.5", "a:b", "org/model:tag", "a//b", "Z9-x", "", "é", "fe80::1"} {
		f.Add(s)
	}
	id := regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,63}$`)
	alias := regexp.MustCompile(`^[a-z0-9][a-z0-9._:/-]{0,127}$`)
	request := regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$`)
	f.Fuzz(func(t *testing.T, s string) {
		assert.Equal(t, id.MatchString(s) && !addressLike(s), ValidID(s), "id %q", s)
		assert.Equal(t, id.MatchString(s), ValidReason(s), "reason %q", s)
		assert.Equal(t, alias.MatchString(s) && !strings.Contains(s, "//") && !addressLike(s), ValidAlias(s), "alias %q", s)
		assert.Equal(t, request.MatchString(s) && !addressLike(s), ValidRequestID(s), "request id %q", s)
	})
}

func TestAddressLike(t *testing.T) {
	for _, yes := range []string{"10.0.0.1", "10.0.0.1:8000", "::1", "fe80::1", "FE80::1", "fe80::1%eth0",
		"[::1]:80", "[fe80::1%eth0]:80", "::ffff:10.0.0.1", "0.0.0.0"} {
		assert.True(t, addressLike(yes), yes)
	}
	for _, no := range []string{"", "m1", "pool", "deadbeef", "a.b", "10.0.0", "10.0.0.1.2", "1e3", "cafe:babe",
		"10.0.0.1:", "10.0.0.1:99999", "host:80"} {
		assert.False(t, addressLike(no), no)
	}
}
