package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"io"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"
)

var testFiles = []archiveFile{
	{name: "kubectl-acko", mode: 0o755, data: []byte("plugin")},
	{name: "kubectl_complete-acko", mode: 0o755, data: []byte("completion")},
	{name: "LICENSE", mode: 0o644, data: []byte("license")},
}

func TestArchivesAreReproducible(t *testing.T) {
	var first, second bytes.Buffer
	if err := archive(&first, testFiles); err != nil {
		t.Fatal(err)
	}
	time.Sleep(1100 * time.Millisecond) // a clock that leaked into a header would differ now
	if err := archive(&second, testFiles); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(first.Bytes(), second.Bytes()) {
		t.Fatal("two archives of the same files differ")
	}

	zr, err := gzip.NewReader(&first)
	if err != nil {
		t.Fatal(err)
	}
	if zr.Name != "" || !zr.ModTime.IsZero() {
		t.Errorf("gzip header carries name %q, time %v", zr.Name, zr.ModTime)
	}
	tr := tar.NewReader(zr)
	for _, want := range testFiles {
		hdr, err := tr.Next()
		if err != nil {
			t.Fatal(err)
		}
		data, _ := io.ReadAll(tr)
		if hdr.Name != want.name || hdr.Mode != want.mode || string(data) != string(want.data) ||
			!hdr.ModTime.Equal(archiveTime) || hdr.Uid != 0 || hdr.Gid != 0 || hdr.Uname != "" || hdr.Gname != "" {
			t.Errorf("entry %+v (%q), want %s mode %o at the epoch owned by 0", hdr, data, want.name, want.mode)
		}
	}
	if _, err := tr.Next(); err != io.EOF {
		t.Errorf("more entries than files: %v", err)
	}
}

func TestManifest(t *testing.T) {
	entries := []manifestPlatform{
		{OS: "linux", Arch: "amd64", URI: "https://example.com/v1.2.3/a.tar.gz", SHA256: strings.Repeat("a", 64),
			Files: fileNames(testFiles)},
		{OS: "darwin", Arch: "arm64", URI: "https://example.com/v1.2.3/b.tar.gz", SHA256: strings.Repeat("b", 64),
			Files: fileNames(testFiles[:2])},
	}
	var out bytes.Buffer
	if err := renderManifest(&out, "v1.2.3", "https://example.com", entries); err != nil {
		t.Fatal(err)
	}
	var m struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
		Metadata   struct{ Name string }
		Spec       struct {
			Version, Homepage, ShortDescription, Description, Caveats string
			Platforms                                                 []struct {
				Selector struct {
					MatchLabels map[string]string `json:"matchLabels"`
				}
				URI, SHA256, Bin string
				Files            []struct{ From, To string }
			}
		}
	}
	if err := yaml.UnmarshalStrict(out.Bytes(), &m); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	if m.APIVersion != "krew.googlecontainertools.github.com/v1alpha2" || m.Kind != "Plugin" || m.Metadata.Name != "acko" ||
		m.Spec.Version != "v1.2.3" || m.Spec.ShortDescription == "" || !strings.Contains(m.Spec.Caveats, "store/acko/v1.2.3/") {
		t.Errorf("manifest header: %+v", m)
	}
	if len(m.Spec.Platforms) != 2 {
		t.Fatalf("%d platforms", len(m.Spec.Platforms))
	}
	p := m.Spec.Platforms[1]
	if p.Selector.MatchLabels["os"] != "darwin" || p.Selector.MatchLabels["arch"] != "arm64" ||
		p.URI != entries[1].URI || p.SHA256 != entries[1].SHA256 || p.Bin != "kubectl-acko" ||
		len(p.Files) != 2 || p.Files[1].From != "kubectl_complete-acko" || p.Files[1].To != "." {
		t.Errorf("platform %+v", p)
	}
}

func TestVersionMustBeSemver(t *testing.T) {
	for _, v := range []string{"", "0.1.0", "v0.1", "latest"} {
		if err := run(v, t.TempDir(), "", ""); err == nil || !strings.Contains(err.Error(), "is not a version krew accepts") {
			t.Errorf("version %q: %v", v, err)
		}
	}
	for _, v := range []string{"v0.1.0", "v1.2.3-rc.1"} {
		if !semver.MatchString(v) {
			t.Errorf("version %q refused", v)
		}
	}
}
