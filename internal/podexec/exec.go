package podexec

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes/scheme"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/remotecommand"
	"k8s.io/streaming/pkg/httpstream"

	"github.com/acko-io/acko/api/v1alpha1"
)

const (
	// DefaultTimeout bounds each exec when no other timeout is given.
	DefaultTimeout = 10 * time.Second
	// maxOutput bounds what is kept of each of stdout and stderr.
	maxOutput = 64 << 10
)

var (
	readInitCmdline = []string{"cat", "/proc/1/cmdline"}
	// signalInit runs kill itself, not a shell: the image need not have one, and nothing is quoted.
	signalInit = []string{"kill", "-USR1", "1"}
)

// Signaller sends the in-place restart signal to a pod's Aerospike container.
type Signaller interface {
	WarmRestart(ctx context.Context, pod *corev1.Pod) error
}

// Executor is the Signaller that execs through the API server's pods/exec subresource.
type Executor struct {
	cfg     *rest.Config
	core    rest.Interface
	timeout time.Duration
}

var _ Signaller = (*Executor)(nil)

// Option configures an Executor.
type Option func(*Executor)

// WithTimeout bounds each exec (default DefaultTimeout); the caller's context still applies.
func WithTimeout(d time.Duration) Option {
	return func(e *Executor) {
		if d > 0 {
			e.timeout = d
		}
	}
}

// New returns an Executor that execs with cfg's credentials. core is the core/v1 REST client used to
// build exec URLs (e.g. clientset.CoreV1().RESTClient()); when nil, one is made from cfg.
func New(cfg *rest.Config, core rest.Interface, opts ...Option) (*Executor, error) {
	if cfg == nil {
		return nil, errors.New("podexec: nil rest config")
	}
	if core == nil {
		c, err := corev1client.NewForConfig(cfg)
		if err != nil {
			return nil, fmt.Errorf("podexec: core/v1 client: %w", err)
		}
		core = c.RESTClient()
	}
	e := &Executor{cfg: cfg, core: core, timeout: DefaultTimeout}
	for _, opt := range opts {
		opt(e)
	}
	return e, nil
}

// WarmRestart checks that PID 1 of the pod's Aerospike container is tini started with -r SIGUSR1, then
// sends it SIGUSR1. An error wrapping ErrNotTini means the pod needs a PodRestart instead; one wrapping
// ErrSignalUnconfirmed means the signal may have gone out; any other error means it did not.
func (e *Executor) WarmRestart(ctx context.Context, pod *corev1.Pod) error {
	if pod == nil {
		return errors.New("podexec: nil pod")
	}
	name := pod.Namespace + "/" + pod.Name
	if err := judgeCmdline(name, e.exec(ctx, pod, readInitCmdline)); err != nil {
		return err
	}
	return judgeSignal(name, e.exec(ctx, pod, signalInit))
}

// exec runs command in the Aerospike container without stdin or TTY, within the exec timeout.
func (e *Executor) exec(ctx context.Context, pod *corev1.Pod, command []string) execResult {
	ctx, cancel := context.WithTimeout(ctx, e.timeout)
	defer cancel()
	streamer, err := e.streamer(pod, command)
	if err != nil {
		return execResult{Err: err}
	}
	stdout, stderr := newCappedBuffer(maxOutput), newCappedBuffer(maxOutput)
	err = streamer.StreamWithContext(ctx, remotecommand.StreamOptions{Stdout: stdout, Stderr: stderr})
	return execResult{Stdout: stdout.Bytes(), Stderr: stderr.Bytes(), Err: err}
}

// streamer returns a WebSocket executor that falls back to SPDY when the upgrade is refused, as kubectl
// does: a refused upgrade means the command never started, so running it over SPDY cannot repeat it.
func (e *Executor) streamer(pod *corev1.Pod, command []string) (remotecommand.Executor, error) {
	url := e.core.Post().
		Resource("pods").Namespace(pod.Namespace).Name(pod.Name).SubResource("exec").
		VersionedParams(&corev1.PodExecOptions{
			Container: v1alpha1.AerospikeContainerName,
			Command:   command,
			Stdout:    true,
			Stderr:    true,
		}, scheme.ParameterCodec).
		URL()
	websocket, err := remotecommand.NewWebSocketExecutor(e.cfg, http.MethodGet, url.String())
	if err != nil {
		return nil, fmt.Errorf("websocket executor: %w", err)
	}
	spdy, err := remotecommand.NewSPDYExecutor(e.cfg, http.MethodPost, url)
	if err != nil {
		return nil, fmt.Errorf("spdy executor: %w", err)
	}
	return remotecommand.NewFallbackExecutor(websocket, spdy, func(err error) bool {
		return httpstream.IsUpgradeFailure(err) || httpstream.IsHTTPSProxyError(err)
	})
}
