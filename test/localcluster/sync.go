package localcluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"path"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"

	ackov1alpha1 "github.com/acko-io/acko/api/v1alpha1"
	"github.com/acko-io/acko/internal/resources"
	"github.com/acko-io/acko/test/aerosim"
	"github.com/acko-io/acko/test/localcluster/fakeinit"
	"github.com/acko-io/acko/test/localcluster/simclient"
)

// LabelSimulate puts a pod that ACKO does not manage (the harness's self-test) in the simulated
// world too.
const LabelSimulate = "localcluster.acko.io/simulate"

// AnnotationExecHang on a pod (a Go duration) makes every command exec'd into it hang that long
// before it runs: the kubelet that accepts an exec stream and never answers (`make bench-scale`).
const AnnotationExecHang = "localcluster.acko.io/exec-hang"

var (
	execGVR = schema.GroupVersionResource{Group: "kwok.x-k8s.io", Version: "v1alpha1", Resource: "execs"}
	logsGVR = schema.GroupVersionResource{Group: "kwok.x-k8s.io", Version: "v1alpha1", Resource: logsResource}
)

// logsResource is kwok's Logs resource, and the field of its spec.
const logsResource = "logs"

// AnnotationLoadRate on a pod (records a second) sets how fast its simulated asd reads its persistent
// namespaces back at start (aerosim NodeSpec.LoadRate): a slow cold start.
const AnnotationLoadRate = "localcluster.acko.io/load-rate"

// SyncQPS is the sync loop's client limit. It stands in for every kubelet: client-go's default of
// 5 requests per second made it the slowest part of starting 100 clusters (2 to 3 requests a pod).
const SyncQPS = 200

// SyncWorkers is how many keys the sync loop syncs at once: most of a pod's sync waits on the API
// server or the simulator, and 3000 pods started one after the other take many minutes.
const SyncWorkers = 8

// Keys of the work queue besides pods (namespace/name): the cluster DNS, the poll of the
// simulator's nodes, and claims to resize.
const (
	dnsKey  = "dns"
	pollKey = "poll"
	// resizePrefix starts the key of a claim whose resize is pending (resizePrefix + namespace/name).
	resizePrefix = "resize:"
)

// nodePollInterval is how often the sync loop reads the simulator's nodes, to show a crash-looping asd
// in its pod's status.
const nodePollInterval = 500 * time.Millisecond

// Syncer keeps the simulated world in step with the pods of ACKO (and of the self-test), doing
// what a kubelet and the cluster DNS would:
//   - each such pod gets a kwok Exec that tells its exec'd commands who they run for and which of
//     their paths are the pod's volumes (the shims serve those from the simulator);
//   - while it runs, a simulated Aerospike node at its IP, given the pod's files (podfiles.go); a
//     ConfigMap change reaches a running pod's files after ProjectionDelay;
//   - the simulator's DNS table follows the pods and the headless Services;
//   - the Aerospike container crash-loops while the simulator's asd refuses its config, and a pod
//     is Ready only when its containers are and its readiness gates are True;
//   - an init container whose `cp` finds no source fails: no node starts, and the init container
//     runs again after the kubelet's back-off, on the volumes as they are then;
//   - a backup-tool pod (asbackup, asrestore) runs its tool, and ends as its exit code says (tools.go).
//
// A pod recreated under the same name (new UID) is a node that restarted: the old node goes, a new
// one starts with uptime 0.
type Syncer struct {
	kube       kubernetes.Interface
	dyn        dynamic.Interface
	sim        *simclient.Client
	out        io.Writer
	projection time.Duration
	lbNet      string // Options.LoadBalancerNet, for the service proxy
	pods       corelisters.PodLister
	services   corelisters.ServiceLister
	configMaps corelisters.ConfigMapLister
	claims     corelisters.PersistentVolumeClaimLister
	queue      workqueue.TypedRateLimitingInterface[string]
	workers    int
	started    chan struct{}       // closed once Run serves (its caches synced, the real nodes' bridge up)
	dnsPushed  map[string][]string // synced under dnsKey only
	// mu guards the maps below. The work queue hands a key to one worker at a time, so a pod's
	// entries change only under its own key (and states, which poll writes for every node).
	mu      sync.Mutex
	nodes   map[string]types.UID // simulator node → UID of the pod it stands for
	execs   map[string]execID    // pods (namespace/name) whose Exec and Logs exist, as applied
	podLogs string               // where the simulator writes each node's log (Options.LogDir)
	tools   map[string]toolRun   // backup-tool pods (namespace/name) whose tool was started
	volumes map[string]*projections
	inits   map[string]*initFailure // pods (namespace/name) whose init container is failing or waits
	reports map[string]initReports  // pods (namespace/name): their init containers' termination messages
	// prepared: the pod (UID) whose prepare-volumes container ran, by pod key: it never erases twice.
	prepared map[string]types.UID
	states   map[string]aerosim.NodeState // simulator node → its state at the last poll
	// claimsDir and scratchDir hold the files of the tool pods' claims and of their other paths.
	claimsDir, scratchDir string
	s3Addr                string // where the S3-compatible store listens (Options.Ports.S3)
	opts                  Options
	real                  *realBackend   // the pods on RealNode, when Options.RealNodes
	runs                  sync.WaitGroup // the tools running; Run waits for them
}

