package aerospike

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

var (
	// ErrUnreachable means no answer came back: dial failure, reset, or timeout. The cause is wrapped.
	ErrUnreachable = errors.New("aerospike node unreachable")
	// ErrBadResponse means the node answered something that is not a valid info response.
	ErrBadResponse = errors.New("malformed info response")
	// ErrEnterpriseOnly matches an *InfoError for ERROR:25 (e.g. quiesce: on Community Edition).
	ErrEnterpriseOnly = errors.New("enterprise only")
	// ErrUnrecognizedCommand matches an *InfoError for ERROR:4:unrecognized command.
	ErrUnrecognizedCommand = errors.New("unrecognized command")
	// ErrMigrating matches an *InfoError for cluster-stable's ERROR:7:unstable cluster: the node is in a
	// cluster of the size asked, whose migrations are not done (or whose exchange is not settled).
	ErrMigrating = errors.New("unstable cluster")
)

// Result codes asd puts in ERROR answers (as_result_code in the server, types.ResultCode in the client).
const (
	codeParameter      = 4
	codeClusterStable  = 7
	codeEnterpriseOnly = 25
)

// InfoError is an "ERROR:<code>:<message>" answer to one info command.
// errors.Is matches ErrEnterpriseOnly and ErrUnrecognizedCommand for the corresponding answers.
type InfoError struct {
	Command string
	Code    int // 0 when the answer carried no code ("ERROR::msg")
	Message string
}

func (e *InfoError) Error() string {
	return fmt.Sprintf("info %q: ERROR:%d:%s", e.Command, e.Code, e.Message)
}

// Is maps well-known answers to sentinels; code 4 is a generic parameter error, so its message decides.
func (e *InfoError) Is(target error) bool {
	switch target {
	case ErrEnterpriseOnly:
		return e.Code == codeEnterpriseOnly
	case ErrUnrecognizedCommand:
		return e.Code == codeParameter && e.Message == "unrecognized command"
	case ErrMigrating:
		return e.Code == codeClusterStable && e.Message == "unstable cluster"
	}
	return false
}

// parseInfoError returns the *InfoError when value is an error answer, else nil.
// asd writes errors as "ERROR:<code>:<message>"; the code may be empty ("ERROR::msg").
func parseInfoError(command, value string) error {
	if value != "ERROR" && !strings.HasPrefix(value, "ERROR:") {
		return nil
	}
	rest := strings.TrimPrefix(strings.TrimPrefix(value, "ERROR"), ":")
	codeText, msg, _ := strings.Cut(rest, ":")
	if codeText == "" {
		return &InfoError{Command: command, Message: msg}
	}
	code, err := strconv.Atoi(codeText)
	if err != nil {
		return &InfoError{Command: command, Message: rest}
	}
	return &InfoError{Command: command, Code: code, Message: msg}
}

// Value returns the answer to command, or the *InfoError the node answered with.
func Value(answers map[string]string, command string) (string, error) {
	v, ok := answers[command]
	if !ok {
		return "", fmt.Errorf("%w: no answer for %q", ErrBadResponse, command)
	}
	if err := parseInfoError(command, v); err != nil {
		return "", err
	}
	return v, nil
}

func badResponse(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrBadResponse, fmt.Sprintf(format, args...))
}

// clip keeps error messages short when a peer sends megabytes of garbage.
func clip(s string) string {
	const maxLen = 64
	if len(s) <= maxLen {
		return s
	}
	return s[:maxLen] + "..."
}
