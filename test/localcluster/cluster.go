package localcluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"k8s.io/client-go/kubernetes"

	"github.com/acko-io/acko/test/proc"
	"github.com/acko-io/acko/test/realnode"
)

// stopOrder stops the users of a component before the component: the API server goes after
// everything that talks to it, etcd last.
var stopOrder = []string{
	syncName, prometheusName, HelmManagerName, ManagerName(StandbyManager), managerName,
	kwokRealName, kwokPlainName, kwokName, aerosimName,
	schedulerName, controllerManagerName, apiServerName, etcdName,
}

// awaitTimeout bounds each readiness wait of Up.
const awaitTimeout = 2 * time.Minute

// Cluster is a local cluster started (or to be started) by this process.
type Cluster struct {
	opts    Options
	began   time.Time
	resumed bool // started on the state of an earlier run
	procs   map[string]*process
	syncMu  sync.Mutex
	syncEnd func()  // stops the in-process sync loop and waits for it
	syncer  *Syncer // the in-process sync loop (StartSync), for the real nodes' faults and figures
}

// New returns a cluster for opts; nothing runs until Up.
func New(opts Options) *Cluster {
	return &Cluster{opts: opts, procs: map[string]*process{}}
}

// Up starts the control plane, kwok, the simulator, the CRDs and RBAC, the manager (with its
// ServiceAccount's token) and Prometheus, and returns once the manager is ready. Binaries are not
// built here (`make local-assets build` does). On failure it stops what it started.
func (c *Cluster) Up(ctx context.Context) (err error) {
	c.began = time.Now()
	if running := c.opts.runningRecords(); len(running) > 0 {
		return fmt.Errorf("already running (%s): stop it first", strings.Join(names(running), ", "))
	}
	if err := c.opts.checkBinaries(); err != nil {
		return err
	}
	defer func() {
		if err != nil {
			c.logf("start failed: %v; stopping what was started (logs: %s)", err, c.opts.path("logs"))
			_ = c.Down()
		}
	}()
	_, statErr := os.Stat(c.opts.path(etcdName))
	c.resumed = statErr == nil
	if err := c.prepare(); err != nil {
		return err
	}
	return c.startAll(ctx)
}

func (c *Cluster) startAll(ctx context.Context) error {
	sim, err := c.startStep(c.opts.aerosimSpec())
	if err != nil {
		return err
	}
	if err := c.startControlPlane(ctx); err != nil {
		return err
	}
	if err := c.installManifests(ctx); err != nil {
		return err
	}
	if err := c.startKwok(); err != nil {
		return err
	}
	for _, url := range strings.Split(c.opts.AerosimURL(), ",") {
		if err := c.await(ctx, aerosimName, httpOK(&http.Client{Timeout: 2 * time.Second}, url+"/nodes", sim)); err != nil {
			return err
		}
	}
	if err := c.awaitControllers(ctx); err != nil {
		return err
	}
	kube, err := c.opts.kubeClient()
	if err != nil {
		return err
	}
	if err := c.awaitKwok(ctx, kube); err != nil {
		return err
	}
	if err := c.StartManager(ctx, PrimaryManager); err != nil {
		return err
	}
	return c.startPrometheus(ctx)
}

// prepare writes the PKI, kubeconfigs and kwok's files.
func (c *Cluster) prepare() error {
	for _, d := range []string{"run", "logs", kwokName, podLogsDir} {
		if err := os.MkdirAll(c.opts.path(d), 0o755); err != nil {
			return err
		}
	}
	if err := c.opts.ensurePKI(); err != nil {
		return err
	}
	if err := c.opts.writeComponentKubeconfigs(); err != nil {
		return err
	}
	if err := c.opts.writeKwokFiles(); err != nil {
		return err
	}
	nodes, err := c.opts.nodesManifest()
	if err != nil {
		return err
	}
	c.logf("PKI and kubeconfigs in %s", c.opts.Dir)
	return os.WriteFile(c.opts.path(kwokName, "nodes.yaml"), nodes, 0o644)
}

