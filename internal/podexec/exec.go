package podexec

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"path"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes/scheme"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/remotecommand"
	"k8s.io/streaming/pkg/httpstream"

	"github.com/acko-io/acko/api/v1alpha1"
	"github.com/acko-io/acko/internal/config"
	"github.com/acko-io/acko/internal/resources"
)

const (
	cat = "cat" // reads a file of the pod
	// DefaultTimeout bounds each exec when no other timeout is given.
	DefaultTimeout = 10 * time.Second
	// maxOutput bounds what is kept of each of stdout and stderr.
	maxOutput = 64 << 10
)

var (
	readInitCmdline = []string{cat, "/proc/1/cmdline"}
	// readInitLimits prints the limits of PID 1 (tini), which asd inherits.
	readInitLimits = []string{cat, "/proc/1/limits"}
	readOwnConfig  = []string{cat, path.Join(config.ConfigDir, config.FileName)}
	// signalInit runs kill itself, not a shell: the image need not have one, and nothing is quoted.
	signalInit = []string{"kill", "-USR1", "1"}
)

// Signaller changes a running pod's Aerospike container: it loads the rack's current config into the
// pod's own copy and restarts asd in place. A restart in place is two calls, so that the signal, the act
// that takes the node down, is one exec sent right after the take-down door's last look: preparing it
// (several execs, each up to the exec timeout) comes before that look.
type Signaller interface {
	// PrepareRestart copies the ConfigMap's config into place, once the kubelet has projected the one
	// whose identity (config.Hash) is configHash ("": whatever is there), and checks that PID 1 of the
	// pod's Aerospike container is tini started with -r SIGUSR1. It does not restart asd (a crash of asd
	// meanwhile loads the copy, as the restart would).
	PrepareRestart(ctx context.Context, pod *corev1.Pod, configHash string) error
	// SignalRestart restarts asd in place: SIGUSR1 to tini, one exec.
	SignalRestart(ctx context.Context, pod *corev1.Pod) error
	// ReadConfigs returns the pod's own copy of aerospike.conf (what asd loaded at its last start) and
	// the ConfigMap's file as projected into the pod.
	ReadConfigs(ctx context.Context, pod *corev1.Pod) (own, projected string, err error)
	// CopyConfig copies the projected ConfigMap file into place when its identity is configHash, so
	// that a later restart of asd loads what a live change applied.
	CopyConfig(ctx context.Context, pod *corev1.Pod, configHash string) error
}

// Client is the Signaller that execs through the API server's pods/exec subresource.
type Client struct {
	cfg     *rest.Config
	core    rest.Interface
	timeout time.Duration
}

var _ Signaller = (*Client)(nil)

// Option configures a Client.
type Option func(*Client)

// WithTimeout bounds each exec (default DefaultTimeout); the caller's context still applies.
func WithTimeout(d time.Duration) Option {
	return func(cl *Client) {
		if d > 0 {
			cl.timeout = d
		}
	}
}

// New returns a Client that execs with cfg's credentials. core is the core/v1 REST client used to
// build exec URLs (cl.g. clientset.CoreV1().RESTClient()); when nil, one is made from cfg.
func New(cfg *rest.Config, core rest.Interface, opts ...Option) (*Client, error) {
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
	cl := &Client{cfg: cfg, core: core, timeout: DefaultTimeout}
	for _, opt := range opts {
		opt(cl)
	}
	return cl, nil
}

// PrepareRestart loads the current config (CopyConfig) and checks that PID 1 of the pod's Aerospike
// container is tini started with -r SIGUSR1. An error wrapping ErrNotProjected means the kubelet has
// not caught up yet (try again later); ErrNotTini means the pod needs a PodRestart instead.
func (cl *Client) PrepareRestart(ctx context.Context, pod *corev1.Pod, configHash string) error {
	if pod == nil {
		return errors.New("podexec: nil pod")
	}
	if err := cl.CopyConfig(ctx, pod, configHash); err != nil {
		return err
	}
	return judgeCmdline(pod.Namespace+"/"+pod.Name, cl.exec(ctx, pod, readInitCmdline))
}

