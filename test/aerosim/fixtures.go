package aerosim

import (
	"embed"
	"fmt"
	"io/fs"
	"path"
	"strings"
)

// The fixture bodies are copies of the shared facts' fixtures (exact answers of a real CE 8.1.2.0 asd); the
// manifest fixtures/aerospike-ce-8.1.2.0.sha256 records their sums as copied.
//
//go:embed fixtures
var fixtureFS embed.FS

const (
	fixtureRoot = "fixtures/aerospike-ce-8.1.2.0"
	// DefaultProfile is the fixture directory that answers every command a node's own profile lacks.
	DefaultProfile = "single"
)

// Fixtures returns the embedded fixture tree: "<profile>/<command file>.body" plus README.md.
func Fixtures() fs.FS {
	sub, err := fs.Sub(fixtureFS, fixtureRoot)
	if err != nil {
		panic(err) // fixtureRoot is a constant inside the embedded tree
	}
	return sub
}

// templates maps profile (a fixture directory such as "three-stable/node-4000") to command to
// the value asd answered.
type templates map[string]map[string]string

func loadTemplates() (templates, error) {
	t := templates{}
	err := fs.WalkDir(Fixtures(), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".body") {
			return err
		}
		body, err := fs.ReadFile(Fixtures(), p)
		if err != nil {
			return err
		}
		cmd, value, ok := splitAnswer(body)
		if !ok {
			return fmt.Errorf("fixture %s is not one \"cmd\\tvalue\\n\" line", p)
		}
		profile := path.Dir(p)
		if t[profile] == nil {
			t[profile] = map[string]string{}
		}
		t[profile][cmd] = value
		return nil
	})
	return t, err
}

// splitAnswer splits a one-command answer body into command and value.
func splitAnswer(body []byte) (cmd, value string, ok bool) {
	line, ok := strings.CutSuffix(string(body), "\n")
	if !ok || strings.Contains(line, "\n") {
		return "", "", false
	}
	return strings.Cut(line, "\t")
}

// lookup finds the template for cmd in profile, falling back to DefaultProfile.
func (t templates) lookup(profile, cmd string) (string, bool) {
	if v, ok := t[profile][cmd]; ok {
		return v, true
	}
	v, ok := t[DefaultProfile][cmd]
	return v, ok
}
