package localcluster

import (
	"fmt"
	"io"
	"net/netip"
	"os"
	"path/filepath"
	"time"

	"github.com/acko-io/acko/test/testenv"
)

// Names of the components: their processes, log and pid files, certificates and kubeconfigs.
const (
	etcdName              = "etcd"
	apiServerName         = "kube-apiserver"
	controllerManagerName = "kube-controller-manager"
	schedulerName         = "kube-scheduler"
	kwokName              = "kwok"
	kwokPlainName         = "kwok-plain"
	kwokRealName          = "kwok-real"
	aerosimName           = "aerosim"
	// podLogsDir holds the simulated nodes' logs, which kwok serves as their pods' Aerospike
	// container logs (`kubectl logs`), and those of the backup-tool pods (tools.go).
	podLogsDir = "pod-logs"
	// claimsDir holds the files backup-tool pods write to their claims, a directory a claim;
	// scratchDir those of their other paths, a directory a pod (tools.go).
	claimsDir      = "claims"
	scratchDir     = "pod-scratch"
	managerName    = "manager"
	prometheusName = "prometheus"
	syncName       = "sync"
	// HelmManagerName is the manager the Helm e2e runs with the chart's identity.
	HelmManagerName = "manager-helm"
	adminName       = "admin"
)

// Ports are the loopback ports the cluster's processes listen on.
type Ports struct {
	Etcd, EtcdPeer    int
	APIServer         int
	ControllerManager int
	Scheduler         int
	Kwok, KwokPlain   int // kubelet endpoints (exec, logs) of the two kwok instances
	KwokReal          int // kubelet endpoint of the real-node kwok (Options.RealNodes)
	Aerosim           int // simulator control API
	Metrics, Health   int // manager
	Webhook           int // manager
	Prometheus        int
	S3                int // the sync loop's S3-compatible store, the backups' s3:// destination
}

// Options say where a cluster keeps its state and which addresses it uses. Two presets exist so
// that `make run-local` and the e2e suite can run side by side.
type Options struct {
	Root  string // repository root: bin/, config/, hack/
	Dir   string // state: PKI, kubeconfigs, etcd data, logs, pid files
	Ports Ports
	// PodCIDR is the pod range of the zone nodes, PlainPodCIDR of the plain-init node. Both are in
	// 127.0.0.0/8 so that every pod IP is a loopback address the simulator can serve on.
	PodCIDR, PlainPodCIDR string
	Zones                 []string
	NodesPerZone          int // kwok nodes in each zone: a drain needs a second one for the pods pinned there
	// NodeExternalNet and LoadBalancerNet are the first three octets of two loopback /24s, one apart
	// for each preset so that both clusters' outside access can listen side by side: the kwok node n
	// (from 1: the zone nodes in order, then the plain node) has ExternalIP <NodeExternalNet>.n, and
	// the load-balancer stand-in (serviceproxy.go) gives Services ingress IPs <LoadBalancerNet>.1 up.
	NodeExternalNet, LoadBalancerNet string
	// AerosimShards is how many simulators (in one process) serve the nodes (0: one), each the
	// namespaces simclient.ShardOf gives it, with its control API on Ports.Aerosim + its index.
	AerosimShards int
	// The simulator's timings (its flags of the same names; aerosim.Options says what each is).
	MigrationDuration, RestartDowntime, JoinDelay, DropDelay, HangDropDelay, CrashLoopBackoff time.Duration
	// RealNodes adds the node RealNode (label and taint LabelTestBackend=TestBackendReal), whose pods
	// run real asd through test/realnode: a bridge RealBridge with the range RealSubnet, the pods'
	// IPs from RealPodCIDR inside it. Needs root and the binaries (realnode.Check).
	RealNodes   bool
	RealBridge  string
	RealSubnet  netip.Prefix
	RealPodCIDR string
	// ProjectionDelay is how long after a ConfigMap changes the kubelet (here the sync loop) updates
	// the file in the pods that mount it (a real kubelet: up to about a minute).
	ProjectionDelay time.Duration
	// DieWithParent makes every process get SIGKILL when the process that started it dies, so a
	// crashed test binary leaves nothing behind. `up --detach` needs it off.
	DieWithParent bool
	// RequirePrometheus fails Up without a prometheus binary; otherwise metrics are just not scraped.
	RequirePrometheus bool
	// ManagerArgs are added to the managers' flags.
	ManagerArgs []string
	// NoPrometheus starts no Prometheus even when there is one (its scrapes would be measured too).
	NoPrometheus bool
	// LeaderElection, when set, is the managers' lease duration: they elect a leader, so that a
	// standby can take over (renewal and retries scale with it). Zero: one manager, no election.
	LeaderElection time.Duration
	Progress       io.Writer
}