// execID is what a pod's Exec was applied for: the pod's UID, its AnnotationExecHang and the socket
// its commands are forwarded to (a pod scheduled onto RealNode after its first sync gets one).
type execID struct {
	uid          types.UID
	hang, socket string
}

// projections are what was projected into a pod's ConfigMap volumes (volume → digest), and since
// when a newer content waits for its turn.
type projections struct {
	uid     types.UID
	digests map[string]string
	pending map[string]time.Time
}

// NewSyncer returns a Syncer for the cluster at cfg and the simulator of opts, logging to out.
func NewSyncer(cfg *rest.Config, opts Options, out io.Writer) (*Syncer, error) {
	cfg = rest.CopyConfig(cfg)
	cfg.QPS, cfg.Burst = SyncQPS, 2*SyncQPS
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return &Syncer{kube: kube, dyn: dyn, sim: simclient.New(opts.AerosimURL()), out: out, podLogs: opts.path(podLogsDir),
		claimsDir: opts.path(claimsDir), scratchDir: opts.path(scratchDir), tools: map[string]toolRun{},
		s3Addr: opts.addr(opts.Ports.S3), opts: opts, started: make(chan struct{}),
		projection: opts.ProjectionDelay, lbNet: opts.LoadBalancerNet, workers: SyncWorkers,
		queue: workqueue.NewTypedRateLimitingQueue(workqueue.NewTypedItemExponentialFailureRateLimiter[string](
			100*time.Millisecond, 5*time.Second)),
		nodes: map[string]types.UID{}, execs: map[string]execID{}, volumes: map[string]*projections{},
		inits: map[string]*initFailure{}, reports: map[string]initReports{}, prepared: map[string]types.UID{},
		states: map[string]aerosim.NodeState{}}, nil
}

// Run syncs, and runs the service proxy (serviceproxy.go), until ctx ends.
func (s *Syncer) Run(ctx context.Context) error {
	factory := informers.NewSharedInformerFactory(s.kube, 0)
	proxy, err := newServiceProxy(s.kube, factory, s.lbNet, s.logf)
	if err != nil {
		return err
	}
	informers, err := s.watch(factory)
	if err != nil {
		return err
	}
	// The informers stop with ctx: a Run that ends early (an error) stops them itself, or Shutdown
	// would wait for them for ever and the error would never be seen.
	ctx, stop := context.WithCancel(ctx)
	factory.Start(ctx.Done())
	defer func() {
		stop()
		factory.Shutdown()
	}()
	proxyCtx, stopProxy := context.WithCancel(ctx)
	proxyDone := make(chan struct{})
	go func() {
		defer close(proxyDone)
		proxy.run(proxyCtx)
	}()
	// Down waits for Run: the proxy's listeners and connections are closed by then.
	defer func() {
		stopProxy()
		<-proxyDone
	}()
	stopStore, err := serveS3(s.s3Addr)
	if err != nil {
		return err
	}
	defer stopStore()
	for _, informer := range informers {
		if !cache.WaitForCacheSync(ctx.Done(), informer.HasSynced) {
			return ctx.Err()
		}
	}
	if err := s.enqueueSimulated(ctx); err != nil {
		return err
	}
	if s.opts.RealNodes {
		real, stop, err := startReal(ctx, s.opts, s.logf)
		if err != nil {
			return err
		}
		defer stop()
		s.real = real
		s.queue.Add(dnsKey) // and so every real pod
	}
	s.queue.Add(pollKey)
	close(s.started)
	go func() {
		<-ctx.Done()
		s.queue.ShutDown()
	}()
	var workers sync.WaitGroup
	for range s.workers {
		workers.Go(func() {
			for s.next(ctx) {
			}
		})
	}
	workers.Wait()
	s.runs.Wait()
	return nil
}

