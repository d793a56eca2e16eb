package image

import (
	"archive/tar"
	"bytes"
	"crypto/x509"
	"debug/elf"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"path"
	"regexp"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// Inputs are everything one build depends on; equal inputs give the same image digest.
type Inputs struct {
	Binary   []byte    // the anvil-router executable: static (CGO_ENABLED=0), ELF for Arch
	CABundle []byte    // PEM certificates, copied to CABundlePath
	Version  string    // the version the linker put in the binary; also the tarball's tag
	Revision string    // the source revision the linker put in the binary
	Arch     string    // GOARCH of the binary: amd64 or arm64
	Created  time.Time // image creation time and every file's mtime (SOURCE_DATE_EPOCH)
}

// Errors of Build, for callers that branch.
var (
	ErrNotStatic  = errors.New("binary is not a static executable")
	ErrWrongArch  = errors.New("binary is not built for the image architecture")
	ErrNoCerts    = errors.New("CA bundle holds no PEM certificate")
	ErrBadVersion = errors.New("version must be a valid image tag: [A-Za-z0-9_][A-Za-z0-9_.-]{0,127}")
	ErrBadRev     = errors.New("revision must be 1-128 characters of [A-Za-z0-9_.-]")
	ErrBadArch    = errors.New("arch must be amd64 or arm64")
)

var (
	tagGrammar = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$`)
	revGrammar = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,128}$`)
)

// machine maps a supported GOARCH to its ELF machine.
func machine(arch string) (elf.Machine, bool) {
	switch arch {
	case "amd64":
		return elf.EM_X86_64, true
	case "arm64":
		return elf.EM_AARCH64, true
	}
	return 0, false
}

// Build assembles the image: an empty base (nothing pulled), one layer, the config from spec.go.
func Build(in Inputs) (v1.Image, error) {
	if err := in.validate(); err != nil {
		return nil, err
	}
	layerTar, err := rootfs(in)
	if err != nil {
		return nil, err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(layerTar)), nil
	}, tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return nil, fmt.Errorf("image layer: %w", err)
	}
	created := v1.Time{Time: in.Created.UTC()}
	base := mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON)
	img, err := mutate.Append(base, mutate.Addendum{Layer: layer, MediaType: types.OCILayer,
		History: v1.History{Created: created, CreatedBy: "anvil-image: static anvil-router, CA bundle, nonroot user"}})
	if err != nil {
		return nil, fmt.Errorf("image layer: %w", err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, fmt.Errorf("image config: %w", err)
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture, cf.Created = "linux", in.Arch, created
	cf.Config = v1.Config{
		User:         User(),
		Entrypoint:   Entrypoint(),
		Cmd:          Cmd(),
		WorkingDir:   "/",
		ExposedPorts: map[string]struct{}{ExposedPort(): {}},
		Labels:       Labels(in.Version, in.Revision),
	}
	img, err = mutate.ConfigFile(img, cf)
	if err != nil {
		return nil, fmt.Errorf("image config: %w", err)
	}
	return img, nil
}

func (in Inputs) validate() error {
	if !tagGrammar.MatchString(in.Version) {
		return ErrBadVersion
	}
	if !revGrammar.MatchString(in.Revision) {
		return ErrBadRev
	}
	want, ok := machine(in.Arch)
	if !ok {
		return ErrBadArch
	}
	if err := CheckBinary(in.Binary, want); err != nil {
		return err
	}
	return CheckCABundle(in.CABundle)
}

// CheckBinary refuses anything the empty image could not run: not an ELF executable, built for
// another machine, or dynamically linked (there is no libc and no loader in the image).
func CheckBinary(b []byte, machine elf.Machine) error {
	f, err := elf.NewFile(bytes.NewReader(b))
	if err != nil {
		return fmt.Errorf("%w: not an ELF file", ErrNotStatic)
	}
	defer f.Close()
	if f.Type != elf.ET_EXEC && f.Type != elf.ET_DYN {
		return fmt.Errorf("%w: not an executable", ErrNotStatic)
	}
	if f.Machine != machine {
		return ErrWrongArch
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return fmt.Errorf("%w: it needs a dynamic loader (build with CGO_ENABLED=0)", ErrNotStatic)
		}
	}
	if libs, err := f.ImportedLibraries(); err == nil && len(libs) > 0 {
		return fmt.Errorf("%w: it links shared libraries (build with CGO_ENABLED=0)", ErrNotStatic)
	}
	return nil
}