// LocalOptions is the preset of `make run-local`: state in .local/, the ports the docs print.
func LocalOptions() Options {
	root := testenv.RepoRoot()
	return Options{
		Root: root,
		Dir:  filepath.Join(root, ".local"),
		Ports: Ports{
			Etcd: 12379, EtcdPeer: 12380, APIServer: 6443, ControllerManager: 12257, Scheduler: 12259,
			Kwok: 12250, KwokPlain: 12251, KwokReal: 12252, Aerosim: 3099, Metrics: 8443, Health: 8081, Webhook: 9443,
			Prometheus: 9090, S3: 9000,
		},
		PodCIDR:      "127.1.0.0/16",
		PlainPodCIDR: "127.2.0.0/16",
		// The benchmarking range 198.18.0.0/15: 198.18/16 here, 198.19.0/17 for the e2e suite, the
		// rest for the tests of test/realnode and of the real pods.
		RealBridge:      "acko-local",
		RealSubnet:      netip.MustParsePrefix("198.18.0.0/16"),
		RealPodCIDR:     "198.18.1.0/24",
		Zones:           []string{"zone-a", "zone-b", "zone-c"},
		NodesPerZone:    2,
		NodeExternalNet: "127.0.1",
		LoadBalancerNet: "127.0.2",
		// The real server's timings, but migrations and the kubelet's projection faster.
		MigrationDuration: 10 * time.Second,
		RestartDowntime:   200 * time.Millisecond,
		JoinDelay:         2 * time.Second,
		DropDelay:         2 * time.Second,
		HangDropDelay:     3 * time.Second,
		CrashLoopBackoff:  10 * time.Second,
		ProjectionDelay:   10 * time.Second,
		Progress:          os.Stdout,
	}
}

// e2eSubdir holds the e2e presets' state inside the local one's (instance i > 0 in e2e-<i>).
const e2eSubdir = "e2e"

// E2EInstances is how many e2e presets can run side by side on one machine: each has its own state,
// ports, address ranges, bridge and lock, so the suite runs as parallel Ginkgo processes (one control
// plane each) and the real tier beside the simulated one.
const E2EInstances = 4

