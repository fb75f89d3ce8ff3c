package localcluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
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
	"github.com/acko-io/acko/test/aerosim"
	"github.com/acko-io/acko/test/localcluster/simclient"
)

// LabelSimulate puts a pod that ACKO does not manage (the harness's self-test) in the simulated
// world too.
const LabelSimulate = "localcluster.acko.io/simulate"

var execGVR = schema.GroupVersionResource{Group: "kwok.x-k8s.io", Version: "v1alpha1", Resource: "execs"}

// Syncer keeps the simulated world in step with the pods of ACKO (and of the self-test): each
// such pod gets a kwok Exec that tells its exec'd commands who they run for, and, while it runs,
// a simulated Aerospike node at its IP. A pod recreated under the same name (new UID) is a node
// that restarted: the old node goes, a new one starts with uptime 0.
type Syncer struct {
	kube  kubernetes.Interface
	dyn   dynamic.Interface
	sim   *simclient.Client
	out   io.Writer
	pods  corelisters.PodLister
	queue workqueue.TypedRateLimitingInterface[string]
	// Touched by the single worker only.
	nodes map[string]types.UID // simulator node → UID of the pod it stands for
	execs map[string]bool      // pods (namespace/name) whose Exec exists
}

// NewSyncer returns a Syncer for the cluster at cfg and the simulator at simURL, logging to out.
func NewSyncer(cfg *rest.Config, simURL string, out io.Writer) (*Syncer, error) {
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return &Syncer{kube: kube, dyn: dyn, sim: simclient.New(simURL), out: out,
		queue: workqueue.NewTypedRateLimitingQueue(workqueue.NewTypedItemExponentialFailureRateLimiter[string](
			100*time.Millisecond, 5*time.Second)),
		nodes: map[string]types.UID{}, execs: map[string]bool{}}, nil
}

// Run syncs until ctx ends.
func (s *Syncer) Run(ctx context.Context) error {
	factory := informers.NewSharedInformerFactory(s.kube, 0)
	informer := factory.Core().V1().Pods()
	s.pods = informer.Lister()
	if _, err := informer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    s.enqueue,
		UpdateFunc: func(_, obj any) { s.enqueue(obj) },
		DeleteFunc: s.enqueue,
	}); err != nil {
		return err
	}
	factory.Start(ctx.Done())
	defer factory.Shutdown()
	if !cache.WaitForCacheSync(ctx.Done(), informer.Informer().HasSynced) {
		return ctx.Err()
	}
	if err := s.enqueueSimulated(ctx); err != nil {
		return err
	}
	go func() {
		<-ctx.Done()
		s.queue.ShutDown()
	}()
	for s.next(ctx) {
	}
	return nil
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

func (s *Syncer) enqueue(obj any) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	pod, ok := obj.(*corev1.Pod)
	if !ok || !simulated(pod) {
		return
	}
	s.queue.Add(pod.Namespace + "/" + pod.Name)
}

// simulated reports whether the pod belongs in the simulated world.
func simulated(pod *corev1.Pod) bool {
	return pod.Labels[ackov1alpha1.LabelManagedBy] == ackov1alpha1.ManagedBy || pod.Labels[LabelSimulate] == "true"
}

func (s *Syncer) next(ctx context.Context) bool {
	key, quit := s.queue.Get()
	if quit {
		return false
	}
	defer s.queue.Done(key)
	if err := s.sync(ctx, key); err != nil {
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
		return errors.Join(s.removeNode(ctx, node), s.deleteExec(ctx, namespace, name))
	}
	if err != nil {
		return err
	}
	if err := s.ensureExec(ctx, pod); err != nil {
		return err
	}
	if !running(pod) {
		return s.removeNode(ctx, node)
	}
	return s.ensureNode(ctx, pod)
}

// running: the pod is up with an IP and not shutting down (asd stops at deletion, not after it).
func running(pod *corev1.Pod) bool {
	return pod.DeletionTimestamp == nil && pod.Status.Phase == corev1.PodRunning && pod.Status.PodIP != ""
}

// ensureNode makes the simulator run a node for exactly this pod (UID) at its IP.
func (s *Syncer) ensureNode(ctx context.Context, pod *corev1.Pod) error {
	name := simclient.NodeName(pod.Namespace, pod.Name)
	known, tracked := s.nodes[name]
	if known == pod.UID {
		return nil
	}
	st, err := s.sim.Node(ctx, name)
	switch {
	case err == nil && !tracked && st.IP == pod.Status.PodIP:
		s.nodes[name] = pod.UID // this syncer restarted; the node is the pod's
		return nil
	case err == nil:
		// An earlier pod of that name: it is gone, this one is a fresh asd.
		if err := s.removeNode(ctx, name); err != nil {
			return err
		}
	case !errors.Is(err, aerosim.ErrNotFound):
		return err
	}
	cluster := simclient.ClusterName(pod.Namespace, pod.Labels[ackov1alpha1.LabelInstance])
	if _, err := s.sim.AddNode(ctx, aerosim.NodeSpec{Cluster: cluster, Name: name, IP: pod.Status.PodIP}); err != nil {
		return err
	}
	s.nodes[name] = pod.UID
	s.logf("+ node %s at %s:3000 (cluster %s)", name, pod.Status.PodIP, cluster)
	return nil
}

func (s *Syncer) removeNode(ctx context.Context, name string) error {
	err := s.sim.RemoveNode(ctx, name)
	if errors.Is(err, aerosim.ErrNotFound) {
		delete(s.nodes, name)
		return nil
	}
	if err != nil {
		return err
	}
	delete(s.nodes, name)
	s.logf("- node %s", name)
	return nil
}

// ensureExec creates the pod's kwok Exec: kwok passes an exec'd command only the Exec's static
// env, so this is how the kill shim learns which pod (and node) a `kill -USR1 1` is for.
func (s *Syncer) ensureExec(ctx context.Context, pod *corev1.Pod) error {
	key := pod.Namespace + "/" + pod.Name
	if s.execs[key] {
		return nil
	}
	_, err := s.dyn.Resource(execGVR).Namespace(pod.Namespace).Create(ctx, execFor(pod), metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create Exec: %w", err)
	}
	s.execs[key] = true
	return nil
}

func (s *Syncer) deleteExec(ctx context.Context, namespace, name string) error {
	err := s.dyn.Resource(execGVR).Namespace(namespace).Delete(ctx, name, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete Exec: %w", err)
	}
	delete(s.execs, namespace+"/"+name)
	return nil
}

// execFor is the kwok Exec of a pod: every container runs commands locally (in kwok's PID
// namespace) with POD_NAME and POD_NAMESPACE set.
func execFor(pod *corev1.Pod) *unstructured.Unstructured {
	env := func(name, value string) any { return map[string]any{"name": name, "value": value} }
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "kwok.x-k8s.io/v1alpha1",
		"kind":       "Exec",
		"metadata": map[string]any{
			"name":      pod.Name,
			"namespace": pod.Namespace,
			"labels":    map[string]any{ackov1alpha1.LabelManagedBy: "acko-localcluster"},
		},
		"spec": map[string]any{"execs": []any{map[string]any{"local": map[string]any{
			"envs": []any{env("POD_NAME", pod.Name), env("POD_NAMESPACE", pod.Namespace)},
		}}}},
	}}
}

func (s *Syncer) logf(format string, args ...any) {
	_, _ = fmt.Fprintf(s.out, "[sync] "+format+"\n", args...)
}
