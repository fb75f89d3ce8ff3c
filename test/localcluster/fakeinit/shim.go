package fakeinit

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/acko-io/acko/test/localcluster/simclient"
)

// Kill is the kill shim: a SIGUSR1 to PID 1 first warm-restarts the pod's simulated node, then
// the real kill delivers the signal (to the stand-in init) either way. The simulator's failures
// go to stderr, where the caller of the exec sees them, as it would see a real kill complain.
func Kill(args []string) int {
	if warmRestartRequest(args) {
		if err := warmRestart(); err != nil {
			fmt.Fprintf(os.Stderr, "kill (local cluster shim): %v\n", err)
			logf("kill shim: %v", err)
		}
	}
	return execReal("kill", args)
}

// execReal replaces this process with the real command of that name (the first in PATH that is
// not this shim), with the same arguments; it returns only on failure.
func execReal(name string, args []string) int {
	real, err := realCommand(name)
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s (local cluster shim): %v\n", name, err)
		return 127
	}
	err = syscall.Exec(real, append([]string{name}, args...), os.Environ())
	fmt.Fprintf(os.Stderr, "%s (local cluster shim): exec %s: %v\n", name, real, err)
	return 126
}

// warmRestartRequest reports whether kill's arguments send SIGUSR1 to PID 1, in any of kill's
// spellings: -USR1, -SIGUSR1, -10, -s USR1, --signal=USR1, ... As in kill, an option after the
// signal or a pid is a pid ("-1": every process).
func warmRestartRequest(args []string) bool {
	sig, sigSet, pids := "TERM", false, []string(nil)
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			pids = append(pids, args[i+1:]...)
			i = len(args)
		case sigSet || len(pids) > 0 || !strings.HasPrefix(a, "-"):
			pids = append(pids, a)
		case (a == "-s" || a == "--signal" || a == "-n") && i+1 < len(args):
			i++
			sig, sigSet = args[i], true
		case strings.HasPrefix(a, "--signal="):
			sig, sigSet = strings.TrimPrefix(a, "--signal="), true
		default:
			sig, sigSet = a[1:], true
		}
	}
	sig = strings.TrimPrefix(strings.ToUpper(sig), "SIG")
	return (sig == "USR1" || sig == "10") && slices.Contains(pids, "1")
}

func warmRestart() error {
	ns, pod, url := os.Getenv("POD_NAMESPACE"), os.Getenv("POD_NAME"), os.Getenv(EnvSimURL)
	if ns == "" || pod == "" || url == "" {
		return errors.New("POD_NAMESPACE, POD_NAME or " + EnvSimURL + " unset: no pod to warm-restart " +
			"(the sync loop creates each pod's kwok Exec)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	node := simclient.NodeName(ns, pod)
	st, err := simclient.New(url).WarmRestart(ctx, node)
	if err != nil {
		return fmt.Errorf("warm restart of simulated node %s: %w", node, err)
	}
	logf("kill shim: warm restart of %s (restarts=%d)", node, st.Restarts)
	return nil
}

// realCommand is the first command of that name in PATH that is not this shim.
func realCommand(name string) (string, error) {
	self, err := os.Executable()
	if err != nil {
		return "", err
	}
	selfInfo, err := os.Stat(self)
	if err != nil {
		return "", err
	}
	for _, dir := range filepath.SplitList(os.Getenv("PATH")) {
		candidate := filepath.Join(dir, name)
		info, err := os.Stat(candidate)
		if err == nil && info.Mode().IsRegular() && info.Mode()&0o111 != 0 && !os.SameFile(info, selfInfo) {
			return candidate, nil
		}
	}
	return "", fmt.Errorf("no %s in PATH besides this shim", name)
}
