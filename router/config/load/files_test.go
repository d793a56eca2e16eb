package load

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"

	"github.com/anvil-llm/anvil/internal/regfile"
	"github.com/anvil-llm/anvil/router/config"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// writeFile writes content under dir and returns its path.
func writeFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	require.NoError(t, os.WriteFile(p, []byte(content), 0o600))
	return p
}

// fileDoc is baseDoc with both credentials read from files.
func fileDoc(t *testing.T, callerFile, adminFile string) string {
	d := loadDoc(t, baseDoc).del(t, "auth.caller_tokens").del(t, "auth.admin_token").
		set(t, "auth.caller_tokens_file", callerFile)
	if adminFile != "" {
		d.set(t, "auth.admin_token_file", adminFile)
	}
	return string(d.bytes(t))
}

func TestLoadTokenFiles(t *testing.T) {
	dir := t.TempDir()
	callers := writeFile(t, dir, "callers", "# caller tokens\r\n\r\n  "+callerTok+"  \r\n# rotated in:\n"+callerTok2+"\n")
	admin := writeFile(t, dir, "admin", "# admin\n"+adminTok+"\n\n")
	cfgPath := writeFile(t, dir, "router.yaml", fileDoc(t, callers, admin))
	t.Setenv("BIG_API_KEY", apiKey)
	t.Setenv(config.EnvAPIToken, "")
	t.Setenv(config.EnvAPITokens, "")
	t.Setenv(config.EnvAdminToken, "")
	t.Setenv(config.EnvListen, "")

	c, err := File(cfgPath)
	require.NoError(t, err)
	assert.Equal(t, []string{callerTok, callerTok2}, revealAll(c.CallerTokens()))
	assert.Equal(t, adminTok, c.AdminToken().Reveal())

	out, err := c.Normalized()
	require.NoError(t, err)
	assert.Contains(t, string(out), "# from file "+callers)
	assert.Contains(t, string(out), "# from file "+admin)
	assert.NotContains(t, string(out), "SECRET")
}

func TestLoadEnvOverridesProcessEnvironment(t *testing.T) {
	dir := t.TempDir()
	cfgPath := writeFile(t, dir, "router.yaml", fileDoc(t, filepath.Join(dir, "missing"), filepath.Join(dir, "missing-too")))
	t.Setenv("BIG_API_KEY", apiKey)
	t.Setenv(config.EnvListen, "0.0.0.0:8443")
	t.Setenv(config.EnvAPITokens, callerTok2)
	t.Setenv(config.EnvAPIToken, "")
	t.Setenv(config.EnvAdminToken, adminTok)
	c, err := File(cfgPath)
	require.NoError(t, err)
	assert.Equal(t, "0.0.0.0:8443", c.Listen())
	assert.Equal(t, []string{callerTok2}, revealAll(c.CallerTokens()))
	assert.Equal(t, adminTok, c.AdminToken().Reveal())
}

