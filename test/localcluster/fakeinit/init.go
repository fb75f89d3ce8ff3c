package fakeinit

import (
	"encoding/json"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
)

// envChild carries the command to run across the re-exec.
const envChild = "FAKEINIT_CHILD"

// Init is the stand-in init: first it re-execs itself under the EnvCmdline command line, then
// (second stage, envChild set) it runs the child.
func Init(command []string) int {
	if child := os.Getenv(envChild); child != "" {
		var argv []string
		if err := json.Unmarshal([]byte(child), &argv); err != nil || len(argv) == 0 {
			fmt.Fprintf(os.Stderr, "fakeinit: bad %s: %v\n", envChild, err)
			return 2
		}
		_ = os.Unsetenv(envChild)
		_ = os.Unsetenv(EnvCmdline)
		return supervise(argv)
	}
	if len(command) == 0 {
		fmt.Fprintln(os.Stderr, "usage: fakeinit COMMAND [ARG...]")
		return 2
	}
	return reexec(command)
}

// reexec replaces this process with itself under the configured command line: /proc/1/cmdline
// is argv as given to execve, so this is how PID 1 looks like the image's tini.
func reexec(command []string) int {
	var cmdline []string
	if err := json.Unmarshal([]byte(os.Getenv(EnvCmdline)), &cmdline); err != nil || len(cmdline) == 0 {
		fmt.Fprintf(os.Stderr, "fakeinit: %s must be a JSON array of strings: %v\n", EnvCmdline, err)
		return 2
	}
	child, _ := json.Marshal(command)
	env := append(os.Environ(), envChild+"="+string(child))
	err := syscall.Exec("/proc/self/exe", cmdline, env)
	fmt.Fprintf(os.Stderr, "fakeinit: re-exec: %v\n", err)
	return 1
}

// supervise runs argv as the only child and acts as init until it exits.
func supervise(argv []string) int {
	me := strings.Join(os.Args, " ")
	sigs := make(chan os.Signal, 16)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGUSR1, syscall.SIGHUP, syscall.SIGCHLD)
	child, err := os.StartProcess(argv[0], argv, &os.ProcAttr{Files: []*os.File{os.Stdin, os.Stdout, os.Stderr}})
	if err != nil {
		fmt.Fprintf(os.Stderr, "fakeinit: start %s: %v\n", argv[0], err)
		return 1
	}
	logf("%s (pid %d): started %s (pid %d)", me, os.Getpid(), argv[0], child.Pid)
	for sig := range sigs {
		switch sig {
		case syscall.SIGCHLD:
			if code, done := reap(child.Pid); done {
				logf("%s: %s exited (%d)", me, argv[0], code)
				return code
			}
		case syscall.SIGTERM, syscall.SIGINT:
			logf("%s: got %s, passing it to %s", me, signalName(sig), argv[0])
			_ = child.Signal(sig)
		default:
			// SIGUSR1 is the warm restart: the kill shim already had the simulator restart the
			// pod's node, and kwok (the child) serves every pod, so it keeps running.
			logf("%s: got %s", me, signalName(sig))
		}
	}
	return 1
}

// reap collects every exited child (orphans re-parented to PID 1 included) and reports whether
// pid was one of them, with its exit code.
func reap(pid int) (int, bool) {
	for {
		var ws syscall.WaitStatus
		got, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
		if err != nil || got <= 0 {
			return 0, false
		}
		if got == pid {
			if ws.Signaled() {
				return 128 + int(ws.Signal()), true
			}
			return ws.ExitStatus(), true
		}
	}
}

// signalNames are the names the log uses (Go's are "user defined signal 1" and the like).
var signalNames = map[os.Signal]string{
	syscall.SIGUSR1: "SIGUSR1", syscall.SIGTERM: "SIGTERM", syscall.SIGINT: "SIGINT", syscall.SIGHUP: "SIGHUP",
}

func signalName(sig os.Signal) string {
	if name, ok := signalNames[sig]; ok {
		return name
	}
	return sig.String()
}
