package localcluster

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"

	ackov1alpha1 "github.com/acko-io/acko/api/v1alpha1"
	"github.com/acko-io/acko/test/astools"
	"github.com/acko-io/acko/test/crilog"
)

// Backup-tool pods: the pods of ACKO's backup and restore Jobs, whose first container runs asbackup
// or asrestore (the aerospike-tools image). Pods run no containers here, so the sync loop runs the
// tool itself (test/astools) once kwok has the pod Running: against the simulated nodes, on host
// directories that stand for the pod's paths, its output the container's log; when it exits, the
// pod ends as the kubelet ends a pod of restartPolicy Never, and the Job controller sees it.

// toolCommands are the commands that make a pod's first container a backup tool.
var toolCommands = []string{"asbackup", "asrestore"}

// reasonPodCompleted is the kubelet's reason of the readiness conditions of a pod that ended.
const reasonPodCompleted = "PodCompleted"

// toolRun is the tool the sync loop started for a pod (UID); cancel stops it when the pod goes.
type toolRun struct {
	uid    types.UID
	cancel context.CancelFunc
}

// toolName is the backup tool the pod's first container runs, or "" for any other pod.
func toolName(pod *corev1.Pod) string {
	if len(pod.Spec.Containers) == 0 || len(pod.Spec.Containers[0].Command) != 1 {
		return ""
	}
	if name := path.Base(pod.Spec.Containers[0].Command[0]); slices.Contains(toolCommands, name) {
		return name
	}
	return ""
}

// syncTool starts the tool of a Running pod, once for each pod (UID), and stops it when the pod is
// deleted (a new pod of the same name stops the old one's too).
func (s *Syncer) syncTool(ctx context.Context, key string, pod *corev1.Pod, tool string) error {
	s.mu.Lock()
	run, started := s.tools[key]
	s.mu.Unlock()
	if started && (run.uid != pod.UID || pod.DeletionTimestamp != nil) {
		run.cancel()
	}
	if (started && run.uid == pod.UID) || !running(pod) {
		return nil
	}
	return s.startTool(ctx, key, pod, tool)
}

// startTool runs the pod's tool in a goroutine of its own, its output written as the log kwok
// serves for the container.
func (s *Syncer) startTool(ctx context.Context, key string, pod *corev1.Pod, tool string) error {
	call, err := s.toolCallOf(pod, tool)
	if err != nil {
		return err
	}
	env, configErr, err := s.containerEnv(ctx, pod)
	if err != nil {
		return err
	}
	if configErr != "" {
		// The kubelet does not start a container whose environment names a missing Secret or key.
		if err := s.cannotStart(ctx, pod, configErr); err != nil {
			return err
		}
		s.mu.Lock()
		s.tools[key] = toolRun{uid: pod.UID, cancel: func() {}}
		s.mu.Unlock()
		return nil
	}
	call.env = env
	if err := s.apply(ctx, logsGVR, s.logsFor(pod)); err != nil {
		return err
	}
	log, err := os.Create(s.logFile(pod))
	if err != nil {
		return err
	}
	runCtx, cancel := context.WithCancel(ctx)
	s.mu.Lock()
	s.tools[key] = toolRun{uid: pod.UID, cancel: cancel}
	s.mu.Unlock()
	s.runs.Go(func() {
		defer cancel()
		defer func() { _ = log.Close() }()
		s.runTool(runCtx, pod, call, log)
	})
	return nil
}

// toolCall is the run of a tool that a pod asks for, its arguments rewritten for this host.
type toolCall struct {
	tool string
	args []string // the host's (toolArgs), or the pod's when they cannot be rewritten
	err  error    // why they cannot: a host that does not resolve; the tool fails as the real one would
	// paths puts the pod's paths back in what the tool says, as the real one says it.
	paths *strings.Replacer
	env   map[string]string // the container's environment, its Secrets' values resolved
}

