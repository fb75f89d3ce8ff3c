// Command ociimage builds ACKO's OCI image without a container engine and without pulling a base
// image: one layer holds the static manager binary, the Mozilla CA roots (from the pinned
// golang.org/x/crypto/x509roots/fallback module), /etc/passwd and /etc/group with the non-root user
// 65532 and an empty /tmp; the config runs /manager as 65532:65532. It writes an OCI image layout,
// packed as one tar (an "oci-archive"), whose index.json names one multi-platform image index.
//
//	ociimage -out dist/acko-image.tar -version v0.1.0 -revision <commit> -created <RFC 3339> \
//	  -source https://github.com/acko-io/acko -platform linux/amd64=dist/linux-amd64/manager ...
//
// `make image` runs it. Push the result with `crane push` or `skopeo copy` (docs/install.md).
package main

import (
	"archive/tar"
	"bytes"
	"encoding/pem"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"golang.org/x/crypto/x509roots/fallback/bundle"
)

const (
	user        = "65532:65532"
	caBundle    = "etc/ssl/certs/ca-certificates.crt"
	entrypoint  = "/manager"
	refNameAnno = "org.opencontainers.image.ref.name"
)

type platforms map[string]string // "linux/amd64" -> binary

func (p platforms) String() string { return fmt.Sprint(map[string]string(p)) }

func (p platforms) Set(v string) error {
	platform, binary, ok := strings.Cut(v, "=")
	if !ok || !strings.HasPrefix(platform, "linux/") {
		return fmt.Errorf("want linux/ARCH=BINARY, got %q", v)
	}
	p[platform] = binary
	return nil
}

type options struct {
	out, version, revision, source, created string
	binaries                                platforms
}

func main() {
	o := options{binaries: platforms{}}
	flag.StringVar(&o.out, "out", "", "the tar to write (an OCI image layout)")
	flag.StringVar(&o.version, "version", "", "the version (label org.opencontainers.image.version, ref name)")
	flag.StringVar(&o.revision, "revision", "", "the git commit (label org.opencontainers.image.revision)")
	flag.StringVar(&o.source, "source", "", "the source repository URL (label org.opencontainers.image.source)")
	flag.StringVar(&o.created, "created", "", "the build time, RFC 3339 (the commit's time makes the build reproducible)")
	flag.Var(o.binaries, "platform", "linux/ARCH=BINARY, once per platform")
	flag.Parse()
	if err := build(o); err != nil {
		fmt.Fprintln(os.Stderr, "ociimage:", err)
		os.Exit(1)
	}
}

func build(o options) error {
	if o.out == "" || o.version == "" || o.revision == "" || o.source == "" || len(o.binaries) == 0 {
		return errors.New("-out, -version, -revision, -source and at least one -platform are required")
	}
	created, err := time.Parse(time.RFC3339, o.created)
	if err != nil {
		return fmt.Errorf("-created: %w", err)
	}
	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	names := make([]string, 0, len(o.binaries))
	for p := range o.binaries {
		names = append(names, p)
	}
	sort.Strings(names)
	for _, p := range names {
		img, err := image(o, p, created)
		if err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
		_, arch, _ := strings.Cut(p, "/")
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{
			Platform: &v1.Platform{OS: "linux", Architecture: arch},
		}})
	}
	idx = mutate.Annotations(idx, labels(o, created)).(v1.ImageIndex)
	return writeArchive(o.out, idx, o.version)
}

func labels(o options, created time.Time) map[string]string {
	return map[string]string{
		"org.opencontainers.image.title":    "acko",
		"org.opencontainers.image.version":  o.version,
		"org.opencontainers.image.revision": o.revision,
		"org.opencontainers.image.source":   o.source,
		"org.opencontainers.image.created":  created.UTC().Format(time.RFC3339),
	}
}

