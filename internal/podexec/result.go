package podexec

import (
	"bytes"
	"fmt"
	"strings"
	"sync"
)

// maxShownOutput bounds the command output quoted in an error message.
const maxShownOutput = 512

// execResult is what one exec printed and how the exec itself ended.
type execResult struct {
	Stdout []byte
	Stderr []byte
	Err    error // transport, timeout or "command terminated with ..." error
}

// judgeCmdline decides step 1 from the content of stdout alone: kwok may report a failed exec for a
// command that printed the right bytes, and an exit code of 0 proves nothing when nothing was printed.
func judgeCmdline(pod string, res execResult) error {
	argv, err := parseCmdline(res.Stdout)
	if err != nil {
		return fmt.Errorf("reading PID 1's command line in pod %s: %v%s", pod, err, res.details())
	}
	return checkTini(pod, argv)
}

// judgeSignal decides step 2: kill prints nothing when it delivers the signal, so any exec error or
// anything on stderr means the signal is not confirmed.
func judgeSignal(pod string, res execResult) error {
	if res.Err == nil && len(bytes.TrimSpace(res.Stderr)) == 0 {
		return nil
	}
	return fmt.Errorf("sending %s to PID 1 in pod %s: %w%s", restartSignal, pod, ErrSignalUnconfirmed, res.details())
}

// judgeRead returns what cat printed; any exec error or complaint on stderr is a failure.
func judgeRead(pod string, res execResult) (string, error) {
	if res.Err != nil || len(bytes.TrimSpace(res.Stderr)) > 0 {
		return "", fmt.Errorf("reading a file in pod %s%s", pod, res.details())
	}
	return string(res.Stdout), nil
}

// judgeQuiet judges a command that prints nothing when it succeeds (cp).
func judgeQuiet(pod, what string, res execResult) error {
	if res.Err == nil && len(bytes.TrimSpace(res.Stderr)) == 0 {
		return nil
	}
	return fmt.Errorf("%s in pod %s%s", what, pod, res.details())
}

// details renders the exec error and what was printed, for an error message.
func (r execResult) details() string {
	var b strings.Builder
	if r.Err != nil {
		fmt.Fprintf(&b, "; exec: %v", r.Err)
	}
	if len(r.Stdout) > 0 {
		fmt.Fprintf(&b, "; stdout: %q", clip(r.Stdout))
	}
	if len(r.Stderr) > 0 {
		fmt.Fprintf(&b, "; stderr: %q", clip(bytes.TrimSpace(r.Stderr)))
	}
	return b.String()
}

func clip(b []byte) string {
	if len(b) > maxShownOutput {
		return string(b[:maxShownOutput]) + "..."
	}
	return string(b)
}

// cappedBuffer keeps the first limit bytes written and drops the rest without failing the stream, so a
// chatty command cannot grow memory. It is locked because remotecommand may still be copying into it
// when a timed-out exec returns.
type cappedBuffer struct {
	mu    sync.Mutex
	buf   bytes.Buffer
	limit int
}

func newCappedBuffer(limit int) *cappedBuffer { return &cappedBuffer{limit: limit} }

func (c *cappedBuffer) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	room := max(c.limit-c.buf.Len(), 0)
	c.buf.Write(p[:min(room, len(p))])
	return len(p), nil
}

// Bytes returns a copy of what was kept.
func (c *cappedBuffer) Bytes() []byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	return bytes.Clone(c.buf.Bytes())
}