// toolCallOf is the pod's tool run on this host: its hosts resolved with the cluster DNS, and its
// paths in the host directories of its claims, or its scratch directory.
func (s *Syncer) toolCallOf(pod *corev1.Pod, tool string) (toolCall, error) {
	claims, err := s.claimDirs(pod)
	if err != nil {
		return toolCall{}, err
	}
	records, err := s.dnsView()
	if err != nil {
		return toolCall{}, err
	}
	c := &pod.Spec.Containers[0]
	scratch := filepath.Join(s.scratchDir, pod.Namespace, pod.Name+"@"+string(pod.UID))
	var undo []string
	args, argErr := toolArgs(c.Args,
		func(list string) (string, error) {
			return resolveHosts(list, records, pod.Namespace)
		},
		func(p string) (string, error) {
			if strings.HasPrefix(p, "s3://") {
				return p, nil // the tool's own S3 support: the test bed's store (Options.S3URL)
			}
			hp := hostPath(c, p, claims, scratch)
			undo = append(undo, hp, p)
			if vol, _, ok := volumeOf(c.VolumeMounts, p); ok && claims[vol] != "" {
				return hp, nil // only the mount's own directory is there (mountDirs), as on a kubelet
			}
			// A path of the image's own: its directories are there.
			return hp, os.MkdirAll(filepath.Dir(hp), 0o755)
		})
	if argErr == nil {
		argErr = mountDirs(c, claims)
	}
	if argErr != nil {
		args = c.Args
	}
	return toolCall{tool: tool, args: args, err: argErr, paths: strings.NewReplacer(undo...)}, nil
}

// runTool runs the tool to its end and ends the pod with its exit code, unless the pod went (or the
// sync loop stops) first.
func (s *Syncer) runTool(ctx context.Context, pod *corev1.Pod, call toolCall, log io.Writer) {
	stdout := &crilog.Writer{W: log, Stream: "stdout", Rewrite: call.paths.Replace}
	stderr := &crilog.Writer{W: log, Stream: "stderr", Rewrite: call.paths.Replace}
	started, code := time.Now(), 1
	if call.err != nil {
		_, _ = fmt.Fprintf(stderr, "%s: %v\n", call.tool, call.err)
	} else {
		code = astools.Main(ctx, call.tool, call.args, func(k string) string { return call.env[k] }, stdout, stderr)
	}
	stdout.Flush()
	stderr.Flush()
	key := pod.Namespace + "/" + pod.Name
	if ctx.Err() != nil {
		s.logf("tool %s: %s stopped (the pod is deleted, or the sync loop stops)", key, call.tool)
		return
	}
	if err := s.endPod(ctx, pod, code, started, time.Now()); err != nil {
		s.logf("! tool %s: status: %v", key, err)
	}
	s.logf("tool %s: %s %s exit %d (%s)", key, call.tool, strings.Join(call.args, " "), code,
		time.Since(started).Round(time.Millisecond))
}

// containerEnv is the tool container's environment as the kubelet gives it: values, and the keys of
// Secrets; configErr is the kubelet's message when a Secret or key it names is missing.
func (s *Syncer) containerEnv(ctx context.Context, pod *corev1.Pod) (env map[string]string, configErr string, err error) {
	env = map[string]string{}
	for _, e := range pod.Spec.Containers[0].Env {
		ref := e.ValueFrom
		if ref == nil || ref.SecretKeyRef == nil {
			env[e.Name] = e.Value
			continue
		}
		secret, err := s.kube.CoreV1().Secrets(pod.Namespace).Get(ctx, ref.SecretKeyRef.Name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			return nil, fmt.Sprintf("secret %q not found", ref.SecretKeyRef.Name), nil
		case err != nil:
			return nil, "", err
		}
		value, ok := secret.Data[ref.SecretKeyRef.Key]
		if !ok {
			return nil, fmt.Sprintf("couldn't find key %s in Secret %s/%s", ref.SecretKeyRef.Key, pod.Namespace,
				ref.SecretKeyRef.Name), nil
		}
		env[e.Name] = string(value)
	}
	return env, "", nil
}

