package server_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/anvil-llm/anvil/router/config/load"
	"github.com/anvil-llm/anvil/router/server"
)

// selfSigned writes a loopback certificate and key and returns their paths and a pool trusting it.
func selfSigned(t testing.TB) (string, string, *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "anvil-test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	kder, err := x509.MarshalECPrivateKey(key)
	require.NoError(t, err)
	dir := t.TempDir()
	certPath, keyPath := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	require.NoError(t, os.WriteFile(certPath, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600))
	require.NoError(t, os.WriteFile(keyPath, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}), 0o600))
	cert, err := x509.ParseCertificate(der)
	require.NoError(t, err)
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return certPath, keyPath, pool
}

func TestServesTLSFromCertificateFiles(t *testing.T) {
	certPath, keyPath, pool := selfSigned(t)
	ms := startMembers(t, 2)
	sv := serveReal(t, replicaYAML(ms, tierOpts{extra: "tls:\n  cert_file: " + certPath + "\n  key_file: " + keyPath + "\n"}))
	defer func() { require.NoError(t, sv.stop()) }()

	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}}
	resp, err := client.Get("https://" + sv.addr + "/healthz")
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.NotNil(t, resp.TLS)

	plain, err := http.Get("http://" + sv.addr + "/healthz")
	require.NoError(t, err)
	plain.Body.Close()
	assert.Equal(t, http.StatusBadRequest, plain.StatusCode, "plain HTTP on the TLS port is refused")
}

// TestReloadRereadsTheCertificate: every reload re-reads the certificate and key files, and new
// handshakes get the new pair without a restart; a pair that does not load refuses the reload and
// the old one keeps serving.
func TestReloadRereadsTheCertificate(t *testing.T) {
	certPath, keyPath, pool1 := selfSigned(t)
	ms := startMembers(t, 2)
	yaml := replicaYAML(ms, tierOpts{extra: "tls:\n  cert_file: " + certPath + "\n  key_file: " + keyPath + "\n"})
	dir := t.TempDir()
	path := filepath.Join(dir, "router.yaml")
	require.NoError(t, os.WriteFile(path, []byte(yaml), 0o600))
	cfg, err := load.Parse([]byte(yaml), env)
	require.NoError(t, err)
	_, digest, err := fileLoad(path, env)(context.Background())
	require.NoError(t, err)
	srv, err := server.New(cfg, server.Options{ConfigPath: path, ConfigDigest: digest, Load: fileLoad(path, env)})
	require.NoError(t, err)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ctx, ln) }()
	defer func() {
		cancel()
		require.NoError(t, <-served)
	}()
	get := func(pool *x509.CertPool) error {
		client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true,
			TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}}
		resp, err := client.Get("https://" + ln.Addr().String() + "/healthz")
		if err == nil {
			resp.Body.Close()
		}
		return err
	}
	require.NoError(t, get(pool1))

	newCert, newKey, pool2 := selfSigned(t)
	for _, f := range [][2]string{{newCert, certPath}, {newKey, keyPath}} {
		b, err := os.ReadFile(f[0])
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(f[1], b, 0o600))
	}
	require.NoError(t, get(pool1), "nothing changes before the reload")
	_, err = srv.ReloadFile(context.Background())
	require.NoError(t, err, "an unchanged file still re-reads the certificate")
	require.NoError(t, get(pool2), "the rotated certificate serves new handshakes")
	assert.Error(t, get(pool1))

	require.NoError(t, os.WriteFile(keyPath, []byte("not a key"), 0o600))
	_, err = srv.ReloadFile(context.Background())
	require.ErrorIs(t, err, server.ErrReloadRefused)
	require.NoError(t, get(pool2), "a pair that does not load changes nothing")
}
