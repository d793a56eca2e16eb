package load

import (
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/anvil-llm/anvil/router/config"
)

// fuzzEnv supplies credentials through the environment, so accepted
// documents need no token files, and answers every other variable with an
// API key, so api_key_env never blocks acceptance.
func fuzzEnv(key string) (string, bool) {
	switch key {
	case config.EnvAPITokens:
		return callerTok + "," + callerTok2, true
	case config.EnvAdminToken:
		return adminTok, true
	case config.EnvObserverTokens:
		return observerTok, true
	case config.EnvAPIToken, config.EnvListen:
		return "", false
	}
	return apiKey, true
}

// FuzzParse: Parse never panics; config check's diagnosis starts with Parse's error; a refusal is always a fixed *config.Error
// wrapping config.ErrInvalid that names no secret; an acceptance normalizes
// without secrets, parses again, and normalizes to the same bytes. The
// gate's promise that viper decodes whatever it accepts is checked too:
// "document could not be decoded" must never happen.
// inlineCaller matches a normalized labelled caller whose token is inline (shown redacted).
var inlineCaller = regexp.MustCompile(`(?m)^\s+token: '\[redacted\]'$`)

func FuzzParse(f *testing.F) {
	for _, name := range []string{"full.yaml", "minimal.yaml"} {
		if b, err := os.ReadFile(filepath.Join("testdata", name)); err == nil {
			f.Add(b)
		}
	}
	if b, err := os.ReadFile(filepath.Join("..", "..", "docs", "examples", "router.yaml")); err == nil {
		f.Add(b)
	}
	f.Add([]byte(baseDoc))
	for _, s := range []string{
		"auth: {callers: [{label: team-a, token: " + labelTok + "}, {label: b, token_env: B}], observer_tokens: [" + observerTok + "]}\n",
		"auth: {callers: [{label: caller-7, token: " + labelTok + "}]}\n", "auth: {callers: [{label: a}, {label: a}]}\n",
		"auth: {observer_tokens_file: /x, callers: [{label: a, token_file: /t, token: x}]}\n",
		"", "listen: a\nlisten: b\n", "Listen: x\n", "a: &x 1\nb: *x\n", "tiers: [{<<: {id: a}}]\n",
		"limits: {max_body_bytes: .nan}\n", "upstream: {timeout: 30}\n", "---\n---\n", "[", "tiers: [{id: 1}]\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := Parse(data, fuzzEnv)
		d := diagnose(data, config.Sources{LookupEnv: fuzzEnv})
		if (err == nil) != (len(d.Problems) == 0) || err != nil && d.Problems[0].Error() != err.Error() {
			t.Fatalf("config check's first problem %v is not the load's %v", d.Problems, err)
		}
		for _, p := range d.Problems {
			var ce *config.Error
			if errors.As(p, &ce) {
				_ = d.Line(ce.Path)
			}
			checkNoSecret(t, p.Error())
		}
		if err != nil {
			var ce *config.Error
			if !errors.As(err, &ce) || !errors.Is(err, config.ErrInvalid) {
				t.Fatalf("error is not a config.Error wrapping ErrInvalid: %v", err)
			}
			if ce.Msg == "document could not be decoded" {
				t.Fatalf("gate accepted what viper could not decode: %q", data)
			}
			checkNoSecret(t, err.Error())
			return
		}
		n1, err := c.Normalized()
		if err != nil {
			t.Fatalf("normalize: %v", err)
		}
		checkNoSecret(t, string(n1))
		c2, err := Parse(n1, fuzzEnv)
		if err != nil && inlineCaller.Match(n1) {
			return // an inline labelled caller token is shown redacted, and no variable replaces it
		}
		if err != nil {
			t.Fatalf("normalized form refused: %v\n%s", err, n1)
		}
		n2, err := c2.Normalized()
		if err != nil {
			t.Fatalf("normalize again: %v", err)
		}
		if string(n1) != string(n2) {
			t.Fatalf("normalization not stable:\n%s\n---\n%s", n1, n2)
		}
	})
}

func checkNoSecret(t *testing.T, s string) {
	t.Helper()
	for _, secret := range []string{callerTok, callerTok2, adminTok, apiKey} {
		if strings.Contains(s, secret) {
			t.Fatalf("secret leaked into %q", s)
		}
	}
}
