package server

import (
	"cmp"
	"crypto/rand"
	"encoding/binary"
	"math/bits"
	"slices"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/anvil-llm/anvil/router/config"
	"github.com/anvil-llm/anvil/router/ident"
)

// Caller request IDs. A request's ID (the decision record's request_id, every log line's request_id,
// the X-Request-ID the router answers with and the X-Request-Id it sends the member) is always the
// router's own, unique per request. The caller's X-Request-ID is only a correlation value kept beside
// it (the record's caller_request_id, the request line's caller_request_id), and only when it is one
// header value in the request-ID grammar (ident.ValidRequestID) that neither is nor contains a
// credential of the request's generation: a caller token, the admin token or any tier's upstream API
// key. Anything else is dropped without an error to the caller, counted in
// anvil_router_caller_request_ids_total and logged at debug without the value.

// callerIDResult is what became of a caller's X-Request-ID; its name is the metric's result label.
type callerIDResult uint8

const (
	callerIDKept      callerIDResult = iota // kept as the correlation value
	callerIDMalformed                       // more than one header, or out of the grammar
	callerIDSecret                          // is or contains a configured credential
)

func (r callerIDResult) String() string { return [...]string{"kept", "malformed", "secret"}[r] }

// secretFilter holds one generation's fingerprints of its credentials, computed when the generation
// is built (startup or reload), so a request only hashes its candidate ID: no allocation, and the
// same work whatever the ID's bytes. A credential is fingerprinted by a polynomial hash modulo the
// prime 2^61-1 with a base drawn at random per generation; a candidate contains it when one of the
// candidate's windows of its length has its hash. Every fingerprint of a length is compared, without
// an early exit, with every window of that length, so the time depends only on the candidate's
// length and the credentials' lengths, never on where or whether one matches. Two different strings
// of length n share a hash with probability below n/2^61 for a random base; such a collision could
// only drop an honest ID, never keep a credential.
type secretFilter struct {
	base   uint64
	groups []secretLength // ascending lengths
}

// secretLength is the fingerprints of the credentials of one length.
type secretLength struct {
	n      int
	pow    uint64 // base^n mod p: a prefix's weight n bytes later
	hashes []uint64
}

// hashPrime is the Mersenne prime 2^61-1.
const hashPrime = 1<<61 - 1

// newSecretFilter fingerprints secrets with base (in 256..hashPrime-1). A secret that cannot occur
// inside a valid request ID (longer than one, or with a byte outside its alphabet) needs no
// fingerprint: the grammar already refuses every candidate that would contain it.
func newSecretFilter(secrets []string, base uint64) secretFilter {
	f := secretFilter{base: base}
	for _, s := range secrets {
		if len(s) == 0 || len(s) > ident.MaxRequestIDLength || !requestIDAlphabet(s) {
			continue
		}
		i, found := slices.BinarySearchFunc(f.groups, len(s), func(g secretLength, n int) int { return cmp.Compare(g.n, n) })
		if !found {
			pow := uint64(1)
			for range len(s) {
				pow = mulmod(pow, base)
			}
			f.groups = slices.Insert(f.groups, i, secretLength{n: len(s), pow: pow})
		}
		f.groups[i].hashes = append(f.groups[i].hashes, f.hash(s))
	}
	return f
}

// generationSecrets is every credential of cfg a caller ID must not carry.
func generationSecrets(cfg config.Config) []string {
	var out []string
	for _, t := range append(cfg.CallerTokens(), cfg.ObserverTokens()...) {
		out = append(out, t.Reveal())
	}
	if t := cfg.AdminToken(); !t.IsZero() {
		out = append(out, t.Reveal())
	}
	for _, t := range cfg.Tiers() {
		if !t.APIKey.IsZero() {
			out = append(out, t.APIKey.Reveal())
		}
	}
	return out
}

// randomBase draws a hash base in 256..hashPrime-1 from crypto/rand.
func randomBase() uint64 {
	var b [8]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24)
	return 256 + binary.LittleEndian.Uint64(b[:])%(hashPrime-256)
}

// check classifies the caller's X-Request-ID header values.
func (f *secretFilter) check(values []string) callerIDResult {
	switch {
	case len(values) != 1 || !ident.ValidRequestID(values[0]):
		return callerIDMalformed
	case f.contains(values[0]):
		return callerIDSecret
	}
	return callerIDKept
}

// contains reports whether id (in the request-ID grammar, so at most ident.MaxRequestIDLength
// bytes) contains a fingerprinted secret. With the hashes of id's prefixes, the hash of the window
// id[i:i+n] is prefix[i+n] - prefix[i]*base^n: one multiplication per window and length.
func (f *secretFilter) contains(id string) bool {
	var prefix [ident.MaxRequestIDLength + 1]uint64
	for i := 0; i < len(id); i++ {
		prefix[i+1] = reduce(mulmod(prefix[i], f.base) + uint64(id[i]))
	}
	var hit uint64
	for _, g := range f.groups {
		for i := 0; i+g.n <= len(id); i++ {
			h := reduce(prefix[i+g.n] + hashPrime - mulmod(prefix[i], g.pow))
			for _, s := range g.hashes {
				hit |= equal64(h, s)
			}
		}
	}
	return hit != 0
}

func (f *secretFilter) hash(s string) uint64 {
	var h uint64
	for i := 0; i < len(s); i++ {
		h = reduce(mulmod(h, f.base) + uint64(s[i]))
	}
	return h
}

// mulmod is a*b mod 2^61-1 for a, b below 2^61.
func mulmod(a, b uint64) uint64 {
	hi, lo := bits.Mul64(a, b)
	return reduce((hi<<3 | lo>>61) + lo&hashPrime) // a*b = (a*b>>61)*2^61 + its low 61 bits, and 2^61 is 1 mod p
}

// reduce is x mod 2^61-1 for x below 2^63.
func reduce(x uint64) uint64 {
	x = x&hashPrime + x>>61
	if x >= hashPrime {
		x -= hashPrime
	}
	return x
}

// equal64 is 1 when a == b, else 0, without a branch.
func equal64(a, b uint64) uint64 {
	v := a ^ b
	return ((v | -v) >> 63) ^ 1
}

// requestIDAlphabet: every byte of s may occur in a request ID.
func requestIDAlphabet(s string) bool {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '.', c == '_', c == '-':
		default:
			return false
		}
	}
	return true
}

// newCallerIDCounter is anvil_router_caller_request_ids_total, with all three results present.
func newCallerIDCounter() *prometheus.CounterVec {
	v := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "anvil_router_caller_request_ids_total",
		Help: "Caller X-Request-ID headers on authenticated requests, by result (kept, malformed, secret)."},
		[]string{"result"})
	for _, r := range []callerIDResult{callerIDKept, callerIDMalformed, callerIDSecret} {
		v.WithLabelValues(r.String())
	}
	return v
}
