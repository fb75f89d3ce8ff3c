package aerospike

import (
	"context"
	"errors"
	"fmt"
	"net"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"
	"unsafe"

	as "github.com/aerospike/aerospike-client-go/v7"
	astypes "github.com/aerospike/aerospike-client-go/v7/types"
)

// InfoClient sends info commands to one Aerospike node.
type InfoClient interface {
	// Info returns each command's raw answer, keyed by command. ERROR answers are values, not
	// errors (use Value); the error reports transport (ErrUnreachable) or framing (ErrBadResponse)
	// failures of the whole call.
	Info(ctx context.Context, addr string, commands ...string) (map[string]string, error)
}

// Defaults for ClientOptions.
const (
	DefaultTimeout          = 2 * time.Second
	DefaultAttempts         = 2
	DefaultMaxResponseBytes = 1 << 20
	DefaultMaxConnections   = 128

	retryBackoff  = 100 * time.Millisecond
	headerSize    = 8
	protoVersion  = 2
	protoTypeInfo = 1
)

// ClientOptions tunes a Client; zero fields take the defaults.
type ClientOptions struct {
	// Timeout bounds one Info call end to end, retries included.
	Timeout time.Duration
	// Attempts is how many connections one call may try. Only failures that happen before the
	// deadline (refused, reset) are retried: a timeout has used the whole budget already.
	Attempts int
	// MaxResponseBytes caps the declared body length, checked before anything is allocated.
	MaxResponseBytes int
	// MaxConnections caps the calls in flight, so the sockets of a manager that probes thousands of
	// nodes stay bounded. A call waits for its turn before its Timeout starts: a reading is never
	// "unreachable" because others were in the way.
	MaxConnections int
}

// Client is the InfoClient over aerospike-client-go v7 single-node connections.
// It opens one connection per call: the prober talks to each node every few seconds at most,
// and a fresh connection never inherits a half-read answer from a failed call.
type Client struct {
	opts  ClientOptions
	turns chan struct{} // one token per call in flight
}

var (
	_ InfoClient = (*Client)(nil)

	errNoTimeLeft = errors.New("no time left to connect")
	errNoTurn     = errors.New("ended while waiting for a free connection")
)

// NewClient returns a Client with opts, defaults filled in.
func NewClient(opts ClientOptions) *Client {
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	if opts.Attempts <= 0 {
		opts.Attempts = DefaultAttempts
	}
	if opts.MaxResponseBytes <= 0 {
		opts.MaxResponseBytes = DefaultMaxResponseBytes
	}
	if opts.MaxConnections <= 0 {
		opts.MaxConnections = DefaultMaxConnections
	}
	return &Client{opts: opts, turns: make(chan struct{}, opts.MaxConnections)}
}

// Info implements InfoClient. addr is "host:port".
func (c *Client) Info(ctx context.Context, addr string, commands ...string) (map[string]string, error) {
	host, err := parseHost(addr)
	if err != nil {
		return nil, err
	}
	commands, err = uniqueCommands(commands)
	if err != nil {
		return nil, err
	}
	select {
	case c.turns <- struct{}{}:
		defer func() { <-c.turns }()
	case <-ctx.Done():
		return nil, unreachable(ctx, host, errNoTurn)
	}
	ctx, cancel := context.WithTimeout(ctx, c.opts.Timeout)
	defer cancel()

	var lastErr error
	for attempt := range c.opts.Attempts {
		if attempt > 0 && !sleep(ctx, retryBackoff) {
			break
		}
		answers, err := c.exchange(ctx, host, commands)
		if err == nil || !errors.Is(err, ErrUnreachable) {
			return answers, err
		}
		lastErr = err
	}
	return nil, lastErr
}

// exchange runs one request on a new connection.
func (c *Client) exchange(ctx context.Context, host *as.Host, commands []string) (map[string]string, error) {
	deadline, _ := ctx.Deadline() // Info always sets one
	policy := as.NewClientPolicy()
	policy.Timeout = time.Until(deadline)
	if ctx.Err() != nil || policy.Timeout <= 0 {
		return nil, unreachable(ctx, host, errNoTimeLeft)
	}
	conn, aerr := as.NewConnection(policy, host)
	if aerr != nil {
		return nil, unreachable(ctx, host, aerr)
	}
	defer conn.Close()
	// v7 has no way to abort a blocked read; closing the socket is the only interrupt.
	if sock := netConnOf(conn); sock != nil {
		stop := context.AfterFunc(ctx, func() { _ = sock.Close() })
		defer stop()
	}
	// The dial used part of the budget; the rest is for the request, not a fresh Timeout.
	if aerr := conn.SetTimeout(deadline, 0); aerr != nil {
		return nil, unreachable(ctx, host, aerr)
	}
	body, err := roundTrip(ctx, conn, host, commands, c.opts.MaxResponseBytes)
	if err != nil {
		return nil, err
	}
	return parseResponse(body, commands)
}