// watch sets the listers and queues what each informer's events change; it returns the informers.
func (s *Syncer) watch(factory informers.SharedInformerFactory) ([]cache.SharedIndexInformer, error) {
	pods, services, configMaps := factory.Core().V1().Pods(), factory.Core().V1().Services(),
		factory.Core().V1().ConfigMaps()
	claims := factory.Core().V1().PersistentVolumeClaims()
	s.pods, s.services, s.configMaps, s.claims = pods.Lister(), services.Lister(), configMaps.Lister(), claims.Lister()
	handlers := map[cache.SharedIndexInformer]func(any){
		pods.Informer():       s.enqueuePod,
		services.Informer():   func(any) { s.queue.Add(dnsKey) },
		configMaps.Informer(): s.enqueueConfigMapUsers,
		claims.Informer():     s.enqueueResize,
	}
	watched := make([]cache.SharedIndexInformer, 0, len(handlers))
	for informer, enqueue := range handlers {
		if _, err := informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc:    enqueue,
			UpdateFunc: func(_, obj any) { enqueue(obj) },
			DeleteFunc: enqueue,
		}); err != nil {
			return nil, err
		}
		watched = append(watched, informer)
	}
	return watched, nil
}

// enqueueSimulated queues the pod of every simulated node, so that the nodes of pods that went
// while no syncer ran go too. A pod's key is its node's name.
func (s *Syncer) enqueueSimulated(ctx context.Context) error {
	nodes, err := s.sim.Nodes(ctx)
	if err != nil {
		return err
	}
	for _, n := range nodes {
		if ns, pod, ok := strings.Cut(n.Name, "/"); ok && ns != "" && pod != "" {
			s.queue.Add(n.Name)
		}
	}
	return nil
}

// unwrap is the object of an informer event, including a deletion the informer missed.
func unwrap(obj any) any {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		return d.Obj
	}
	return obj
}

func (s *Syncer) enqueuePod(obj any) {
	pod, ok := unwrap(obj).(*corev1.Pod)
	if !ok {
		return
	}
	s.queue.Add(dnsKey)
	if simulated(pod) || len(pod.Spec.ReadinessGates) > 0 || toolName(pod) != "" {
		s.queue.Add(pod.Namespace + "/" + pod.Name)
	}
}

// enqueueConfigMapUsers queues the simulated pods that mount the ConfigMap.
func (s *Syncer) enqueueConfigMapUsers(obj any) {
	cm, ok := unwrap(obj).(*corev1.ConfigMap)
	if !ok {
		return
	}
	pods, _ := s.pods.Pods(cm.Namespace).List(labels.Everything())
	for _, pod := range pods {
		for _, v := range pod.Spec.Volumes {
			if v.ConfigMap != nil && v.ConfigMap.Name == cm.Name && simulated(pod) {
				s.queue.Add(pod.Namespace + "/" + pod.Name)
			}
		}
	}
}

// enqueueResize queues a claim that asks for more storage than it holds.
func (s *Syncer) enqueueResize(obj any) {
	pvc, ok := unwrap(obj).(*corev1.PersistentVolumeClaim)
	if !ok || pvc.DeletionTimestamp != nil || pvc.Status.Phase != corev1.ClaimBound {
		return
	}
	want, have := pvc.Spec.Resources.Requests[corev1.ResourceStorage], pvc.Status.Capacity[corev1.ResourceStorage]
	if want.Cmp(have) > 0 {
		s.queue.Add(resizePrefix + pvc.Namespace + "/" + pvc.Name)
	}
}

