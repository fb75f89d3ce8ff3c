// Package crilog writes a container's output in the CRI log format a kubelet writes and kwok serves
// back (`kubectl logs`): "<RFC 3339 time> <stream> F <line>", a line at a time.
package crilog

import (
	"bytes"
	"fmt"
	"io"
	"time"
)

// Writer writes one stream ("stdout", "stderr") of a container to W. Best effort, as a container's
// log is. Writers of two streams may share W when W serializes its writes (an *os.File does).
type Writer struct {
	W      io.Writer
	Stream string
	// Rewrite, when set, changes each line before it is written.
	Rewrite func(string) string
	part    []byte // the start of a line not ended yet
}

func (c *Writer) Write(p []byte) (int, error) {
	c.part = append(c.part, p...)
	for {
		line, rest, ok := bytes.Cut(c.part, []byte("\n"))
		if !ok {
			return len(p), nil
		}
		c.line(line)
		c.part = rest
	}
}

// Flush writes a last line that did not end.
func (c *Writer) Flush() {
	if len(c.part) > 0 {
		c.line(c.part)
		c.part = nil
	}
}

func (c *Writer) line(b []byte) {
	s := string(b)
	if c.Rewrite != nil {
		s = c.Rewrite(s)
	}
	_, _ = fmt.Fprintf(c.W, "%s %s F %s\n", time.Now().UTC().Format(time.RFC3339Nano), c.Stream, s)
}
