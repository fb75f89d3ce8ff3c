// Package image checks the manager's image: the OCI tarball `make image` builds (opened by hand,
// without the library that wrote it), and the Dockerfile, which must produce the same shape.
package image

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/acko-io/acko/test/testenv"
)

type descriptor struct {
	MediaType   string            `json:"mediaType"`
	Digest      string            `json:"digest"`
	Annotations map[string]string `json:"annotations"`
	Platform    *struct {
		OS           string `json:"os"`
		Architecture string `json:"architecture"`
	} `json:"platform"`
}

type index struct {
	MediaType string       `json:"mediaType"`
	Manifests []descriptor `json:"manifests"`
}

type manifest struct {
	Config descriptor   `json:"config"`
	Layers []descriptor `json:"layers"`
}

type config struct {
	OS           string `json:"os"`
	Architecture string `json:"architecture"`
	Config       struct {
		User       string            `json:"User"`
		Entrypoint []string          `json:"Entrypoint"`
		Env        []string          `json:"Env"`
		Labels     map[string]string `json:"Labels"`
	} `json:"config"`
}

// archive is an OCI image layout read from a tar: file name -> content.
type archive map[string][]byte

func (a archive) blob(t *testing.T, digest string, into any) []byte {
	t.Helper()
	b, ok := a["blobs/"+strings.Replace(digest, ":", "/", 1)]
	if !ok {
		t.Fatalf("blob %s missing", digest)
	}
	if into != nil {
		if err := json.Unmarshal(b, into); err != nil {
			t.Fatalf("blob %s: %v", digest, err)
		}
	}
	return b
}

func readTar(t *testing.T, r io.Reader) archive {
	t.Helper()
	a := archive{}
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return a
		}
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		a[strings.TrimPrefix(h.Name, "./")] = b
		if h.Typeflag == tar.TypeSymlink || h.Typeflag == tar.TypeLink {
			a[strings.TrimPrefix(h.Name, "./")] = []byte("-> " + h.Linkname)
		}
	}
}

func TestImageTarball(t *testing.T) {
	path := os.Getenv("ACKO_IMAGE_TAR")
	if path == "" {
		t.Skip("ACKO_IMAGE_TAR not set: `make test-image` builds the image and runs this")
	}
	version, revision := os.Getenv("ACKO_IMAGE_VERSION"), os.Getenv("ACKO_IMAGE_REVISION")
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	layout := readTar(t, f)

	var top index
	if err := json.Unmarshal(layout["index.json"], &top); err != nil {
		t.Fatal(err)
	}
	if len(top.Manifests) != 1 || top.Manifests[0].Annotations["org.opencontainers.image.ref.name"] != version {
		t.Fatalf("index.json should name one image index, ref %s: %+v", version, top.Manifests)
	}
	var multi index
	layout.blob(t, top.Manifests[0].Digest, &multi)
	if multi.MediaType != "application/vnd.oci.image.index.v1+json" {
		t.Errorf("media type %s", multi.MediaType)
	}
	var platforms []string
	for _, m := range multi.Manifests {
		platforms = append(platforms, m.Platform.OS+"/"+m.Platform.Architecture)
		checkImage(t, layout, m, version, revision)
	}
	slices.Sort(platforms)
	if !slices.Equal(platforms, []string{"linux/amd64", "linux/arm64"}) {
		t.Errorf("platforms %v", platforms)
	}
}

func checkImage(t *testing.T, layout archive, d descriptor, version, revision string) {
	var m manifest
	layout.blob(t, d.Digest, &m)
	var c config
	layout.blob(t, m.Config.Digest, &c)
	if c.OS != d.Platform.OS || c.Architecture != d.Platform.Architecture {
		t.Errorf("config says %s/%s under %s/%s", c.OS, c.Architecture, d.Platform.OS, d.Platform.Architecture)
	}
	if c.Config.User != "65532:65532" || !slices.Equal(c.Config.Entrypoint, []string{"/manager"}) {
		t.Errorf("user %q entrypoint %v", c.Config.User, c.Config.Entrypoint)
	}
	for k, want := range map[string]string{
		"org.opencontainers.image.version": version, "org.opencontainers.image.revision": revision,
		"org.opencontainers.image.source": "https://github.com/acko-io/acko",
	} {
		if c.Config.Labels[k] != want {
			t.Errorf("label %s = %q, want %q", k, c.Config.Labels[k], want)
		}
	}
	files := archive{}
	for _, l := range m.Layers {
		gz, err := gzip.NewReader(bytes.NewReader(layout.blob(t, l.Digest, nil)))
		if err != nil {
			t.Fatal(err)
		}
		for name, data := range readTar(t, gz) {
			files[name] = data
		}
	}
	for _, shell := range []string{"bin/sh", "bin/bash", "bin/busybox"} {
		if _, ok := files[shell]; ok {
			t.Errorf("%s: the image has a shell (%s)", c.Architecture, shell)
		}
	}
	if certs := files["etc/ssl/certs/ca-certificates.crt"]; bytes.Count(certs, []byte("BEGIN CERTIFICATE")) < 100 {
		t.Errorf("CA certificates: %d bytes", len(certs))
	}
	if !bytes.Contains(files["etc/passwd"], []byte(":65532:65532:")) {
		t.Error("no user 65532 in /etc/passwd")
	}
	if c.Architecture == "amd64" {
		runVersion(t, files["manager"], version, revision)
	}
}

