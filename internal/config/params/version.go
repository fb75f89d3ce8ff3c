package params

import (
	"cmp"
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// Version is an Aerospike server version; Build is the fourth number of a release (8.1.1.1), 0 when
// absent. A table describes a whole line X.Y.Z.
type Version struct {
	Major, Minor, Patch, Build int
}

// ParseVersion reads "X.Y.Z" or "X.Y.Z.W".
func ParseVersion(s string) (Version, error) {
	parts := strings.Split(s, ".")
	if len(parts) != 3 && len(parts) != 4 {
		return Version{}, fmt.Errorf("%q is not a version X.Y.Z or X.Y.Z.W", s)
	}
	nums := make([]int, 4)
	for i, p := range parts {
		n, err := strconv.Atoi(p)
		if err != nil || n < 0 || strconv.Itoa(n) != p {
			return Version{}, fmt.Errorf("%q is not a version X.Y.Z or X.Y.Z.W", s)
		}
		nums[i] = n
	}
	return Version{nums[0], nums[1], nums[2], nums[3]}, nil
}

func (v Version) String() string {
	if v.Build != 0 {
		return fmt.Sprintf("%d.%d.%d.%d", v.Major, v.Minor, v.Patch, v.Build)
	}
	return fmt.Sprintf("%d.%d.%d", v.Major, v.Minor, v.Patch)
}

// Line is the version without its build number: the table it follows.
func (v Version) Line() Version { return Version{v.Major, v.Minor, v.Patch, 0} }

// Compare orders versions.
func (v Version) Compare(o Version) int {
	return cmp.Or(cmp.Compare(v.Major, o.Major), cmp.Compare(v.Minor, o.Minor),
		cmp.Compare(v.Patch, o.Patch), cmp.Compare(v.Build, o.Build))
}

// Less reports v < o.
func (v Version) Less(o Version) bool { return v.Compare(o) < 0 }

// versionTag is the official image's tag for a CE server: ce-8.1.1.1, or the bare version 8.1.1.1.
var versionTag = regexp.MustCompile(`^(?:ce-)?(\d+\.\d+\.\d+(?:\.\d+)?)$`)

// ImageVersion reads the server version from an image reference's tag: "aerospike:ce-8.1.1.1" and
// "registry:5000/aerospike/aerospike-server:8.1.2.0". ok is false for a digest, "latest", a missing
// tag or any other tag, whose server version cannot be known from the reference.
func ImageVersion(image string) (v Version, ok bool) {
	if strings.Contains(image, "@") {
		return Version{}, false
	}
	slash := strings.LastIndex(image, "/")
	colon := strings.LastIndex(image, ":")
	if colon <= slash {
		return Version{}, false
	}
	m := versionTag.FindStringSubmatch(image[colon+1:])
	if m == nil {
		return Version{}, false
	}
	v, err := ParseVersion(m[1])
	return v, err == nil
}