// resize is the volume resizer's part (the external-resizer of a CSI driver, with online expansion):
// the claim's volume and then the claim hold what the claim asks for. The API server lets a claim ask
// for more only where its StorageClass allows expansion.
func (s *Syncer) resize(ctx context.Context, key string) error {
	namespace, name, _ := strings.Cut(strings.TrimPrefix(key, resizePrefix), "/")
	pvc, err := s.claims.PersistentVolumeClaims(namespace).Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	want := pvc.Spec.Resources.Requests[corev1.ResourceStorage]
	if have := pvc.Status.Capacity[corev1.ResourceStorage]; want.Cmp(have) <= 0 {
		return nil
	}
	if pvc.Spec.VolumeName != "" {
		pv, err := s.kube.CoreV1().PersistentVolumes().Get(ctx, pvc.Spec.VolumeName, metav1.GetOptions{})
		if err != nil {
			return err
		}
		pv.Spec.Capacity = corev1.ResourceList{corev1.ResourceStorage: want}
		if _, err := s.kube.CoreV1().PersistentVolumes().Update(ctx, pv, metav1.UpdateOptions{}); err != nil {
			return err
		}
	}
	pvc = pvc.DeepCopy()
	pvc.Status.Capacity = corev1.ResourceList{corev1.ResourceStorage: want}
	pvc.Status.AllocatedResources = corev1.ResourceList{corev1.ResourceStorage: want}
	if _, err := s.kube.CoreV1().PersistentVolumeClaims(namespace).UpdateStatus(ctx, pvc, metav1.UpdateOptions{}); err != nil {
		return err
	}
	s.logf("~ claim %s/%s resized to %s", namespace, name, want.String())
	return nil
}

// simulated reports whether the pod belongs in the simulated world: a pod of ACKO's (or the
// self-test's), but not a backup-tool pod, which is no Aerospike node even when ACKO labels it.
func simulated(pod *corev1.Pod) bool {
	return (pod.Labels[ackov1alpha1.LabelManagedBy] == ackov1alpha1.ManagedBy || pod.Labels[LabelSimulate] == "true") &&
		toolName(pod) == ""
}

func (s *Syncer) next(ctx context.Context) bool {
	key, quit := s.queue.Get()
	if quit {
		return false
	}
	defer s.queue.Done(key)
	var err error
	switch {
	case key == dnsKey:
		err = s.syncDNS(ctx)
	case key == pollKey:
		err = s.poll(ctx)
		s.queue.AddAfter(pollKey, nodePollInterval)
	case strings.HasPrefix(key, resizePrefix):
		err = s.resize(ctx, key)
	default:
		err = s.sync(ctx, key)
	}
	if err != nil {
		if ctx.Err() == nil {
			s.logf("%s: %v (retrying)", key, err)
		}
		s.queue.AddRateLimited(key)
		return true
	}
	s.queue.Forget(key)
	return true
}

func (s *Syncer) sync(ctx context.Context, key string) error {
	namespace, name, _ := strings.Cut(key, "/")
	node := simclient.NodeName(namespace, name)
	pod, err := s.pods.Pods(namespace).Get(name)
	if apierrors.IsNotFound(err) {
		s.forget(key)
		var stopReal error
		if s.real != nil {
			stopReal = s.stopReal(key)
		}
		return errors.Join(stopReal, s.removeNode(ctx, node), s.deleteExec(ctx, namespace, name))
	}
	if err != nil {
		return err
	}
	if tool := toolName(pod); tool != "" {
		return s.syncTool(ctx, key, pod, tool) // its status is the tool's, not the readiness one
	}
	if s.real != nil && onRealNode(pod) && simulated(pod) {
		if err := s.syncReal(ctx, key, pod); err != nil {
			return err
		}
	} else if simulated(pod) {
		if err := s.syncSimulated(ctx, key, pod); err != nil {
			return err
		}
	}
	return s.syncStatus(ctx, key, pod)
}

func (s *Syncer) syncSimulated(ctx context.Context, key string, pod *corev1.Pod) error {
	if err := s.ensureExec(ctx, pod); err != nil {
		return err
	}
	if !running(pod) && !initializing(pod) {
		s.forget(key)
		return s.removeNode(ctx, simclient.NodeName(pod.Namespace, pod.Name))
	}
	if err := s.ensureNode(ctx, key, pod); err != nil {
		return err
	}
	return s.project(ctx, key, pod)
}

// forget drops what was recorded for a pod that no longer runs.
func (s *Syncer) forget(key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.volumes, key)
	delete(s.inits, key)
	delete(s.reports, key)
	delete(s.prepared, key)
	if run, ok := s.tools[key]; ok {
		run.cancel()
		delete(s.tools, key)
	}
}

