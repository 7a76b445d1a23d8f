package main

import (
	"archive/tar"
	"bufio"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"io"
	"maps"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

const testVersion = "test-1.2.3"

// repoRoot is the operator's module, two folders up from this one.
func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "cmd", "operator")); err != nil {
		t.Fatalf("repo root %s: %v", root, err)
	}
	return root
}

// buildOperator builds the real binary the way make image does, for this
// machine's arch so that the test can run it.
func buildOperator(t *testing.T, version string) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), "operator")
	cmd := exec.Command("go", "build", "-trimpath",
		"-ldflags", "-s -w -X github.com/tmplop/operator/cmd/operator/app.version="+version,
		"-o", out, "./cmd/operator")
	cmd.Dir = repoRoot(t)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+runtime.GOARCH)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/operator: %v\n%s", err, b)
	}
	return out
}

// assemble is what main does: the image, then both outputs in dir.
func assemble(t *testing.T, s Spec, ref name.Tag, dir string) v1.Hash {
	t.Helper()
	img, err := Assemble(s)
	if err != nil {
		t.Fatal(err)
	}
	if err := WriteTarball(filepath.Join(dir, "image.tar"), ref, img); err != nil {
		t.Fatal(err)
	}
	if err := WriteLayout(filepath.Join(dir, "oci"), ref, img, s.Platform()); err != nil {
		t.Fatal(err)
	}
	d, err := img.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func TestImage(t *testing.T) {
	spec := Spec{
		Binary:   buildOperator(t, testVersion),
		Arch:     runtime.GOARCH,
		Version:  testVersion,
		Source:   DefaultSource,
		Revision: "0123456789abcdef0123456789abcdef01234567",
		Created:  time.Date(2024, 5, 6, 7, 8, 9, 0, time.UTC),
	}
	ref, err := name.NewTag("registry.example/operator:" + testVersion)
	if err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	digest := assemble(t, spec, ref, out)
	wantLabels := map[string]string{
		"org.opencontainers.image.title":    "operator",
		"org.opencontainers.image.version":  testVersion,
		"org.opencontainers.image.source":   "https://github.com/tmplop/operator",
		"org.opencontainers.image.revision": spec.Revision,
	}

	t.Run("tarball", func(t *testing.T) {
		tar := filepath.Join(out, "image.tar")
		// By its tag, as docker load lists it.
		img, err := tarball.ImageFromPath(tar, &ref)
		if err != nil {
			t.Fatalf("tarball.ImageFromPath: %v", err)
		}
		checkImage(t, img, spec, wantLabels, digest)
		m, err := tarball.LoadManifest(func() (io.ReadCloser, error) { return os.Open(tar) })
		if err != nil {
			t.Fatalf("manifest.json of %s: %v", tar, err)
		}
		if len(m) != 1 || !slices.Equal(m[0].RepoTags, []string{ref.String()}) {
			t.Errorf("manifest.json of %s: %+v, want one image tagged %s", tar, m, ref)
		}
	})

	t.Run("layout", func(t *testing.T) {
		idx, err := layout.ImageIndexFromPath(filepath.Join(out, "oci"))
		if err != nil {
			t.Fatalf("layout.ImageIndexFromPath: %v", err)
		}
		im, err := idx.IndexManifest()
		if err != nil {
			t.Fatal(err)
		}
		if len(im.Manifests) != 1 {
			t.Fatalf("layout has %d manifests, want 1", len(im.Manifests))
		}
		desc := im.Manifests[0]
		if desc.Digest != digest {
			t.Errorf("layout digest %s, want %s", desc.Digest, digest)
		}
		if desc.Platform == nil || desc.Platform.OS != "linux" || desc.Platform.Architecture != runtime.GOARCH {
			t.Errorf("layout platform %v, want linux/%s", desc.Platform, runtime.GOARCH)
		}
		if got := desc.Annotations["org.opencontainers.image.ref.name"]; got != testVersion {
			t.Errorf("layout ref.name %q, want %q", got, testVersion)
		}
		if desc.ArtifactType != "" {
			t.Errorf("layout entry has artifactType %q: an image is not an artifact", desc.ArtifactType)
		}
		img, err := idx.Image(desc.Digest)
		if err != nil {
			t.Fatal(err)
		}
		checkImage(t, img, spec, wantLabels, digest)
	})

	t.Run("reproducible", func(t *testing.T) {
		out2 := t.TempDir()
		if d := assemble(t, spec, ref, out2); d != digest {
			t.Errorf("second build of the same binary: digest %s, first %s", d, digest)
		}
		for _, f := range []string{"image.tar", "oci/index.json"} {
			if a, b := fileSum(t, filepath.Join(out, f)), fileSum(t, filepath.Join(out2, f)); a != b {
				t.Errorf("%s differs between two builds", f)
			}
		}
		// The date is what makes it reproducible: it must be in the digest,
		// not a constant that hides a clock.
		later := spec
		later.Created = spec.Created.Add(time.Hour)
		if d := assemble(t, later, ref, t.TempDir()); d == digest {
			t.Errorf("another created time gives the same digest %s", d)
		}
	})

	t.Run("rewrite", func(t *testing.T) {
		// A second run into the same paths replaces the layout rather than
		// adding a second image to it.
		assemble(t, spec, ref, out)
		idx, err := layout.ImageIndexFromPath(filepath.Join(out, "oci"))
		if err != nil {
			t.Fatal(err)
		}
		im, err := idx.IndexManifest()
		if err != nil {
			t.Fatal(err)
		}
		if len(im.Manifests) != 1 {
			t.Errorf("layout has %d manifests after a second run, want 1", len(im.Manifests))
		}
		notLayout := filepath.Join(t.TempDir(), "precious")
		if err := os.MkdirAll(notLayout, 0o755); err != nil {
			t.Fatal(err)
		}
		img, err := Assemble(spec)
		if err != nil {
			t.Fatal(err)
		}
		if err := WriteLayout(notLayout, ref, img, spec.Platform()); err == nil {
			t.Errorf("WriteLayout replaced %s, a directory that is no layout", notLayout)
		}
	})

	t.Run("bad binary", func(t *testing.T) {
		other := "arm64"
		if runtime.GOARCH == "arm64" {
			other = "amd64"
		}
		wrong := spec
		wrong.Arch = other
		if _, err := Assemble(wrong); err == nil || !strings.Contains(err.Error(), "built for") {
			t.Errorf("binary for %s labelled %s: err %v, want a mismatch", runtime.GOARCH, other, err)
		}
		text := filepath.Join(t.TempDir(), "operator")
		if err := os.WriteFile(text, []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		script := spec
		script.Binary = text
		if _, err := Assemble(script); err == nil {
			t.Errorf("a shell script was taken for the binary")
		}
	})

	t.Run("dockerfile", func(t *testing.T) {
		img, err := tarball.ImageFromPath(filepath.Join(out, "image.tar"), nil)
		if err != nil {
			t.Fatal(err)
		}
		cf, err := img.ConfigFile()
		if err != nil {
			t.Fatal(err)
		}
		checkDockerfile(t, filepath.Join(repoRoot(t), "Dockerfile"), cf.Config)
	})
}

// checkImage is what a registry and a container runtime would see.
func checkImage(t *testing.T, img v1.Image, s Spec, wantLabels map[string]string, wantDigest v1.Hash) {
	t.Helper()
	d, err := img.Digest()
	if err != nil {
		t.Fatal(err)
	}
	if d != wantDigest {
		t.Errorf("digest %s, want %s (the one printed)", d, wantDigest)
	}
	mt, err := img.MediaType()
	if err != nil {
		t.Fatal(err)
	}
	if mt != types.DockerManifestSchema2 {
		t.Errorf("manifest media type %s, want %s", mt, types.DockerManifestSchema2)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	c := cf.Config
	if !slices.Equal(c.Entrypoint, []string{"/operator", "run"}) {
		t.Errorf("entrypoint %q, want [/operator run]", c.Entrypoint)
	}
	if len(c.Cmd) != 0 {
		t.Errorf("cmd %q, want none", c.Cmd)
	}
	if c.User != "65532:65532" {
		t.Errorf("user %q, want 65532:65532", c.User)
	}
	if c.WorkingDir != "/" {
		t.Errorf("workingdir %q, want /", c.WorkingDir)
	}
	if !maps.Equal(c.Labels, wantLabels) {
		t.Errorf("labels %v, want %v", c.Labels, wantLabels)
	}
	if cf.OS != "linux" || cf.Architecture != runtime.GOARCH || cf.Variant != "" {
		t.Errorf("platform %s/%s/%s, want linux/%s", cf.OS, cf.Architecture, cf.Variant, runtime.GOARCH)
	}
	if !cf.Created.Time.Equal(s.Created) {
		t.Errorf("created %s, want %s", cf.Created.Time, s.Created)
	}
	if cf.RootFS.Type != "layers" || len(cf.RootFS.DiffIDs) != 1 {
		t.Errorf("rootfs %+v, want one layer", cf.RootFS)
	}

	layers, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	if len(layers) != 1 {
		t.Fatalf("%d layers, want 1 (FROM scratch + the binary)", len(layers))
	}
	rc, err := layers[0].Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	dir := t.TempDir()
	bin := filepath.Join(dir, "operator")
	tr := tar.NewReader(rc)
	var files []string
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("layer: %v", err)
		}
		p := path.Clean("/" + h.Name)
		files = append(files, p)
		if p != "/operator" {
			continue
		}
		if h.Typeflag != tar.TypeReg {
			t.Errorf("/operator is of tar type %q, want a regular file", h.Typeflag)
		}
		if h.Mode != 0o755 {
			t.Errorf("/operator mode %o, want 755", h.Mode)
		}
		if h.Uid != 0 || h.Gid != 0 {
			t.Errorf("/operator owned %d:%d, want 0:0", h.Uid, h.Gid)
		}
		if !h.ModTime.Equal(s.Created) {
			t.Errorf("/operator mtime %s, want %s", h.ModTime, s.Created)
		}
		f, err := os.OpenFile(bin, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, os.FileMode(h.Mode))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := io.Copy(f, tr); err != nil {
			t.Fatal(err)
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if !slices.Equal(files, []string{"/operator"}) {
		t.Fatalf("layer holds %q, want only /operator", files)
	}
	out, err := exec.Command(bin, "version").CombinedOutput()
	if err != nil {
		t.Fatalf("%s version: %v\n%s", bin, err, out)
	}
	if !strings.HasPrefix(string(out), "operator "+testVersion+" ") {
		t.Errorf("operator version printed %q, want operator %s ...", out, testVersion)
	}
}

func fileSum(t *testing.T, p string) [sha256.Size]byte {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return sha256.Sum256(b)
}

// instruction is one Dockerfile line, continuations joined.
type instruction struct {
	op, args string
}

func parseDockerfile(t *testing.T, p string) []instruction {
	t.Helper()
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var (
		ins  []instruction
		line string
	)
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		l := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(l, "#") || (l == "" && line == "") {
			continue
		}
		if cont, ok := strings.CutSuffix(l, `\`); ok {
			line += cont + " "
			continue
		}
		line += l
		op, args, _ := strings.Cut(line, " ")
		ins = append(ins, instruction{strings.ToUpper(op), strings.TrimSpace(args)})
		line = ""
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if line != "" {
		t.Fatalf("%s ends in a continuation", p)
	}
	return ins
}

// checkDockerfile holds the Dockerfile to the image make image builds: a
// docker build must not give people a different image.
func checkDockerfile(t *testing.T, p string, c v1.Config) {
	t.Helper()
	ins := parseDockerfile(t, p)
	last := -1
	for i, in := range ins {
		if in.op == "FROM" {
			last = i
		}
		if (in.op == "COPY" || in.op == "ADD") && strings.Contains(in.args, "templates") {
			t.Errorf("%s: %s %s: templates are not baked into the image", p, in.op, in.args)
		}
		if in.op == "RUN" && strings.Contains(in.args, "go build") {
			for _, want := range []string{"CGO_ENABLED=0", "GOOS=linux", "-trimpath", `-ldflags "-s -w -X github.com/tmplop/operator/cmd/operator/app.version=${VERSION}"`, "-o /operator ./cmd/operator"} {
				if !strings.Contains(in.args, want) {
					t.Errorf("%s: the build stage's go build lacks %s", p, want)
				}
			}
		}
	}
	if last < 0 {
		t.Fatalf("%s: no FROM", p)
	}
	if base := strings.Fields(ins[last].args); len(base) == 0 || base[0] != "scratch" {
		t.Errorf("%s: final stage FROM %s, want scratch", p, ins[last].args)
	}
	var user, workdir string
	var entrypoint, copies []string
	labels, args := map[string]string{}, map[string]string{}
	for _, in := range ins[last+1:] {
		switch in.op {
		case "USER":
			user = in.args
		case "WORKDIR":
			workdir = in.args
		case "ENTRYPOINT":
			if err := json.Unmarshal([]byte(in.args), &entrypoint); err != nil {
				t.Errorf("%s: ENTRYPOINT %s is not the exec (JSON) form: %v", p, in.args, err)
			}
		case "CMD":
			t.Errorf("%s: CMD %s: the image has none", p, in.args)
		case "COPY", "ADD":
			copies = append(copies, in.op+" "+in.args)
		case "ARG":
			if k, v, ok := strings.Cut(in.args, "="); ok {
				args[k] = v
			}
		case "LABEL":
			for _, kv := range strings.Fields(in.args) {
				k, v, _ := strings.Cut(kv, "=")
				labels[k] = v
			}
		}
	}
	if user != c.User {
		t.Errorf("%s: USER %q, the image's %q", p, user, c.User)
	}
	if workdir != c.WorkingDir {
		t.Errorf("%s: WORKDIR %q, the image's %q", p, workdir, c.WorkingDir)
	}
	if !slices.Equal(entrypoint, c.Entrypoint) {
		t.Errorf("%s: ENTRYPOINT %q, the image's %q", p, entrypoint, c.Entrypoint)
	}
	if want := []string{"COPY --from=build /operator /operator"}; !slices.Equal(copies, want) {
		t.Errorf("%s: final stage copies %q, want %q", p, copies, want)
	}
	keys := slices.Sorted(maps.Keys(labels))
	if want := slices.Sorted(maps.Keys(c.Labels)); !slices.Equal(keys, want) {
		t.Errorf("%s: LABEL keys %q, the image's %q", p, keys, want)
	}
	if v := labels["org.opencontainers.image.title"]; v != c.Labels["org.opencontainers.image.title"] {
		t.Errorf("%s: title label %q, the image's %q", p, v, c.Labels["org.opencontainers.image.title"])
	}
	if args["SOURCE"] != DefaultSource {
		t.Errorf("%s: ARG SOURCE=%q, want %q as make image", p, args["SOURCE"], DefaultSource)
	}
	for k, arg := range map[string]string{
		"org.opencontainers.image.version":  "${VERSION}",
		"org.opencontainers.image.source":   "${SOURCE}",
		"org.opencontainers.image.revision": "${REVISION}",
	} {
		if labels[k] != arg {
			t.Errorf("%s: label %s=%q, want %s from a build arg", p, k, labels[k], arg)
		}
	}
}

func TestSourceDate(t *testing.T) {
	t.Setenv("SOURCE_DATE_EPOCH", "1700000000")
	got, from, err := SourceDate()
	if err != nil || !got.Equal(time.Unix(1700000000, 0)) || from != "SOURCE_DATE_EPOCH" {
		t.Errorf("SOURCE_DATE_EPOCH=1700000000: %s (%s), %v", got, from, err)
	}
	for _, bad := range []string{"yesterday", "-1", "1.5"} {
		t.Setenv("SOURCE_DATE_EPOCH", bad)
		if _, _, err := SourceDate(); err == nil {
			t.Errorf("SOURCE_DATE_EPOCH=%s was taken", bad)
		}
	}
}