// installManifests applies kwok's Exec CRD and StorageClass, the nodes, ACKO's CRDs and the
// manager's RBAC, and waits until the CRDs are served.
func (c *Cluster) installManifests(ctx context.Context) error {
	files := append(c.opts.kwokManifests(), c.opts.path(kwokName, "nodes.yaml"),
		filepath.Join(c.opts.Root, "config", "crd", "bases"))
	args := make([]string, 0, 3+2*len(files))
	args = append(args, "apply", "--server-side", "--force-conflicts")
	for _, f := range files {
		args = append(args, "-f", f)
	}
	if _, err := c.opts.Kubectl(ctx, args...); err != nil {
		return err
	}
	if err := c.opts.installRBAC(ctx); err != nil {
		return err
	}
	if c.resumed {
		// A new kwok does not know which IPs the pods of the last run hold: it would hand them
		// out again, twice. Like containers after a reboot, those pods are gone; their
		// StatefulSets recreate them.
		if _, err := c.opts.Kubectl(ctx, "delete", "pods", "--all", "--all-namespaces", "--force",
			"--grace-period=0", "--wait=false"); err != nil {
			return err
		}
		c.logf("deleted the pods of the last run")
	}
	if _, err := c.opts.Kubectl(ctx, "wait", "--for=condition=Established", "crd", "--all", "--timeout=60s"); err != nil {
		return err
	}
	c.logf("CRDs, nodes and RBAC installed")
	return nil
}

// S3URL is the endpoint of the sync loop's S3-compatible store (any bucket exists; any credentials do).
func (o Options) S3URL() string { return "http://" + o.addr(o.Ports.S3) }

// AerosimURL is the simulator's control API; with several shards, theirs comma-separated in order
// (simclient.New takes either).
func (o Options) AerosimURL() string {
	urls := make([]string, o.aerosimShards())
	for i := range urls {
		urls[i] = "http://" + o.addr(o.Ports.Aerosim+i)
	}
	return strings.Join(urls, ",")
}

func (o Options) aerosimShards() int { return max(1, o.AerosimShards) }

// aerosimSpec is the simulator; each shard's control API listens on Ports.Aerosim + its index.
func (o Options) aerosimSpec() procSpec {
	return procSpec{name: aerosimName, path: o.bin(aerosimName), args: []string{
		"--control=" + o.addr(o.Ports.Aerosim),
		"--shards=" + strconv.Itoa(o.aerosimShards()),
		"--migration-duration=" + o.MigrationDuration.String(),
		"--restart-downtime=" + o.RestartDowntime.String(),
		"--join-delay=" + o.JoinDelay.String(),
		"--drop-delay=" + o.DropDelay.String(),
		"--hang-drop-delay=" + o.HangDropDelay.String(),
		"--crash-loop-backoff=" + o.CrashLoopBackoff.String(),
		"--log-dir=" + o.path(podLogsDir),
	}}
}

