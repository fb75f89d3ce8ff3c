// Package version says which build of ACKO this is. The build sets both values with -ldflags
// (make build, make image, the Dockerfile):
//
//	-X github.com/acko-io/acko/internal/version.Version=v0.1.0
//	-X github.com/acko-io/acko/internal/version.Revision=<git commit>
package version

import "fmt"

// Version is the release (a git tag, or what `git describe` says between tags).
var Version = "dev"

// Revision is the git commit the binary was built from.
var Revision = "unknown"

// String is what `manager --version` prints.
func String() string { return fmt.Sprintf("acko %s (revision %s)", Version, Revision) }
