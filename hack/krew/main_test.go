package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"io"
	"reflect"
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

	checkEntries(t, first.Bytes())
}

// checkEntries reads an archive back: the files in order, with nothing of the machine or the time.
func checkEntries(t *testing.T, data []byte) {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(data))
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
		got, _ := io.ReadAll(tr)
		type entry struct {
			Name, Uname, Gname string
			Type               byte
			Mode, Size, Unix   int64
			UID, GID           int
			Data               string
		}
		gotEntry := entry{hdr.Name, hdr.Uname, hdr.Gname, hdr.Typeflag, hdr.Mode, hdr.Size, hdr.ModTime.Unix(),
			hdr.Uid, hdr.Gid, string(got)}
		wantEntry := entry{Name: want.name, Type: tar.TypeReg, Mode: want.mode, Size: int64(len(want.data)),
			Unix: archiveTime.Unix(), Data: string(want.data)}
		if gotEntry != wantEntry {
			t.Errorf("entry %+v, want %+v", gotEntry, wantEntry)
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
	var m krewPlugin
	if err := yaml.UnmarshalStrict(out.Bytes(), &m); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	if m.APIVersion != "krew.googlecontainertools.github.com/v1alpha2" || m.Kind != "Plugin" || m.Metadata.Name != "acko" ||
		m.Spec.Version != "v1.2.3" || m.Spec.ShortDescription == "" || !strings.Contains(m.Spec.Caveats, "store/acko/v1.2.3/") {
		t.Errorf("manifest header: %+v", m)
	}
	files := []krewFile{{"kubectl-acko", "."}, {"kubectl_complete-acko", "."}}
	want := []krewPlatform{
		{Selector: krewSelector{map[string]string{"os": "linux", "arch": "amd64"}}, URI: entries[0].URI,
			SHA256: entries[0].SHA256, Bin: "kubectl-acko", Files: append(files, krewFile{"LICENSE", "."})},
		{Selector: krewSelector{map[string]string{"os": "darwin", "arch": "arm64"}}, URI: entries[1].URI,
			SHA256: entries[1].SHA256, Bin: "kubectl-acko", Files: files},
	}
	if !reflect.DeepEqual(m.Spec.Platforms, want) {
		t.Errorf("platforms %+v\nwant %+v", m.Spec.Platforms, want)
	}
}

// krewPlugin is the part of krew's Plugin manifest the test reads.
type krewPlugin struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct{ Name string }
	Spec       struct {
		Version, Homepage, ShortDescription, Description, Caveats string
		Platforms                                                 []krewPlatform
	}
}

type krewPlatform struct {
	Selector         krewSelector
	URI, SHA256, Bin string
	Files            []krewFile
}

type krewSelector struct {
	MatchLabels map[string]string `json:"matchLabels"`
}

type krewFile struct{ From, To string }

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