// running: the pod is up with an IP and not shutting down (asd stops at deletion, not after it).
func running(pod *corev1.Pod) bool {
	return pod.DeletionTimestamp == nil && pod.Status.Phase == corev1.PodRunning && pod.Status.PodIP != ""
}

// initializing: the pod is up with an IP, not shutting down, and its status shows an init
// container failing (the sync loop made it Pending), so its init container runs again.
func initializing(pod *corev1.Pod) bool {
	return pod.DeletionTimestamp == nil && pod.Status.Phase == corev1.PodPending && pod.Status.PodIP != "" &&
		(initFailedIn(&pod.Status) || initRunningIn(&pod.Status))
}

// ensureNode makes the simulator run a node for exactly this pod (UID) at its IP, with the pod's
// files as its containers find them at start. While an init container fails, no node runs; it
// runs again once its back-off is over.
func (s *Syncer) ensureNode(ctx context.Context, key string, pod *corev1.Pod) error {
	name := simclient.NodeName(pod.Namespace, pod.Name)
	s.mu.Lock()
	known, tracked := s.nodes[name]
	f := s.inits[key]
	s.mu.Unlock()
	if known == pod.UID {
		return nil
	}
	if f.backingOff(key, pod, s.queue) {
		return nil
	}
	st, err := s.sim.Node(ctx, name)
	switch {
	case err == nil && !tracked && st.IP == pod.Status.PodIP:
		s.mu.Lock()
		s.nodes[name] = pod.UID // this syncer restarted; the node is the pod's
		s.mu.Unlock()
		return nil
	case err == nil:
		// An earlier pod of that name: it is gone, this one is a fresh asd.
		if err := s.removeNode(ctx, name); err != nil {
			return err
		}
	case !errors.Is(err, aerosim.ErrNotFound):
		return err
	}
	vols, digests, ok, err := s.initDone(key, pod)
	if !ok || err != nil {
		return err
	}
	spec, err := s.startSpec(key, pod, vols)
	if err != nil {
		return err
	}
	s.mu.Lock()
	delete(s.inits, key)
	s.mu.Unlock()
	st, err = s.sim.AddNode(ctx, spec)
	if err != nil {
		return err
	}
	s.mu.Lock()
	s.prepared[key] = pod.UID
	s.nodes[name] = pod.UID
	s.states[name] = st
	s.volumes[key] = &projections{uid: pod.UID, digests: digests, pending: map[string]time.Time{}}
	s.mu.Unlock()
	s.logf("+ node %s at %s:3000 (%s, asd %s)", name, pod.Status.PodIP, nodeKind(spec), st.Phase)
	return nil
}

// startSpec is the node of the pod: its claims named with their UIDs (a new claim under the same
// name is a new, empty volume), and those its prepare-volumes container erased, the first time it
// ran in this pod (the script marks a volume done in the pod's emptyDir).
func (s *Syncer) startSpec(key string, pod *corev1.Pod, vols volumeFiles) (aerosim.NodeSpec, error) {
	spec := nodeSpec(pod, vols)
	var err error
	if spec.Volume, err = s.withClaimUIDs(spec.Volume); err != nil || !resources.PreparesVolumes(pod) {
		return spec, err
	}
	s.mu.Lock()
	done := s.prepared[key] == pod.UID
	s.mu.Unlock()
	if done {
		return spec, nil
	}
	erased, err := erasedClaims(pod)
	if err != nil {
		return spec, err
	}
	named, err := s.withClaimUIDs(strings.Join(erased, ","))
	if named != "" {
		spec.EraseVolumes = strings.Split(named, ",")
	}
	return spec, err
}

// withClaimUIDs names each claim of a list ("namespace/claim,...") with its UID ("namespace/claim@uid").
func (s *Syncer) withClaimUIDs(list string) (string, error) {
	if list == "" {
		return "", nil
	}
	claims := strings.Split(list, ",")
	for i, c := range claims {
		ns, name, _ := strings.Cut(c, "/")
		pvc, err := s.claims.PersistentVolumeClaims(ns).Get(name)
		if err != nil {
			return "", fmt.Errorf("claim %s: %w", c, err)
		}
		claims[i] = c + "@" + string(pvc.UID)
	}
	return strings.Join(claims, ","), nil
}

