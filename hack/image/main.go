// Command image assembles the operator's container image without a container
// engine, the way ko does: an empty base, one layer holding the static binary
// as /operator, and a config written here rather than by a Dockerfile. No
// registry or Docker daemon is reachable where the project builds, so nothing
// is pulled and nothing is run; the image is written twice, as a tarball for
// `docker load` and `crane push`, and as an OCI image layout, and its digest
// is printed. make image runs it (docs/image.md).
//
// It is its own module so that the operator's go.mod never carries
// go-containerregistry and its dependencies.
package main

import (
	"flag"
	"fmt"
	"os"
	"runtime"

	"github.com/google/go-containerregistry/pkg/name"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "image:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	fs := flag.NewFlagSet("image", flag.ContinueOnError)
	var (
		spec      Spec
		image     string
		tarPath   string
		layoutDir string
	)
	fs.StringVar(&spec.Binary, "binary", "", "static linux binary of the operator (required)")
	fs.StringVar(&spec.Arch, "arch", runtime.GOARCH, "GOARCH the binary was built for; checked against its ELF header")
	fs.StringVar(&spec.Version, "version", "dev", "the operator's version, for the org.opencontainers.image.version label")
	fs.StringVar(&spec.Source, "source", DefaultSource, "org.opencontainers.image.source label")
	fs.StringVar(&spec.Revision, "revision", "", "git commit for the org.opencontainers.image.revision label (left out when empty)")
	fs.StringVar(&image, "image", "", "image name and tag written into the tarball and layout (default operator:VERSION)")
	fs.StringVar(&tarPath, "tarball", "image.tar", "where to write the docker-load / crane-push tarball")
	fs.StringVar(&layoutDir, "layout", "oci", "where to write the OCI image layout (replaced if it is one)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if spec.Binary == "" {
		return fmt.Errorf("-binary is required")
	}
	if image == "" {
		image = "operator:" + spec.Version
	}
	ref, err := name.NewTag(image)
	if err != nil {
		return fmt.Errorf("image name %q: %w", image, err)
	}
	created, from, err := SourceDate()
	if err != nil {
		return err
	}
	spec.Created = created

	img, err := Assemble(spec)
	if err != nil {
		return err
	}
	if err := WriteTarball(tarPath, ref, img); err != nil {
		return err
	}
	if err := WriteLayout(layoutDir, ref, img, spec.Platform()); err != nil {
		return err
	}
	digest, err := img.Digest()
	if err != nil {
		return fmt.Errorf("image digest: %w", err)
	}
	fmt.Printf("image   %s (%s)\n", ref, spec.Platform())
	fmt.Printf("digest  %s\n", digest)
	fmt.Printf("created %s (%s)\n", created.Format("2006-01-02T15:04:05Z"), from)
	fmt.Printf("tarball %s\n", tarPath)
	fmt.Printf("layout  %s\n", layoutDir)
	return nil
}
