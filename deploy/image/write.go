package image

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// ErrNotLayout refuses to replace a directory that is not an OCI layout a previous build wrote.
var ErrNotLayout = errors.New("output directory exists and is not an OCI image layout")

// Tag is the reference the tarball carries for `docker load` and the layout's ref.name annotation.
func Tag(version string) (name.Tag, error) {
	return name.NewTag(Title + ":" + version)
}

// WriteLayout writes img as the only image of a fresh OCI layout at dir, replacing a layout an
// earlier build left there (but never any other directory). The index entry carries the tag as
// org.opencontainers.image.ref.name, so `skopeo copy oci:DIR:TAG ...` and friends find it.
func WriteLayout(dir string, img v1.Image, tag name.Tag) error {
	if err := clearLayout(dir); err != nil {
		return err
	}
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		return fmt.Errorf("oci layout: %w", err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return fmt.Errorf("oci layout: %w", err)
	}
	err = p.AppendImage(img,
		layout.WithAnnotations(map[string]string{"org.opencontainers.image.ref.name": tag.TagStr()}),
		layout.WithPlatform(v1.Platform{OS: cf.OS, Architecture: cf.Architecture}))
	if err != nil {
		return fmt.Errorf("oci layout: %w", err)
	}
	return nil
}

// clearLayout removes dir when it is an OCI layout (it has an oci-layout file); a missing dir is fine.
func clearLayout(dir string) error {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("oci layout: %w", err)
	}
	if len(entries) == 0 {
		return nil
	}
	if _, err := os.Stat(filepath.Join(dir, "oci-layout")); err != nil {
		return ErrNotLayout
	}
	return os.RemoveAll(dir)
}

// WriteTarball writes img in the `docker save` format that `docker load` (and podman load) read,
// tagged with tag. It writes to a temporary file beside path and renames, so a failed build never
// leaves a truncated tarball where a good one was.
func WriteTarball(path string, img v1.Image, tag name.Tag) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return fmt.Errorf("image tarball: %w", err)
	}
	defer os.Remove(tmp.Name()) // after the rename this removes nothing
	if err := tarball.Write(tag, img, tmp); err != nil {
		_ = tmp.Close()
		return fmt.Errorf("image tarball: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("image tarball: %w", err)
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		return fmt.Errorf("image tarball: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("image tarball: %w", err)
	}
	return nil
}
