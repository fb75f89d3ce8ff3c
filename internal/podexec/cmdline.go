package podexec

import (
	"errors"
	"fmt"
	"path"
	"strings"
)

// restartSignal is the signal the operator sends, so it is the one tini must restart its child on.
const restartSignal = "SIGUSR1"

// tiniNames are the base names of the tini builds that may run as PID 1 (the official image ships
// /usr/bin/as-tini-static).
var tiniNames = map[string]bool{
	"as-tini-static": true,
	"as-tini":        true,
	"tini":           true,
	"tini-static":    true,
}

// tiniOptsWithArg are the options of as-tini's getopt string ("p:hvwgle:r:t:s") that take a value.
const tiniOptsWithArg = "pert"

// maxShownCmdline bounds the command line quoted in messages (they end up in events and status).
const maxShownCmdline = 200

var (
	// ErrNotTini means PID 1 cannot turn SIGUSR1 into an in-place restart; no signal was sent.
	ErrNotTini = errors.New("PID 1 is not tini started with -r " + restartSignal)
	// ErrSignalUnconfirmed means the kill exec failed or complained: SIGUSR1 may or may not have reached
	// PID 1, so the caller must settle it (e.g. by the node's uptime) rather than signal again.
	ErrSignalUnconfirmed = errors.New(restartSignal + " delivery not confirmed")
	// ErrNotProjected means the ConfigMap's new content has not reached the pod yet (the kubelet
	// refreshes mounted ConfigMaps within about a minute): nothing was changed; try again later.
	ErrNotProjected = errors.New("the kubelet has not projected the new config into the pod yet")
)

// NotTiniError says why PID 1 of a pod is not a tini that restarts its child on SIGUSR1.
type NotTiniError struct {
	Pod     string   // namespace/name
	Cmdline []string // PID 1's argv
	Reason  string   // e.g. "not tini started with -r SIGUSR1"
}

func (e *NotTiniError) Error() string {
	return fmt.Sprintf("PID 1 of pod %s is %q (%s): %s would not restart asd in place (a plain asd aborts on it); "+
		"use a PodRestart operation instead", e.Pod, showCmdline(e.Cmdline), e.Reason, restartSignal)
}

// Unwrap lets callers test for ErrNotTini with errors.Is.
func (e *NotTiniError) Unwrap() error { return ErrNotTini }

// parseCmdline splits the contents of /proc/<pid>/cmdline (NUL-terminated arguments) into argv.
// Output without a NUL is rejected: it is not what the kernel writes, so it proves nothing about PID 1.
func parseCmdline(raw []byte) ([]string, error) {
	if len(raw) == 0 {
		return nil, errors.New("empty output")
	}
	if !strings.Contains(string(raw), "\x00") {
		return nil, errors.New("output is not a NUL-separated command line")
	}
	argv := strings.Split(strings.TrimSuffix(string(raw), "\x00"), "\x00")
	if argv[0] == "" {
		return nil, errors.New("command line has an empty argv[0]")
	}
	return argv, nil
}

// checkTini returns nil when argv is a tini that restarts its child on SIGUSR1, else a *NotTiniError.
func checkTini(pod string, argv []string) error {
	reason := ""
	switch sig, ok := tiniRestartSignal(argv[1:]); {
	case !tiniNames[path.Base(argv[0])]:
		reason = "not tini started with -r " + restartSignal
	case !ok:
		reason = "tini started without -r"
	case sig != restartSignal:
		reason = fmt.Sprintf("tini restarts its child on %s, not %s", sig, restartSignal)
	default:
		return nil
	}
	return &NotTiniError{Pod: pod, Cmdline: argv, Reason: reason}
}

// tiniRestartSignal returns the value of tini's last -r option. Like getopt it reads clustered flags
// ("-vr SIGUSR1") and attached values ("-rSIGUSR1"); it stops at "--" or at the first non-option, the
// program tini runs, so an -r meant for that program is never taken for tini's.
func tiniRestartSignal(args []string) (signal string, found bool) {
	for i := 0; i < len(args); i++ {
		arg := args[i]
		if arg == "--" || arg == "-" || !strings.HasPrefix(arg, "-") {
			break
		}
		for j := 1; j < len(arg); j++ {
			if !strings.ContainsRune(tiniOptsWithArg, rune(arg[j])) {
				continue
			}
			value := arg[j+1:]
			if value == "" {
				if i+1 >= len(args) {
					return signal, found // a dangling option: tini itself would have refused to start
				}
				i++
				value = args[i]
			}
			if arg[j] == 'r' {
				signal, found = value, true
			}
			break // the rest of this argument was the option's value
		}
	}
	return signal, found
}

// showCmdline renders argv for a message, space-separated and bounded.
func showCmdline(argv []string) string {
	s := strings.Join(argv, " ")
	if len(s) > maxShownCmdline {
		return s[:maxShownCmdline] + "..."
	}
	return s
}
