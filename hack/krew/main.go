// Command krew cross-builds kubectl acko into reproducible archives and writes the krew manifest
// that names them with their sha256 (`make krew VERSION=vX.Y.Z`):
//
//	dist/kubectl-acko_<version>_<os>_<arch>.tar.gz   kubectl-acko, kubectl_complete-acko (and LICENSE)
//	dist/acko.yaml                                   the manifest for the krew index
//
// Archives are reproducible: the binaries are built with -trimpath, without VCS stamps or build id,
// and the archive entries have fixed names, order, modes, owners and times, so the same source and
// Go version give the same sha256.
package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"text/template"
	"time"
)

//go:embed acko.yaml.tmpl
var manifestTemplate string

// semver is what krew accepts as a plugin version.
var semver = regexp.MustCompile(`^v\d+\.\d+\.\d+(-[0-9A-Za-z.-]+)?$`)

// platform is one os/arch of the release.
type platform struct{ OS, Arch string }

var platforms = []platform{{"linux", "amd64"}, {"linux", "arm64"}, {"darwin", "amd64"}, {"darwin", "arm64"}}

// binaries are the programs of every archive: the plugin and its completion helper.
var binaries = []struct{ name, pkg string }{
	{"kubectl-acko", "./cmd/kubectl-acko"},
	{"kubectl_complete-acko", "./cmd/kubectl_complete-acko"},
}

// versionVar is the variable the version is stamped into.
const versionVar = "github.com/acko-io/acko/internal/kubectlacko.Version"

// archiveTime is the modification time of every archive entry (the epoch: nothing of the build).
var archiveTime = time.Unix(0, 0).UTC()

func main() {
	version := flag.String("version", "", "plugin version, semver with a leading v (e.g. v0.1.0)")
	out := flag.String("out", "dist", "folder for the archives and the manifest")
	releaseURL := flag.String("release-url", "https://github.com/acko-io/acko/releases/download",
		"where the archives are downloaded from: <release-url>/<version>/<archive>")
	homepage := flag.String("homepage", "https://github.com/acko-io/acko", "the plugin's homepage")
	flag.Parse()
	if err := run(*version, *out, *releaseURL, *homepage); err != nil {
		fmt.Fprintln(os.Stderr, "krew:", err)
		os.Exit(1)
	}
}

// manifestPlatform is one platform entry of the manifest.
type manifestPlatform struct {
	OS, Arch, URI, SHA256 string
	Files                 []string
}

func run(version, out, releaseURL, homepage string) error {
	if !semver.MatchString(version) {
		return fmt.Errorf("-version %q is not a version krew accepts (vMAJOR.MINOR.PATCH[-pre])", version)
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	var entries []manifestPlatform
	for _, p := range platforms {
		name := fmt.Sprintf("kubectl-acko_%s_%s_%s.tar.gz", version, p.OS, p.Arch)
		files, err := buildPlatform(p, version)
		if err != nil {
			return err
		}
		sum, err := writeArchive(filepath.Join(out, name), files)
		if err != nil {
			return err
		}
		fmt.Printf("%s  %s\n", sum, name)
		entries = append(entries, manifestPlatform{OS: p.OS, Arch: p.Arch, SHA256: sum,
			URI: fmt.Sprintf("%s/%s/%s", strings.TrimSuffix(releaseURL, "/"), version, name), Files: fileNames(files)})
	}
	var manifest bytes.Buffer
	if err := renderManifest(&manifest, version, homepage, entries); err != nil {
		return err
	}
	path := filepath.Join(out, "acko.yaml")
	fmt.Println("wrote", path)
	return os.WriteFile(path, manifest.Bytes(), 0o644)
}

func renderManifest(w io.Writer, version, homepage string, entries []manifestPlatform) error {
	tmpl, err := template.New("manifest").Option("missingkey=error").Parse(manifestTemplate)
	if err != nil {
		return err
	}
	return tmpl.Execute(w, map[string]any{"Version": version, "Homepage": homepage, "Platforms": entries})
}

// archiveFile is one entry of an archive.
type archiveFile struct {
	name string
	mode int64
	data []byte
}

func fileNames(files []archiveFile) []string {
	names := make([]string, 0, len(files))
	for _, f := range files {
		names = append(names, f.name)
	}
	return names
}

// buildPlatform builds both programs for one platform, plus the LICENSE where the repository has one.
func buildPlatform(p platform, version string) ([]archiveFile, error) {
	tmp, err := os.MkdirTemp("", "kubectl-acko-build")
	if err != nil {
		return nil, err
	}
	defer func() { _ = os.RemoveAll(tmp) }()
	var files []archiveFile
	for _, b := range binaries {
		bin := filepath.Join(tmp, b.name)
		cmd := exec.Command("go", "build", "-trimpath", "-buildvcs=false",
			"-ldflags", "-s -w -buildid= -X "+versionVar+"="+version, "-o", bin, b.pkg)
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS="+p.OS, "GOARCH="+p.Arch, "GOFLAGS=")
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
		if err := cmd.Run(); err != nil {
			return nil, fmt.Errorf("building %s for %s/%s: %w", b.name, p.OS, p.Arch, err)
		}
		data, err := os.ReadFile(bin)
		if err != nil {
			return nil, err
		}
		files = append(files, archiveFile{name: b.name, mode: 0o755, data: data})
	}
	if data, err := os.ReadFile("LICENSE"); err == nil {
		files = append(files, archiveFile{name: "LICENSE", mode: 0o644, data: data})
	}
	return files, nil
}

// writeArchive writes a reproducible tar.gz of files and returns its sha256 in hex.
func writeArchive(path string, files []archiveFile) (string, error) {
	var buf bytes.Buffer
	if err := archive(&buf, files); err != nil {
		return "", err
	}
	sum := sha256.Sum256(buf.Bytes())
	return hex.EncodeToString(sum[:]), os.WriteFile(path, buf.Bytes(), 0o644)
}

// archive writes files, in the order given, with nothing of the machine or the time in the headers;
// gzip's header has no name and no time either.
func archive(w io.Writer, files []archiveFile) error {
	zw, err := gzip.NewWriterLevel(w, gzip.BestCompression)
	if err != nil {
		return err
	}
	tw := tar.NewWriter(zw)
	for _, f := range files {
		hdr := &tar.Header{Typeflag: tar.TypeReg, Name: f.name, Mode: f.mode, Size: int64(len(f.data)),
			ModTime: archiveTime, Format: tar.FormatUSTAR}
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		if _, err := tw.Write(f.data); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	return zw.Close()
}