// checkBinaries fails early, saying what to build, when a binary is missing.
func (o Options) checkBinaries() error {
	var missing []string
	for _, b := range []string{etcdName, apiServerName, controllerManagerName, schedulerName, "kubectl", kwokName} {
		if _, err := os.Stat(o.asset(b)); err != nil {
			missing = append(missing, o.asset(b))
		}
	}
	for _, b := range []string{managerName, aerosimName, "fakeinit"} {
		if _, err := os.Stat(o.bin(b)); err != nil {
			missing = append(missing, o.bin(b))
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("missing %s: run `make local-assets build`", strings.Join(missing, ", "))
	}
	return nil
}

// StartSync runs the sync loop in this process until Down, logging to out.
func (c *Cluster) StartSync(out io.Writer) error {
	cfg, err := c.opts.RESTConfig()
	if err != nil {
		return err
	}
	s, err := NewSyncer(cfg, c.opts, out)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	var runErr error
	go func() {
		defer close(done)
		if runErr = s.Run(ctx); runErr != nil && ctx.Err() == nil {
			c.logf("sync loop ended: %v", runErr)
		}
	}()
	// A loop that cannot start (e.g. the real nodes' bridge) fails Up's caller now, not its pods later.
	select {
	case <-s.started:
	case <-done:
		cancel()
		return fmt.Errorf("sync loop: %w", runErr)
	}
	c.syncMu.Lock()
	c.syncEnd, c.syncer = func() { cancel(); <-done }, s
	c.syncMu.Unlock()
	return nil
}

// StartSyncProcess runs the sync loop as a background process (`up --detach`): exe with args
// must run Syncer.Run until SIGTERM.
func (c *Cluster) StartSyncProcess(exe string, args ...string) error {
	_, err := c.startStep(procSpec{name: syncName, path: exe, args: args})
	return err
}

// Exited delivers the name of each process started by this Up that exits.
func (c *Cluster) Exited() <-chan string {
	ch := make(chan string, len(c.procs))
	for name, p := range c.procs {
		go func() {
			<-p.done
			ch <- name
		}()
	}
	return ch
}

// Down stops the sync loop and every process the cluster's pid files record, in stopOrder.
func (c *Cluster) Down() error {
	c.syncMu.Lock()
	end := c.syncEnd
	c.syncEnd = nil
	c.syncMu.Unlock()
	if end != nil {
		end()
	}
	return c.opts.Stop()
}

// Stop stops every process recorded under o.Dir (also those of another `up`), by PID, and
// checks that none of them, nor any of their descendants, is left; then removes what the real-node
// launcher recorded and left (its nodes, their links and its bridge), should its process have died
// without cleaning up.
func (o Options) Stop() error {
	running := o.runningRecords()
	if len(running) == 0 {
		o.progressf("nothing running in %s", o.Dir)
		return realnode.CleanupLeftovers(o.RealNodesDir())
	}
	roots := make([]pidRecord, 0, len(running))
	for _, rec := range running {
		roots = append(roots, rec)
	}
	all := append(roots, proc.Descendants(roots)...)
	var errs []error
	for _, name := range stopOrder {
		if _, ok := running[name]; ok {
			o.progressf("stopping %s (pid %d)", name, running[name].PID)
			errs = append(errs, o.stopProcess(name))
		}
	}
	errs = append(errs, realnode.CleanupLeftovers(o.RealNodesDir()))
	for _, rec := range all {
		if rec.Alive() {
			errs = append(errs, fmt.Errorf("pid %d (%s) is still running", rec.PID, rec.Cmd))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	o.progressf("stopped %d processes; none left", len(all))
	return nil
}

// Wipe stops the cluster and deletes its state (not that of the e2e preset nested in it).
func (o Options) Wipe() error {
	if err := o.Stop(); err != nil {
		return err
	}
	entries, err := os.ReadDir(o.Dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	for _, e := range entries {
		// The e2e preset's state (and its lock file) stays when the local one goes.
		if strings.HasPrefix(e.Name(), e2eSubdir) {
			continue
		}
		if err := os.RemoveAll(o.path(e.Name())); err != nil {
			return err
		}
	}
	o.progressf("deleted %s", o.Dir)
	return nil
}

func (c *Cluster) startStep(spec procSpec) (*process, error) {
	p, err := c.opts.startProcess(spec)
	if err != nil {
		return nil, err
	}
	c.procs[spec.name] = p
	c.logf("started %s (pid %d)", spec.name, p.rec.PID)
	return p, nil
}

func (c *Cluster) await(ctx context.Context, what string, check func(context.Context) error) error {
	if err := poll(ctx, what, awaitTimeout, check); err != nil {
		return err
	}
	c.logf("%s ready", what)
	return nil
}

func (c *Cluster) logf(format string, args ...any) {
	c.opts.progressf("+%4.1fs "+format, append([]any{time.Since(c.began).Seconds()}, args...)...)
}

func (o Options) progressf(format string, args ...any) {
	if o.Progress != nil {
		_, _ = fmt.Fprintf(o.Progress, "[localcluster] "+format+"\n", args...)
	}
}

func names(m map[string]pidRecord) []string {
	out := make([]string, 0, len(m))
	for name, rec := range m {
		out = append(out, fmt.Sprintf("%s pid %d", name, rec.PID))
	}
	return out
}

// kubeClient returns an admin clientset.
func (o Options) kubeClient() (kubernetes.Interface, error) {
	cfg, err := o.RESTConfig()
	if err != nil {
		return nil, err
	}
	return kubernetes.NewForConfig(cfg)
}
