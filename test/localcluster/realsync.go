package localcluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/acko-io/acko/test/aerosim"
	"github.com/acko-io/acko/test/localcluster/fakeinit"
	"github.com/acko-io/acko/test/realnode"
)

// realBackend runs a real asd for each running pod on RealNode (Options.RealNodes), as a kubelet
// runs the image: after the init containers' work on the pod's volumes (startFiles), with the
// volumes as directories, the cluster DNS as its /etc/hosts, its log as the container's, an exited
// container started again after the kubelet's back-off, and the commands exec'd in the pod run in
// the node's namespaces (the forwarding shims ask the socket this serves).
type realBackend struct {
	launcher *realnode.Launcher
	podsDir  string // a directory per pod (UID) for its volumes other than claims
	socket   string // where the forwarding shims ask (fakeinit.Forward)
	mu       sync.Mutex
	pods     map[string]*realPod // pod key → its node
}

// realPod is the real node of one pod (UID) and its container's restarts.
type realPod struct {
	uid      types.UID
	node     *realnode.Node
	dirs     map[string]string // volume → directory
	hosts    string            // /etc/hosts as last written
	crashes  int               // times its container exited
	exitedAt time.Time         // when it last exited, zero while it runs
	lastLine string            // the last line asd wrote before it exited
}

func realNodeName(pod *corev1.Pod) string {
	return pod.Namespace + "/" + pod.Name + "@" + string(pod.UID)
}

func onRealNode(pod *corev1.Pod) bool { return pod.Spec.NodeName == RealNode }