// SignalRestart sends SIGUSR1 to PID 1 (PrepareRestart checked that it is tini, which restarts asd on
// it). ErrSignalUnconfirmed means the signal may have gone out; any other error means it did not.
func (cl *Client) SignalRestart(ctx context.Context, pod *corev1.Pod) error {
	if pod == nil {
		return errors.New("podexec: nil pod")
	}
	return judgeSignal(pod.Namespace+"/"+pod.Name, cl.exec(ctx, pod, signalInit))
}

// ReadConfigs implements Signaller.
func (cl *Client) ReadConfigs(ctx context.Context, pod *corev1.Pod) (own, projected string, err error) {
	name := pod.Namespace + "/" + pod.Name
	if own, err = judgeRead(name, cl.exec(ctx, pod, readOwnConfig)); err != nil {
		return "", "", err
	}
	projected, err = judgeRead(name, cl.exec(ctx, pod, resources.ReadConfigMapFileCommand(resources.PodFileKeyOf(pod))))
	return own, projected, err
}

// CopyConfig implements Signaller.
func (cl *Client) CopyConfig(ctx context.Context, pod *corev1.Pod, configHash string) error {
	name := pod.Namespace + "/" + pod.Name
	if configHash != "" {
		projected, err := judgeRead(name, cl.exec(ctx, pod, resources.ReadConfigMapFileCommand(resources.PodFileKeyOf(pod))))
		if err != nil {
			return err
		}
		if got := config.Hash(projected); got != configHash {
			return fmt.Errorf("pod %s: %w: it shows config %s, want %s", name, ErrNotProjected, got, configHash)
		}
	}
	copyOwn := resources.CopyConfigCommand(resources.PodFileKeyOf(pod))
	return judgeQuiet(name, "copying the config into place", cl.exec(ctx, pod, copyOwn))
}

// exec runs command in the Aerospike container without stdin or TTY, within the exec timeout.
func (cl *Client) exec(ctx context.Context, pod *corev1.Pod, command []string) execResult {
	ctx, cancel := context.WithTimeout(ctx, cl.timeout)
	defer cancel()
	streamer, err := cl.streamer(pod, command)
	if err != nil {
		return execResult{Err: err}
	}
	stdout, stderr := newCappedBuffer(maxOutput), newCappedBuffer(maxOutput)
	err = streamer.StreamWithContext(ctx, remotecommand.StreamOptions{Stdout: stdout, Stderr: stderr})
	return execResult{Stdout: stdout.Bytes(), Stderr: stderr.Bytes(), Err: err}
}

// streamer returns a WebSocket executor that falls back to SPDY when the upgrade is refused, as kubectl
// does: a refused upgrade means the command never started, so running it over SPDY cannot repeat it.
func (cl *Client) streamer(pod *corev1.Pod, command []string) (remotecommand.Executor, error) {
	url := cl.core.Post().
		Resource("pods").Namespace(pod.Namespace).Name(pod.Name).SubResource("exec").
		VersionedParams(&corev1.PodExecOptions{
			Container: v1alpha1.AerospikeContainerName,
			Command:   command,
			Stdout:    true,
			Stderr:    true,
		}, scheme.ParameterCodec).
		URL()
	websocket, err := remotecommand.NewWebSocketExecutor(cl.cfg, http.MethodGet, url.String())
	if err != nil {
		return nil, fmt.Errorf("websocket executor: %w", err)
	}
	spdy, err := remotecommand.NewSPDYExecutor(cl.cfg, http.MethodPost, url)
	if err != nil {
		return nil, fmt.Errorf("spdy executor: %w", err)
	}
	return remotecommand.NewFallbackExecutor(websocket, spdy, func(err error) bool {
		return httpstream.IsUpgradeFailure(err) || httpstream.IsHTTPSProxyError(err)
	})
}
