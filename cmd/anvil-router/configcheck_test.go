package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// writePair writes a self-signed certificate and its key into dir.
func writePair(t *testing.T, dir string) (string, string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "anvil-check"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	kder, err := x509.MarshalECPrivateKey(key)
	require.NoError(t, err)
	cert, keyPath := filepath.Join(dir, "router.crt"), filepath.Join(dir, "router.key")
	require.NoError(t, os.WriteFile(cert, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600))
	require.NoError(t, os.WriteFile(keyPath, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}), 0o600))
	return cert, keyPath
}

// checkDoc is a valid document naming the given TLS pair, JSONL file and intent file.
func checkDoc(cert, key, jsonl, intentFile string) string {
	return "listen: 127.0.0.1:8443\n" +
		"tls:\n  cert_file: " + cert + "\n  key_file: " + key + "\n" +
		"auth:\n  caller_tokens: [super-secret-caller-token]\n" +
		"decision_log:\n  jsonl_path: " + jsonl + "\n" +
		"intent_file: " + intentFile + "\n" +
		"aliases: [{id: chat, tier: t}]\n" +
		"tiers:\n  - id: t\n    kind: direct\n    served_model: m\n    endpoint: http://127.0.0.1:9000\n" +
		"    gates: {max_context_tokens: 1024}\n"
}