// startReal creates the bridge (cleaning up what an earlier run recorded and left) and serves the
// forwarding shims; stop stops every node and removes the bridge.
func startReal(ctx context.Context, opts Options, out func(string, ...any)) (*realBackend, func(), error) {
	l, err := realnode.New(ctx, realnode.Options{Dir: opts.RealNodesDir(), Bridge: opts.RealBridge,
		Subnet: opts.RealSubnet, DieWithParent: true})
	if err != nil {
		return nil, nil, err
	}
	r := &realBackend{launcher: l, podsDir: opts.path("real-pods"), socket: opts.path("run", "real-exec.sock"),
		pods: map[string]*realPod{}}
	_ = os.Remove(r.socket)
	ln, err := net.Listen("unix", r.socket)
	if err != nil {
		return nil, nil, errors.Join(err, l.Cleanup())
	}
	if err := os.Chmod(r.socket, 0o600); err != nil {
		return nil, nil, errors.Join(err, ln.Close(), l.Cleanup())
	}
	srv := &http.Server{Handler: http.HandlerFunc(r.serveExec), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	out("real nodes: bridge %s, %s (pods %s)", opts.RealBridge, opts.RealSubnet, opts.RealPodCIDR)
	return r, func() {
		_ = srv.Close()
		if err := l.Cleanup(); err != nil {
			out("! real nodes cleanup: %v", err)
		}
	}, nil
}

// serveExec runs a forwarded command in the node the shim names.
func (r *realBackend) serveExec(w http.ResponseWriter, req *http.Request) {
	var fr fakeinit.ForwardRequest
	var res fakeinit.ForwardResult
	if err := json.NewDecoder(req.Body).Decode(&fr); err != nil {
		res.Error = err.Error()
	} else {
		out, err := r.launcher.Exec(req.Context(), fr.Node, fr.Argv, nil, nil)
		res = fakeinit.ForwardResult{Stdout: out.Stdout, Stderr: out.Stderr, ExitCode: out.ExitCode}
		if err != nil {
			res.Error = err.Error()
		}
	}
	_ = json.NewEncoder(w).Encode(res)
}

// state is the pod's node as the status shows it (readiness.go): failed while its container waits
// out its back-off, else a member; nil when it has none.
func (r *realBackend) state(key string, uid types.UID) *aerosim.NodeState {
	r.mu.Lock()
	defer r.mu.Unlock()
	p := r.pods[key]
	if p == nil || p.uid != uid {
		return nil
	}
	st := &aerosim.NodeState{NodeSpec: aerosim.NodeSpec{Name: key}, Phase: aerosim.PhaseMember, Crashes: p.crashes}
	if !p.exitedAt.IsZero() {
		st.Phase, st.Error = aerosim.PhaseFailed, p.lastLine
	}
	return st
}

// syncReal keeps the pod's real node: started once its init containers' work is done, stopped when
// the pod no longer runs, restarted after an exit, its /etc/hosts the cluster DNS of the moment.
func (s *Syncer) syncReal(ctx context.Context, key string, pod *corev1.Pod) error {
	if err := s.ensureExec(ctx, pod); err != nil {
		return err
	}
	r := s.real
	r.mu.Lock()
	p := r.pods[key]
	r.mu.Unlock()
	if p != nil && (p.uid != pod.UID || (!running(pod) && !initializing(pod))) {
		if err := s.stopReal(key); err != nil {
			return err
		}
		p = nil
	}
	if !running(pod) && !initializing(pod) {
		s.forget(key)
		return nil
	}
	if p == nil {
		return s.startReal(ctx, key, pod)
	}
	if err := s.restartReal(key, pod, p); err != nil {
		return err
	}
	if err := s.writeHosts(pod, p); err != nil {
		return err
	}
	return s.project(ctx, key, pod)
}

// startReal does the init containers' work on the pod's volumes and starts its node.
func (s *Syncer) startReal(ctx context.Context, key string, pod *corev1.Pod) error {
	s.mu.Lock()
	f := s.inits[key]
	s.mu.Unlock()
	if f.backingOff(key, pod, s.queue) {
		return nil
	}
	vols, digests, ok, err := s.initDone(key, pod)
	if !ok || err != nil {
		return err
	}
	dirs, err := realVolumeDirs(pod, filepath.Join(s.real.podsDir, pod.Namespace, pod.Name+"@"+string(pod.UID)),
		func(claim string) (string, error) {
			named, err := s.withClaimUIDs(claim)
			return filepath.Join(s.claimsDir, filepath.FromSlash(named)), err
		})
	if err != nil {
		return err
	}
	if err := s.eraseRealClaims(key, pod, dirs); err != nil {
		return err
	}
	if err := writeRealVolumes(dirs, vols); err != nil {
		return err
	}
	c := aerospikeContainer(pod)
	if c == nil {
		return fmt.Errorf("pod %s has no container", key)
	}
	mounts, err := realMounts(c, dirs)
	if err != nil {
		return err
	}
	records, err := s.dnsView()
	if err != nil {
		return err
	}
	hosts := hostsFile(pod, records)
	ip, err := netip.ParseAddr(pod.Status.PodIP)
	if err != nil {
		return err
	}
	n, err := s.real.launcher.Start(ctx, realnode.NodeSpec{Name: realNodeName(pod), IP: ip, Hostname: pod.Name,
		Hosts: hosts, Mounts: mounts, LogPath: s.logFile(pod)})
	if err != nil {
		return err
	}
	s.real.mu.Lock()
	s.real.pods[key] = &realPod{uid: pod.UID, node: n, dirs: dirs, hosts: string(hosts)}
	s.real.mu.Unlock()
	s.mu.Lock()
	delete(s.inits, key)
	s.prepared[key] = pod.UID
	s.volumes[key] = &projections{uid: pod.UID, digests: digests, pending: map[string]time.Time{}}
	s.mu.Unlock()
	s.watchExit(key, n)
	s.logf("+ real node %s at %s:3000 (tini pid %d)", key, ip, n.TiniPID())
	return nil
}

// eraseRealClaims empties the claims the pod's prepare-volumes container erases by its plan, the
// first time it runs in this pod.
func (s *Syncer) eraseRealClaims(key string, pod *corev1.Pod, dirs map[string]string) error {
	s.mu.Lock()
	done := s.prepared[key] == pod.UID
	s.mu.Unlock()
	if done {
		return nil
	}
	erased, err := erasedClaims(pod)
	if err != nil {
		return err
	}
	for _, v := range pod.Spec.Volumes {
		if v.PersistentVolumeClaim == nil {
			continue
		}
		for _, claim := range erased {
			if claim == pod.Namespace+"/"+v.PersistentVolumeClaim.ClaimName {
				if err := os.RemoveAll(dirs[v.Name]); err != nil {
					return err
				}
				s.logf("~ %s: claim %s erased by its volume plan", key, claim)
			}
		}
	}
	return nil
}

// watchExit queues the pod when its container exits.
func (s *Syncer) watchExit(key string, n *realnode.Node) {
	exited := n.Exited()
	go func() {
		<-exited
		s.queue.Add(key)
	}()
}

// restartReal starts an exited container again after the kubelet's back-off (10 s, doubling, at
// most 5 minutes), counting its restarts; meanwhile the pod shows CrashLoopBackOff.
func (s *Syncer) restartReal(key string, pod *corev1.Pod, p *realPod) error {
	code, exited := p.node.ExitCode()
	if !exited {
		return nil
	}
	s.real.mu.Lock()
	if p.exitedAt.IsZero() {
		p.crashes++
		p.exitedAt = time.Now()
		p.lastLine = fmt.Sprintf("exit code %d: %s", code, lastLogLine(p.node.LogPath()))
		s.logf("! real node %s: container exited (%s), restart %d", key, p.lastLine, p.crashes)
	}
	wait := time.Until(p.exitedAt.Add(initBackoff(p.crashes)))
	s.real.mu.Unlock()
	if wait > 0 {
		s.queue.AddAfter(key, wait)
		return nil
	}
	if err := s.real.launcher.Restart(realNodeName(pod)); err != nil {
		return err
	}
	s.real.mu.Lock()
	p.exitedAt = time.Time{}
	s.real.mu.Unlock()
	s.watchExit(key, p.node)
	return nil
}

// lastLogLine is the last line a container wrote to its CRI log, without the CRI prefix.
func lastLogLine(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	_, line, _ := strings.Cut(lines[len(lines)-1], " F ")
	return line
}

// writeHosts rewrites the pod's /etc/hosts when the cluster DNS changed.
func (s *Syncer) writeHosts(pod *corev1.Pod, p *realPod) error {
	records, err := s.dnsView()
	if err != nil {
		return err
	}
	hosts := string(hostsFile(pod, records))
	if hosts == p.hosts {
		return nil
	}
	if err := s.real.launcher.WriteHosts(realNodeName(pod), []byte(hosts)); err != nil {
		return err
	}
	p.hosts = hosts
	return nil
}

// stopReal stops the pod's node (asd stops at the pod's deletion, as in a kubelet).
func (s *Syncer) stopReal(key string) error {
	s.real.mu.Lock()
	p := s.real.pods[key]
	s.real.mu.Unlock()
	if p == nil {
		return nil
	}
	if err := s.real.launcher.Stop(p.node.Spec().Name); err != nil {
		return err
	}
	s.real.mu.Lock()
	delete(s.real.pods, key)
	s.real.mu.Unlock()
	s.logf("- real node %s", key)
	return nil
}

// realPodKeys are the pods that run real nodes, for the DNS: each one's /etc/hosts follows it.
func (r *realBackend) podKeys() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	keys := make([]string, 0, len(r.pods))
	for k := range r.pods {
		keys = append(keys, k)
	}
	return keys
}

