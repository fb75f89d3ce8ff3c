package podexec

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/remotecommand"
	"k8s.io/client-go/rest"
	"k8s.io/streaming/pkg/httpstream/wsstream"

	"github.com/acko-io/acko/internal/config"
)

// reply is what the fake API server answers to one exec'd command.
type reply struct {
	stdout, stderr string
	status         metav1.Status // Status "" means Success
	hang           bool          // never answer, to exercise the timeout
}

// request is one HTTP request the fake API server received.
type request struct {
	method string
	path   string
	query  url.Values
}

// fakeAPI serves pods/exec over the WebSocket remote command protocol (v5/v4: binary frames whose
// first byte is the stream: 1 stdout, 2 stderr, 3 status), enough for remotecommand's client.
type fakeAPI struct {
	replies       map[string]reply // by command, space-joined
	refuseUpgrade bool
	release       chan struct{}

	mu       sync.Mutex
	requests []request
}

func (f *fakeAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	f.requests = append(f.requests, request{r.Method, r.URL.Path, r.URL.Query()})
	f.mu.Unlock()
	if f.refuseUpgrade || !wsstream.IsWebSocketRequest(r) {
		http.Error(w, "upgrade refused", http.StatusBadRequest)
		return
	}
	rep := f.replies[strings.Join(r.URL.Query()["command"], " ")]
	channels := []wsstream.ChannelType{
		wsstream.IgnoreChannel, wsstream.WriteChannel, wsstream.WriteChannel, wsstream.WriteChannel, wsstream.IgnoreChannel,
	}
	conn := wsstream.NewConn(map[string]wsstream.ChannelProtocolConfig{
		remotecommand.StreamProtocolV5Name: {Binary: true, Channels: channels},
		remotecommand.StreamProtocolV4Name: {Binary: true, Channels: channels},
	})
	_, streams, err := conn.Open(w, r)
	if err != nil {
		return
	}
	defer conn.Close()
	if rep.hang {
		<-f.release
		return
	}
	writeIfAny(streams[remotecommand.StreamStdOut], rep.stdout)
	writeIfAny(streams[remotecommand.StreamStdErr], rep.stderr)
	if rep.status.Status == "" {
		rep.status.Status = metav1.StatusSuccess
	}
	status, _ := json.Marshal(rep.status)
	_, _ = streams[remotecommand.StreamErr].Write(status)
}

func writeIfAny(w interface{ Write([]byte) (int, error) }, s string) {
	if s != "" {
		_, _ = w.Write([]byte(s))
	}
}

func (f *fakeAPI) received() []request {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.requests)
}

// commands returns the commands of the WebSocket (GET) execs, in order.
func (f *fakeAPI) commands() []string {
	var out []string
	for _, r := range f.received() {
		if r.method == http.MethodGet {
			out = append(out, strings.Join(r.query["command"], " "))
		}
	}
	return out
}

// start serves f and returns an Client pointed at it.
func start(t *testing.T, f *fakeAPI, opts ...Option) *Client {
	t.Helper()
	f.release = make(chan struct{})
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(f.release) }) // runs first, so hung handlers let srv.Close finish
	e, err := New(&rest.Config{Host: srv.URL}, nil, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func testPod() *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "aero-0-0"}}
}

var (
	catCmd  = strings.Join(readInitCmdline, " ")
	killCmd = strings.Join(signalInit, " ")
	cpCmd   = "cp /etc/aerospike-configmap/aero-0-0.conf /etc/aerospike/aerospike.conf"
	readCM  = "cat /etc/aerospike-configmap/aero-0-0.conf"
	readOwn = "cat /etc/aerospike/aerospike.conf"
	// kwokFailure is how the local cluster's kwok reports any failed command: no exit code cause.
	kwokFailure = metav1.Status{Status: metav1.StatusFailure, Message: "exit status 1"}
)

func TestWarmRestartSignalsTini(t *testing.T) {
	f := &fakeAPI{replies: map[string]reply{cpCmd: {}, catCmd: {stdout: officialFull}, killCmd: {}}}
	e := start(t, f)

	if err := warmRestart(context.Background(), e, testPod(), ""); err != nil {
		t.Fatalf("WarmRestart: %v", err)
	}
	if got, want := f.commands(), []string{cpCmd, catCmd, killCmd}; !slices.Equal(got, want) {
		t.Fatalf("commands %q, want %q", got, want)
	}
	for _, r := range f.received() {
		assertExecRequest(t, r)
	}
}

