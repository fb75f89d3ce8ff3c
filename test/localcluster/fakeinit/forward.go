package fakeinit

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"
)

// Environment of a command exec'd in a pod that runs a real asd (set by the pod's kwok Exec).
const (
	// EnvForwardSocket is the sync loop's socket that runs commands in real nodes.
	EnvForwardSocket = "POD_EXEC_SOCKET"
	// EnvForwardNode is the real node (its launcher's name) the command runs in.
	EnvForwardNode = "POD_REAL_NODE"
)

// ForwardedCommands are the commands a pod on the real-node kwok can run (links to bin/fakeinit first
// in that kwok's PATH): each runs in the pod's real node, not on this machine.
var ForwardedCommands = []string{"cat", "cp", "kill", "sh", "ls", "hostname", "env", "echo", "test", "true",
	"false", "mkdir", "rm", "grep", "head", "tail", "ps", "id", "date", "sleep", "stat", "touch", "mv"}

// ForwardRequest is what the shim asks the sync loop to run.
type ForwardRequest struct {
	Node string   `json:"node"`
	Argv []string `json:"argv"`
}

// ForwardResult is what the command gave.
type ForwardResult struct {
	Stdout   []byte `json:"stdout"`
	Stderr   []byte `json:"stderr"`
	ExitCode int    `json:"exitCode"`
	Error    string `json:"error,omitempty"` // the command could not run in the node
}

// forwardTimeout bounds a forwarded command (kwok's exec has no deadline of its own).
const forwardTimeout = 2 * time.Minute

// Forward runs the command it is invoked as in the pod's real node, through the sync loop, and
// returns its exit code. Stdin is not passed on (kwok v0.8 never ends it anyway).
func Forward(args []string) int {
	socket, node := os.Getenv(EnvForwardSocket), os.Getenv(EnvForwardNode)
	req := ForwardRequest{Node: node, Argv: append([]string{filepath.Base(os.Args[0])}, args...)}
	res, err := forward(socket, req)
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", req.Argv[0], err)
		return 126
	}
	_, _ = os.Stdout.Write(res.Stdout)
	_, _ = os.Stderr.Write(res.Stderr)
	return res.ExitCode
}

func forward(socket string, req ForwardRequest) (ForwardResult, error) {
	var res ForwardResult
	body, err := json.Marshal(req)
	if err != nil {
		return res, err
	}
	client := &http.Client{Timeout: forwardTimeout, Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", socket)
		}}}
	resp, err := client.Post("http://sync/exec", "application/json", bytes.NewReader(body))
	if err != nil {
		return res, fmt.Errorf("the sync loop does not answer at %s: %w", socket, err)
	}
	defer func() { _ = resp.Body.Close() }()
	if err := json.NewDecoder(resp.Body).Decode(&res); err != nil {
		return res, err
	}
	if res.Error != "" {
		return res, fmt.Errorf("%s", res.Error)
	}
	return res, nil
}