// setRealVolume writes a ConfigMap's new content into the pod's volume directory (the kubelet's
// projection; files are replaced, the directory stays the one bound in the node).
func (s *Syncer) setRealVolume(key, volume string, files map[string]string) (bool, error) {
	s.real.mu.Lock()
	p := s.real.pods[key]
	s.real.mu.Unlock()
	if p == nil {
		return false, nil
	}
	return true, writeRealVolumes(map[string]string{volume: p.dirs[volume]}, volumeFiles{volume: files})
}

// RealNode is the real node that runs a pod (on RealNode), for a test's faults and figures; it needs
// the sync loop in this process (StartSync).
func (c *Cluster) RealNode(namespace, pod string) (*realnode.Node, error) {
	n, _, err := c.realNode(namespace, pod)
	return n, err
}

// KillReal kills the asd of a pod's real node (SIGKILL: a crash; the container exits and the sync loop
// starts it again after the kubelet's back-off).
func (c *Cluster) KillReal(namespace, pod string) error {
	n, l, err := c.realNode(namespace, pod)
	if err != nil {
		return err
	}
	return l.Kill(n.Spec().Name)
}

func (c *Cluster) realNode(namespace, pod string) (*realnode.Node, *realnode.Launcher, error) {
	c.syncMu.Lock()
	s := c.syncer
	c.syncMu.Unlock()
	if s == nil || s.real == nil {
		return nil, nil, errors.New("no real nodes in this process: the sync loop runs elsewhere or without them")
	}
	s.real.mu.Lock()
	defer s.real.mu.Unlock()
	if p := s.real.pods[namespace+"/"+pod]; p != nil {
		return p.node, s.real.launcher, nil
	}
	return nil, nil, fmt.Errorf("pod %s/%s runs no real node", namespace, pod)
}
