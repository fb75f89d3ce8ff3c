package localcluster

import (
	"bytes"
	"context"
	"embed"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"text/template"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/acko-io/acko/test/localcluster/fakeinit"
	"github.com/acko-io/acko/test/proc"
)

// kwokFiles are the stages and the Exec and Logs CRDs, copied from the kwok module (see each file's header).
//
//go:embed kwok/*.yaml
var kwokFiles embed.FS

// Labels and taints of the kwok nodes.
const (
	// LabelKwok says which kwok instance manages a node: "tini" or "plain".
	LabelKwok = "localcluster.acko.io/kwok"
	// LabelTestInit marks (and, as a taint key, guards) the node whose pods' PID 1 is not tini.
	LabelTestInit = "acko.io/test-init"
	// TestInitPlain is the value of LabelTestInit and of its taint.
	TestInitPlain = "plain"
	// LabelZone is the well-known zone label racks are placed with.
	LabelZone = "topology.kubernetes.io/zone"
	// PlainNode is the name of the plain-init node.
	PlainNode = kwokPlainName
	// RealNode is the name of the node whose pods run real asd (Options.RealNodes).
	RealNode = kwokRealName
)

// TiniCmdline is /proc/1/cmdline, split, of every pod on the zone nodes: the official image's
// entrypoint. PlainCmdline is that of the pods on PlainNode: asd itself as PID 1.
var (
	TiniCmdline  = []string{"as-tini-static", "-r", "SIGUSR1", "-t", "SIGTERM"}
	PlainCmdline = []string{"asd", "--foreground", "--config-file", "/etc/aerospike/aerospike.conf"}
)

// kwokInstance is one kwok process, in its own PID namespace with the stand-in init as PID 1.
type kwokInstance struct {
	name    string   // process name
	mode    string   // LabelKwok value of its nodes
	cmdline []string // of its PID 1, as every pod sees it
	cidr    string
	port    int
	stages  []string
	shims   []string // fakeinit shims first in the PATH of exec'd commands
}

// The kwok stages each instance runs (files of kwok/).
const (
	nodeStages   = "node-stages.yaml"
	podStages    = "pod-stages.yaml"
	volumeStages = "volume-stages.yaml"
)

func (o Options) kwokInstances() []kwokInstance {
	instances := []kwokInstance{
		{name: kwokName, mode: "tini", cmdline: TiniCmdline, cidr: o.PodCIDR, port: o.Ports.Kwok,
			shims: []string{"kill", "cat", "cp"}, stages: []string{nodeStages, podStages, volumeStages}},
		// No kill shim here: a SIGUSR1 to a plain PID 1 must not look like a warm restart.
		{name: kwokPlainName, mode: TestInitPlain, cmdline: PlainCmdline, cidr: o.PlainPodCIDR, port: o.Ports.KwokPlain,
			shims: []string{"cat", "cp"}, stages: []string{nodeStages, podStages}},
	}
	if o.RealNodes {
		// Every command exec'd in a real pod is a shim that has the sync loop run it in the pod's
		// namespaces (fakeinit.Forward): these are the commands a pod can run.
		instances = append(instances, kwokInstance{name: kwokRealName, mode: TestBackendReal, cmdline: TiniCmdline,
			cidr: o.RealPodCIDR, port: o.Ports.KwokReal, shims: fakeinit.ForwardedCommands,
			stages: []string{nodeStages, podStages, volumeStages}})
	}
	return instances
}

// writeKwokFiles puts the embedded files under kwok/ and links each instance's shims.
func (o Options) writeKwokFiles() error {
	entries, err := kwokFiles.ReadDir(kwokName)
	if err != nil {
		return err
	}
	for _, e := range entries {
		b, err := kwokFiles.ReadFile("kwok/" + e.Name())
		if err != nil {
			return err
		}
		if err := os.WriteFile(o.path(kwokName, e.Name()), b, 0o644); err != nil {
			return err
		}
	}
	for _, k := range o.kwokInstances() {
		if err := o.linkShims(k); err != nil {
			return err
		}
	}
	return nil
}

// shimDir holds the instance's shims: links to bin/fakeinit named as the command they stand for.
func (o Options) shimDir(k kwokInstance) string { return o.path(kwokName, "shim", k.mode) }

func (o Options) linkShims(k kwokInstance) error {
	dir := o.shimDir(k)
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for _, name := range k.shims {
		if err := os.Symlink(o.bin("fakeinit"), filepath.Join(dir, name)); err != nil {
			return err
		}
	}
	return nil
}

