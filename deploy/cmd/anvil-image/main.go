// Command anvil-image builds the anvil-router container image with go-containerregistry: no Docker
// daemon, no registry, no base image. `make image` runs it after building the static binary.
package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/spf13/cobra"

	"github.com/anvil-llm/anvil/deploy/image"
)

// Exit codes: 0 success, 1 runtime failure, 2 usage or invalid input.
const (
	exitFailure = 1
	exitUsage   = 2
)

// usageError marks failures caused by the caller's input (flags, files), which exit 2.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	root := newRoot()
	root.SetArgs(args)
	root.SetOut(stdout)
	root.SetErr(stderr)
	err := root.Execute()
	if err == nil {
		return 0
	}
	fmt.Fprintln(stderr, "anvil-image:", err)
	var ue usageError
	if errors.As(err, &ue) {
		return exitUsage
	}
	return exitFailure
}

type flags struct {
	binary, caBundle, version, revision, arch, layout, tarball string
	epoch                                                      string
}

func newRoot() *cobra.Command {
	var f flags
	cmd := &cobra.Command{
		Use:   "anvil-image",
		Short: "Build the anvil-router image as an OCI layout and a docker-loadable tarball",
		Long: "Build the anvil-router image from an empty base: one layer with the static binary, the CA\n" +
			"bundle and a non-root user; no shell. Writes an OCI image layout (--layout) and a tarball\n" +
			"that `docker load` reads (--tarball), tagged anvil-router:VERSION. Equal inputs give the\n" +
			"same digest: file times and the creation time come from --source-date-epoch.",
		Args:          cobra.NoArgs,
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return build(cmd.OutOrStdout(), f)
		},
	}
	cmd.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err} })
	fl := cmd.Flags()
	fl.StringVar(&f.binary, "binary", "", "the static anvil-router executable (CGO_ENABLED=0)")
	fl.StringVar(&f.caBundle, "ca-bundle", image.DefaultCABundle, "PEM CA bundle to copy in (Debian's ca-certificates package)")
	fl.StringVar(&f.version, "version", "", "version the binary was linked with (also the image tag)")
	fl.StringVar(&f.revision, "revision", "", "source revision the binary was linked with")
	fl.StringVar(&f.arch, "arch", runtime.GOARCH, "GOARCH of the binary: amd64 or arm64")
	fl.StringVar(&f.epoch, "source-date-epoch", os.Getenv("SOURCE_DATE_EPOCH"), "creation time in Unix seconds (default $SOURCE_DATE_EPOCH, else 0)")
	fl.StringVar(&f.layout, "layout", "", "OCI image layout directory to write")
	fl.StringVar(&f.tarball, "tarball", "", "docker-loadable tarball to write")
	return cmd
}

func build(out io.Writer, f flags) error {
	in, err := inputs(f)
	if err != nil {
		return usageError{err}
	}
	img, err := image.Build(in)
	if err != nil {
		return usageError{err}
	}
	tag, err := image.Tag(in.Version)
	if err != nil {
		return usageError{err}
	}
	if err := image.WriteLayout(f.layout, img, tag); err != nil {
		return err
	}
	if err := image.WriteTarball(f.tarball, img, tag); err != nil {
		return err
	}
	return report(out, f, img, tag.String(), in)
}

func inputs(f flags) (image.Inputs, error) {
	var missing []string
	for _, req := range []struct{ name, value string }{{"--binary", f.binary}, {"--version", f.version},
		{"--revision", f.revision}, {"--layout", f.layout}, {"--tarball", f.tarball}} {
		if req.value == "" {
			missing = append(missing, req.name)
		}
	}
	if len(missing) > 0 {
		return image.Inputs{}, fmt.Errorf("required flag(s) not set: %s", strings.Join(missing, ", "))
	}
	created := time.Unix(0, 0)
	if f.epoch != "" {
		sec, err := strconv.ParseInt(f.epoch, 10, 64)
		if err != nil || sec < 0 || sec > 1<<33 {
			return image.Inputs{}, errors.New("--source-date-epoch must be Unix seconds, 0-8589934592")
		}
		created = time.Unix(sec, 0)
	}
	bin, err := os.ReadFile(f.binary)
	if err != nil {
		return image.Inputs{}, fmt.Errorf("cannot read --binary: %w", err)
	}
	ca, err := os.ReadFile(f.caBundle)
	if errors.Is(err, fs.ErrNotExist) {
		return image.Inputs{}, fmt.Errorf("CA bundle %s not found: install Debian's ca-certificates package "+
			"(apt-get install ca-certificates) or pass --ca-bundle FILE", f.caBundle)
	}
	if err != nil {
		return image.Inputs{}, fmt.Errorf("cannot read CA bundle: %w", err)
	}
	return image.Inputs{Binary: bin, CABundle: ca, Version: f.version, Revision: f.revision,
		Arch: f.arch, Created: created}, nil
}

// report prints what was written: the reference, platform and digest, the two outputs and the sizes.
func report(out io.Writer, f flags, img v1.Image, tag string, in image.Inputs) error {
	digest, err := img.Digest()
	if err != nil {
		return err
	}
	layers, err := img.Layers()
	if err != nil {
		return err
	}
	var compressed int64
	for _, l := range layers {
		n, err := l.Size()
		if err != nil {
			return err
		}
		compressed += n
	}
	st, err := os.Stat(f.tarball)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(out, "%s linux/%s %s\n  layout:  %s\n  tarball: %s (%d bytes)\n"+
		"  layer:   %d bytes compressed; binary %d bytes, CA bundle %d bytes\n",
		tag, in.Arch, digest, f.layout, f.tarball, st.Size(), compressed, len(in.Binary), len(in.CABundle))
	return err
}
