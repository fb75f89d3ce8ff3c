package podexec

import (
	"errors"
	"strings"
	"testing"
)

// officialCmdline is PID 1 of the official image as the brief quotes it; officialFull adds what the
// image's ENTRYPOINT and CMD append after the options.
const (
	officialCmdline = "as-tini-static\x00-r\x00SIGUSR1\x00-t\x00SIGTERM\x00"
	officialFull    = "/usr/bin/as-tini-static\x00-r\x00SIGUSR1\x00-t\x00SIGTERM\x00--\x00/entrypoint.sh\x00asd\x00"
)

func TestJudgeCmdlineAcceptsTiniWithRestartSignal(t *testing.T) {
	for name, raw := range map[string]string{
		"official image, exact bytes": officialCmdline,
		"official image, full argv":   officialFull,
		"tini":                        "tini\x00-r\x00SIGUSR1\x00--\x00asd\x00",
		"tini-static, attached value": "/sbin/tini-static\x00-rSIGUSR1\x00asd\x00",
		"clustered flags":             "tini\x00-vr\x00SIGUSR1\x00asd\x00",
		"other options first":         "as-tini\x00-s\x00-e\x00143\x00-r\x00SIGUSR1\x00--\x00asd\x00",
		"last -r wins":                "tini\x00-r\x00SIGHUP\x00-r\x00SIGUSR1\x00asd\x00",
	} {
		t.Run(name, func(t *testing.T) {
			if err := judgeCmdline("ns/pod", execResult{Stdout: []byte(raw)}); err != nil {
				t.Fatalf("got %v, want nil", err)
			}
		})
	}
}

func TestJudgeCmdlineRejectsOtherInit(t *testing.T) {
	for name, tc := range map[string]struct{ raw, reason, shown string }{
		"plain asd": {
			"asd\x00--foreground\x00--config-file\x00/etc/aerospike/aerospike.conf\x00",
			"not tini started with -r SIGUSR1", "asd --foreground --config-file /etc/aerospike/aerospike.conf"},
		"shell":             {"/bin/sh\x00-c\x00exec asd\x00", "not tini started with -r SIGUSR1", "/bin/sh -c exec asd"},
		"sleep":             {"sleep\x00infinity\x00", "not tini started with -r SIGUSR1", "sleep infinity"},
		"tini lookalike":    {"/usr/bin/tini-wrapper\x00-r\x00SIGUSR1\x00asd\x00", "not tini started with -r SIGUSR1", ""},
		"tini without -r":   {"tini\x00--\x00asd\x00", "tini started without -r", "tini -- asd"},
		"-r after --":       {"tini\x00--\x00asd\x00-r\x00SIGUSR1\x00", "tini started without -r", ""},
		"-r after program":  {"tini\x00asd\x00-r\x00SIGUSR1\x00", "tini started without -r", ""},
		"-r as value of -p": {"as-tini-static\x00-p\x00-r\x00asd\x00", "tini started without -r", ""},
		"dangling -r":       {"tini\x00-r\x00", "tini started without -r", ""},
		"other signal":      {"tini\x00-r\x00SIGTERM\x00asd\x00", "tini restarts its child on SIGTERM, not SIGUSR1", ""},
		"short name":        {"tini\x00-r\x00USR1\x00asd\x00", "tini restarts its child on USR1, not SIGUSR1", ""},
	} {
		t.Run(name, func(t *testing.T) {
			err := judgeCmdline("ns/pod", execResult{Stdout: []byte(tc.raw)})
			if !errors.Is(err, ErrNotTini) {
				t.Fatalf("got %v, want ErrNotTini", err)
			}
			for _, want := range []string{"pod ns/pod", "(" + tc.reason + ")", "use a PodRestart operation instead", tc.shown} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("message %q lacks %q", err, want)
				}
			}
		})
	}
}

func TestNotTiniMessage(t *testing.T) {
	err := checkTini("ns/name", []string{"asd", "--foreground"})
	want := `PID 1 of pod ns/name is "asd --foreground" (not tini started with -r SIGUSR1): ` +
		`SIGUSR1 would not restart asd in place (a plain asd aborts on it); use a PodRestart operation instead`
	if err == nil || err.Error() != want {
		t.Fatalf("got  %v\nwant %s", err, want)
	}
	var nt *NotTiniError
	if !errors.As(err, &nt) || nt.Pod != "ns/name" || len(nt.Cmdline) != 2 {
		t.Fatalf("not a *NotTiniError with pod and argv: %#v", err)
	}
}

func TestNotTiniMessageBoundsLongCmdline(t *testing.T) {
	err := checkTini("ns/name", []string{"asd", strings.Repeat("x", 5000)})
	if n := len(err.Error()); n > 2*maxShownCmdline+200 {
		t.Fatalf("message is %d bytes long", n)
	}
}

func TestJudgeCmdlineUnparsableOutput(t *testing.T) {
	for name, res := range map[string]execResult{
		"nothing printed":      {},
		"exec failed, nothing": {Err: errors.New("command terminated with non-zero exit code"), Stderr: []byte("cat: /proc/1/cmdline: No such file or directory\n")},
		"space separated text": {Stdout: []byte("as-tini-static -r SIGUSR1 -t SIGTERM\n")},
		"empty argv[0]":        {Stdout: []byte("\x00")},
	} {
		t.Run(name, func(t *testing.T) {
			err := judgeCmdline("ns/pod", res)
			if err == nil || errors.Is(err, ErrNotTini) {
				t.Fatalf("got %v, want a read error that is not ErrNotTini", err)
			}
			msg := err.Error()
			if !strings.Contains(msg, "pod ns/pod") {
				t.Errorf("message %q does not name the pod", msg)
			}
			if res.Err != nil && !strings.Contains(msg, res.Err.Error()) {
				t.Errorf("message %q lacks the exec error", msg)
			}
			if len(res.Stdout) > 0 && !strings.Contains(msg, "stdout: ") {
				t.Errorf("message %q lacks what was printed", msg)
			}
			if len(res.Stderr) > 0 && !strings.Contains(msg, "No such file or directory") {
				t.Errorf("message %q lacks stderr", msg)
			}
		})
	}
}

// kwok reports an exec error for commands that ran fine; the content decides.
func TestJudgeCmdlineIgnoresExecErrorWhenOutputProvesTini(t *testing.T) {
	res := execResult{Stdout: []byte(officialCmdline), Err: errors.New("exit status 1")}
	if err := judgeCmdline("ns/pod", res); err != nil {
		t.Fatalf("got %v, want nil", err)
	}
}