// kwokSpec runs kwok as the child of the stand-in init (bin/fakeinit), PID 1 of a new PID
// namespace: whatever `kubectl exec` runs through kwok, `kill 1` included, stays in there.
func (o Options) kwokSpec(k kwokInstance) procSpec {
	args := append(unshareArgs(), o.bin("fakeinit"), o.asset(kwokName))
	args = append(args, o.kwokArgs(k)...)
	cmdline, _ := json.Marshal(k.cmdline)
	env := []string{
		fakeinit.EnvCmdline + "=" + string(cmdline),
		fakeinit.EnvLog + "=" + o.InitLogPath(),
		fakeinit.EnvSimURL + "=" + o.AerosimURL(),
		// kwok resolves an exec'd command in its own PATH, so the shims come first.
		"PATH=" + o.shimDir(k) + string(os.PathListSeparator) + os.Getenv("PATH"),
	}
	if k.mode == TestBackendReal {
		// Only the forwarding shims: a command a real pod cannot run is not found, never run here.
		env[len(env)-1] = "PATH=" + o.shimDir(k)
	}
	return procSpec{name: k.name, path: "unshare", args: args, env: env, dir: o.path(kwokName)}
}

// unshareArgs start a command as PID 1 of a new PID namespace with its own /proc, which dies
// with unshare.
func unshareArgs() []string {
	args := []string{"--pid", "--fork", "--mount-proc", "--kill-child"}
	if os.Geteuid() != 0 {
		// A user namespace lets an unprivileged user have the PID namespace.
		args = append([]string{"--user", "--map-root-user"}, args...)
	}
	return args
}

func (o Options) kwokArgs(k kwokInstance) []string {
	configs := make([]string, 0, len(k.stages))
	for _, s := range k.stages {
		configs = append(configs, "--config="+o.path(kwokName, s))
	}
	return append([]string{
		"--kubeconfig=" + o.KubeconfigPath(),
		"--manage-nodes-with-label-selector=" + LabelKwok + "=" + k.mode,
		"--cidr=" + k.cidr,
		"--node-ip=127.0.0.1", "--node-port=" + strconv.Itoa(k.port),
		"--server-address=" + o.addr(k.port),
		"--tls-cert-file=" + o.path("pki", "kwok.crt"), "--tls-private-key-file=" + o.path("pki", "kwok.key"),
		// Exec and Logs objects come from the API (the sync loop creates them per pod), stages from files.
		"--enable-crds=Exec,Logs",
		"--node-lease-duration-seconds=40",
	}, configs...)
}

// startKwok starts both kwok instances and records each stand-in init, which is what gets
// SIGTERM on stop (unshare itself ignores it).
func (c *Cluster) startKwok() error {
	for _, k := range c.opts.kwokInstances() {
		p, err := c.startStep(c.opts.kwokSpec(k))
		if err != nil {
			return err
		}
		c.procs[k.name] = p
		pid, err := proc.FirstChild(p.rec.PID, 5*time.Second)
		if err != nil {
			return fmt.Errorf("%s: %w", k.name, err)
		}
		rec, err := proc.RecordOf(pid, "fakeinit (PID 1 of "+k.name+"'s PID namespace)")
		if err != nil {
			return err
		}
		if err := c.opts.writePidFile(k.name+"-init", rec); err != nil {
			return err
		}
	}
	return nil
}

var nodesTemplate = template.Must(template.New("nodes").Parse(`{{range .Zones}}---
apiVersion: v1
kind: Node
metadata:
  name: {{.Name}}
  labels:
    kubernetes.io/hostname: {{.Name}}
    kubernetes.io/os: linux
    kubernetes.io/arch: amd64
    type: kwok
    ` + LabelKwok + `: tini
    ` + LabelZone + `: {{.Zone}}
  annotations:
    kwok.x-k8s.io/node: fake
{{end}}{{if .Real}}---
apiVersion: v1
kind: Node
metadata:
  name: ` + RealNode + `
  labels:
    kubernetes.io/hostname: ` + RealNode + `
    kubernetes.io/os: linux
    kubernetes.io/arch: amd64
    type: kwok
    ` + LabelKwok + `: ` + TestBackendReal + `
    ` + LabelTestBackend + `: ` + TestBackendReal + `
  annotations:
    kwok.x-k8s.io/node: fake
spec:
  taints:
  - key: ` + LabelTestBackend + `
    value: ` + TestBackendReal + `
    effect: NoSchedule
{{end}}---
apiVersion: v1
kind: Node
metadata:
  name: ` + PlainNode + `
  labels:
    kubernetes.io/hostname: ` + PlainNode + `
    kubernetes.io/os: linux
    kubernetes.io/arch: amd64
    type: kwok
    ` + LabelKwok + `: plain
    ` + LabelTestInit + `: ` + TestInitPlain + `
  annotations:
    kwok.x-k8s.io/node: fake
spec:
  taints:
  - key: ` + LabelTestInit + `
    value: ` + TestInitPlain + `
    effect: NoSchedule
`))

// zoneNode is a kwok node of a zone.
type zoneNode struct{ Name, Zone string }

