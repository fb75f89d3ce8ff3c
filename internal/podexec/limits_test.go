package podexec

import (
	"math"
	"strings"
	"testing"
)

// limitsText is /proc/1/limits of a containerd container, as Linux prints it.
const limitsText = `Limit                     Soft Limit           Hard Limit           Units     
Max cpu time              unlimited            unlimited            seconds   
Max stack size            8388608              unlimited            bytes     
Max open files            20000                1048576              files     
Max locked memory         8388608              8388608              bytes     
`

func TestParseOpenFileLimit(t *testing.T) {
	for name, tc := range map[string]struct {
		text string
		want int64
		err  string
	}{
		"the soft limit":  {limitsText, 20000, ""},
		"unlimited":       {strings.Replace(limitsText, "20000 ", "unlimited ", 1), math.MaxInt64, ""},
		"no such line":    {"Limit   Soft Limit\n", 0, "no \"Max open files\" line"},
		"not a number":    {strings.Replace(limitsText, "20000 ", "lots  ", 1), 0, "is not a number"},
		"an empty answer": {"", 0, "no \"Max open files\" line"},
	} {
		got, err := ParseOpenFileLimit(tc.text)
		if got != tc.want || (err == nil) != (tc.err == "") || err != nil && !strings.Contains(err.Error(), tc.err) {
			t.Errorf("%s: %d, %v; want %d, %q", name, got, err, tc.want, tc.err)
		}
	}
}