func image(o options, platform string, created time.Time) (v1.Image, error) {
	binary, err := os.ReadFile(o.binaries[platform])
	if err != nil {
		return nil, err
	}
	rootfs, err := rootFS(binary, created)
	if err != nil {
		return nil, err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(rootfs)), nil
	}, tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return nil, err
	}
	img := mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON)
	img, err = mutate.AppendLayers(img, layer)
	if err != nil {
		return nil, err
	}
	_, arch, _ := strings.Cut(platform, "/")
	cfg, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cfg = cfg.DeepCopy()
	cfg.OS, cfg.Architecture = "linux", arch
	cfg.Created = v1.Time{Time: created}
	cfg.Config = v1.Config{
		User:       user,
		Entrypoint: []string{entrypoint},
		WorkingDir: "/",
		Env:        []string{"SSL_CERT_FILE=/" + caBundle},
		Labels:     labels(o, created),
	}
	cfg.History = []v1.History{{Created: v1.Time{Time: created}, CreatedBy: "hack/tools/ociimage", Comment: "acko " + o.version}}
	img, err = mutate.ConfigFile(img, cfg)
	if err != nil {
		return nil, err
	}
	return mutate.Annotations(img, labels(o, created)).(v1.Image), nil
}

// rootFS is the layer's tar: directories, the user database, the CA roots and the binary, all
// owned by root and dated created, so that the same inputs make the same digest.
func rootFS(binary []byte, created time.Time) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	dir := func(name string, mode int64) error {
		return tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: name + "/", Mode: mode, ModTime: created, Format: tar.FormatPAX})
	}
	file := func(name string, mode int64, data []byte) error {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: mode, Size: int64(len(data)),
			ModTime: created, Format: tar.FormatPAX}); err != nil {
			return err
		}
		_, err := tw.Write(data)
		return err
	}
	for _, d := range []string{"etc", "etc/ssl", "etc/ssl/certs"} {
		if err := dir(d, 0o755); err != nil {
			return nil, err
		}
	}
	if err := dir("tmp", 0o1777); err != nil {
		return nil, err
	}
	files := []struct {
		name string
		mode int64
		data []byte
	}{
		{"etc/passwd", 0o644, []byte("root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n")},
		{"etc/group", 0o644, []byte("root:x:0:\nnonroot:x:65532:\n")},
		{caBundle, 0o644, caRoots()},
		{strings.TrimPrefix(entrypoint, "/"), 0o755, binary},
	}
	for _, f := range files {
		if err := file(f.name, f.mode, f.data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// caRoots is the PEM bundle of the Mozilla roots that carry no constraint a PEM file could not
// express (a distrust-after date): the same set Go's fallback roots trust without conditions.
func caRoots() []byte {
	var out []byte
	for root := range bundle.Roots() {
		if root.Constraint == nil {
			out = append(out, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: root.Certificate})...)
		}
	}
	return out
}

// writeArchive writes idx as the one entry (named version) of an OCI image layout and packs the
// layout into out, entries sorted and dated zero.
func writeArchive(out string, idx v1.ImageIndex, version string) error {
	dir, err := os.MkdirTemp("", "ociimage")
	if err != nil {
		return err
	}
	defer func() { _ = os.RemoveAll(dir) }()
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		return err
	}
	if err := p.AppendIndex(idx, layout.WithAnnotations(map[string]string{refNameAnno: version})); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return err
	}
	f, err := os.Create(out + ".tmp")
	if err != nil {
		return err
	}
	tw := tar.NewWriter(f)
	err = filepath.Walk(dir, func(path string, info os.FileInfo, err error) error {
		if err != nil || path == dir {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		hdr := &tar.Header{Name: filepath.ToSlash(rel), Mode: 0o644, Format: tar.FormatPAX}
		if info.IsDir() {
			hdr.Typeflag, hdr.Name, hdr.Mode = tar.TypeDir, hdr.Name+"/", 0o755
			return tw.WriteHeader(hdr)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		hdr.Typeflag, hdr.Size = tar.TypeReg, int64(len(data))
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		_, err = tw.Write(data)
		return err
	})
	if err == nil {
		err = tw.Close()
	}
	if closeErr := f.Close(); err == nil {
		err = closeErr
	}
	if err != nil {
		return err
	}
	return os.Rename(out+".tmp", out)
}
