package load

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/anvil-llm/anvil/internal/regfile"
	"github.com/anvil-llm/anvil/router/config"
)

// sourceDir writes a configuration reading both credentials from files, with a TLS pair, and
// returns the directory and the configuration's path.
func sourceDir(t *testing.T) (string, string) {
	t.Helper()
	dir := t.TempDir()
	callers := writeFile(t, dir, "callers", callerTok+"\n")
	admin := writeFile(t, dir, "admin", adminTok+"\n")
	writeFile(t, dir, "cert.pem", "cert v1")
	writeFile(t, dir, "key.pem", "key v1")
	d := loadDoc(t, fileDoc(t, callers, admin)).set(t, "tls", map[string]any{
		"cert_file": filepath.Join(dir, "cert.pem"), "key_file": filepath.Join(dir, "key.pem")})
	return dir, writeFile(t, dir, "router.yaml", string(d.bytes(t)))
}

func sha256Hex(b []byte) string { s := sha256.Sum256(b); return hex.EncodeToString(s[:]) }

// TestSourceReadsAsStartup: a Source accepts what ParseWith with the same environment and token
// files accepts, and its digest is the file's sha256sum.
func TestSourceReadsAsStartup(t *testing.T) {
	_, path := sourceDir(t)
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	env := envMap(map[string]string{"BIG_API_KEY": apiKey, config.EnvListen: "127.0.0.1:9333"})
	l, err := NewSource(path, env).Load(context.Background())
	require.NoError(t, err)
	want, err := ParseWith(data, config.Sources{LookupEnv: env, ReadFile: ReadTokenFile})
	require.NoError(t, err)
	assert.Empty(t, config.Diff(want, l.Config))
	assert.Equal(t, "127.0.0.1:9333", l.Config.Listen(), "the overlay reaches the Config")
	assert.Equal(t, path, l.Path)
	assert.Equal(t, sha256Hex(data), l.Digest)
	if sum, err := exec.LookPath("sha256sum"); err == nil {
		out, err := exec.Command(sum, path).Output()
		require.NoError(t, err)
		assert.Equal(t, l.Digest, strings.Fields(string(out))[0])
	}
	fp, err := NewSource(path, env).Fingerprint(context.Background())
	require.NoError(t, err)
	assert.Equal(t, fp, l.Fingerprint, "a load's fingerprint is the one polling sees while nothing changes")
}

// flipping is a read that answers the real file, except that the n-th read of name answers
// replacement (or fails when replacement is nil).
func flipping(name string, n int, replacement []byte) func(string, int64) ([]byte, error) {
	count := 0
	return func(p string, limit int64) ([]byte, error) {
		if p == name {
			count++
			if count == n {
				if replacement == nil {
					return nil, fs.ErrNotExist
				}
				return replacement, nil
			}
		}
		return regfile.Read(p, limit)
	}
}

// TestSourceRefusals: every kind of bad input gives a fixed *config.Error with its sentinel.
func TestSourceRefusals(t *testing.T) {
	env := envMap(baseEnv())
	tests := []struct {
		name     string
		setup    func(t *testing.T, dir, path string) *Source
		want     string
		sentinel error
	}{
		{"YAML error", func(t *testing.T, _, path string) *Source {
			require.NoError(t, os.WriteFile(path, []byte("listen: [\n"), 0o600))
			return NewSource(path, env)
		}, "config: invalid YAML syntax on line 1", config.ErrInvalid},
		{"unknown key", func(t *testing.T, _, path string) *Source {
			require.NoError(t, os.WriteFile(path, []byte(baseDoc+"colour: blue\n"), 0o600))
			return NewSource(path, env)
		}, "config: colour: unknown key", config.ErrInvalid},
		{"validation failure", func(t *testing.T, _, path string) *Source {
			d := loadDoc(t, baseDoc).set(t, "tiers[0].members[0].max_concurrency", 0)
			require.NoError(t, os.WriteFile(path, d.bytes(t), 0o600))
			return NewSource(path, env)
		}, "config: tiers[0].members[0].max_concurrency: must be 1-100000", config.ErrInvalid},
		{"missing file", func(t *testing.T, dir, _ string) *Source {
			return NewSource(filepath.Join(dir, "nope.yaml"), env)
		}, "config: cannot read config file DIR/nope.yaml: no such file or directory", config.ErrUnreadable},
		{"a directory", func(t *testing.T, dir, _ string) *Source { return NewSource(dir, env) },
			"config: cannot read config file DIR: not a regular file", config.ErrUnreadable},
		{"token file turned invalid", func(t *testing.T, dir, path string) *Source {
			writeFile(t, dir, "callers", "short\n")
			return NewSource(path, env)
		}, "config: auth.caller_tokens_file: line 1: " + tokenRule, config.ErrInvalid},
		{"token file vanished", func(t *testing.T, dir, path string) *Source {
			require.NoError(t, os.Remove(filepath.Join(dir, "admin")))
			return NewSource(path, env)
		}, "config: auth.admin_token_file: cannot read file DIR/admin: no such file or directory", config.ErrInvalid},
		{"file changed while read", func(t *testing.T, _, path string) *Source {
			s := NewSource(path, env)
			s.read = flipping(path, 2, []byte(baseDoc))
			return s
		}, "config: file changed while being read", config.ErrChanged},
		{"file vanished while read", func(t *testing.T, _, path string) *Source {
			s := NewSource(path, env)
			s.read = flipping(path, 2, nil)
			return s
		}, "config: file changed while being read", config.ErrChanged},
		{"token file changed while read", func(t *testing.T, dir, path string) *Source {
			s := NewSource(path, env)
			s.read = flipping(filepath.Join(dir, "callers"), 2, []byte(callerTok2+"\n"))
			return s
		}, "config: auth.caller_tokens_file: file changed while being read", config.ErrChanged},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir, path := sourceDir(t)
			l, err := tc.setup(t, dir, path).Load(context.Background())
			require.Error(t, err)
			assert.Equal(t, strings.ReplaceAll(tc.want, "DIR", dir), err.Error(), "file errors name the file and the OS's reason")
			assert.ErrorIs(t, err, tc.sentinel)
			var ce *config.Error
			assert.True(t, errors.As(err, &ce), "a *config.Error")
			assert.Empty(t, l.Digest)
			assert.NotContains(t, err.Error(), "SECRET")
		})
	}
	t.Run("a cancelled context reads nothing", func(t *testing.T) {
		_, path := sourceDir(t)
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		_, err := NewSource(path, env).Load(ctx)
		assert.ErrorIs(t, err, context.Canceled)
	})
}