// cannotStart writes what the kubelet writes of a container it cannot create: Pending, the container
// waiting with CreateContainerConfigError and why.
func (s *Syncer) cannotStart(ctx context.Context, pod *corev1.Pod, message string) error {
	cur := pod.DeepCopy()
	cur.Status.Phase = corev1.PodPending
	for i := range cur.Status.ContainerStatuses {
		if cs := &cur.Status.ContainerStatuses[i]; cs.Name == pod.Spec.Containers[0].Name {
			cs.Ready, cs.Started = false, ptrTo(false)
			cs.State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{
				Reason: "CreateContainerConfigError", Message: message}}
		}
	}
	_, err := s.kube.CoreV1().Pods(pod.Namespace).UpdateStatus(ctx, cur, metav1.UpdateOptions{})
	s.logf("tool %s/%s: %s cannot start: %s", pod.Namespace, pod.Name, toolName(pod), message)
	return err
}

// endPod writes the status of the pod ended with the tool's exit code. Any error but the pod's
// absence is retried: a pod left Running would hold its Job forever.
func (s *Syncer) endPod(ctx context.Context, pod *corev1.Pod, code int, started, finished time.Time) error {
	pods := s.kube.CoreV1().Pods(pod.Namespace)
	err := retry.OnError(retry.DefaultBackoff, func(err error) bool { return !apierrors.IsNotFound(err) }, func() error {
		cur, err := pods.Get(ctx, pod.Name, metav1.GetOptions{})
		if err != nil || cur.UID != pod.UID {
			return err
		}
		cur.Status = *terminatedStatus(cur, code, started, finished)
		_, err = pods.UpdateStatus(ctx, cur, metav1.UpdateOptions{})
		return err
	})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// terminatedStatus is the pod's status once its first container exited with code, as the kubelet
// writes it for restartPolicy Never: Succeeded or Failed, not ready, the container terminated.
func terminatedStatus(pod *corev1.Pod, code int, started, finished time.Time) *corev1.PodStatus {
	st := pod.Status.DeepCopy()
	reason := reasonCompleted
	st.Phase = corev1.PodSucceeded
	if code != 0 {
		st.Phase, reason = corev1.PodFailed, reasonError
	}
	for _, t := range []corev1.PodConditionType{corev1.ContainersReady, corev1.PodReady} {
		setCondition(st, corev1.PodCondition{Type: t, Status: corev1.ConditionFalse, Reason: reasonPodCompleted}, finished)
	}
	for i := range st.ContainerStatuses {
		if cs := &st.ContainerStatuses[i]; cs.Name == pod.Spec.Containers[0].Name {
			cs.Ready, cs.Started = false, ptrTo(false)
			cs.State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: int32(code),
				Reason: reason, StartedAt: metav1.NewTime(started), FinishedAt: metav1.NewTime(finished)}}
		}
	}
	return st
}

// Flags of the tools (test/astools/cli.go) whose values toolArgs rewrites.
var (
	hostFlags = []string{"h", "host"}
	pathFlags = []string{"d", "directory", "o", "output-file", "i", "input-file"}
)

// toolArgs are a tool's arguments for a run on this host: the value of every --host rewritten by
// resolve, and that of every --directory, --output-file and --input-file by hostPath. Flags take
// the forms of Go's flag package, which the tools parse: -x or --x, with =value or the value next.
func toolArgs(args []string, resolve, hostPath func(string) (string, error)) ([]string, error) {
	out := slices.Clone(args)
	for i := 0; i < len(out); i++ {
		flag, value, inline := strings.Cut(out[i], "=")
		name := strings.TrimLeft(flag, "-")
		rewrite := hostPath
		switch {
		case name == flag:
			continue // not a flag
		case slices.Contains(hostFlags, name):
			rewrite = resolve
		case !slices.Contains(pathFlags, name):
			continue
		}
		at := i
		if !inline {
			if at = i + 1; at == len(out) {
				break // the tool says the value is missing
			}
			value, i = out[at], at
		}
		v, err := rewrite(value)
		if err != nil {
			return nil, err
		}
		if out[at] = v; inline {
			out[at] = flag + "=" + v
		}
	}
	return out, nil
}

