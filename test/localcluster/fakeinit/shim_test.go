package fakeinit

import (
	"strings"
	"testing"
)

func TestWarmRestartRequest(t *testing.T) {
	for args, want := range map[string]bool{
		"-USR1 1":          true,
		"-SIGUSR1 1":       true,
		"-usr1 1":          true,
		"-10 1":            true,
		"-s USR1 1":        true,
		"-s SIGUSR1 1":     true,
		"--signal USR1 1":  true,
		"--signal=USR1 1":  true,
		"-n 10 1":          true,
		"-USR1 -- 1":       true,
		"-USR1 42 1":       true,
		"1":                false, // SIGTERM
		"-TERM 1":          false,
		"-USR2 1":          false,
		"-USR1 42":         false,
		"-USR1 -1":         false, // every process, not PID 1
		"-USR1 11":         false,
		"-l":               false,
		"":                 false,
		"-s USR1":          false,
		"-KILL 1":          false,
		"-9 1":             false,
		"-s USR1 -- 1 200": true,
	} {
		if got := warmRestartRequest(strings.Fields(args)); got != want {
			t.Errorf("kill %s: warm restart %v, want %v", args, got, want)
		}
	}
}
