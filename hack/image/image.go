package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"debug/elf"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// What the Dockerfile's final stage must say too; the tests hold the two
// together.
const (
	// DefaultSource is the org.opencontainers.image.source label's default.
	DefaultSource = "https://github.com/tmplop/operator"
	// BinaryPath is the one file of the image.
	BinaryPath = "/operator"
	// User is distroless's nonroot: a numeric uid:gid, because a scratch
	// image has no /etc/passwd to resolve a name and Kubernetes'
	// runAsNonRoot can only verify a number.
	User = "65532:65532"
)

// Entrypoint is `operator run`; the kind folders' location comes as
// arguments or as the default ./templates under WorkingDir "/".
var Entrypoint = []string{BinaryPath, "run"}

// Spec is what goes into the image besides the binary's bytes.
type Spec struct {
	Binary   string // path of a static linux binary
	Arch     string // the GOARCH it was built for
	Version  string
	Source   string
	Revision string // may be empty: the label is then left out
	// Created is the config's created time and the file's mtime: fixed
	// rather than now, so that the same binary gives the same digest.
	Created time.Time
}

// Platform is the image's platform: always linux, the binary's arch.
func (s Spec) Platform() v1.Platform {
	return v1.Platform{OS: "linux", Architecture: s.Arch}
}

// Labels are the image's OCI annotations-as-labels.
func (s Spec) Labels() map[string]string {
	l := map[string]string{
		"org.opencontainers.image.title":   "operator",
		"org.opencontainers.image.version": s.Version,
		"org.opencontainers.image.source":  s.Source,
	}
	if s.Revision != "" {
		l["org.opencontainers.image.revision"] = s.Revision
	}
	return l
}

// Assemble builds the image in memory: FROM scratch, one layer with the
// binary, the config. Docker schema 2 media types rather than OCI ones,
// because tarball.ImageFromPath (what crane push reads bin/image.tar with)
// always rebuilds a Docker manifest: with the same types the pushed digest
// is the one printed here.
func Assemble(s Spec) (v1.Image, error) {
	bin, err := os.ReadFile(s.Binary)
	if err != nil {
		return nil, fmt.Errorf("read binary: %w", err)
	}
	if err := checkBinary(bin, s.Arch); err != nil {
		return nil, fmt.Errorf("binary %s: %w", s.Binary, err)
	}
	// Seconds only: a tar header and the config keep no more, and a time
	// that does not survive a round trip would make two builds differ.
	created := s.Created.UTC().Truncate(time.Second)

	gz, err := binaryLayer(bin, created)
	if err != nil {
		return nil, fmt.Errorf("layer of %s: %w", s.Binary, err)
	}
	// Compressed once here: given gzip bytes, tarball hashes and writes them
	// as they are instead of compressing again for every digest and output.
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(gz)), nil
	})
	if err != nil {
		return nil, fmt.Errorf("layer of %s: %w", s.Binary, err)
	}

	p := s.Platform()
	base, err := mutate.ConfigFile(empty.Image, &v1.ConfigFile{
		Architecture: p.Architecture,
		OS:           p.OS,
		Created:      v1.Time{Time: created},
		RootFS:       v1.RootFS{Type: "layers"},
		Config: v1.Config{
			User:       User,
			Entrypoint: Entrypoint,
			WorkingDir: "/",
			Labels:     s.Labels(),
		},
	})
	if err != nil {
		return nil, fmt.Errorf("image config: %w", err)
	}
	img, err := mutate.Append(base, mutate.Addendum{
		Layer: layer,
		History: v1.History{
			Created:   v1.Time{Time: created},
			CreatedBy: "hack/image: COPY operator " + BinaryPath,
		},
	})
	if err != nil {
		return nil, fmt.Errorf("append layer: %w", err)
	}
	return img, nil
}

// binaryLayer is the gzipped tar of the one file. Owner 0:0 and mode 0755
// like a COPY in a Dockerfile: root owns it, so the non-root user can run
// it but not replace it.
func binaryLayer(bin []byte, mtime time.Time) ([]byte, error) {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	hdr := &tar.Header{
		Typeflag: tar.TypeReg,
		Name:     strings.TrimPrefix(BinaryPath, "/"),
		Mode:     0o755,
		Size:     int64(len(bin)),
		ModTime:  mtime,
		Format:   tar.FormatUSTAR,
	}
	if err := tw.WriteHeader(hdr); err != nil {
		return nil, fmt.Errorf("tar header: %w", err)
	}
	if _, err := tw.Write(bin); err != nil {
		return nil, fmt.Errorf("tar: %w", err)
	}
	if err := tw.Close(); err != nil {
		return nil, fmt.Errorf("tar: %w", err)
	}
	if err := zw.Close(); err != nil {
		return nil, fmt.Errorf("gzip: %w", err)
	}
	return buf.Bytes(), nil
}

