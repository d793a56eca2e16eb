package config

import (
	"net"
	"net/netip"
	"net/url"
	"regexp"
	"strconv"
	"strings"
)

// Grammars of configured names. Tier and member IDs use the shared
// identifier grammar of the contract, ident.ValidID; aliases extend it
// with ':' and '/' (model names such as "org/model:tag") and 128 characters.
var (
	envNamePattern  = regexp.MustCompile(`^[A-Z_][A-Z0-9_]{0,127}$`)
	tokenPattern    = regexp.MustCompile(`^[A-Za-z0-9._~+/-]+=*$`) // RFC 6750 b64token
	pathSegPattern  = regexp.MustCompile(`^[A-Za-z0-9._~-]+$`)
	hostLabel       = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$`)
	allDigitsOrNone = regexp.MustCompile(`^[0-9]*$`)
)

// Fixed grammar descriptions used in error messages.
const (
	idRule         = "must match [a-z0-9][a-z0-9._-]{0,63}"
	aliasRule      = "must match [a-z0-9][a-z0-9._:/-]{0,127}"
	envNameRule    = "must match [A-Z_][A-Z0-9_]{0,127}"
	tokenRule      = "must be a bearer token of 16-512 characters from A-Z a-z 0-9 - . _ ~ + / with optional trailing ="
	minTokenLen    = 16
	maxTokenLen    = 512
	maxCallerToken = 1024
	maxPathLen     = 4096
	maxTextLen     = 256
	maxAPIKeyLen   = 4096
)

func validToken(s string) bool {
	return len(s) >= minTokenLen && len(s) <= maxTokenLen && tokenPattern.MatchString(s)
}

// validPath accepts a non-empty file path without control characters.
func validPath(s string) bool {
	if s == "" || len(s) > maxPathLen {
		return false
	}
	for _, r := range s {
		if r < 0x20 || r == 0x7f {
			return false
		}
	}
	return true
}

// visibleASCII accepts 1-max characters in '!'..'~': served model names
// and upstream API keys (safe in a header, no spaces).
func visibleASCII(s string, maxLen int) bool {
	if s == "" || len(s) > maxLen {
		return false
	}
	for i := range len(s) {
		if s[i] <= 0x20 || s[i] >= 0x7f {
			return false
		}
	}
	return true
}

// validText accepts 1-256 printable ASCII characters with inner spaces
// only: declared provenance.
func validText(s string) bool {
	if s == "" || len(s) > maxTextLen || s[0] == ' ' || s[len(s)-1] == ' ' {
		return false
	}
	for i := range len(s) {
		if s[i] < 0x20 || s[i] >= 0x7f {
			return false
		}
	}
	return true
}

// canonicalHost returns the comparison form of a host: an IP literal in
// netip's canonical text (so ::1 and 0:0::1 are equal), a DNS name in
// lower case. Zoned IPv6 addresses and all-numeric names are refused.
func canonicalHost(h string) (string, bool) {
	if addr, err := netip.ParseAddr(h); err == nil {
		if addr.Zone() != "" {
			return "", false
		}
		return addr.String(), true
	}
	h = strings.ToLower(h)
	if h == "" || len(h) > 253 {
		return "", false
	}
	labels := strings.Split(h, ".")
	for _, l := range labels {
		if !hostLabel.MatchString(l) {
			return "", false
		}
	}
	// A last label of digits only is a mistyped IPv4 address, not a name.
	if allDigitsOrNone.MatchString(labels[len(labels)-1]) {
		return "", false
	}
	return h, true
}

// endpoint is a validated base URL.
type endpoint struct {
	normalized string // scheme://host[:port][/path], no trailing slash
	host       string // canonical host
}

// parseEndpoint validates a base URL and returns its normalized form and
// canonical host, or a fixed message. Default ports are dropped so that
// http://h:80 and http://h compare equal when checking for duplicates.
func parseEndpoint(raw string) (endpoint, string) {
	const base = "must be an absolute http or https URL"
	u, err := url.Parse(raw)
	if err != nil || u.Opaque != "" || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return endpoint{}, base
	}
	if u.User != nil {
		return endpoint{}, "must not contain userinfo"
	}
	if u.RawQuery != "" || u.ForceQuery || u.Fragment != "" || strings.ContainsAny(raw, "?#") {
		return endpoint{}, "must not contain a query or fragment"
	}
	host, ok := canonicalHost(u.Hostname())
	if !ok {
		return endpoint{}, "must name a valid host"
	}
	port, ok := endpointPort(u)
	if !ok {
		return endpoint{}, "must have a port 1-65535"
	}
	path, ok := endpointPath(u)
	if !ok {
		return endpoint{}, "path must be slash-separated segments of A-Z a-z 0-9 . _ ~ -"
	}
	hostport := host
	if strings.Contains(host, ":") {
		hostport = "[" + host + "]"
	}
	if port != "" {
		hostport = net.JoinHostPort(host, port)
	}
	return endpoint{normalized: u.Scheme + "://" + hostport + path, host: host}, ""
}

// endpointPort returns the explicit port, "" for none or a default port.
func endpointPort(u *url.URL) (string, bool) {
	p := u.Port()
	if p == "" {
		// "http://h:" has an empty port after the colon: refuse it.
		return "", !strings.HasSuffix(u.Host, ":")
	}
	n, err := strconv.Atoi(p)
	if err != nil || n < 1 || n > 65535 || p[0] == '0' {
		return "", false
	}
	if (u.Scheme == "http" && n == 80) || (u.Scheme == "https" && n == 443) {
		return "", true
	}
	return p, true
}

// endpointPath accepts "", "/" or a plain path prefix; no escapes, no dot
// segments, returned without the trailing slash.
func endpointPath(u *url.URL) (string, bool) {
	if u.RawPath != "" {
		return "", false
	}
	p := strings.TrimSuffix(u.Path, "/")
	if p == "" {
		return "", true
	}
	for _, seg := range strings.Split(p, "/")[1:] {
		if !pathSegPattern.MatchString(seg) || seg == "." || seg == ".." {
			return "", false
		}
	}
	return p, true
}

// validListen accepts host:port with an empty host (all interfaces), an
// IP literal or a DNS name, and a numeric port 0-65535 (0 = any free port).
func validListen(s string) bool {
	host, port, err := net.SplitHostPort(s)
	if err != nil || port == "" || len(port) > 5 || !allDigitsOrNone.MatchString(port) {
		return false
	}
	if n, _ := strconv.Atoi(port); n > 65535 {
		return false
	}
	if host == "" {
		return true
	}
	_, ok := canonicalHost(host)
	return ok
}