// resolveHosts resolves each name of a --host list (host[:port][,...]) as a pod of namespace would
// with the cluster DNS (dnsRecords): the name becomes the addresses it resolves to, each with the
// name's port (or none). An IP stays as it is.
func resolveHosts(list string, records map[string][]string, namespace string) (string, error) {
	var out []string
	for _, h := range strings.Split(list, ",") {
		name, port, err := net.SplitHostPort(h)
		if err != nil {
			name, port = h, ""
		}
		if net.ParseIP(name) != nil {
			out = append(out, h)
			continue
		}
		ips := lookup(name, records, namespace)
		if len(ips) == 0 {
			return "", fmt.Errorf("host %s: no such host", name)
		}
		for _, ip := range ips {
			if port != "" {
				ip = net.JoinHostPort(ip, port)
			}
			out = append(out, ip)
		}
	}
	return strings.Join(out, ","), nil
}

// lookup is the addresses of a name, tried as a pod's resolv.conf has it (ndots 5): with each domain
// of its search path (<namespace>.svc.<domain>, svc.<domain>, <domain>), then as it is; a trailing
// dot makes it absolute. So <svc>, <svc>.<ns>, <svc>.<ns>.svc and the full name all resolve.
func lookup(name string, records map[string][]string, namespace string) []string {
	if abs, ok := strings.CutSuffix(name, "."); ok {
		return records[abs]
	}
	domain := ackov1alpha1.DefaultClusterDomain
	for _, suffix := range []string{"." + namespace + ".svc." + domain, ".svc." + domain, "." + domain, ""} {
		if ips := records[name+suffix]; len(ips) > 0 {
			return ips
		}
	}
	return nil
}

// hostPath is where a path of the container lies on this host: in the directory of the claim its
// mount's volume is (claimDirs: volume → directory), with the mount's subPath, so that every pod
// that mounts the claim sees the same files; any other path in the pod's scratch directory.
func hostPath(c *corev1.Container, p string, claimDirs map[string]string, scratch string) string {
	if !path.IsAbs(p) {
		p = path.Join("/", c.WorkingDir, p)
	}
	if vol, rel, ok := volumeOf(c.VolumeMounts, p); ok && claimDirs[vol] != "" {
		return filepath.Join(claimDirs[vol], filepath.FromSlash(rel))
	}
	return filepath.Join(scratch, filepath.FromSlash(path.Clean(p)))
}

// mountDirs makes the directory of each mount of a claim, as a kubelet does: a subPath that does not
// exist is made, with its parents, in the volume. Nothing else of the volume is made for the tool.
func mountDirs(c *corev1.Container, claims map[string]string) error {
	for _, m := range c.VolumeMounts {
		if dir := claims[m.Name]; dir != "" {
			if err := os.MkdirAll(filepath.Join(dir, filepath.FromSlash(path.Clean("/"+m.SubPath))), 0o755); err != nil {
				return err
			}
		}
	}
	return nil
}

// claimDirs are the host directories of the pod's claims (volume → directory): one for each claim,
// named as the simulator names a node's volume (<namespace>/<claim>@<uid>), so that a new claim of
// the same name is a new, empty volume.
func (s *Syncer) claimDirs(pod *corev1.Pod) (map[string]string, error) {
	dirs := map[string]string{}
	for _, v := range pod.Spec.Volumes {
		if v.PersistentVolumeClaim == nil {
			continue
		}
		named, err := s.withClaimUIDs(pod.Namespace + "/" + v.PersistentVolumeClaim.ClaimName)
		if err != nil {
			return nil, err
		}
		dirs[v.Name] = filepath.Join(s.claimsDir, filepath.FromSlash(named))
	}
	return dirs, nil
}

// serveS3 serves an S3-compatible store in memory at addr, for the backups' s3:// destinations (the
// tools' own S3 support, --s3-endpoint-override): buckets are made as they are written. stop ends it.
func serveS3(addr string) (stop func(), err error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("S3 store: %w", err)
	}
	srv := &http.Server{Handler: gofakes3.New(s3mem.New(), gofakes3.WithAutoBucket(true)).Server(),
		ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	return func() { _ = srv.Close() }, nil
}