// assertExecRequest checks that an exec targets the Aerospike container with stdout and stderr only.
func assertExecRequest(t *testing.T, r request) {
	t.Helper()
	if r.method != http.MethodGet || r.path != "/api/v1/namespaces/ns/pods/aero-0-0/exec" {
		t.Errorf("request %s %s, want GET on the pod's exec subresource", r.method, r.path)
	}
	q := r.query
	if q.Get("container") != "aerospike-server" || q.Get("stdout") != "true" || q.Get("stderr") != "true" {
		t.Errorf("query %v: want container aerospike-server, stdout and stderr", q)
	}
	if q.Has("stdin") || q.Has("tty") {
		t.Errorf("query %v asks for stdin or a TTY", q)
	}
}

func TestWarmRestartRefusesNonTiniWithoutSignalling(t *testing.T) {
	f := &fakeAPI{replies: map[string]reply{cpCmd: {}, catCmd: {stdout: "asd\x00--foreground\x00"}, killCmd: {}}}
	e := start(t, f)

	err := warmRestart(context.Background(), e, testPod(), "")
	if !errors.Is(err, ErrNotTini) || !strings.Contains(err.Error(), `PID 1 of pod ns/aero-0-0 is "asd --foreground"`) {
		t.Fatalf("got %v, want ErrNotTini naming the pod and its PID 1", err)
	}
	if got := f.commands(); !slices.Equal(got, []string{cpCmd, catCmd}) {
		t.Fatalf("commands %q: kill must not run", got)
	}
}

// Under kwok every exec may come back as "exit status 1"; the printed output decides.
func TestWarmRestartJudgesOutputNotExitStatus(t *testing.T) {
	t.Run("cat printed tini despite a failure status", func(t *testing.T) {
		f := &fakeAPI{replies: map[string]reply{cpCmd: {}, catCmd: {stdout: officialCmdline, status: kwokFailure}, killCmd: {}}}
		if err := warmRestart(context.Background(), start(t, f), testPod(), ""); err != nil {
			t.Fatalf("WarmRestart: %v", err)
		}
	})
	t.Run("kill complained", func(t *testing.T) {
		f := &fakeAPI{replies: map[string]reply{
			catCmd:  {stdout: officialCmdline},
			killCmd: {stderr: "kill: (1) - Operation not permitted\n", status: kwokFailure},
		}}
		err := warmRestart(context.Background(), start(t, f), testPod(), "")
		if !errors.Is(err, ErrSignalUnconfirmed) || !strings.Contains(err.Error(), "Operation not permitted") {
			t.Fatalf("got %v, want ErrSignalUnconfirmed with kill's stderr", err)
		}
	})
	t.Run("cat printed nothing", func(t *testing.T) {
		f := &fakeAPI{replies: map[string]reply{cpCmd: {}, catCmd: {stderr: "cat: /proc/1/cmdline: Permission denied", status: kwokFailure}}}
		err := warmRestart(context.Background(), start(t, f), testPod(), "")
		if err == nil || errors.Is(err, ErrNotTini) || !strings.Contains(err.Error(), "Permission denied") ||
			!strings.Contains(err.Error(), "exit status 1") {
			t.Fatalf("got %v, want a read error with stderr and the exec error", err)
		}
		if got := f.commands(); len(got) != 2 {
			t.Fatalf("commands %q: kill must not run", got)
		}
	})
	t.Run("kill failed with an exit code only", func(t *testing.T) {
		exitCode := metav1.Status{
			Status: metav1.StatusFailure, Reason: remotecommand.NonZeroExitCodeReason,
			Details: &metav1.StatusDetails{Causes: []metav1.StatusCause{{Type: remotecommand.ExitCodeCauseType, Message: "1"}}},
		}
		f := &fakeAPI{replies: map[string]reply{cpCmd: {}, catCmd: {stdout: officialCmdline}, killCmd: {status: exitCode}}}
		err := warmRestart(context.Background(), start(t, f), testPod(), "")
		if !errors.Is(err, ErrSignalUnconfirmed) || !strings.Contains(err.Error(), "exit code 1") {
			t.Fatalf("got %v, want ErrSignalUnconfirmed with the exit code", err)
		}
	})
}