func listing(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

// TestConfigCheckOpensStartFiles: a config naming a usable TLS pair, a creatable JSONL file and a
// writable intent directory passes and leaves nothing behind; each broken file is reported with
// its setting and line, all of them at once.
func TestConfigCheckOpensStartFiles(t *testing.T) {
	dir := t.TempDir()
	cert, key := writePair(t, dir)
	good := filepath.Join(dir, "good.yaml")
	require.NoError(t, os.WriteFile(good, []byte(checkDoc(cert, key, filepath.Join(dir, "d.jsonl"), filepath.Join(dir, "intent.json"))), 0o600))
	before := listing(t, dir)
	code, out, err := runCmd(t, "config", "check", good)
	require.NoError(t, err, out)
	assert.Equal(t, 0, code)
	assert.Equal(t, before, listing(t, dir), "the check creates no file")

	fifo := filepath.Join(dir, "fifo")
	require.NoError(t, syscall.Mkfifo(fifo, 0o600))
	bad := filepath.Join(dir, "bad.yaml")
	require.NoError(t, os.WriteFile(bad, []byte(checkDoc(filepath.Join(dir, "missing.crt"), key, fifo, filepath.Join(dir, "nodir", "intent.json"))), 0o600))
	code, _, err = runCmd(t, "config", "check", bad)
	require.Error(t, err)
	assert.Equal(t, exitUsage, code)
	assert.Equal(t, bad+": 3 problems:\n"+
		bad+":2: config: tls: cannot load the certificate and key: open "+filepath.Join(dir, "missing.crt")+": no such file or directory\n"+
		bad+":8: config: decision_log.jsonl_path: "+fifo+": not a regular file\n"+
		bad+":9: config: intent_file: intent file "+filepath.Join(dir, "nodir", "intent.json")+": unusable: no such directory",
		err.Error())

	// A mismatched pair, a directory as the JSONL file, a link as the intent file.
	_, otherKey := writePair(t, t.TempDir())
	link := filepath.Join(dir, "link.json")
	require.NoError(t, os.Symlink(filepath.Join(dir, "intent.json"), link))
	require.NoError(t, os.WriteFile(bad, []byte(checkDoc(cert, otherKey, dir, link)), 0o600))
	_, _, err = runCmd(t, "config", "check", bad)
	require.Error(t, err)
	assert.Contains(t, err.Error(), bad+":2: config: tls: cannot load the certificate and key: tls: private key does not match public key")
	assert.Contains(t, err.Error(), bad+":8: config: decision_log.jsonl_path: "+dir+": not a regular file")
	assert.Contains(t, err.Error(), bad+":9: config: intent_file: intent file "+link+": unusable: is a symbolic link")

	// --skip-files checks the document only.
	code, out, err = runCmd(t, "config", "check", "--skip-files", bad)
	require.NoError(t, err, out)
	assert.Equal(t, 0, code)
}

// TestConfigCheckReportsEveryProblem: independent problems are all reported, each with its setting
// and line and the fixed text a load gives; an alias is not resolved while a tier is invalid.
func TestConfigCheckReportsEveryProblem(t *testing.T) {
	path := filepath.Join(t.TempDir(), "r.yaml")
	doc := "listen: nowhere\n" +
		"shutdown_grace: 9999h\n" +
		"auth:\n  caller_tokens: [short]\n" +
		"aliases: [{id: chat, tier: t}]\n" +
		"tiers:\n  - id: t\n    kind: direct\n    served_model: m\n    endpoint: http://127.0.0.1:9000\n" +
		"    gates: {max_context_tokens: 0}\n" +
		"  - id: u\n    kind: sideways\n"
	require.NoError(t, os.WriteFile(path, []byte(doc), 0o600))
	_, _, err := runCmd(t, "config", "check", path)
	require.Error(t, err)
	lines := strings.Split(err.Error(), "\n")
	require.Len(t, lines, 6, err.Error())
	assert.Equal(t, path+": 5 problems:", lines[0])
	assert.Regexp(t, `^`+path+`:1: config: listen: `, lines[1])
	assert.Regexp(t, `^`+path+`:2: config: shutdown_grace: `, lines[2])
	assert.Regexp(t, `^`+path+`:4: config: auth.caller_tokens\[0\]: `, lines[3])
	assert.Regexp(t, `^`+path+`:11: config: tiers\[0\]\.gates\.max_context_tokens: `, lines[4])
	assert.Regexp(t, `^`+path+`:13: config: tiers\[1\]\.kind: `, lines[5])
	assert.NotContains(t, err.Error(), "short", "values are never echoed")

	// The YAML gate's problems are all reported too (and the document is not validated then).
	require.NoError(t, os.WriteFile(path, []byte("listen: [1]\ncolour: blue\nauth: {pasted-SECRET: 1}\n"), 0o600))
	_, _, err = runCmd(t, "config", "check", path)
	require.Error(t, err)
	assert.Equal(t, path+": 3 problems:\n"+
		path+":1: config: listen: must be a string\n"+
		path+":2: config: colour: unknown key\n"+
		path+":3: config: auth: unknown key on line 3", err.Error())
}

// TestExampleConfigPassesAsShipped runs the check command docs/examples/router.yaml documents in its
// header, verbatim, from the repository's root and with none of the variables in the process
// environment: the example and its router.env pass as shipped.
func TestExampleConfigPassesAsShipped(t *testing.T) {
	for _, name := range []string{"ANVIL_API_TOKENS", "ANVIL_API_TOKEN", "ANVIL_ADMIN_TOKEN", "OPENAI_API_KEY", "ANVIL_LISTEN"} {
		t.Setenv(name, "")
	}
	t.Chdir(filepath.Join("..", ".."))
	var args []string
	for _, f := range []string{"docs/examples/router.yaml", "docs/examples/router.env"} {
		data, err := os.ReadFile(f)
		require.NoError(t, err)
		var found []string
		for _, line := range strings.Split(string(data), "\n") {
			if cmd, ok := strings.CutPrefix(line, "#   anvil-router config check "); ok {
				found = append(found, cmd)
			}
		}
		require.Len(t, found, 1, "%s documents one check command", f)
		args = append([]string{"config", "check"}, strings.Fields(found[0])...)
		code, out, err := runCmd(t, args...)
		require.NoError(t, err, out)
		assert.Equal(t, 0, code)
		assert.Contains(t, out, "replica_strategy: capacity")
		assert.NotContains(t, out, "example-caller-token", "secrets are redacted")
	}

	// Without the example environment the check names what is missing.
	_, _, err := runCmd(t, "config", "check", "--skip-files", "docs/examples/router.yaml")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "tiers[2].api_key_env: environment variable is not set")
	assert.Contains(t, err.Error(), "auth.caller_tokens_file: cannot read file /etc/anvil/caller-tokens")
}