// zoneNodes are NodesPerZone nodes in every zone, kwok-<zone>-1, -2, ...
func (o Options) zoneNodes() []zoneNode {
	out := make([]zoneNode, 0, len(o.Zones)*o.NodesPerZone)
	for _, z := range o.Zones {
		for i := range o.NodesPerZone {
			out = append(out, zoneNode{Name: fmt.Sprintf("kwok-%s-%d", z, i+1), Zone: z})
		}
	}
	return out
}

// nodesManifest is the zone nodes (managed by the tini kwok) and the plain-init node.
func (o Options) nodesManifest() ([]byte, error) {
	var b bytes.Buffer
	err := nodesTemplate.Execute(&b, struct {
		Zones []zoneNode
		Real  bool
	}{o.zoneNodes(), o.RealNodes})
	return b.Bytes(), err
}

// nodeExternalIPs are the ExternalIPs of the kwok nodes (node name → address): node n, from 1 (the
// zone nodes in order, then the plain node), has <NodeExternalNet>.n. Every node's InternalIP is
// 127.0.0.1, where kwok's kubelet endpoint is (exec and logs go there), so the ExternalIP is what
// tells one node from another to a client outside the cluster: the address a pod advertises for
// outside access, and where the kube-proxy stand-in listens on NodePorts and hostPorts.
func (o Options) nodeExternalIPs() map[string]string {
	ips := map[string]string{}
	for i, n := range o.zoneNodes() {
		ips[n.Name] = fmt.Sprintf("%s.%d", o.NodeExternalNet, i+1)
	}
	ips[PlainNode] = fmt.Sprintf("%s.%d", o.NodeExternalNet, len(ips)+1)
	if o.RealNodes {
		ips[RealNode] = fmt.Sprintf("%s.%d", o.NodeExternalNet, len(ips)+1)
	}
	return ips
}

// setExternalIPs adds each kwok node's ExternalIP to its status addresses. kwok's node-initialize
// stage writes only InternalIP and Hostname, and its heartbeat keeps the addresses as they are; the
// strategic merge (keyed by type) leaves those two alone.
func (c *Cluster) setExternalIPs(ctx context.Context, kube kubernetes.Interface) error {
	for name, ip := range c.opts.nodeExternalIPs() {
		patch := fmt.Sprintf(`{"status":{"addresses":[{"type":%q,"address":%q}]}}`, corev1.NodeExternalIP, ip)
		if _, err := kube.CoreV1().Nodes().Patch(ctx, name, types.StrategicMergePatchType, []byte(patch),
			metav1.PatchOptions{}, "status"); err != nil {
			return fmt.Errorf("node %s ExternalIP: %w", name, err)
		}
	}
	c.logf("node ExternalIPs %s.1 to .%d", c.opts.NodeExternalNet, len(c.opts.nodeExternalIPs()))
	return nil
}

// awaitKwok waits for kwok's kubelet endpoints (served with a certificate of the cluster CA), then
// for every node to be Ready, and gives the nodes their ExternalIPs.
func (c *Cluster) awaitKwok(ctx context.Context, kube kubernetes.Interface) error {
	client, err := httpClient(c.opts.CACertPath(), "")
	if err != nil {
		return err
	}
	for _, k := range c.opts.kwokInstances() {
		url := fmt.Sprintf("https://%s/healthz", c.opts.addr(k.port))
		if err := c.await(ctx, k.name, httpOK(client, url, c.procs[k.name])); err != nil {
			return err
		}
	}
	if err := c.awaitNodes(ctx, kube); err != nil {
		return err
	}
	return c.setExternalIPs(ctx, kube)
}

// awaitNodes waits until every kwok node is Ready.
func (c *Cluster) awaitNodes(ctx context.Context, kube kubernetes.Interface) error {
	want := len(c.opts.nodeExternalIPs())
	return c.await(ctx, fmt.Sprintf("%d kwok nodes", want), func(ctx context.Context) error {
		for _, k := range c.opts.kwokInstances() {
			if c.procs[k.name].exited() {
				return fmt.Errorf("%w: %s exited, see %s", errFatal, k.name, c.opts.LogPath(k.name))
			}
		}
		nodes, err := kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: LabelKwok})
		if err != nil {
			return err
		}
		ready := 0
		for _, n := range nodes.Items {
			if nodeReady(&n) {
				ready++
			}
		}
		if ready < want {
			return fmt.Errorf("%d of %d nodes Ready", ready, want)
		}
		return nil
	})
}

func nodeReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// kwokManifests are the cluster objects kwok needs: its Exec and Logs CRDs and the StorageClass its
// volume stages provision.
func (o Options) kwokManifests() []string {
	return []string{o.path(kwokName, "exec-crd.yaml"), o.path(kwokName, "logs-crd.yaml"), o.path(kwokName, "storageclass.yaml")}
}
