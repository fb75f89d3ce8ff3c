package astools

import (
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"
	"time"
	"unicode"
)

// toolLog writes the tools' log lines as their log_line does (src/utils.c): on stderr, each
// "YYYY-MM-DD HH:MM:SS UTC [TAG] [thread] message", the thread id modulo 100000 in five columns;
// err_code lines end with " (error N: strerror)".
type toolLog struct {
	w      io.Writer
	thread int
}

func newToolLog(w io.Writer) *toolLog { return &toolLog{w: w, thread: os.Getpid() % 100000} }

func (l *toolLog) line(tag, format string, args ...any) {
	_, _ = fmt.Fprintf(l.w, "%s [%s] [%5d] %s\n", time.Now().UTC().Format("2006-01-02 15:04:05 UTC"), tag, l.thread,
		fmt.Sprintf(format, args...))
}

func (l *toolLog) inf(format string, args ...any) { l.line("INF", format, args...) }
func (l *toolLog) err(format string, args ...any) { l.line("ERR", format, args...) }

// errCode is err_code: the message with the errno of err as strerror says it.
func (l *toolLog) errCode(err error, format string, args ...any) {
	l.line("ERR", "%s%s", fmt.Sprintf(format, args...), errnoSuffix(err))
}

func errnoSuffix(err error) string {
	var errno syscall.Errno
	if !errors.As(err, &errno) {
		return fmt.Sprintf(" (error 0: %v)", err)
	}
	// Go's texts are glibc's strerror with a lower-case first letter.
	text := []rune(errno.Error())
	text[0] = unicode.ToUpper(text[0])
	return fmt.Sprintf(" (error %d: %s)", int(errno), string(text))
}