// roundTrip writes the request and reads one answer frame. It does the framing itself instead of
// Connection.RequestInfo because RequestInfo allocates whatever length the header declares (up to
// 64 MiB), ignores the version and type bytes, and silently drops lines it cannot parse.
func roundTrip(ctx context.Context, conn *as.Connection, host *as.Host, commands []string, maxBody int) ([]byte, error) {
	req, err := astypes.NewMessage(astypes.MSG_INFO, []byte(strings.Join(commands, "\n")+"\n")).Serialize()
	if err != nil {
		return nil, fmt.Errorf("encode info request: %w", err)
	}
	if _, aerr := conn.Write(req); aerr != nil {
		return nil, unreachable(ctx, host, aerr)
	}
	header := make([]byte, headerSize)
	if _, aerr := conn.Read(header, headerSize); aerr != nil {
		return nil, unreachable(ctx, host, aerr)
	}
	n, err := checkHeader(header, maxBody)
	if err != nil {
		return nil, err
	}
	body := make([]byte, n)
	if _, aerr := conn.Read(body, n); aerr != nil {
		return nil, unreachable(ctx, host, aerr)
	}
	return body, nil
}

// checkHeader validates an answer header (version 2, type 1, 48-bit big-endian length) and
// returns the body length.
func checkHeader(h []byte, maxBody int) (int, error) {
	if len(h) != headerSize {
		return 0, badResponse("header is %d bytes", len(h))
	}
	if h[0] != protoVersion || h[1] != protoTypeInfo {
		return 0, badResponse("header version %d type %d, want %d/%d", h[0], h[1], protoVersion, protoTypeInfo)
	}
	var n uint64
	for _, b := range h[2:] {
		n = n<<8 | uint64(b)
	}
	if n > uint64(maxBody) {
		return 0, badResponse("answer of %d bytes exceeds the %d byte limit", n, maxBody)
	}
	return int(n), nil
}

// netConnOf returns the socket inside a v7 Connection. Connection.Close from another goroutine
// races with a blocked Read (it nils the field the reader uses and can panic), while net.Conn.Close
// is safe to call concurrently and unblocks the read. Returns nil if the field is not there (a
// client upgrade; TestNetConnOf catches it): then a cancelled call still ends at its deadline.
func netConnOf(c *as.Connection) net.Conn {
	f := reflect.ValueOf(c).Elem().FieldByName("conn")
	if !f.IsValid() || f.Type() != reflect.TypeFor[net.Conn]() {
		return nil
	}
	return *(*net.Conn)(unsafe.Pointer(f.UnsafeAddr()))
}

func unreachable(ctx context.Context, host *as.Host, cause error) error {
	// A v7 error prints on several lines; the network error it wraps says the same on one.
	var aerr as.Error
	if errors.As(cause, &aerr) && errors.Unwrap(aerr) != nil {
		cause = errors.Unwrap(aerr)
	}
	if ctxErr := ctx.Err(); ctxErr != nil {
		cause = fmt.Errorf("%w: %w", ctxErr, cause)
	}
	return fmt.Errorf("%w: %s: %w", ErrUnreachable, host, cause)
}

func parseHost(addr string) (*as.Host, error) {
	name, portText, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("aerospike address %q: %w", addr, err)
	}
	port, err := strconv.Atoi(portText)
	if err != nil || port <= 0 || port > 65535 {
		return nil, fmt.Errorf("aerospike address %q: bad port", addr)
	}
	return as.NewHost(name, port), nil
}

// uniqueCommands drops repeats (the answer is a map) and rejects commands whose answer line
// could not be matched back to them.
func uniqueCommands(commands []string) ([]string, error) {
	if len(commands) == 0 {
		return nil, errors.New("info: no command")
	}
	out := make([]string, 0, len(commands))
	for _, cmd := range commands {
		if cmd == "" || strings.ContainsAny(cmd, "\t\n") {
			return nil, fmt.Errorf("info: invalid command %q", cmd)
		}
		if !slices.Contains(out, cmd) {
			out = append(out, cmd)
		}
	}
	return out, nil
}

// sleep waits d or until ctx ends; it reports whether the full wait happened.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
