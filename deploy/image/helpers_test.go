package image

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// staticBinary builds a tiny static Go program for linux/amd64 (a real ELF the image can carry).
func staticBinary(t testing.TB) []byte {
	t.Helper()
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module hello\n\ngo 1.26\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "main.go"),
		[]byte("package main\n\nfunc main() { println(\"hello\") }\n"), 0o644))
	cmd := exec.Command("go", "build", "-trimpath", "-o", "hello", ".")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH=amd64", "GOFLAGS=")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, string(out))
	b, err := os.ReadFile(filepath.Join(dir, "hello"))
	require.NoError(t, err)
	return b
}

// testCA returns one freshly made self-signed CA certificate as PEM.
func testCA(t testing.TB) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "anvil test CA"},
		NotBefore: time.Unix(0, 0), NotAfter: time.Unix(1<<32, 0), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

func testInputs(t testing.TB) Inputs {
	return Inputs{Binary: staticBinary(t), CABundle: testCA(t), Version: "1.2.3", Revision: "0123abcd",
		Arch: "amd64", Created: time.Unix(1700000000, 0)}
}

// withMachine returns a copy of an ELF64 little-endian binary claiming another e_machine.
func withMachine(b []byte, m uint16) []byte {
	out := append([]byte(nil), b...)
	out[18], out[19] = byte(m), byte(m>>8)
	return out
}
