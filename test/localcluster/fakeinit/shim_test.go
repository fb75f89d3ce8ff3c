package fakeinit

import (
	"encoding/json"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"
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

// A command forwarded to a real node goes to the sync loop's socket and gives back what the node
// gave: output and exit code.
func TestForward(t *testing.T) {
	socket := filepath.Join(t.TempDir(), "s.sock")
	ln, err := net.Listen("unix", socket)
	if err != nil {
		t.Fatal(err)
	}
	var got ForwardRequest
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = json.NewDecoder(r.Body).Decode(&got)
		_ = json.NewEncoder(w).Encode(ForwardResult{Stdout: []byte("out"), Stderr: []byte("err"), ExitCode: 3})
	}), ReadHeaderTimeout: time.Second}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	res, err := forward(socket, ForwardRequest{Node: "ns/p@u", Argv: []string{"cat", "/proc/1/cmdline"}})
	if err != nil || string(res.Stdout) != "out" || string(res.Stderr) != "err" || res.ExitCode != 3 {
		t.Fatalf("%+v %v", res, err)
	}
	if got.Node != "ns/p@u" || len(got.Argv) != 2 || got.Argv[0] != "cat" {
		t.Fatalf("request %+v", got)
	}
	if _, err := forward(filepath.Join(t.TempDir(), "none.sock"), got); err == nil {
		t.Fatal("no sync loop: no error")
	}
}