// E2EOptions is the preset of the e2e suite's instance (0 ≤ instance < E2EInstances): state in
// .local/e2e/ (.local/e2e-<instance>/), every port shifted by 20000 + 50 × instance and pod ranges of
// its own, so it never meets a running `make run-local` or another instance.
func E2EOptions(instance int) Options {
	if instance < 0 || instance >= E2EInstances {
		panic(fmt.Sprintf("localcluster: e2e instance %d is not in [0, %d)", instance, E2EInstances))
	}
	o := LocalOptions()
	o.Dir = filepath.Join(o.Dir, e2eName(instance))
	p := &o.Ports
	for _, port := range []*int{&p.Etcd, &p.EtcdPeer, &p.APIServer, &p.ControllerManager, &p.Scheduler,
		&p.Kwok, &p.KwokPlain, &p.KwokReal, &p.Aerosim, &p.Metrics, &p.Health, &p.Webhook, &p.Prometheus, &p.S3} {
		*port += 20000 + 50*instance
	}
	o.PodCIDR = fmt.Sprintf("127.%d.0.0/16", 21+2*instance)
	o.PlainPodCIDR = fmt.Sprintf("127.%d.0.0/16", 22+2*instance)
	o.NodeExternalNet, o.LoadBalancerNet = fmt.Sprintf("127.0.%d", 21+2*instance), fmt.Sprintf("127.0.%d", 22+2*instance)
	// 198.19.0.0/17 in four: a /19 each (198.19.128/17 is test/realnode's and the real pods' tests').
	o.RealBridge = "acko-" + e2eName(instance)
	o.RealSubnet = netip.PrefixFrom(netip.AddrFrom4([4]byte{198, 19, byte(32 * instance), 0}), 19)
	o.RealPodCIDR = fmt.Sprintf("198.19.%d.0/24", 32*instance+1)
	// Shorter than real life so that rolling restarts and operations keep the suite fast; the
	// order of the delays is the real server's.
	o.MigrationDuration, o.RestartDowntime, o.JoinDelay = 2*time.Second, 100*time.Millisecond, 500*time.Millisecond
	o.DropDelay, o.HangDropDelay, o.CrashLoopBackoff = 500*time.Millisecond, 750*time.Millisecond, time.Second
	o.ProjectionDelay = 3 * time.Second
	o.DieWithParent, o.RequirePrometheus = true, true
	// Short leases, so that the failover specs see a standby take over in seconds.
	// Not shorter: on a loaded 2-core machine the API server can take seconds to answer a renewal,
	// and a leader that cannot renew within 3/4 of the lease gives up.
	o.LeaderElection = 8 * time.Second
	return o
}

// e2eName names an e2e instance's state directory, its lock and (after "acko-") its bridge.
func e2eName(instance int) string {
	if instance == 0 {
		return e2eSubdir
	}
	return fmt.Sprintf("%s-%d", e2eSubdir, instance)
}

// BenchOptions is the preset of `make bench-scale`: the e2e ports and timings (the bench holds the
// e2e lock), state in .local/bench/, enough nodes for clusters 3-pod clusters, and neither
// Prometheus nor leader election, whose requests would be counted with the manager's.
func BenchOptions(clusters int) Options {
	o := E2EOptions(0)
	o.Dir = filepath.Join(LocalOptions().Dir, "bench")
	o.RequirePrometheus, o.NoPrometheus, o.LeaderElection = false, true, 0
	// Each zone holds one pod of each cluster; a kwok node takes 110 pods.
	o.NodesPerZone = max(2, clusters/80+1)
	// A simulator settles its whole world at every call: one per 100 clusters keeps each small.
	o.AerosimShards = max(1, clusters/100)
	return o
}

// path is a path inside the state directory.
func (o Options) path(elem ...string) string {
	return filepath.Join(append([]string{o.Dir}, elem...)...)
}

func (o Options) assetsDir() string {
	return filepath.Join(o.Root, "bin", "assets", "k8s-"+testenv.K8sVersion)
}

func (o Options) asset(name string) string { return filepath.Join(o.assetsDir(), name) }

func (o Options) bin(name string) string { return filepath.Join(o.Root, "bin", name) }

// KubeconfigPath is the admin kubeconfig for the user and the tests.
func (o Options) KubeconfigPath() string { return o.path("kubeconfig") }

// KubectlPath is the kubectl built by hack/build-assets.sh.
func (o Options) KubectlPath() string { return o.asset("kubectl") }

// CACertPath is the CA every server certificate of the cluster (and the manager's) chains to.
func (o Options) CACertPath() string { return o.path("pki", "ca.crt") }

// LogPath is the log file of a process the cluster started.
func (o Options) LogPath(process string) string { return o.path("logs", process+".log") }

// InitLogPath is where the stand-in inits and the kill shim log the signals they see.
func (o Options) InitLogPath() string { return o.LogPath("fakeinit") }

// RealNodesDir is the state of the real-node launcher (test/realnode): its records and its nodes' files.
func (o Options) RealNodesDir() string { return o.path("realnodes") }

// HelmPath is the helm built by hack/build-assets.sh.
func (o Options) HelmPath() string { return o.asset("helm") }
