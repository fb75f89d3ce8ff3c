// Package fakeinit is the local cluster's stand-in for the Aerospike image's PID 1 and the shim
// that routes a pod's `kill -USR1 1` to the simulator. bin/fakeinit (test/fakeinit) runs Main.
//
// As init, PID 1 of a kwok's PID namespace (`unshare --pid --fork --mount-proc --kill-child
// fakeinit kwok ...`), it re-execs itself so that /proc/1/cmdline reads as EnvCmdline says (the
// image's `as-tini-static -r SIGUSR1 -t SIGTERM`, or a plain asd), starts the command as its
// child, forwards SIGTERM and SIGINT to it, logs SIGUSR1 and SIGHUP, reaps orphans, and exits
// with the child's status. Whatever `kubectl exec` runs through that kwok sees it as PID 1, so
// `kill -USR1 1` from a pod can never reach the machine's PID 1.
//
// As `kill` (a symlink first in kwok's PATH), it asks the simulator at EnvSimURL to warm-restart
// the node of POD_NAMESPACE/POD_NAME (set by the pod's kwok Exec) when its arguments send SIGUSR1
// to PID 1, then execs the real kill with the same arguments, so the stand-in init gets the
// signal as tini would.
//
// As `cat` and `cp`, it reads and writes the pod's files in the simulator when an argument is
// under one of the container's volume mounts (EnvMounts), so that an exec'd `cp` into
// /etc/aerospike never touches this machine's /etc; any other use runs the real command.
package fakeinit

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"
)

// Environment of bin/fakeinit, set by the local cluster on the unshare process.
const (
	// EnvCmdline is the JSON array the init shows as its command line.
	EnvCmdline = "FAKEINIT_CMDLINE"
	// EnvLog is the file the init and the shim append what they see to.
	EnvLog = "FAKEINIT_LOG"
	// EnvSimURL is the simulator's control API, e.g. http://127.0.0.1:3099.
	EnvSimURL = "AEROSIM_URL"
	// EnvHang (a Go duration, set by a pod's kwok Exec) makes a shim hang that long before it
	// runs: an exec stream that is accepted and never answered, yet ends by itself.
	EnvHang = "POD_EXEC_HANG"
)

// Shims are the commands bin/fakeinit stands in for when invoked under their name.
var Shims = map[string]func(args []string) int{"kill": Kill, "cat": Cat, "cp": Cp}

// Main runs the shim it is invoked as, else the init; it returns the exit code. In a pod of a real
// node (EnvForwardSocket set by its Exec) every command is forwarded to that node; a forwarded
// command's name without it is refused, never run as the init.
func Main() int {
	name := filepath.Base(os.Args[0])
	if os.Getenv(EnvForwardSocket) != "" {
		return Forward(os.Args[1:])
	}
	if _, ok := Shims[name]; !ok && slices.Contains(ForwardedCommands, name) {
		fmt.Fprintf(os.Stderr, "%s: not found (no real node for this exec)\n", name)
		return 127
	}
	if shim, ok := Shims[name]; ok {
		if d, err := time.ParseDuration(os.Getenv(EnvHang)); err == nil && d > 0 {
			logf("%s: hanging for %s (%s)", filepath.Base(os.Args[0]), d, EnvHang)
			time.Sleep(d)
		}
		return shim(os.Args[1:])
	}
	return Init(os.Args[1:])
}

// logf appends a line to EnvLog (and nothing when unset): stdout and stderr of the shim belong
// to the exec'd command's caller.
func logf(format string, args ...any) {
	path := os.Getenv(EnvLog)
	if path == "" {
		return
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return
	}
	defer func() { _ = f.Close() }()
	_, _ = fmt.Fprintf(f, "%s "+format+"\n", append([]any{time.Now().Format(time.RFC3339Nano)}, args...)...)
}
