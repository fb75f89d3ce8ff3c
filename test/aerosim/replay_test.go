package aerosim

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"io"
	"io/fs"
	"net"
	"path"
	"slices"
	"strings"
	"testing"
	"time"

	as "github.com/aerospike/aerospike-client-go/v7"
)

// A capture step (wire/<cluster>/NN_<step>.json): the messages of one client call.
type captureStep struct {
	Step      string            `json:"step"`
	Exchanges []captureExchange `json:"exchanges"`
}

type captureExchange struct {
	Dir       string `json:"dir"`
	HeaderHex string `json:"header_hex"`
	BodyHex   string `json:"body_hex"`
	Type      int    `json:"type"`
	Conn      int    `json:"conn"`
	ConnDesc  string `json:"conn_desc"` // "<client ip:port>-><server ip:port>"
	Tend      bool   `json:"tend"`
}

func (e captureExchange) bytes(t *testing.T) []byte {
	t.Helper()
	b, err := hex.DecodeString(e.HeaderHex + e.BodyHex)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// roundTrip is one request and the server's answer as captured.
type roundTrip struct {
	conn     int
	server   string // the captured server's IP
	request  []byte
	response []byte
}

// loadStep reads a step's round trips; withTend keeps the client's tend requests.
func loadStep(t *testing.T, name string, withTend bool) (captureStep, []roundTrip) {
	t.Helper()
	data, err := fs.ReadFile(fixtureFS, path.Join(dataplaneRoot, "wire", name))
	if err != nil {
		t.Fatal(err)
	}
	var step captureStep
	if err := json.Unmarshal(data, &step); err != nil {
		t.Fatal(err)
	}
	var trips []roundTrip
	open := map[int]int{} // connection → its last request
	for _, e := range step.Exchanges {
		i, ok := open[e.Conn]
		switch {
		case e.Tend && !withTend:
		case e.Dir == "client->server":
			open[e.Conn] = len(trips)
			_, server, _ := strings.Cut(e.ConnDesc, "->")
			host, _, _ := net.SplitHostPort(server)
			trips = append(trips, roundTrip{conn: e.Conn, server: host, request: e.bytes(t)})
		case ok:
			trips[i].response = append(trips[i].response, e.bytes(t)...)
		}
	}
	return step, trips
}

// replayer sends captured requests to a simulated node, one connection per captured connection.
type replayer struct {
	t     *testing.T
	addr  string
	conns map[int]net.Conn
}

func (r *replayer) send(trip roundTrip) []byte {
	r.t.Helper()
	conn, ok := r.conns[trip.conn]
	if !ok {
		var err error
		if conn, err = net.DialTimeout("tcp", r.addr, time.Second); err != nil {
			r.t.Fatal(err)
		}
		r.t.Cleanup(func() { _ = conn.Close() })
		r.conns[trip.conn] = conn
	}
	_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := conn.Write(trip.request); err != nil {
		r.t.Fatal(err)
	}
	got, err := readReply(conn, trip.request)
	if err != nil {
		r.t.Fatalf("reading the answer: %v", err)
	}
	return got
}

// readReply reads one answer: an info proto, a single record's proto, or a multi-record answer's
// protos up to the one carrying LAST.
func readReply(conn io.Reader, request []byte) ([]byte, error) {
	multi := false
	if request[1] == msgData {
		m, err := parseMessage(request[headerSize:])
		if err != nil {
			return nil, err
		}
		_, hasDigest := m.field(fieldDigest)
		multi = m.info1&info1Batch != 0 || !hasDigest && len(m.fields) > 1
	}
	var out []byte
	for {
		h := make([]byte, headerSize)
		if _, err := io.ReadFull(conn, h); err != nil {
			return out, err
		}
		body := make([]byte, frameLength(h))
		if _, err := io.ReadFull(conn, body); err != nil {
			return out, err
		}
		out = append(append(out, h...), body...)
		if !multi || len(body) == msgHeaderSize && body[3]&info3Last != 0 {
			return out, nil
		}
	}
}

func messageSize(m *message) int {
	n := msgHeaderSize
	for _, f := range m.fields {
		n += 5 + len(f.data)
	}
	for _, o := range m.ops {
		n += 8 + len(o.name) + len(o.value)
	}
	return n
}

// messages splits AS_MSG protos into their messages, dropping the proto framing: asd groups the
// records of a multi-record answer into protos by its own buffer size.
func messages(t *testing.T, protos []byte) [][]byte {
	t.Helper()
	var out [][]byte
	for len(protos) >= headerSize {
		n := int(frameLength(protos))
		body := protos[headerSize : headerSize+n]
		protos = protos[headerSize+n:]
		for len(body) > 0 {
			m, err := parseMessage(body)
			if err != nil {
				t.Fatal(err)
			}
			size := messageSize(m)
			out = append(out, body[:size])
			body = body[size:]
		}
	}
	return out
}

// The captured 1-node session, replayed in order against one simulated node: every answer is byte
// for byte the real server's, except that the records of a scan or query are compared as a set of
// messages (asd groups them into protos by its buffer size and orders them by its partition threads). The 9 MiB write (step 16) is not copied
// (2 MB); TestOfficialClient writes a 2 MiB record instead.
func TestReplaySingleNodeSession(t *testing.T) {
	s := newSim(t, Options{})
	st := addNode(t, s, NodeSpec{Cluster: "dp1", Name: "s0", NodeID: "BB980E1C602226E"})
	r := &replayer{t: t, addr: st.Addr, conns: map[int]net.Conn{}}
	files, _ := fs.Glob(fixtureFS, path.Join(dataplaneRoot, "wire/1node/[0-9]*.json"))
	replayed := 0
	for _, file := range files {
		name := path.Base(file)
		if name < "03" { // connect and tend: TestReplayConnect
			continue
		}
		replayed += replayStep(t, "1node/"+name, func(roundTrip) *replayer { return r })
	}
	if replayed < 20 {
		t.Fatalf("only %d requests replayed", replayed)
	}
}

// replayStep sends a captured step's requests, each through the replayer pick chooses, and compares the
// answers with the real server's; it returns how many it compared.
func replayStep(t *testing.T, file string, pick func(roundTrip) *replayer) int {
	t.Helper()
	step, trips := loadStep(t, file, false)
	compared := 0
	for _, trip := range trips {
		r := pick(trip)
		got := r.send(trip)
		if trip.response == nil {
			// The put of other:0 (tools/main.go) began in this step's window and ended after it;
			// other:1 and other:2 fell between windows: rebuilt from it.
			putOthers(t, r, trip)
			continue
		}
		compareAnswer(t, step.Step, got, trip.response)
		compared++
	}
	return compared
}

// putOthers sends the puts of other:1 and other:2 (bin n = i), the captured put of other:0 with
// their digest and value.
func putOthers(t *testing.T, r *replayer, put0 roundTrip) {
	t.Helper()
	k0, _ := as.NewKey("test", "other", 0)
	for i := 1; i <= 2; i++ {
		k, _ := as.NewKey("test", "other", i)
		req := bytes.Replace(slices.Clone(put0.request), k0.Digest(), k.Digest(), 1)
		req[len(req)-1] = byte(i)
		if got := r.send(roundTrip{conn: put0.conn, request: req}); got[headerSize+5] != rcOK {
			t.Fatalf("put other:%d: %x", i, got)
		}
	}
}

// sortedMessages are the answer's messages in byte order: asd sends a scan's records in the order its
// partition threads reach them, which the simulator does not reproduce.
func sortedMessages(t *testing.T, protos []byte) [][]byte {
	t.Helper()
	out := messages(t, protos)
	slices.SortFunc(out, bytes.Compare)
	return out
}

// The 3-node session's writes, batches and scan, replayed against three simulated nodes with the
// captured node ids: each request goes to the node the client sent it to, and the answers are the real
// servers' (the records of a scan as a set of messages). A batch or a scan names its keys or
// partitions, so the answer does not depend on which node masters what.
func TestReplayThreeNodes(t *testing.T) {
	s := newSim(t, Options{})
	ids := map[string]string{"10.88.0.10": "BB97BACE910E6C6", "10.88.0.11": "BB9D5F864AF0482", "10.88.0.12": "BB9B64077B334C2"}
	replayers := map[string]*replayer{}
	for ip, id := range ids {
		st := addNode(t, s, NodeSpec{Cluster: "dp3", Name: ip, NodeID: id})
		replayers[ip] = &replayer{t: t, addr: st.Addr, conns: map[int]net.Conn{}}
	}
	replayed := 0
	for _, name := range []string{"03_put_key1_multi_types", "04_put_key2_intkey", "11_touch_key1",
		"12_operate_add_append_get", "17_batch_get_key1_missing_key2", "18_batch_get_12_keys",
		"20_scan_partitions_namespace"} {
		replayed += replayStep(t, "3node/"+name+".json", func(trip roundTrip) *replayer { return replayers[trip.server] })
	}
	if replayed < 11 {
		t.Fatalf("only %d requests replayed", replayed)
	}
}

func compareAnswer(t *testing.T, step string, got, want []byte) {
	t.Helper()
	if bytes.Equal(got, want) {
		return
	}
	if want[1] == msgData && slices.EqualFunc(sortedMessages(t, got), sortedMessages(t, want), bytes.Equal) {
		return
	}
	t.Errorf("%s:\n got %x\nwant %x", step, got, want)
}

// A real server's answers to a hand-built request for a namespace it does not run, or without a
// namespace field: rc 20 with an empty header (info/raw_asmsg_probes.json).
func TestReplayErrors(t *testing.T) {
	data, err := fs.ReadFile(fixtureFS, dataplaneRoot+"/info/raw_asmsg_probes.json")
	if err != nil {
		t.Fatal(err)
	}
	var probes []struct {
		Name        string `json:"name"`
		RequestHex  string `json:"request_hex"`
		ResponseHex string `json:"response_hex"`
	}
	if err := json.Unmarshal(data, &probes); err != nil {
		t.Fatal(err)
	}
	s := newSim(t, Options{})
	st := addNode(t, s, NodeSpec{Cluster: "dp1", Name: "s0"})
	r := &replayer{t: t, addr: st.Addr, conns: map[int]net.Conn{}}
	for _, p := range probes {
		req, _ := hex.DecodeString(p.RequestHex)
		want, _ := hex.DecodeString(p.ResponseHex)
		if got := r.send(roundTrip{request: req}); !bytes.Equal(got, want) {
			t.Errorf("%s:\n got %x\nwant %x", p.Name, got, want)
		}
	}
}

// The info requests the client sends to connect, replayed against one node with the captured node
// id: the answers are the real server's, with only the node's IP replaced by the simulated one.
func TestReplayConnect(t *testing.T) {
	s := newSim(t, Options{})
	st := addNode(t, s, NodeSpec{Cluster: "dp1", Name: "s0", NodeID: "BB980E1C602226E"})
	r := &replayer{t: t, addr: st.Addr, conns: map[int]net.Conn{}}
	replayed := 0
	for _, name := range []string{"00_connect.json", "02_idle_tend.json"} {
		_, trips := loadStep(t, "1node/"+name, true)
		replayed += len(trips)
		for _, trip := range trips {
			want := []byte(strings.ReplaceAll(string(trip.response), "10.88.0.20", st.IP))
			want = append(frameHeader(uint64(len(want)-headerSize)), want[headerSize:]...)
			if got := r.send(trip); !bytes.Equal(got, want) {
				t.Errorf("%s %q:\n got %q\nwant %q", name, trip.request[headerSize:], got[headerSize:], want[headerSize:])
			}
		}
	}
	if replayed < 10 {
		t.Fatalf("only %d requests replayed", replayed)
	}
}