// CheckCABundle accepts a bundle only when it holds at least one certificate, every PEM block is a
// certificate that parses, and no block is cut short: a truncated or wrong file must not silently give
// the router a smaller trust store. Text between blocks (the "# Issuer:" comments some bundles carry)
// is skipped, as Go's own x509.CertPool.AppendCertsFromPEM skips it.
func CheckCABundle(b []byte) error {
	n := 0
	for rest := b; ; {
		var blk *pem.Block
		blk, rest = pem.Decode(rest)
		if blk == nil {
			if bytes.Contains(rest, []byte("-----BEGIN")) {
				return fmt.Errorf("%w: a PEM block is cut short", ErrNoCerts)
			}
			break
		}
		if blk.Type != "CERTIFICATE" {
			return fmt.Errorf("%w: a PEM block is not a certificate", ErrNoCerts)
		}
		if _, err := x509.ParseCertificate(blk.Bytes); err != nil {
			return fmt.Errorf("%w: certificate %d does not parse", ErrNoCerts, n+1)
		}
		n++
	}
	if n == 0 {
		return ErrNoCerts
	}
	return nil
}

// entry is one file or directory of the layer.
type entry struct {
	name     string // absolute path in the image
	mode     int64
	uid, gid int
	data     []byte // nil for a directory
}

// entries lists the layer's contents in order: directories before what they hold, and nothing else.
// Tests compare an image read back against this list.
func entries(in Inputs) []entry {
	dir := func(name string, mode int64, uid, gid int) entry {
		return entry{name: name, mode: mode, uid: uid, gid: gid}
	}
	return []entry{
		dir("/etc", 0o755, 0, 0),
		{name: GroupPath, mode: 0o644, data: group},
		{name: PasswdPath, mode: 0o644, data: passwd},
		dir("/etc/ssl", 0o755, 0, 0),
		dir("/etc/ssl/certs", 0o755, 0, 0),
		{name: CABundlePath, mode: 0o644, data: in.CABundle},
		dir("/usr", 0o755, 0, 0),
		dir("/usr/local", 0o755, 0, 0),
		dir("/usr/local/bin", 0o755, 0, 0),
		{name: BinaryPath, mode: 0o755, data: in.Binary},
		dir("/var", 0o755, 0, 0),
		dir("/var/lib", 0o755, 0, 0),
		dir(StateDir, 0o700, UID, GID),
	}
}

// rootfs writes the layer as an uncompressed tar with fixed owners and times, so it is reproducible.
func rootfs(in Inputs) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries(in) {
		h := &tar.Header{Name: strings.TrimPrefix(e.name, "/"), Mode: e.mode, Uid: e.uid, Gid: e.gid,
			ModTime: in.Created.UTC(), Format: tar.FormatPAX}
		if e.data == nil {
			h.Typeflag, h.Name = tar.TypeDir, h.Name+"/"
		} else {
			h.Typeflag, h.Size = tar.TypeReg, int64(len(e.data))
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, fmt.Errorf("image layer %s: %w", path.Base(e.name), err)
		}
		if _, err := tw.Write(e.data); err != nil {
			return nil, fmt.Errorf("image layer %s: %w", path.Base(e.name), err)
		}
	}
	if err := tw.Close(); err != nil {
		return nil, fmt.Errorf("image layer: %w", err)
	}
	return buf.Bytes(), nil
}