// runVersion runs the binary taken out of the image: static, it runs here as it would in the image.
func runVersion(t *testing.T, binary []byte, version, revision string) {
	path := filepath.Join(t.TempDir(), "manager")
	if err := os.WriteFile(path, binary, 0o755); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(path, "--version").CombinedOutput()
	if err != nil {
		t.Fatalf("manager --version: %v\n%s", err, out)
	}
	if want := "acko " + version + " (revision " + revision + ")\n"; string(out) != want {
		t.Errorf("manager --version printed %q, want %q", out, want)
	}
	if file, err := exec.Command("file", path).Output(); err == nil && !bytes.Contains(file, []byte("statically linked")) {
		t.Errorf("not a static binary: %s", file)
	}
}

// The Dockerfile cannot be built here (no Docker engine): parse it and check that it makes the
// same image as `make image`: a static binary with the version, CA certificates, user 65532, no
// shell in the final stage, the OCI labels, entrypoint /manager.
func TestDockerfileMakesTheSameShape(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(testenv.RepoRoot(), "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	stages := dockerStages(string(b))
	if len(stages) != 2 {
		t.Fatalf("want a build stage and a final stage, got %d", len(stages))
	}
	build, final := strings.Join(stages[0], "\n"), stages[1]
	for _, want := range []string{"CGO_ENABLED=0", "-trimpath", "internal/version.Version=${VERSION}",
		"internal/version.Revision=${REVISION}", "./cmd"} {
		if !strings.Contains(build, want) {
			t.Errorf("build stage lacks %q", want)
		}
	}
	want := map[string]bool{
		"FROM gcr.io/distroless/static:nonroot":           false, // CA certificates, /etc/passwd, no shell
		"USER 65532:65532":                                false,
		`ENTRYPOINT ["/manager"]`:                         false,
		"COPY --from=builder /workspace/manager /manager": false,
	}
	for _, line := range final {
		if _, ok := want[line]; ok {
			want[line] = true
		}
		if strings.HasPrefix(line, "RUN ") {
			t.Errorf("the final stage runs a command (it has no shell): %s", line)
		}
	}
	for line, seen := range want {
		if !seen {
			t.Errorf("final stage lacks %q", line)
		}
	}
	labels := strings.Join(final, "\n")
	for _, l := range []string{"org.opencontainers.image.version=${VERSION}",
		"org.opencontainers.image.revision=${REVISION}", "org.opencontainers.image.source="} {
		if !strings.Contains(labels, l) {
			t.Errorf("final stage lacks label %s", l)
		}
	}
}

// dockerStages splits a Dockerfile into stages of instructions, continuation lines joined and
// comments dropped.
func dockerStages(dockerfile string) [][]string {
	var stages [][]string
	var cur strings.Builder
	flush := func() {
		line := strings.Join(strings.Fields(cur.String()), " ")
		cur.Reset()
		if line == "" {
			return
		}
		if strings.HasPrefix(line, "FROM ") {
			stages = append(stages, nil)
		}
		if len(stages) > 0 {
			stages[len(stages)-1] = append(stages[len(stages)-1], line)
		}
	}
	for _, raw := range strings.Split(dockerfile, "\n") {
		line := strings.TrimSpace(raw)
		if strings.HasPrefix(line, "#") {
			continue
		}
		if strings.HasSuffix(line, "\\") {
			cur.WriteString(strings.TrimSuffix(line, "\\") + " ")
			continue
		}
		cur.WriteString(line)
		flush()
	}
	flush()
	return stages
}