func TestWarmRestartTimesOut(t *testing.T) {
	f := &fakeAPI{replies: map[string]reply{cpCmd: {}, catCmd: {hang: true}}}
	e := start(t, f, WithTimeout(300*time.Millisecond))

	began := time.Now()
	err := warmRestart(context.Background(), e, testPod(), "")
	if took := time.Since(began); took > 5*time.Second {
		t.Fatalf("WarmRestart took %v with a 300ms exec timeout", took)
	}
	if err == nil || !strings.Contains(err.Error(), context.DeadlineExceeded.Error()) || errors.Is(err, ErrNotTini) {
		t.Fatalf("got %v, want a deadline error", err)
	}
}

func TestWarmRestartHonoursCallerContext(t *testing.T) {
	f := &fakeAPI{replies: map[string]reply{cpCmd: {}, catCmd: {hang: true}}}
	e := start(t, f) // default 10s timeout: the caller's deadline must win
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()

	began := time.Now()
	if err := warmRestart(ctx, e, testPod(), ""); err == nil {
		t.Fatal("WarmRestart succeeded on a hung exec")
	}
	if took := time.Since(began); took > 5*time.Second {
		t.Fatalf("WarmRestart took %v past the caller's 200ms deadline", took)
	}
}

// A refused WebSocket upgrade means the command never started, so the SPDY POST is tried instead.
func TestWarmRestartFallsBackToSPDY(t *testing.T) {
	f := &fakeAPI{refuseUpgrade: true}
	err := warmRestart(context.Background(), start(t, f), testPod(), "")
	if err == nil || errors.Is(err, ErrSignalUnconfirmed) {
		t.Fatalf("got %v, want a read error", err)
	}
	var methods []string
	for _, r := range f.received() {
		methods = append(methods, r.method)
	}
	if !slices.Equal(methods, []string{http.MethodGet, http.MethodPost}) {
		t.Fatalf("requests %q, want the WebSocket GET then the SPDY POST, and nothing after the failed copy", methods)
	}
}

func TestNewValidates(t *testing.T) {
	if _, err := New(nil, nil); err == nil {
		t.Fatal("New(nil, nil) succeeded")
	}
	e, err := New(&rest.Config{Host: "https://example.invalid"}, nil)
	if err != nil || e.timeout != DefaultTimeout {
		t.Fatalf("New = %+v, %v; want the default timeout", e, err)
	}
	if err := warmRestart(context.Background(), e, nil, ""); err == nil {
		t.Fatal("WarmRestart(nil pod) succeeded")
	}
}

// The new config is copied only once the kubelet has projected it: until then nothing changes.
func TestWarmRestartWaitsForTheProjectedConfig(t *testing.T) {
	const conf = "service {\n\tcluster-name a\n}\n"
	f := &fakeAPI{replies: map[string]reply{readCM: {stdout: "service {\n\tcluster-name old\n}\n"}}}
	err := warmRestart(context.Background(), start(t, f), testPod(), config.Hash(conf))
	if !errors.Is(err, ErrNotProjected) {
		t.Fatalf("got %v, want ErrNotProjected", err)
	}
	if got := f.commands(); !slices.Equal(got, []string{readCM}) {
		t.Fatalf("commands %q: nothing may be copied or signalled before the config is there", got)
	}
	f = &fakeAPI{replies: map[string]reply{readCM: {stdout: conf}, catCmd: {stdout: officialCmdline}}}
	if err := warmRestart(context.Background(), start(t, f), testPod(), config.Hash(conf)); err != nil {
		t.Fatal(err)
	}
	if got := f.commands(); !slices.Equal(got, []string{readCM, cpCmd, catCmd, killCmd}) {
		t.Fatalf("commands %q", got)
	}
}

func TestReadConfigs(t *testing.T) {
	f := &fakeAPI{replies: map[string]reply{readOwn: {stdout: "own"}, readCM: {stdout: "projected"}}}
	own, projected, err := start(t, f).ReadConfigs(context.Background(), testPod())
	if err != nil || own != "own" || projected != "projected" {
		t.Fatalf("ReadConfigs = %q %q %v", own, projected, err)
	}
	f = &fakeAPI{replies: map[string]reply{readOwn: {stderr: "cat: no such file", status: kwokFailure}}}
	if _, _, err := start(t, f).ReadConfigs(context.Background(), testPod()); err == nil ||
		!strings.Contains(err.Error(), "no such file") {
		t.Fatalf("got %v, want the read error", err)
	}
}

// warmRestart prepares a restart in place and signals it, as the operator does once the door lets it.
func warmRestart(ctx context.Context, cl *Client, pod *corev1.Pod, configHash string) error {
	if err := cl.PrepareRestart(ctx, pod, configHash); err != nil {
		return err
	}
	return cl.SignalRestart(ctx, pod)
}
