package image

import (
	"debug/elf"
	"errors"
	"os"
	"testing"
)

// FuzzCheckBinary: the operator's --binary is outside input; no byte string crashes the check, and
// every refusal is one of the documented errors.
func FuzzCheckBinary(f *testing.F) {
	static := staticBinary(f)
	f.Add(static[:4096])
	f.Add(static[:64])
	f.Add(withMachine(static[:4096], uint16(elf.EM_AARCH64)))
	if dyn, err := os.ReadFile("/bin/true"); err == nil && len(dyn) > 8192 {
		f.Add(dyn[:8192])
	}
	f.Add([]byte("\x7fELF"))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		err := CheckBinary(b, elf.EM_X86_64)
		if err != nil && !errors.Is(err, ErrNotStatic) && !errors.Is(err, ErrWrongArch) {
			t.Fatalf("undocumented error: %v", err)
		}
	})
}

// FuzzCheckCABundle: the CA bundle is outside input; no byte string crashes the check, and every
// refusal wraps ErrNoCerts.
func FuzzCheckCABundle(f *testing.F) {
	ca := testCA(f)
	f.Add(ca)
	f.Add(ca[:len(ca)/2])
	f.Add(append([]byte("# Issuer: x\n"), ca...))
	f.Add([]byte("-----BEGIN CERTIFICATE-----\n-----END CERTIFICATE-----\n"))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		if err := CheckCABundle(b); err != nil && !errors.Is(err, ErrNoCerts) {
			t.Fatalf("undocumented error: %v", err)
		}
	})
}
