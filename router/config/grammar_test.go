package config

import (
	"net/netip"
	"regexp"
	"strings"
	"testing"

	"github.com/anvil-llm/anvil/router/ident"
	"github.com/stretchr/testify/assert"
	"pgregory.net/rapid"
)

// The contract's grammars, stated as regular expressions.
var (
	contractID    = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,63}$`)
	contractAlias = regexp.MustCompile(`^[a-z0-9][a-z0-9._:/-]{0,127}$`)
)

// TestIDGrammarsMatchContract: the ID check config uses
// (ident.ValidID) and the alias check agree with the contract's
// regular expressions on arbitrary strings over a hostile alphabet.
// addressLiteral reports whether s is an IP address, with or without a port.
func addressLiteral(s string) bool {
	if _, err := netip.ParseAddr(s); err == nil {
		return true
	}
	_, err := netip.ParseAddrPort(s)
	return err == nil
}

func TestIDGrammarsMatchContract(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		s := rapid.StringOfN(rapid.SampledFrom([]rune("az09._-:/A \n\x00é")), 0, 140, -1).Draw(t, "s")
		// The grammars, minus what a decision record may never carry: address literals and URLs.
		wantID := contractID.MatchString(s) && !addressLiteral(s)
		if ident.ValidID(s) != wantID {
			t.Fatalf("ident.ValidID(%q) = %v, contract says %v", s, ident.ValidID(s), wantID)
		}
		wantAlias := contractAlias.MatchString(s) && !addressLiteral(s) && !strings.Contains(s, "//")
		if ident.ValidAlias(s) != wantAlias {
			t.Fatalf("ident.ValidAlias(%q) = %v, contract says %v", s, ident.ValidAlias(s), wantAlias)
		}
	})
	for _, s := range []string{"a", "0", "a.b_c-d", strings.Repeat("a", 64)} {
		assert.True(t, ident.ValidID(s), s)
	}
	for _, s := range []string{"", "A", ".a", "-a", "_a", "a/b", "a:b", strings.Repeat("a", 65), "a b", "é", "10.0.0.5"} {
		assert.False(t, ident.ValidID(s), s)
	}
	for _, s := range []string{"a::", "::1", "127.0.0.1:8000", "http://x", "a//b"} {
		assert.False(t, ident.ValidAlias(s), s)
	}
}

func TestCanonicalHost(t *testing.T) {
	cases := []struct {
		in, want string
		ok       bool
	}{
		{"127.0.0.1", "127.0.0.1", true},
		{"::1", "::1", true},
		{"0:0:0:0:0:0:0:1", "::1", true},
		{"GPU-Box.Example.NET", "gpu-box.example.net", true},
		{"localhost", "localhost", true},
		{"a-1.b2", "a-1.b2", true},
		{"", "", false},
		{"-a", "", false},
		{"a-", "", false},
		{"a_b", "", false},
		{"a..b", "", false},
		{"a.", "", false},
		{"1.2.3", "", false},
		{"256.0.0.1", "", false},
		{"fe80::1%eth0", "", false},
		{"[::1]", "", false},
		{"h:80", "", false},
		{strings.Repeat("a", 64), "", false},
		{strings.Repeat("a.", 127) + "ab", "", false},
	}
	for _, tc := range cases {
		got, ok := canonicalHost(tc.in)
		assert.Equal(t, tc.ok, ok, tc.in)
		assert.Equal(t, tc.want, got, tc.in)
	}
}

func TestParseEndpointNormalizes(t *testing.T) {
	cases := map[string]string{
		"http://h":                   "http://h",
		"http://h/":                  "http://h",
		"HTTP://H:80/":               "http://h",
		"https://h:443":              "https://h",
		"https://h:8443/":            "https://h:8443",
		"http://h:443":               "http://h:443",
		"http://[::1]:9000":          "http://[::1]:9000",
		"http://[0:0::1]":            "http://[::1]",
		"http://h/v1/":               "http://h/v1",
		"http://h/a/b~c/d.e_f-g":     "http://h/a/b~c/d.e_f-g",
		"http://10.0.0.1:8000/proxy": "http://10.0.0.1:8000/proxy",
	}
	for in, want := range cases {
		ep, msg := parseEndpoint(in)
		assert.Empty(t, msg, in)
		assert.Equal(t, want, ep.normalized, in)
	}
}

func TestValidListen(t *testing.T) {
	for _, s := range []string{"127.0.0.1:8080", ":8080", "0.0.0.0:0", "[::1]:443", "[::]:1", "localhost:65535", "router.internal:80"} {
		assert.True(t, validListen(s), s)
	}
	for _, s := range []string{"", "8080", "127.0.0.1", "127.0.0.1:", "127.0.0.1:65536", "127.0.0.1:-1", "127.0.0.1:http", "::1:80", "[::1]", "a_b:80", "h:123456", "h:+80"} {
		assert.False(t, validListen(s), s)
	}
}

func TestTokenGrammar(t *testing.T) {
	for _, s := range []string{strings.Repeat("a", 16), "abcDEF0123-._~+/xyz", "abcdefghijklmnop==", strings.Repeat("Z", 512)} {
		assert.True(t, validToken(s), s)
	}
	for _, s := range []string{strings.Repeat("a", 15), strings.Repeat("a", 513), "abcdefghijklmnop q", "abcdefgh=ijklmnopq", "=abcdefghijklmnopq", "abcdefghijklmnop\n", "abcdefghijklmnopé"} {
		assert.False(t, validToken(s), s)
	}
}