// backingOff reports whether the pod's failed init container waits out its back-off (and queues the
// pod for its end).
func (f *initFailure) backingOff(key string, pod *corev1.Pod, queue workqueue.TypedRateLimitingInterface[string]) bool {
	if f == nil || f.uid != pod.UID {
		return false
	}
	wait := time.Until(f.retry)
	if wait > 0 {
		queue.AddAfter(key, wait)
	}
	return wait > 0
}

// initDone runs the pod's init containers on its volumes (startFiles); ok is false while one fails
// or waits (recorded: the pod's status shows it).
func (s *Syncer) initDone(key string, pod *corev1.Pod) (volumeFiles, map[string]string, bool, error) {
	vols, digests, err := startFiles(pod, s.configMaps)
	if failed := (*initError)(nil); errors.As(err, &failed) {
		s.initFailed(key, pod, failed)
		return nil, nil, false, nil
	}
	if err == nil {
		s.mu.Lock()
		s.reports[key] = initReports{uid: pod.UID, messages: vols[terminationLogs]}
		s.mu.Unlock()
	}
	return vols, digests, err == nil, err
}

// initReports are the termination messages of a pod instance's init containers, by container.
type initReports struct {
	uid      types.UID
	messages map[string]string
}

// initFailed records an init container's failure and when it runs again; or one that waits, which
// runs on when the pod changes.
func (s *Syncer) initFailed(key string, pod *corev1.Pod, failed *initError) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if failed.waiting {
		if f := s.inits[key]; f == nil || f.uid != pod.UID || !f.running {
			s.inits[key] = &initFailure{uid: pod.UID, container: failed.container, running: true, at: time.Now()}
			s.logf("%s: init container %s waits", key, failed.container)
		}
		return
	}
	f := s.inits[key]
	if f == nil || f.uid != pod.UID || f.container != failed.container {
		f = &initFailure{uid: pod.UID, container: failed.container,
			failures: initRestarts(&pod.Status, failed.container)}
		s.inits[key] = f
	}
	f.failures++
	f.output, f.at = failed.output, time.Now()
	backoff := initBackoff(f.failures)
	f.retry = f.at.Add(backoff)
	s.queue.AddAfter(key, backoff)
	s.logf("! %s: init container %s failed (%s), run %d; again in %s", key, failed.container, failed.output,
		f.failures, backoff)
}

func nodeKind(spec aerosim.NodeSpec) string {
	if spec.ConfigFile != "" {
		return "config " + spec.ConfigFile
	}
	return "cluster " + spec.Cluster
}

// project brings the ConfigMap volumes of a running pod up to date, ProjectionDelay after the
// ConfigMap changed, as the kubelet does (a subPath mount is never updated).
func (s *Syncer) project(ctx context.Context, key string, pod *corev1.Pod) error {
	s.mu.Lock()
	p := s.volumes[key] // its fields are this key's, changed by its worker only
	s.mu.Unlock()
	c := aerospikeContainer(pod)
	if p == nil || p.uid != pod.UID || c == nil {
		return nil
	}
	now := time.Now()
	for _, v := range pod.Spec.Volumes {
		if v.ConfigMap == nil {
			continue
		}
		files, err := projectedFiles(pod.Namespace, v.ConfigMap, s.configMaps)
		if err != nil || digest(files) == p.digests[v.Name] {
			delete(p.pending, v.Name)
			continue
		}
		since, ok := p.pending[v.Name]
		if !ok {
			since, p.pending[v.Name] = now, now
		}
		if wait := since.Add(s.projection).Sub(now); wait > 0 {
			s.queue.AddAfter(key, wait)
			continue
		}
		if err := s.setVolume(ctx, pod, c, v.Name, files); err != nil {
			return err
		}
		p.digests[v.Name] = digest(files)
		delete(p.pending, v.Name)
		s.logf("~ %s: ConfigMap %s projected into volume %s", key, v.ConfigMap.Name, v.Name)
	}
	return nil
}

// setVolume replaces the files of a volume at each of the container's mounts of it.
func (s *Syncer) setVolume(ctx context.Context, pod *corev1.Pod, c *corev1.Container, volume string,
	files map[string]string) error {
	for _, m := range c.VolumeMounts {
		if m.Name != volume || m.SubPath != "" {
			continue
		}
		flat := maps.Clone(files)
		maps.DeleteFunc(flat, func(name, _ string) bool { return strings.Contains(name, "/") })
		if s.real != nil && onRealNode(pod) {
			if _, err := s.setRealVolume(pod.Namespace+"/"+pod.Name, volume, flat); err != nil {
				return err
			}
			continue
		}
		if err := s.sim.SetDir(ctx, simclient.NodeName(pod.Namespace, pod.Name), path.Clean(m.MountPath), flat); err != nil {
			return err
		}
	}
	return nil
}