// TestFingerprintSeesEveryFile: the fingerprint is stable while nothing changes and moves when the
// file, a token file, the certificate or the key changes or vanishes; it follows content, so
// restoring a file restores its fingerprint.
func TestFingerprintSeesEveryFile(t *testing.T) {
	dir, path := sourceDir(t)
	// The role files too: an observer token file and a labelled caller's token file.
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	d := loadDoc(t, string(data))
	d.set(t, "auth.observer_tokens_file", writeFile(t, dir, "observers", observerTok+"\n"))
	d.set(t, "auth.callers", []any{map[string]any{"label": "team-a", "token_file": writeFile(t, dir, "team-a", labelTok+"\n")}})
	writeFile(t, dir, "router.yaml", string(d.bytes(t)))
	s := NewSource(path, envMap(baseEnv()))
	_, err = s.Load(context.Background())
	require.NoError(t, err)
	fp := func() string {
		t.Helper()
		v, err := s.Fingerprint(context.Background())
		require.NoError(t, err)
		return v
	}
	first := fp()
	require.Equal(t, first, fp(), "stable")
	seen := map[string]string{first: "start"}
	for _, name := range []string{"router.yaml", "callers", "admin", "observers", "team-a", "cert.pem", "key.pem"} {
		t.Run(name, func(t *testing.T) {
			p := filepath.Join(dir, name)
			was, err := os.ReadFile(p)
			require.NoError(t, err)
			require.NoError(t, os.WriteFile(p, append(append([]byte{}, was...), "\n# rotated\n"...), 0o600))
			changed := fp()
			assert.NotContains(t, seen, changed, "a change of %s moves the fingerprint", name)
			seen[changed] = name
			require.NoError(t, os.Remove(p))
			gone := fp()
			assert.NotContains(t, seen, gone, "%s vanishing moves the fingerprint", name)
			seen[gone] = name + " gone"
			require.NoError(t, os.WriteFile(p, was, 0o600))
			assert.Equal(t, first, fp(), "restoring %s restores the fingerprint", name)
		})
	}
	t.Run("a half-written document still fingerprints", func(t *testing.T) {
		data, err := os.ReadFile(path)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(path, data[:len(data)/2], 0o600))
		half := fp()
		assert.NotEqual(t, first, half)
		assert.Equal(t, half, fp())
	})
}

// FuzzReloadSource: whatever the file holds, Load never panics, refuses with a *config.Error, and
// accepts exactly what start-up's ParseWith accepts, with the file's sha256 as digest and the
// fingerprint polling then sees.
func FuzzReloadSource(f *testing.F) {
	for _, name := range []string{"full.yaml", "minimal.yaml"} {
		if b, err := os.ReadFile(filepath.Join("testdata", name)); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte(baseDoc))
	f.Add([]byte("listen: [\n"))
	f.Add([]byte(baseDoc[:len(baseDoc)/2]))
	f.Add([]byte("auth: {caller_tokens_file: /nonexistent}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(t.TempDir(), "router.yaml")
		require.NoError(t, os.WriteFile(path, data, 0o600))
		s := NewSource(path, fuzzEnv)
		l, err := s.Load(context.Background())
		want, wantErr := ParseWith(data, config.Sources{LookupEnv: fuzzEnv, ReadFile: ReadTokenFile})
		if err != nil {
			var ce *config.Error
			require.True(t, errors.As(err, &ce), "%T %v", err, err)
			assert.False(t, errors.Is(err, config.ErrChanged), "nothing changed the file")
			require.Error(t, wantErr, "start-up accepts what the reload refused: %v", err)
			assert.Equal(t, wantErr.Error(), err.Error())
			return
		}
		require.NoError(t, wantErr)
		assert.Empty(t, config.Diff(want, l.Config))
		assert.Equal(t, sha256Hex(data), l.Digest)
		fp, err := s.Fingerprint(context.Background())
		require.NoError(t, err)
		assert.Equal(t, l.Fingerprint, fp)
	})
}
