package aerosim

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"strconv"
	"strings"
	"time"
)

const (
	headerSize    = 8
	maxRequest    = 1 << 20
	oversizedBody = 2 << 20
	ipAttempts    = 32
	// garbage is what a client gets when it dials an HTTP server by mistake.
	garbage = "HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n"
)

var errBadFrame = errors.New("not an info request")

// ListenLoopback listens on addr after checking that its host is an IPv4 loopback address: the
// simulator must never be reachable from outside the machine.
func ListenLoopback(addr string) (net.Listener, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	if err := checkLoopback(host); err != nil {
		return nil, err
	}
	return net.Listen("tcp4", addr)
}

func checkLoopback(ip string) error {
	parsed := net.ParseIP(ip)
	if parsed == nil || parsed.To4() == nil || !parsed.IsLoopback() {
		return fmt.Errorf("%w: %q is not an IPv4 loopback address (127.0.0.0/8)", ErrInvalid, ip)
	}
	return nil
}

// listen binds the node's address, picking a free 127.x.y.z when spec.IP is empty so that
// parallel tests do not collide on port 3000.
func (s *Sim) listen(spec *NodeSpec) (net.Listener, error) {
	if spec.IP != "" {
		return s.listenOn(spec.IP)
	}
	var err error
	for range ipAttempts {
		ip := fmt.Sprintf("127.%d.%d.%d", 1+rand.IntN(254), rand.IntN(256), 1+rand.IntN(254))
		var ln net.Listener
		if ln, err = s.listenOn(ip); err == nil {
			spec.IP = ip
			return ln, nil
		}
	}
	return nil, err
}

func (s *Sim) listenOn(ip string) (net.Listener, error) {
	if err := checkLoopback(ip); err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp4", net.JoinHostPort(ip, strconv.Itoa(s.opts.Port)))
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrConflict, err)
	}
	return ln, nil
}

func (s *Sim) acceptLoop(n *node) {
	for {
		conn, err := n.ln.Accept()
		if errors.Is(err, net.ErrClosed) {
			return
		}
		if err != nil {
			time.Sleep(10 * time.Millisecond) // e.g. out of file descriptors: try again
			continue
		}
		if !s.track(n, conn) {
			resetConn(conn) // asd is not running: nothing listens
			continue
		}
		s.wg.Go(func() { s.serve(n, conn) })
	}
}

// track registers conn so that a restart or removal can cut it; false if the node cannot answer.
func (s *Sim) track(n *node, conn net.Conn) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.advance()
	if !s.serving(n) {
		return false
	}
	n.conns[conn] = struct{}{}
	return true
}

func (s *Sim) untrack(n *node, conn net.Conn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(n.conns, conn)
}

// serving reports whether n is still in the simulator and up. Callers hold s.mu.
func (s *Sim) serving(n *node) bool {
	return !s.closed && s.nodes[n.spec.Name] == n && n.listening()
}

func (s *Sim) serve(n *node, conn net.Conn) {
	defer s.untrack(n, conn)
	defer func() { _ = conn.Close() }()
	in := bufio.NewReader(conn) // a request's header and body in one read
	for {
		typ, body, err := readFrame(in)
		if err != nil {
			return
		}
		var r reply
		var ok bool
		if typ == msgInfo {
			r, ok = s.reply(n, infoCommands(body))
		} else {
			r, ok = s.dataReply(n, typ, body)
		}
		if !ok || !r.deliver(conn, n.gone) {
			return
		}
	}
}

// dataReply answers an AS_MSG (type 3, or 4 compressed). Only the cluster view is taken under s.mu:
// records have their own locks.
func (s *Sim) dataReply(n *node, typ byte, body []byte) (reply, bool) {
	if typ == msgCompressed {
		var err error
		if body, err = decompress(body); err != nil {
			return reply{}, false
		}
	}
	m, err := parseMessage(body)
	if err != nil {
		return reply{}, false
	}
	s.mu.Lock()
	s.advance()
	if !s.serving(n) {
		s.mu.Unlock()
		return reply{}, false
	}
	r := reply{fault: n.fault, latency: n.latency, framed: true}
	v, namespaces := n.view(), n.asd.namespaces
	stuck := n.stuck != nil
	s.mu.Unlock()
	if stuck && m.info2&(info2Write|info2Delete) != 0 {
		// In a stuck exchange a real 8.1.2.0 let most writes time out in doubt (47 of 60): here all do,
		// unapplied.
		r.fault = FaultHang
		return r, true
	}
	r.body = s.execute(namespaces, v, m)
	if m.info1&info1CompressResponse != 0 {
		r.body = compress(r.body)
	}
	return r, true
}

// reply is one answer and how to misbehave while sending it.
type reply struct {
	body    []byte
	fault   Fault
	latency time.Duration
	framed  bool // body holds whole protos (AS_MSG answers); an info body gets its header on delivery
}

func (s *Sim) reply(n *node, cmds []string) (reply, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.advance()
	if !s.serving(n) {
		return reply{}, false
	}
	body := s.render(n, now, cmds)
	return reply{body: body, fault: n.fault, latency: n.latency}, true
}

// deliver sends r; false when the connection must end.
func (r reply) deliver(conn net.Conn, gone <-chan struct{}) bool {
	if !sleep(r.latency, gone) {
		return false
	}
	switch r.fault {
	case FaultHang:
		_, _ = io.Copy(io.Discard, conn) // until the client gives up or the node goes
		return false
	case FaultClose:
		return false
	case FaultGarbage:
		_, _ = conn.Write([]byte(garbage))
		return false
	case FaultBogusLength:
		_, _ = conn.Write(append(frameHeader(1<<48-1), "junk"...))
		return false
	case FaultOversized:
		r.body = bytes.Repeat([]byte("x"), oversizedBody)
	}
	if r.framed {
		_, err := conn.Write(r.body)
		return err == nil
	}
	_, err := conn.Write(append(frameHeader(uint64(len(r.body))), r.body...))
	return err == nil
}

// infoCommands splits an info request body into its commands, each ended by "\n". asd answers a
// body whose last command lacks its newline with nothing (info/n0.json, node_no_newline).
func infoCommands(body []byte) []string {
	text, ok := strings.CutSuffix(string(body), "\n")
	if !ok || text == "" {
		return nil
	}
	return strings.Split(text, "\n")
}

func frameHeader(n uint64) []byte {
	h := []byte{2, 1, 0, 0, 0, 0, 0, 0}
	for i := headerSize - 1; i >= 2; i-- {
		h[i] = byte(n)
		n >>= 8
	}
	return h
}

func frameLength(h []byte) uint64 {
	var n uint64
	for _, b := range h[2:headerSize] {
		n = n<<8 | uint64(b)
	}
	return n
}

// sleep waits d of wall-clock time; false if the node went away meanwhile.
func sleep(d time.Duration, gone <-chan struct{}) bool {
	if d <= 0 {
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-gone:
		return false
	}
}

// resetConn closes with RST, as a peer whose process died would.
func resetConn(c net.Conn) {
	if tcp, ok := c.(*net.TCPConn); ok {
		_ = tcp.SetLinger(0)
	}
	_ = c.Close()
}