func TestTokenFileErrors(t *testing.T) {
	dir := t.TempDir()
	big := strings.Repeat("#", config.MaxTokenFileBytes) + "\n" + callerTok + "\n"
	cases := []struct {
		name    string
		callers string // file content; "" with missing=true means no file
		admin   string
		missing bool
		want    string
	}{
		{"bad token line", "# c\n" + callerTok + "\nSECRET bad\n", "", false, "config: auth.caller_tokens_file: line 3: " + tokenRule},
		{"duplicate line", callerTok + "\n\n" + callerTok + "\n", "", false, "config: auth.caller_tokens_file: line 3: duplicate token"},
		{"no tokens", "# nothing here\n\n", "", false, "config: auth.caller_tokens_file: contains no tokens"},
		{"oversize", big, "", false, "config: auth.caller_tokens_file: file exceeds 65536 bytes"},
		{"missing", "", "", true, "config: auth.caller_tokens_file: cannot read file DIR/callers: no such file or directory"},
		{"admin two tokens", callerTok + "\n", adminTok + "\n" + "admin-SECRET-2-ffffffffffffff\n", false, "config: auth.admin_token_file: must contain exactly one token"},
		{"admin empty", callerTok + "\n", "# none\n", false, "config: auth.admin_token_file: must contain exactly one token"},
		{"admin bad", callerTok + "\n", "SECRET\n", false, "config: auth.admin_token_file: line 1: " + tokenRule},
		{"admin equals caller", callerTok + "\n", callerTok + "\n", false, "config: auth.admin_token_file: must differ from every caller token"},
	}
	t.Setenv("BIG_API_KEY", apiKey)
	t.Setenv(config.EnvAPIToken, "")
	t.Setenv(config.EnvAPITokens, "")
	t.Setenv(config.EnvAdminToken, "")
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			sub := filepath.Join(dir, string(rune('a'+i)))
			require.NoError(t, os.Mkdir(sub, 0o700))
			callers := filepath.Join(sub, "callers")
			if !tc.missing {
				writeFile(t, sub, "callers", tc.callers)
			}
			admin := ""
			if tc.admin != "" {
				admin = writeFile(t, sub, "admin", tc.admin)
			}
			_, err := File(writeFile(t, sub, "router.yaml", fileDoc(t, callers, admin)))
			require.Error(t, err)
			assert.Equal(t, strings.ReplaceAll(tc.want, "DIR", sub), err.Error())
			assert.True(t, errors.Is(err, config.ErrInvalid))
			assert.NotContains(t, err.Error(), "SECRET")
			if tc.missing {
				assert.True(t, errors.Is(err, fs.ErrNotExist), "fs cause is kept for errors.Is")
			}
		})
	}
}

func TestTokenFileMustBeRegular(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no FIFOs")
	}
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	require.NoError(t, syscall.Mkfifo(fifo, 0o600))
	// Would block forever if the FIFO were opened for a blocking read.
	_, err := ReadTokenFile(fifo)
	require.ErrorIs(t, err, regfile.ErrNotRegular)
	_, err = ReadTokenFile(dir)
	require.ErrorIs(t, err, regfile.ErrNotRegular)
}

func TestParseWithReadFile(t *testing.T) {
	files := map[string]string{"/t/callers": callerTok + "\n", "/t/admin": adminTok}
	src := config.Sources{
		LookupEnv: envMap(baseEnv()),
		ReadFile: func(name string) ([]byte, error) {
			if v, ok := files[name]; ok {
				return []byte(v), nil
			}
			return nil, fs.ErrNotExist
		},
	}
	c, err := ParseWith([]byte(fileDoc(t, "/t/callers", "/t/admin")), src)
	require.NoError(t, err)
	assert.Equal(t, []string{callerTok}, revealAll(c.CallerTokens()))
	assert.Equal(t, adminTok, c.AdminToken().Reveal())

	files["/t/callers"] = strings.Repeat("a", config.MaxTokenFileBytes+1)
	_, err = ParseWith([]byte(fileDoc(t, "/t/callers", "/t/admin")), src)
	require.Error(t, err)
	assert.Equal(t, "config: auth.caller_tokens_file: file exceeds 65536 bytes", err.Error())
}

func TestLoadUnreadable(t *testing.T) {
	dir := t.TempDir()
	cases := map[string]struct{ path, reason string }{
		"missing":   {filepath.Join(dir, "nope.yaml"), "no such file or directory"},
		"directory": {dir, "not a regular file"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := File(c.path)
			require.Error(t, err)
			assert.Equal(t, "config: cannot read config file "+c.path+": "+c.reason, err.Error(), "the path and the OS's reason")
			assert.True(t, errors.Is(err, config.ErrUnreadable))
			assert.False(t, errors.Is(err, config.ErrInvalid))
		})
	}
	_, err := File(filepath.Join(dir, "nope.yaml"))
	assert.True(t, errors.Is(err, fs.ErrNotExist))
}

func TestLoadOversize(t *testing.T) {
	p := writeFile(t, t.TempDir(), "big.yaml", "listen: x\n"+strings.Repeat("# pad\n", MaxFileBytes/6+1))
	_, err := File(p)
	require.Error(t, err)
	assert.Equal(t, "config: document exceeds 1048576 bytes", err.Error())
	assert.True(t, errors.Is(err, config.ErrInvalid))
}
