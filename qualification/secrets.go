package qualification

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
)

// maxTokenFileBytes bounds a token file.
const maxTokenFileBytes = 64 << 10

// ErrSecret is wrapped by every failure to resolve a token; the message names the source (a
// variable name or a file path from the plan), never a value.
var ErrSecret = errors.New("token not available")

// Secrets are the tokens a run sends: the router's admin token (capacity, admission, decisions,
// transitions), its caller token (the routed phases) and the members' token ("" for none). They are
// held in memory only and never written or printed.
type Secrets struct {
	Admin, Caller, Member string
}

// Sources read secrets: the process environment and token files in production, maps in tests.
type Sources struct {
	LookupEnv func(string) (string, bool)
	ReadFile  func(string) ([]byte, error)
}

// OSSources reads the process environment and regular files.
func OSSources() Sources { return Sources{LookupEnv: os.LookupEnv, ReadFile: readTokenFile} }

// Resolve reads every token the plan names.
func (p *Plan) Resolve(src Sources) (Secrets, error) {
	var s Secrets
	var err error
	if s.Admin, err = src.read("router.admin_token", p.Router.AdminToken); err != nil {
		return Secrets{}, err
	}
	if s.Caller, err = src.read("router.caller_token", p.Router.CallerToken); err != nil {
		return Secrets{}, err
	}
	if p.Tier.MemberToken.Set() {
		if s.Member, err = src.read("tier.member_token", p.Tier.MemberToken); err != nil {
			return Secrets{}, err
		}
	}
	if s.Admin == s.Caller {
		return Secrets{}, fmt.Errorf("%w: the admin and caller tokens are the same; the router refuses such a config", ErrSecret)
	}
	return s, nil
}

// Availability says for each named source whether it resolves now, without revealing anything:
// "set", "not set", "unreadable" or "not a token".
func (p *Plan) Availability(src Sources) map[string]string {
	out := map[string]string{}
	for name, ts := range map[string]TokenSource{"router.admin_token": p.Router.AdminToken,
		"router.caller_token": p.Router.CallerToken, "tier.member_token": p.Tier.MemberToken} {
		if !ts.Set() {
			continue
		}
		_, err := src.read(name, ts)
		switch {
		case err == nil:
			out[name] = "set"
		case errors.Is(err, errNotSet):
			out[name] = "not set"
		case errors.Is(err, errNotToken):
			out[name] = "not a token"
		default:
			out[name] = "unreadable"
		}
	}
	return out
}

var (
	errNotSet   = errors.New("not set")
	errNotToken = errors.New("not a bearer token")
)

func (src Sources) read(name string, ts TokenSource) (string, error) {
	var raw string
	if ts.Env != "" {
		v, ok := src.LookupEnv(ts.Env)
		if !ok || strings.TrimSpace(v) == "" {
			return "", fmt.Errorf("%w: %s: environment variable %s is %w", ErrSecret, name, ts.Env, errNotSet)
		}
		raw = v
	} else {
		data, err := src.ReadFile(ts.File)
		if err != nil {
			return "", fmt.Errorf("%w: %s: file %s cannot be read", ErrSecret, name, ts.File)
		}
		raw, _, _ = strings.Cut(string(data), "\n")
	}
	t := strings.TrimSpace(raw)
	if !bearerToken(t) {
		return "", fmt.Errorf("%w: %s is %w (1-4096 printable characters without spaces)", ErrSecret, name, errNotToken)
	}
	return t, nil
}

func bearerToken(t string) bool {
	if t == "" || len(t) > 4096 {
		return false
	}
	for i := 0; i < len(t); i++ {
		if t[i] <= ' ' || t[i] >= 0x7f {
			return false
		}
	}
	return true
}

// readTokenFile reads a regular file of at most maxTokenFileBytes.
func readTokenFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !info.Mode().IsRegular() {
		return nil, errors.New("not a regular file")
	}
	data, err := io.ReadAll(io.LimitReader(f, maxTokenFileBytes+1))
	if err != nil {
		return nil, err
	}
	if len(data) > maxTokenFileBytes {
		return nil, errors.New("token file too large")
	}
	return data, nil
}
