// Package ident is the contract's grammar: the identifier, reason-code, alias and request-ID grammars
// and the numeric bounds every package of the router validates against. It is a pure leaf (standard
// library only, no state), so configuration, admission, the scheduler, the decision log, the intent file
// and the scenarios share exactly one definition of each rule and cannot drift apart.
package ident

import (
	"net/netip"
	"strings"
)

// The contract's numeric bounds.
const (
	MinMembers = 2  // fewest members of a replica tier
	MaxMembers = 16 // most members of a replica tier; also the evidence row bound

	MaxCapacityMembers = 256 // most members over all capacity tiers (one pressure cache)

	MinCeiling = 1       // smallest member max_concurrency
	MaxCeiling = 100_000 // largest member max_concurrency (and scheduler capacity)

	// MaxKeptIntent bounds the quiesce intent entries a router keeps for tiers and members the
	// configuration no longer has (router/intent.Kept), tier and member entries together.
	MaxKeptIntent = 256

	MaxIDLength        = 64  // longest tier or member ID
	MaxReasonLength    = 64  // longest reason code
	MaxAliasLength     = 128 // longest alias
	MaxRequestIDLength = 128 // longest stored request ID

	// MinLineBytes and MaxLineBytes bound one decision-log JSONL line, newline excluded. The largest
	// valid record (longest IDs, 16 score rows with maximal numbers) is about 4.5 KiB, so at the upper
	// bound nothing valid is ever dropped.
	MinLineBytes = 256
	MaxLineBytes = 8192

	// MaxDocumentBytes bounds an outside document read whole (a /metrics page, the intent file): readers
	// take at most MaxDocumentBytes+1 bytes, so one more byte proves the bound was exceeded.
	MaxDocumentBytes = 1 << 20
)

// ValidID reports whether s is a tier or member ID: 1-64 characters matching ^[a-z0-9][a-z0-9._-]*$, and
// not an address literal. The grammar keeps IDs safe as log fields, metric labels and file keys; the one
// address form it would admit, dotted IPv4 ("10.0.0.5"), is refused so evidence can never name an
// address.
func ValidID(s string) bool {
	return lowerToken(s, MaxIDLength, "._-") && !dottedIPv4(s)
}

// ValidReason reports whether s is a reason code: 1-64 characters matching ^[a-z0-9][a-z0-9._-]*$.
func ValidReason(s string) bool { return lowerToken(s, MaxReasonLength, "._-") }

// ValidAlias reports whether s is an alias: 1-128 characters matching ^[a-z0-9][a-z0-9._:/-]*$ (model
// names such as "org/model:tag"), never shaped like a URL ("//") or an IP address with or without a port,
// because decision records carry aliases.
func ValidAlias(s string) bool {
	return lowerToken(s, MaxAliasLength, "._-/:") && !strings.Contains(s, "//") && !addressLike(s)
}

// ValidRequestID reports whether s is a storable request ID: 1-128 characters of [A-Za-z0-9._-], starting
// alphanumeric, and not an IP address.
func ValidRequestID(s string) bool {
	if len(s) == 0 || len(s) > MaxRequestIDLength {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case i > 0 && (c == '.' || c == '_' || c == '-'):
		default:
			return false
		}
	}
	return !addressLike(s)
}

// lowerToken reports whether s is 1-max characters of [a-z0-9] and the punctuation in extra, starting
// with [a-z0-9].
func lowerToken(s string, max int, extra string) bool {
	if len(s) == 0 || len(s) > max {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9':
		case i > 0 && strings.IndexByte(extra, c) >= 0:
		default:
			return false
		}
	}
	return true
}

// dottedIPv4 reports whether s, already within the ID grammar, is an IPv4 address: the only address
// form that grammar admits. It looks at the bytes first, so ordinary IDs never reach the parser.
func dottedIPv4(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c != '.' && (c < '0' || c > '9') {
			return false
		}
	}
	_, err := netip.ParseAddr(s)
	return err == nil
}

// addressLike reports whether s parses as an IP address, with or without a port. Strings that cannot be
// addresses are ruled out first: the parsers allocate their errors, and records check four IDs each.
func addressLike(s string) bool {
	if !strings.ContainsAny(s, ".:") { // every IPv4 address has dots, every IPv6 address and port a colon
		return false
	}
	if !strings.ContainsAny(s, "%[") && strings.IndexFunc(s, notAddressRune) >= 0 {
		return false
	}
	if _, err := netip.ParseAddr(s); err == nil {
		return true
	}
	_, err := netip.ParseAddrPort(s)
	return err == nil
}

// notAddressRune reports a rune that no zoneless IP address or IPv4 address:port holds.
func notAddressRune(r rune) bool {
	return !(r >= '0' && r <= '9' || r >= 'a' && r <= 'f' || r >= 'A' && r <= 'F' || r == '.' || r == ':')
}
