package controller

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"

	ackov1alpha1 "github.com/acko-io/acko/api/v1alpha1"
	"github.com/acko-io/acko/internal/aerospike"
)

// world stands in for what envtest does not run: the StatefulSet controller and kubelet (it
// creates, readies and removes pods as a StatefulSet would), and the Aerospike nodes behind the
// prober (health computed from the pods, with knobs to make the cluster unstable). Tests assert on
// the API objects the real operator code produced.
type world struct {
	c         client.Client
	namespace string

	mu          sync.Mutex
	started     map[types.UID]time.Time // when each pod instance's asd started
	warm        map[string]int          // warm restarts per pod name
	migrating   bool
	unreachable bool
	holdReady   map[string]bool // pods kept not Ready
	// holdRecreated: pods whose next instance is kept not Ready (it joins holdReady when created),
	// to stop an operation on a pod after its PodRestart without blocking the operation's start.
	holdRecreated map[string]bool
	// signalErr, when set, makes WarmRestart fail with its error for a pod, before any signal (e.g.
	// PID 1 is not tini, or the operator process is gone).
	signalErr func(pod string) error
	created   map[string]int // pod instances created per name
	probed    map[types.NamespacedName]aerospike.ProbeSpec
	events    chan event.GenericEvent
	// prober, when set, replaces the world's own health (a real prober over a simulator).
	prober *aerospike.ProberManager
	// podIP, when set, picks pod addresses (e.g. loopback addresses a simulator serves).
	podIP func(pod *corev1.Pod, ordinal int) string
}

func (w *world) healthEvents() <-chan event.GenericEvent {
	if w.prober != nil {
		return w.prober.Events()
	}
	return w.events
}

func newWorld(c client.Client, namespace string) *world {
	return &world{
		c: c, namespace: namespace,
		started: map[types.UID]time.Time{}, warm: map[string]int{}, holdReady: map[string]bool{}, created: map[string]int{},
		holdRecreated: map[string]bool{},
		probed:        map[types.NamespacedName]aerospike.ProbeSpec{}, events: make(chan event.GenericEvent, 1024),
	}
}

// run steps the world every interval until ctx ends.
func (w *world) run(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			_ = w.step(ctx)
		}
	}
}

// step makes the pods match their StatefulSets, once.
func (w *world) step(ctx context.Context) error {
	sets := &appsv1.StatefulSetList{}
	if err := w.c.List(ctx, sets, client.InNamespace(w.namespace)); err != nil {
		return err
	}
	changed := false
	for i := range sets.Items {
		c, err := w.syncSet(ctx, &sets.Items[i])
		if err != nil {
			return err
		}
		changed = changed || c
	}
	if changed {
		w.wake()
	}
	return nil
}

func (w *world) syncSet(ctx context.Context, sts *appsv1.StatefulSet) (bool, error) {
	pods := &corev1.PodList{}
	if err := w.c.List(ctx, pods, client.InNamespace(w.namespace), client.MatchingLabels(sts.Spec.Selector.MatchLabels)); err != nil {
		return false, err
	}
	have := map[int]*corev1.Pod{}
	for i := range pods.Items {
		o, _ := strconv.Atoi(pods.Items[i].Name[strings.LastIndex(pods.Items[i].Name, "-")+1:])
		have[o] = &pods.Items[i]
	}
	changed := false
	if sts.Status.ObservedGeneration != sts.Generation {
		sts.Status.ObservedGeneration = sts.Generation
		if err := w.c.Status().Update(ctx, sts); err != nil {
			return false, err
		}
	}
	replicas := int(ptr.Deref(sts.Spec.Replicas, 1))
	for o, pod := range have {
		if o >= replicas {
			changed = true
			if err := client.IgnoreNotFound(w.c.Delete(ctx, pod)); err != nil {
				return changed, err
			}
		}
	}
	for o := range replicas {
		pod := have[o]
		if pod == nil {
			changed = true
			if err := w.createPod(ctx, sts, o); err != nil && !apierrors.IsAlreadyExists(err) {
				return changed, err
			}
			continue
		}
		c, err := w.readyPod(ctx, pod, o)
		if err != nil {
			return changed, err
		}
		changed = changed || c
	}
	return changed, nil
}

func (w *world) createPod(ctx context.Context, sts *appsv1.StatefulSet, ordinal int) error {
	t := sts.Spec.Template
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: fmt.Sprintf("%s-%d", sts.Name, ordinal), Namespace: sts.Namespace,
			Labels: t.Labels, Annotations: t.Annotations,
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(sts, appsv1.SchemeGroupVersion.WithKind("StatefulSet"))},
		},
		Spec: *t.Spec.DeepCopy(),
	}
	if err := w.c.Create(ctx, pod); err != nil {
		return err
	}
	w.mu.Lock()
	w.created[pod.Name]++
	if w.holdRecreated[pod.Name] {
		w.holdReady[pod.Name] = true
	}
	w.mu.Unlock()
	return nil
}