// elfMachines maps the GOARCHes the image can be built for to their ELF
// machine; 32-bit arm is left out because its platform needs a variant
// (v6, v7) that the binary does not record.
var elfMachines = map[string]elf.Machine{
	"amd64":   elf.EM_X86_64,
	"arm64":   elf.EM_AARCH64,
	"ppc64le": elf.EM_PPC64,
	"s390x":   elf.EM_S390,
	"riscv64": elf.EM_RISCV,
	"386":     elf.EM_386,
}

// checkBinary refuses what would only fail once the image runs: a binary
// for another arch than the platform it is labelled with, or one that needs
// a dynamic loader, which a scratch image does not have (CGO_ENABLED=1).
func checkBinary(bin []byte, arch string) error {
	want, ok := elfMachines[arch]
	if !ok {
		return fmt.Errorf("unsupported arch %q", arch)
	}
	f, err := elf.NewFile(bytes.NewReader(bin))
	if err != nil {
		return fmt.Errorf("not a linux executable: %w", err)
	}
	defer f.Close()
	if f.Machine != want {
		return fmt.Errorf("built for %s, not %s", f.Machine, arch)
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return errors.New("dynamically linked; build it with CGO_ENABLED=0")
		}
	}
	return nil
}

// SourceDate is the time stamped into the image: SOURCE_DATE_EPOCH (the
// reproducible-builds convention), else the time of HEAD's commit, else
// the Unix epoch. It says which it took.
func SourceDate() (time.Time, string, error) {
	if s := os.Getenv("SOURCE_DATE_EPOCH"); s != "" {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil || n < 0 {
			return time.Time{}, "", fmt.Errorf("SOURCE_DATE_EPOCH=%q: want seconds since 1970", s)
		}
		return time.Unix(n, 0).UTC(), "SOURCE_DATE_EPOCH", nil
	}
	out, err := exec.Command("git", "log", "-1", "--format=%ct").Output()
	if err == nil {
		if n, err := strconv.ParseInt(strings.TrimSpace(string(out)), 10, 64); err == nil && n >= 0 {
			return time.Unix(n, 0).UTC(), "commit time", nil
		}
	}
	return time.Unix(0, 0).UTC(), "epoch 0: no SOURCE_DATE_EPOCH, no git commit", nil
}

// WriteTarball writes the image as `docker save` would, tagged ref. Through
// a temporary file so that a failed run leaves no half tarball behind.
func WriteTarball(path string, ref name.Tag, img v1.Image) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("write tarball %s: %w", path, err)
	}
	tmp := path + ".tmp"
	if err := tarball.WriteToFile(tmp, ref, img); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("write tarball %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("write tarball %s: %w", path, err)
	}
	return nil
}

// WriteLayout writes the image as a fresh OCI image layout holding only it,
// its ref.name annotation the tag (what `skopeo copy oci:DIR:TAG` looks
// for). A layout appends, so the old one is
// replaced rather than added to; a directory that is not a layout is left
// alone, in case -layout points somewhere unexpected.
func WriteLayout(dir string, ref name.Tag, img v1.Image, platform v1.Platform) error {
	if _, err := os.Stat(dir); err == nil {
		if _, err := os.Stat(filepath.Join(dir, "oci-layout")); err != nil {
			return fmt.Errorf("write layout %s: exists and is not an OCI layout, not replacing it", dir)
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("write layout %s: %w", dir, err)
	}
	tmp := dir + ".tmp"
	if err := os.RemoveAll(tmp); err != nil {
		return fmt.Errorf("write layout %s: %w", dir, err)
	}
	p, err := layout.Write(tmp, empty.Index)
	if err != nil {
		return fmt.Errorf("write layout %s: %w", dir, err)
	}
	// WriteImage and a descriptor of our own rather than AppendImage, which
	// gives an image's index entry an artifactType (its config's media type)
	// that the image-spec reserves for artifacts.
	if err := p.WriteImage(img); err != nil {
		os.RemoveAll(tmp)
		return fmt.Errorf("write layout %s: %w", dir, err)
	}
	desc, err := imageDescriptor(img)
	if err != nil {
		os.RemoveAll(tmp)
		return fmt.Errorf("write layout %s: %w", dir, err)
	}
	desc.Platform = &platform
	desc.Annotations = map[string]string{"org.opencontainers.image.ref.name": ref.TagStr()}
	if err := p.AppendDescriptor(desc); err != nil {
		os.RemoveAll(tmp)
		return fmt.Errorf("write layout %s: %w", dir, err)
	}
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("write layout %s: %w", dir, err)
	}
	if err := os.Rename(tmp, dir); err != nil {
		return fmt.Errorf("write layout %s: %w", dir, err)
	}
	return nil
}

func imageDescriptor(img v1.Image) (v1.Descriptor, error) {
	mt, err := img.MediaType()
	if err != nil {
		return v1.Descriptor{}, fmt.Errorf("manifest media type: %w", err)
	}
	digest, err := img.Digest()
	if err != nil {
		return v1.Descriptor{}, fmt.Errorf("manifest digest: %w", err)
	}
	size, err := img.Size()
	if err != nil {
		return v1.Descriptor{}, fmt.Errorf("manifest size: %w", err)
	}
	return v1.Descriptor{MediaType: mt, Digest: digest, Size: size}, nil
}
