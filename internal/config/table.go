package config

import (
	"fmt"

	"github.com/acko-io/acko/internal/config/params"
)

// TableFor is the parameter table aerospikeConfig is checked against and rendered for: the table of
// the server version the image's tag names. note says, for a warning, when that is a guess: a tag
// without a version (a digest, latest, a custom tag) or a version newer than every table uses the
// newest table. err refuses a version older than every table (t is then the newest table, so that
// the rest of the spec can still be checked).
func TableFor(image string) (t *params.Table, note string, err error) {
	v, known := params.ImageVersion(image)
	if !known {
		newest := params.Newest().Version
		return params.Newest(), fmt.Sprintf("the Aerospike server version cannot be read from the image's tag: "+
			"aerospikeConfig is checked against the newest parameter table (%s); use a tag such as ce-%s.0 "+
			"to check it against the image's own version", newest, newest), nil
	}
	t, newer, err := params.Select(v)
	switch {
	case err != nil:
		return params.Newest(), "", err
	case newer:
		return t, fmt.Sprintf("Aerospike %s is newer than the newest parameter table ACKO has (%s): "+
			"aerospikeConfig is checked against %s's parameters", v, t.Version, t.Version), nil
	}
	return t, "", nil
}
