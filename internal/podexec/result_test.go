package podexec

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

func TestJudgeSignal(t *testing.T) {
	exitErr := errors.New("command terminated with exit code 1")
	for name, tc := range map[string]struct {
		res      execResult
		wantErr  bool
		contains []string
	}{
		"silent success":            {res: execResult{}},
		"whitespace on stderr":      {res: execResult{Stderr: []byte("\n")}},
		"stdout only":               {res: execResult{Stdout: []byte("ok\n")}},
		"stderr without exec error": {res: execResult{Stderr: []byte("kill: (1) - Operation not permitted\n")}, wantErr: true, contains: []string{"Operation not permitted"}},
		"exec error without output": {res: execResult{Err: exitErr}, wantErr: true, contains: []string{exitErr.Error()}},
		"exec error and stderr":     {res: execResult{Err: errors.New("exit status 1"), Stderr: []byte("kill: executable file not found")}, wantErr: true, contains: []string{"exit status 1", "executable file not found"}},
	} {
		t.Run(name, func(t *testing.T) {
			err := judgeSignal("ns/pod", tc.res)
			if !tc.wantErr {
				if err != nil {
					t.Fatalf("got %v, want nil", err)
				}
				return
			}
			if !errors.Is(err, ErrSignalUnconfirmed) {
				t.Fatalf("got %v, want ErrSignalUnconfirmed", err)
			}
			for _, want := range append(tc.contains, "pod ns/pod") {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("message %q lacks %q", err, want)
				}
			}
		})
	}
}

func TestCappedBufferKeepsFirstBytesAndNeverFails(t *testing.T) {
	b := newCappedBuffer(5)
	for _, chunk := range []string{"abc", "defg", "hij"} {
		n, err := b.Write([]byte(chunk))
		if n != len(chunk) || err != nil {
			t.Fatalf("Write(%q) = %d, %v; want %d, nil", chunk, n, err, len(chunk))
		}
	}
	if got := b.Bytes(); !bytes.Equal(got, []byte("abcde")) {
		t.Fatalf("kept %q, want %q", got, "abcde")
	}
}

func TestDetailsClipsOutput(t *testing.T) {
	d := execResult{Stdout: bytes.Repeat([]byte("x"), 10*maxShownOutput)}.details()
	if len(d) > maxShownOutput+50 {
		t.Fatalf("details are %d bytes long", len(d))
	}
}