// syncStatus writes the pod's status as a kubelet would (readiness.go).
func (s *Syncer) syncStatus(ctx context.Context, key string, pod *corev1.Pod) error {
	var node *aerosim.NodeState
	if s.real != nil && onRealNode(pod) {
		node = s.real.state(key, pod.UID)
	}
	s.mu.Lock()
	if st, ok := s.states[simclient.NodeName(pod.Namespace, pod.Name)]; ok && s.nodes[st.Name] == pod.UID {
		node = &st
	}
	init, reports := s.inits[key], s.reports[key]
	s.mu.Unlock()
	if init != nil && init.uid != pod.UID {
		init = nil
	}
	if reports.uid != pod.UID {
		reports = initReports{}
	}
	status, changed := desiredStatus(pod, node, init, reports.messages, time.Now())
	if !changed {
		return nil
	}
	updated := pod.DeepCopy()
	updated.Status = *status
	_, err := s.kube.CoreV1().Pods(pod.Namespace).UpdateStatus(ctx, updated, metav1.UpdateOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// poll reads the simulator's nodes and queues the pods whose node changed in a way their status
// shows (asd refusing its config, or running again).
func (s *Syncer) poll(ctx context.Context) error {
	nodes, err := s.sim.Nodes(ctx)
	if err != nil {
		return err
	}
	seen := map[string]bool{}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, n := range nodes {
		seen[n.Name] = true
		old, ok := s.states[n.Name]
		s.states[n.Name] = n
		if !ok || old.Phase != n.Phase || old.Crashes != n.Crashes || old.Error != n.Error {
			s.queue.Add(n.Name)
		}
	}
	maps.DeleteFunc(s.states, func(name string, _ aerosim.NodeState) bool { return !seen[name] })
	return nil
}

// syncDNS pushes the cluster DNS to the simulator when it changed.
func (s *Syncer) syncDNS(ctx context.Context) error {
	records, err := s.dnsView()
	if err != nil {
		return err
	}
	if s.dnsPushed != nil && reflect.DeepEqual(records, s.dnsPushed) {
		return nil
	}
	if err := s.sim.SetDNS(ctx, records); err != nil {
		return err
	}
	s.dnsPushed = records
	if s.real != nil {
		for _, key := range s.real.podKeys() {
			s.queue.Add(key) // its /etc/hosts follows
		}
	}
	return nil
}

// dnsView is the cluster DNS as the listers show it now: what the simulated nodes and the tools
// resolve names with.
func (s *Syncer) dnsView() (map[string][]string, error) {
	services, err := s.services.List(labels.Everything())
	if err != nil {
		return nil, err
	}
	pods, err := s.pods.List(labels.Everything())
	if err != nil {
		return nil, err
	}
	return dnsRecords(services, pods), nil
}

func (s *Syncer) removeNode(ctx context.Context, name string) error {
	err := s.sim.RemoveNode(ctx, name)
	if err != nil && !errors.Is(err, aerosim.ErrNotFound) {
		return err
	}
	s.mu.Lock()
	delete(s.nodes, name)
	delete(s.states, name)
	s.mu.Unlock()
	if err == nil {
		s.logf("- node %s", name)
	}
	return nil
}

// ensureExec applies the pod's kwok Exec: kwok passes an exec'd command only the Exec's static
// env, so this is how the shims learn which pod (and node) a command is for, and where its
// volumes are.
func (s *Syncer) ensureExec(ctx context.Context, pod *corev1.Pod) error {
	socket := ""
	if s.real != nil && onRealNode(pod) {
		socket = s.real.socket
	}
	key, id := pod.Namespace+"/"+pod.Name, execID{uid: pod.UID, hang: pod.Annotations[AnnotationExecHang], socket: socket}
	s.mu.Lock()
	applied := s.execs[key]
	s.mu.Unlock()
	if applied == id {
		return nil
	}
	for gvr, obj := range map[schema.GroupVersionResource]*unstructured.Unstructured{
		execGVR: execFor(pod, socket), logsGVR: s.logsFor(pod)} {
		if err := s.apply(ctx, gvr, obj); err != nil {
			return err
		}
	}
	s.mu.Lock()
	s.execs[key] = id
	s.mu.Unlock()
	return nil
}

// apply applies one of a pod's kwok objects (kwokObject), as the sync loop's own.
func (s *Syncer) apply(ctx context.Context, gvr schema.GroupVersionResource, obj *unstructured.Unstructured) error {
	_, err := s.dyn.Resource(gvr).Namespace(obj.GetNamespace()).Apply(ctx, obj.GetName(), obj,
		metav1.ApplyOptions{FieldManager: fieldManager, Force: true})
	if err != nil {
		return fmt.Errorf("apply %s: %w", obj.GetKind(), err)
	}
	return nil
}

func (s *Syncer) deleteExec(ctx context.Context, namespace, name string) error {
	for _, gvr := range []schema.GroupVersionResource{execGVR, logsGVR} {
		err := s.dyn.Resource(gvr).Namespace(namespace).Delete(ctx, name, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("delete %s: %w", gvr.Resource, err)
		}
	}
	s.mu.Lock()
	delete(s.execs, namespace+"/"+name)
	s.mu.Unlock()
	return nil
}

// execFor is the kwok Exec of a pod: each container runs commands locally (in kwok's PID
// namespace) with POD_NAME, POD_NAMESPACE and its volume mounts set; the Aerospike container's
// files are the simulator's. AnnotationExecHang passes on to every container's commands. With a
// forwarding socket (a pod on RealNode), every command runs in the pod's real node instead.
func execFor(pod *corev1.Pod, socket string) *unstructured.Unstructured {
	env := func(name, value string) any { return map[string]any{"name": name, "value": value} }
	aerospike := aerospikeContainer(pod)
	execs := make([]any, 0, len(pod.Spec.Containers))
	for i := range pod.Spec.Containers {
		c := &pod.Spec.Containers[i]
		sim := "false"
		if c == aerospike {
			sim = "true"
		}
		envs := []any{env("POD_NAME", pod.Name), env("POD_NAMESPACE", pod.Namespace),
			env(fakeinit.EnvMounts, mountPaths(c)), env(fakeinit.EnvSimFiles, sim)}
		if hang := pod.Annotations[AnnotationExecHang]; hang != "" {
			envs = append(envs, env(fakeinit.EnvHang, hang))
		}
		if socket != "" {
			envs = append(envs, env(fakeinit.EnvForwardSocket, socket), env(fakeinit.EnvForwardNode, realNodeName(pod)))
		}
		execs = append(execs, map[string]any{"containers": []any{c.Name}, "local": map[string]any{"envs": envs}})
	}
	return kwokObject("Exec", pod, map[string]any{"execs": execs})
}

// fieldManager applies the sync loop's objects.
const fieldManager = "acko-localcluster"

// kwokObject is one of kwok's per-pod objects (Exec, Logs), named like the pod.
func kwokObject(kind string, pod *corev1.Pod, spec map[string]any) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "kwok.x-k8s.io/v1alpha1",
		"kind":       kind,
		"metadata": map[string]any{
			"name":      pod.Name,
			"namespace": pod.Namespace,
			"labels":    map[string]any{ackov1alpha1.LabelManagedBy: fieldManager},
		},
		"spec": spec,
	}}
}

// logsFor is the kwok Logs of a pod: its Aerospike container's log is its simulated node's (a tool
// pod's first container's, its tool's output).
func (s *Syncer) logsFor(pod *corev1.Pod) *unstructured.Unstructured {
	file := s.logFile(pod)
	container := ackov1alpha1.AerospikeContainerName
	if c := aerospikeContainer(pod); c != nil {
		container = c.Name
	}
	return kwokObject("Logs", pod, map[string]any{
		logsResource: []any{map[string]any{"containers": []any{container}, "logsFile": file}}})
}

// logFile is where the pod's log is: in the simulator's LogDir, named as its nodes' logs are.
func (s *Syncer) logFile(pod *corev1.Pod) string {
	return filepath.Join(s.podLogs, aerosim.LogFile(simclient.NodeName(pod.Namespace, pod.Name)))
}

func (s *Syncer) logf(format string, args ...any) {
	_, _ = fmt.Fprintf(s.out, "[sync] "+format+"\n", args...)
}