// creations is how many instances of each pod were created.
func (w *world) creations() map[string]int {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := map[string]int{}
	for k, v := range w.created {
		out[k] = v
	}
	return out
}

// readyPod gives a new pod an IP and makes it Ready, unless the test holds it back.
func (w *world) readyPod(ctx context.Context, pod *corev1.Pod, ordinal int) (bool, error) {
	w.mu.Lock()
	hold := w.holdReady[pod.Name]
	if _, ok := w.started[pod.UID]; !ok {
		w.started[pod.UID] = time.Now()
	}
	w.mu.Unlock()
	ready := !hold
	if pod.Status.PodIP != "" && podIsReady(pod) == ready {
		return false, nil
	}
	status := corev1.ConditionTrue
	if !ready {
		status = corev1.ConditionFalse
	}
	pod.Status.Phase = corev1.PodRunning
	pod.Status.PodIP = fmt.Sprintf("10.0.%d.%d", len(pod.Name)%250, ordinal+1)
	if w.podIP != nil {
		pod.Status.PodIP = w.podIP(pod, ordinal)
	}
	pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: status, LastTransitionTime: metav1.Now()}}
	return true, w.c.Status().Update(ctx, pod)
}

func podIsReady(pod *corev1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func (w *world) wake() {
	w.mu.Lock()
	keys := make([]types.NamespacedName, 0, len(w.probed))
	for k := range w.probed {
		keys = append(keys, k)
	}
	w.mu.Unlock()
	for _, k := range keys {
		obj := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: k.Namespace, Name: k.Name}}
		select {
		case w.events <- event.GenericEvent{Object: obj}:
		default:
		}
	}
}

// set changes a knob under the lock and wakes the reconciler, as the prober would on a change.
func (w *world) set(f func(w *world)) {
	w.mu.Lock()
	f(w)
	w.mu.Unlock()
	w.wake()
}

// Ensure implements Prober.
func (w *world) Ensure(key types.NamespacedName, spec aerospike.ProbeSpec) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.probed[key] = spec
}

// Stop implements Prober.
func (w *world) Stop(key types.NamespacedName) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.probed, key)
}

// Snapshot implements Prober: every probed pod that runs answers, in one cluster whose size is
// the number of answering nodes.
func (w *world) Snapshot(key types.NamespacedName) (aerospike.ClusterHealth, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	spec, ok := w.probed[key]
	if !ok {
		return aerospike.ClusterHealth{}, false
	}
	now := time.Now()
	pods := &corev1.PodList{}
	_ = w.c.List(context.Background(), pods, client.InNamespace(key.Namespace))
	byName := map[string]*corev1.Pod{}
	for i := range pods.Items {
		byName[pods.Items[i].Name] = &pods.Items[i]
	}
	var up []string
	for _, t := range spec.Targets {
		if p := byName[t.PodName]; p != nil && p.DeletionTimestamp == nil && !w.unreachable {
			if _, started := w.started[p.UID]; started {
				up = append(up, t.PodName)
			}
		}
	}
	sort.Strings(up)
	health := aerospike.ClusterHealth{ExpectedSize: spec.ExpectedSize, Nodes: map[string]aerospike.NodeHealth{}, ReadAt: now}
	for _, t := range spec.Targets {
		h := aerospike.NodeHealth{Addr: t.Addr, ReadAt: now, Err: aerospike.ErrUnreachable}
		if p := byName[t.PodName]; p != nil && slices.Contains(up, t.PodName) {
			var migrations int64
			if w.migrating {
				migrations = 100
			}
			h.Err = nil
			h.Facts = aerospike.NodeFacts{
				NodeID: t.PodName, Uptime: now.Sub(w.started[p.UID]), ClusterSize: len(up),
				ClusterKey: fmt.Sprintf("KEY%d", len(up)), ClusterIntegrity: true, MigratePartitionsRemaining: migrations,
			}
		}
		health.Nodes[t.PodName] = h
	}
	return health, true
}

// WarmRestart implements podexec.Signaller: asd restarts in place (uptime from zero, same pod).
func (w *world) WarmRestart(_ context.Context, pod *corev1.Pod) error {
	w.mu.Lock()
	if w.signalErr != nil {
		if err := w.signalErr(pod.Name); err != nil {
			w.mu.Unlock()
			return err
		}
	}
	w.warm[pod.Name]++
	w.started[pod.UID] = time.Now()
	w.mu.Unlock()
	w.wake()
	return nil
}

func (w *world) warmRestarts(name string) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.warm[name]
}

var _ = ackov1alpha1.GroupVersion
