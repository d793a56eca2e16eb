package qualification

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strings"
)

// The approval scheme. An operator who approves a plan picks an approval token (16-4096 printable
// ASCII characters without spaces, kept like a password) and records in the file
//
//	approval:
//	  digest: hmac-sha256:<hex of HMAC-SHA256(key = token, message = approvalContext + fingerprint)>
//
// where fingerprint is the plan's Fingerprint ("sha256:..." of the resolved plan). `anvil-qualify
// digest -f QUAL.yaml` prints that line, reading the token from ANVIL_QUALIFY_APPROVAL or
// --approval-token. A run recomputes the HMAC with the token it is given and compares it with the
// recorded digest in constant time (hmac.Equal). So a run starts only when whoever starts it holds
// the token, and only for the plan that was approved: changing anything a run would do changes the
// fingerprint and voids the approval. The token itself is never stored, printed or written to an
// artifact, and the recorded digest is not copied into the run's artifacts either.
const (
	digestPrefix    = "hmac-sha256:"
	approvalContext = "anvil-qualify approval v1\n"
	minTokenLen     = 16
	maxTokenLen     = 4096
)

// ApprovalEnv is the environment variable a run reads the approval token from when no
// --approval-token is given.
const ApprovalEnv = "ANVIL_QUALIFY_APPROVAL"

// Refusals of a run's approval. None of them carries the token or the digest.
var (
	ErrNotApproved    = errors.New("approval refused: run needs --approve")
	ErrNoToken        = errors.New("approval refused: no approval token (--approval-token or " + ApprovalEnv + ")")
	ErrTokenForm      = errors.New("approval refused: an approval token is 16-4096 printable ASCII characters without spaces")
	ErrNoDigest       = errors.New("approval refused: the file records no approval digest (approval.digest; anvil-qualify digest prints it)")
	ErrDigestMismatch = errors.New("approval refused: the token does not match the approval recorded for this plan (a wrong token, or the plan changed since it was approved)")
)

// Digest returns the approval digest of token over a plan fingerprint.
func Digest(token, fingerprint string) (string, error) {
	if !validToken(token) {
		return "", ErrTokenForm
	}
	mac := hmac.New(sha256.New, []byte(token))
	mac.Write([]byte(approvalContext + fingerprint))
	return digestPrefix + hex.EncodeToString(mac.Sum(nil)), nil
}

// Approve checks a run's approval: --approve given, a well-formed token, a digest recorded in the
// plan, and the token's digest over this plan's fingerprint equal to it (constant-time compare).
// Nothing is sent anywhere before it returns an Approval, and Run needs one.
func (p *Plan) Approve(approve bool, token string) (Approval, error) {
	switch {
	case !approve:
		return Approval{}, ErrNotApproved
	case token == "":
		return Approval{}, ErrNoToken
	case !validToken(token):
		return Approval{}, ErrTokenForm
	case p.Approval == "":
		return Approval{}, ErrNoDigest
	}
	fp := p.Fingerprint()
	want, err := Digest(token, fp)
	if err != nil {
		return Approval{}, err
	}
	if !hmac.Equal([]byte(want), []byte(p.Approval)) {
		return Approval{}, ErrDigestMismatch
	}
	return Approval{fingerprint: fp}, nil
}

func validToken(t string) bool {
	if len(t) < minTokenLen || len(t) > maxTokenLen {
		return false
	}
	for i := 0; i < len(t); i++ {
		if t[i] <= ' ' || t[i] >= 0x7f {
			return false
		}
	}
	return true
}

func validDigest(d string) bool {
	hexPart, ok := strings.CutPrefix(d, digestPrefix)
	if !ok || len(hexPart) != 2*sha256.Size {
		return false
	}
	for i := 0; i < len(hexPart); i++ {
		if c := hexPart[i]; !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}
