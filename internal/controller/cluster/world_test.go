package cluster

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"

	ackov1alpha1 "github.com/acko-io/acko/api/v1alpha1"
	"github.com/acko-io/acko/internal/aerospike"
	"github.com/acko-io/acko/internal/podexec"
	"github.com/acko-io/acko/internal/resources"
	"github.com/acko-io/acko/test/aerosim"
)

// world stands in for what envtest does not run: the StatefulSet controller and kubelet (it
// creates pods as a StatefulSet would, runs their containers, and sets Ready from the containers
// and the readiness gates), the disruption controller (PodDisruptionBudget status, which the API
// server's eviction reads), and the Aerospike nodes behind the prober (health computed from the
// pods, with knobs to make the cluster unstable). Tests assert on the API objects the real operator
// code produced.
type world struct {
	c         client.Client
	namespace string

	mu          sync.Mutex
	started     map[types.UID]time.Time // when each pod instance's asd started
	warm        map[string]int          // warm restarts per pod name
	loaded      map[string]string       // config identity each pod's asd loaded at its last warm restart
	migrating   bool
	unreachable bool
	holdReady   map[string]bool // pods whose containers are kept not ready
	// holdRecreated: pods whose next instance is kept not Ready (it joins holdReady when created),
	// to stop an operation on a pod after its PodRestart without blocking the operation's start.
	holdRecreated map[string]bool
	// signalErr, when set, makes PrepareRestart fail with its error for a pod, before any copy or
	// signal (e.g. PID 1 is not tini, or an exec that hangs).
	signalErr func(pod string) error
	// copied is the config identity PrepareRestart copied into each pod instance's own file.
	copied map[types.UID]string
	// execErr, when set, makes every exec into a pod fail with its error (the operator process is gone).
	execErr func(pod string) error
	// alone are pods whose nodes form a cluster of their own (a split brain).
	alone map[string]bool
	// down are pods whose asd does not run (crashed, its container not yet restarted): their nodes do
	// not answer.
	down map[string]bool
	// neverReady are container names whose readiness probe never passes (a sidecar's).
	neverReady map[string]bool
	// refuses, when set, says which config identities asd refuses. A pod instance whose own copy holds
	// such a file (copied by its init container, or by a warm restart) has an asd that never answers and
	// whose container crash-loops from crashFrom on: at once for a new instance, and after a warm restart
	// when the test says so (crashNow), as the kubelet reports asd's exit a while after the signal.
	refuses   func(configHash string) bool
	crashFrom map[types.UID]time.Time
	created   map[string]int // pod instances created per name
	probed    map[types.NamespacedName]aerospike.ProbeSpec
	events    chan event.GenericEvent
	// prober, when set, replaces the world's own health (a real prober over a simulator).
	prober *aerospike.ProberManager
	// podIP, when set, picks pod addresses (e.g. loopback addresses a simulator serves).
	podIP func(pod *corev1.Pod, ordinal int) string
	// workers, when set, is the operator's number of reconcile workers.
	workers int
	// podMonitors tells the operator the PodMonitor CRD exists.
	podMonitors bool
	// sim, when set, runs each pod's asd as a simulated node that speaks the info protocol over TCP on
	// a loopback IP, the pod's IP (world_sim_test.go): its files are the pod's own copy of aerospike.conf,
	// read at every start of asd, and the rack's ConfigMap as the kubelet projects it. Exec into the pod
	// reads and copies those files, and a warm restart restarts the node; the operator applies config
	// changes live through the real liveconfig.Applier. The health the operator reads stays the world's.
	sim *aerosim.Sim
	// simNodes: the pod instance each simulated node (by pod name) stands for, and its IP.
	simNodes map[string]simNode
	// configMaps: each ConfigMap's files, as the world's last step read them (sim or nodeOf only).
	configMaps map[string]map[string]string
	// nodeOf, when set, schedules each new pod on a Kubernetes node (by pod name), and the kubelet
	// runs a pod only once its ConfigMap holds the file its init container copies (the init
	// container fails, and is retried, until then).
	nodeOf func(pod string) string
	// placement, when set, schedules each new pod on a Kubernetes node (by pod name) without nodeOf's
	// wait for a file of the pod's own.
	placement func(pod string) string
	// lostNodes are Kubernetes nodes whose kubelet is gone: their pods keep their last status but are
	// not Ready (the node lifecycle controller's part), their asd does not answer, and no deletion of
	// theirs is confirmed.
	lostNodes map[string]bool
	// prepared counts the runs of prepare-volumes that changed a claim (a method other than None), by
	// claim UID.
	prepared   map[types.UID]int
	preparedIn map[types.UID]bool // pods whose prepare-volumes ran
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
		started: map[types.UID]time.Time{}, warm: map[string]int{}, loaded: map[string]string{}, copied: map[types.UID]string{},
		holdReady: map[string]bool{}, created: map[string]int{}, holdRecreated: map[string]bool{}, alone: map[string]bool{},
		down: map[string]bool{}, neverReady: map[string]bool{}, crashFrom: map[types.UID]time.Time{},
		probed: map[types.NamespacedName]aerospike.ProbeSpec{}, events: make(chan event.GenericEvent, 1024),
		simNodes: map[string]simNode{}, prepared: map[types.UID]int{}, preparedIn: map[types.UID]bool{},
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

// step makes the pods match their StatefulSets, and the budgets match the pods, once.
func (w *world) step(ctx context.Context) error {
	sets := &appsv1.StatefulSetList{}
	if err := w.c.List(ctx, sets, client.InNamespace(w.namespace)); err != nil {
		return err
	}
	if err := w.readConfigMaps(ctx); err != nil {
		return err
	}
	changed, err := w.storageControllers(ctx, sets.Items)
	if err != nil {
		return err
	}
	for i := range sets.Items {
		if sets.Items[i].DeletionTimestamp != nil {
			continue
		}
		c, err := w.syncSet(ctx, &sets.Items[i])
		if err != nil {
			return err
		}
		changed = changed || c
	}
	if err := w.syncBudgets(ctx); err != nil {
		return err
	}
	if changed {
		w.wake()
	}
	return nil
}

// storageControllers do what the garbage collector and a volume resizer would: a StatefulSet deleted
// with orphan propagation lets its pods go (no owner) and then goes; a claim that asks for more holds it.
func (w *world) storageControllers(ctx context.Context, sets []appsv1.StatefulSet) (bool, error) {
	orphaned, err := w.orphanPods(ctx, sets)
	if err != nil {
		return false, err
	}
	claims := &corev1.PersistentVolumeClaimList{}
	if err := w.c.List(ctx, claims, client.InNamespace(w.namespace)); err != nil {
		return false, err
	}
	released, err := w.releaseClaims(ctx, claims.Items)
	if err != nil {
		return false, err
	}
	resized, err := w.resizeClaims(ctx, claims.Items)
	return orphaned || released || resized, err
}

// orphanPods lets the pods of a StatefulSet deleted with orphan propagation go (no owner), and then it.
func (w *world) orphanPods(ctx context.Context, sets []appsv1.StatefulSet) (bool, error) {
	changed := false
	for i := range sets {
		sts := &sets[i]
		if sts.DeletionTimestamp == nil || !slices.Contains(sts.Finalizers, metav1.FinalizerOrphanDependents) {
			continue
		}
		pods := &corev1.PodList{}
		if err := w.c.List(ctx, pods, client.InNamespace(w.namespace)); err != nil {
			return false, err
		}
		for j := range pods.Items {
			if metav1.IsControlledBy(&pods.Items[j], sts) {
				pods.Items[j].OwnerReferences = nil
				if err := w.c.Update(ctx, &pods.Items[j]); err != nil {
					return false, err
				}
			}
		}
		sts.Finalizers = slices.DeleteFunc(sts.Finalizers, func(f string) bool { return f == metav1.FinalizerOrphanDependents })
		changed = true
		if err := client.IgnoreNotFound(w.c.Update(ctx, sts)); err != nil {
			return false, err
		}
	}
	return changed, nil
}

// resizeClaims binds each claim with the size it asks for, as a provisioner and a volume resizer would.
func (w *world) resizeClaims(ctx context.Context, claims []corev1.PersistentVolumeClaim) (bool, error) {
	changed := false
	for i := range claims {
		pvc := &claims[i]
		if pvc.DeletionTimestamp != nil {
			continue
		}
		want, have := pvc.Spec.Resources.Requests[corev1.ResourceStorage], pvc.Status.Capacity[corev1.ResourceStorage]
		if pvc.Status.Phase == corev1.ClaimBound && want.Cmp(have) <= 0 {
			continue
		}
		pvc.Status.Phase, pvc.Status.Capacity = corev1.ClaimBound, corev1.ResourceList{corev1.ResourceStorage: want}
		changed = true
		if err := client.IgnoreNotFound(w.c.Status().Update(ctx, pvc)); err != nil {
			return false, err
		}
	}
	return changed, nil
}

// releaseClaims does the pvc-protection controller's part: a claim being deleted goes once no pod
// mounts it.
func (w *world) releaseClaims(ctx context.Context, claims []corev1.PersistentVolumeClaim) (bool, error) {
	pods := &corev1.PodList{}
	if err := w.c.List(ctx, pods, client.InNamespace(w.namespace)); err != nil {
		return false, err
	}
	mounted := map[string]bool{}
	for _, p := range pods.Items {
		for _, v := range p.Spec.Volumes {
			if v.PersistentVolumeClaim != nil {
				mounted[v.PersistentVolumeClaim.ClaimName] = true
			}
		}
	}
	changed := false
	for i := range claims {
		pvc := &claims[i]
		if pvc.DeletionTimestamp == nil || mounted[pvc.Name] || len(pvc.Finalizers) == 0 {
			continue
		}
		changed = true
		if err := client.IgnoreNotFound(w.c.Patch(ctx, pvc.DeepCopy(),
			client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`)))); err != nil {
			return false, err
		}
	}
	return changed, nil
}

func (w *world) syncSet(ctx context.Context, sts *appsv1.StatefulSet) (bool, error) {
	pods := &corev1.PodList{}
	if err := w.c.List(ctx, pods, client.InNamespace(w.namespace), client.MatchingLabels(sts.Spec.Selector.MatchLabels)); err != nil {
		return false, err
	}
	have := map[int]*corev1.Pod{}
	for i := range pods.Items {
		if metav1.GetControllerOf(&pods.Items[i]) == nil { // an orphan its selector picks: adopted
			pods.Items[i].OwnerReferences = []metav1.OwnerReference{
				*metav1.NewControllerRef(sts, appsv1.SchemeGroupVersion.WithKind("StatefulSet"))}
			if err := w.c.Update(ctx, &pods.Items[i]); err != nil {
				return false, client.IgnoreNotFound(err)
			}
		}
		o, _ := strconv.Atoi(pods.Items[i].Name[strings.LastIndex(pods.Items[i].Name, "-")+1:])
		have[o] = &pods.Items[i]
	}
	if sts.Status.ObservedGeneration != sts.Generation {
		sts.Status.ObservedGeneration = sts.Generation
		if err := w.c.Status().Update(ctx, sts); err != nil {
			return false, err
		}
	}
	replicas := int(ptr.Deref(sts.Spec.Replicas, 1))
	changed, err := w.deleteBeyond(ctx, have, replicas)
	if err != nil {
		return changed, err
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
		c, err := w.runPod(ctx, pod, o)
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
	switch {
	case w.nodeOf != nil:
		pod.Spec.NodeName = w.nodeOf(pod.Name)
	case w.placement != nil:
		pod.Spec.NodeName = w.placement(pod.Name)
	}
	if created, err := w.createClaims(ctx, sts, pod); !created || err != nil {
		return err
	}
	if err := w.c.Create(ctx, pod); err != nil {
		return err
	}
	w.mu.Lock()
	w.created[pod.Name]++
	if w.holdRecreated[pod.Name] {
		w.holdReady[pod.Name] = true
	}
	if w.refuses != nil && w.refuses(t.Annotations[ackov1alpha1.AnnotationConfigHash]) {
		w.crashFrom[pod.UID] = time.Now()
	}
	w.mu.Unlock()
	return nil
}

// createClaims creates the pod's claims from the volume claim templates where they do not exist, and
// mounts them, as the StatefulSet controller does (<template>-<pod>). Like it, it creates no pod while
// one of its claims is being deleted (ready is false): the pod would mount the claim that goes.
func (w *world) createClaims(ctx context.Context, sts *appsv1.StatefulSet, pod *corev1.Pod) (ready bool, err error) {
	for _, t := range sts.Spec.VolumeClaimTemplates {
		claim := &corev1.PersistentVolumeClaim{
			ObjectMeta: metav1.ObjectMeta{Name: resources.ClaimName(t.Name, pod.Name), Namespace: pod.Namespace, Labels: t.Labels},
			Spec:       *t.Spec.DeepCopy(),
		}
		switch err := w.c.Create(ctx, claim); {
		case apierrors.IsAlreadyExists(err):
			if err := w.c.Get(ctx, client.ObjectKeyFromObject(claim), claim); err != nil {
				return false, client.IgnoreNotFound(err)
			}
			if claim.DeletionTimestamp != nil {
				return false, nil
			}
		case err != nil:
			return false, err
		}
		pod.Spec.Volumes = append(pod.Spec.Volumes, corev1.Volume{Name: t.Name, VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim.Name}}})
	}
	return true, nil
}

// runInits runs the init containers: done is false while one waits (its status then shows it).
func (w *world) runInits(ctx context.Context, pod *corev1.Pod) (done, changed bool, err error) {
	if waiting := w.initWaiting(pod); waiting != nil {
		changed, err := w.showInit(ctx, pod, waiting)
		return false, changed, err
	}
	return w.prepareVolumes(ctx, pod)
}

// showInit writes the pod's status while an init container has not completed.
func (w *world) showInit(ctx context.Context, pod *corev1.Pod, status *corev1.PodStatus) (bool, error) {
	if equality.Semantic.DeepEqual(&pod.Status, status) {
		return false, nil
	}
	pod.Status = *status
	return true, client.IgnoreNotFound(w.c.Status().Update(ctx, pod))
}

// prepareVolumes is the prepare-volumes init container: it waits for the pod's plan (the status then
// says it runs), then prepares each claim once in the pod. ok is false while it waits.
func (w *world) prepareVolumes(ctx context.Context, pod *corev1.Pod) (ok, changed bool, err error) {
	if !resources.PreparesVolumes(pod) || resources.VolumesPrepared(pod) {
		return true, false, nil
	}
	value := pod.Annotations[ackov1alpha1.AnnotationVolumePlan]
	if value == "" {
		changed, err := w.showInit(ctx, pod, &corev1.PodStatus{Phase: corev1.PodPending, InitContainerStatuses: []corev1.ContainerStatus{{
			Name: resources.PrepareVolumesContainer, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}})
		return false, changed, err
	}
	plan, err := resources.ParseVolumePlan(value)
	if err != nil {
		return false, false, err
	}
	w.mu.Lock()
	again := w.preparedIn[pod.UID]
	w.preparedIn[pod.UID] = true
	w.mu.Unlock()
	if again {
		return true, false, nil // marked done in the pod's emptyDir
	}
	for _, p := range plan {
		claim := &corev1.PersistentVolumeClaim{}
		name, _ := claimOf(pod, p.Name)
		if err := w.c.Get(ctx, types.NamespacedName{Namespace: pod.Namespace, Name: name}, claim); err != nil {
			return false, false, err
		}
		if p.Method != ackov1alpha1.VolumeInitNone {
			w.mu.Lock()
			w.prepared[claim.UID]++ // the script prepares the claim mounted, whatever the plan says
			w.mu.Unlock()
		}
	}
	return true, true, nil
}

// preparedRuns is how many times each claim was prepared.
func (w *world) preparedRuns() map[types.UID]int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return maps.Clone(w.prepared)
}

// creations is how many instances of each pod were created.
func (w *world) creations() map[string]int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return maps.Clone(w.created)
}

// kubelet runs a pod: an IP, the copy-config init container done, the Aerospike container running
// (or, for an image tag with "broken", failing to pull; crash-looping on a refused config), the other
// containers running and ready unless named in neverReady, and Ready when the containers are and every
// readiness gate is True. A pod being deleted is left alone: the API server removes it (no grace in
// envtest's namespace controller-less world: the test deletes with the default grace, which kube-
// apiserver applies at once for pods without a node).
func (w *world) kubelet(ctx context.Context, pod *corev1.Pod, ordinal int) (bool, error) {
	if pod.DeletionTimestamp != nil {
		return w.confirmDeletion(ctx, pod)
	}
	if done, changed, err := w.runInits(ctx, pod); !done || err != nil {
		return changed, err
	}
	w.mu.Lock()
	crashFrom, refused := w.crashFrom[pod.UID]
	crashing := refused && !time.Now().Before(crashFrom)
	broken := strings.Contains(resources.AerospikeImage(pod), "broken")
	hold := w.holdReady[pod.Name] || refused
	if _, ok := w.started[pod.UID]; !ok && !broken && !refused {
		w.started[pod.UID] = time.Now()
	}
	neverReady := maps.Clone(w.neverReady)
	w.mu.Unlock()
	simIP, err := w.runNode(pod)
	if err != nil {
		return false, err
	}
	want := pod.Status.DeepCopy()
	want.Phase = corev1.PodRunning
	switch {
	case simIP != "":
		want.PodIP = simIP
	case want.PodIP == "":
		want.PodIP = w.ipOf(pod, ordinal)
	}
	state := aerospikeState(pod, crashing, broken)
	want.InitContainerStatuses = initsCompleted(pod)
	want.ContainerStatuses = append([]corev1.ContainerStatus{{Name: ackov1alpha1.AerospikeContainerName,
		Ready: !hold && !broken, State: state, Image: resources.AerospikeImage(pod)}}, sidecarStatuses(pod, neverReady)...)
	containersReady := len(resources.NotReadyContainers(&corev1.Pod{Status: *want})) == 0
	ready := containersReady && gatesTrue(pod)
	setPodCondition(want, corev1.ContainersReady, containersReady, metav1.Now())
	setPodCondition(want, corev1.PodReady, ready, metav1.Now())
	if equality.Semantic.DeepEqual(&pod.Status, want) {
		return false, nil
	}
	pod.Status = *want
	return true, client.IgnoreNotFound(w.c.Status().Update(ctx, pod))
}

// runPod runs the pod on its node: its kubelet, or nothing but the node lifecycle controller when the
// node is lost.
func (w *world) runPod(ctx context.Context, pod *corev1.Pod, ordinal int) (bool, error) {
	w.mu.Lock()
	lost := w.lostNodes[pod.Spec.NodeName]
	w.mu.Unlock()
	if lost {
		return w.lostKubelet(ctx, pod)
	}
	return w.kubelet(ctx, pod, ordinal)
}

// lostKubelet is what becomes of a pod on a lost node: the node lifecycle controller marks it not
// Ready; nothing else changes it.
func (w *world) lostKubelet(ctx context.Context, pod *corev1.Pod) (bool, error) {
	if !resources.PodReady(pod) {
		return false, nil
	}
	setPodCondition(&pod.Status, corev1.PodReady, false, metav1.Now())
	return true, client.IgnoreNotFound(w.c.Status().Update(ctx, pod))
}

// initsCompleted is the status of the pod's init containers once they all ran.
func initsCompleted(pod *corev1.Pod) []corev1.ContainerStatus {
	out := make([]corev1.ContainerStatus, 0, len(pod.Spec.InitContainers))
	for _, c := range pod.Spec.InitContainers {
		out = append(out, corev1.ContainerStatus{Name: c.Name, Ready: true,
			State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 0, Reason: "Completed"}}})
	}
	return out
}

// deleteBeyond deletes the pods past the StatefulSet's replicas, as its controller does.
func (w *world) deleteBeyond(ctx context.Context, have map[int]*corev1.Pod, replicas int) (bool, error) {
	changed := false
	for o, pod := range have {
		switch {
		case o < replicas:
		case pod.DeletionTimestamp == nil:
			changed = true
			if err := client.IgnoreNotFound(w.c.Delete(ctx, pod)); err != nil {
				return changed, err
			}
		default:
			if _, err := w.confirmDeletion(ctx, pod); err != nil {
				return changed, err
			}
		}
	}
	return changed, nil
}

// confirmDeletion is the kubelet's part of deleting a pod: the API server waits for the node's kubelet to
// confirm the deletion of a scheduled pod (one without a node goes at once).
func (w *world) confirmDeletion(ctx context.Context, pod *corev1.Pod) (bool, error) {
	if pod.Spec.NodeName == "" {
		return false, nil
	}
	return true, client.IgnoreNotFound(w.c.Delete(ctx, pod, client.GracePeriodSeconds(0)))
}

// initWaiting is the status of a pod whose init container cannot copy its file, which its ConfigMap
// does not hold (yet), nil when it can (only with nodeOf: the other worlds' pods always find theirs).
func (w *world) initWaiting(pod *corev1.Pod) *corev1.PodStatus {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.nodeOf == nil || pod.Status.Phase == corev1.PodRunning {
		return nil
	}
	if _, ok := w.configMaps[configMapNameOf(pod)][resources.PodFileKeyOf(pod)]; ok {
		return nil
	}
	return &corev1.PodStatus{Phase: corev1.PodPending, InitContainerStatuses: []corev1.ContainerStatus{{
		Name: resources.ConfigInitContainer, State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{
			Reason: "CrashLoopBackOff", Message: "cp: cannot stat '" + resources.PodFileKeyOf(pod) + "': No such file or directory"}},
	}}}
}

// ipOf is the IP a new pod gets (the test's podIP when it sets one).
func (w *world) ipOf(pod *corev1.Pod, ordinal int) string {
	if w.podIP != nil {
		return w.podIP(pod, ordinal)
	}
	return fmt.Sprintf("10.0.%d.%d", len(pod.Name)%250, ordinal+1)
}

// aerospikeState is the Aerospike container's state: crash-looping on a refused config, failing to pull
// a broken image, or running.
func aerospikeState(pod *corev1.Pod, crashing, broken bool) corev1.ContainerState {
	switch {
	case crashing:
		return corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff",
			Message: "back-off restarting failed container aerospike-server"}}
	case broken:
		return corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ImagePullBackOff",
			Message: "Back-off pulling image " + resources.AerospikeImage(pod)}}
	}
	return corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}
}

// sidecarStatuses are the running states of the pod's other containers, ready unless named in neverReady.
func sidecarStatuses(pod *corev1.Pod, neverReady map[string]bool) []corev1.ContainerStatus {
	var out []corev1.ContainerStatus
	for _, c := range pod.Spec.Containers {
		if c.Name != ackov1alpha1.AerospikeContainerName {
			out = append(out, corev1.ContainerStatus{Name: c.Name, Ready: !neverReady[c.Name],
				State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}, Image: c.Image})
		}
	}
	return out
}

// gatesTrue: every readiness gate of the pod has its condition True.
func gatesTrue(pod *corev1.Pod) bool {
	for _, g := range pod.Spec.ReadinessGates {
		found := slices.IndexFunc(pod.Status.Conditions, func(c corev1.PodCondition) bool { return c.Type == g.ConditionType })
		if found < 0 || pod.Status.Conditions[found].Status != corev1.ConditionTrue {
			return false
		}
	}
	return true
}

// setPodCondition sets a condition the kubelet owns, keeping the others (the operator's gate); a
// change of status is dated now.
func setPodCondition(s *corev1.PodStatus, typ corev1.PodConditionType, ok bool, now metav1.Time) {
	status := corev1.ConditionFalse
	if ok {
		status = corev1.ConditionTrue
	}
	for i := range s.Conditions {
		if s.Conditions[i].Type == typ {
			if s.Conditions[i].Status != status {
				s.Conditions[i].Status, s.Conditions[i].LastTransitionTime = status, now
			}
			return
		}
	}
	s.Conditions = append(s.Conditions, corev1.PodCondition{Type: typ, Status: status, LastTransitionTime: now})
}

func podIsReady(pod *corev1.Pod) bool { return resources.PodReady(pod) }

// syncBudgets is the disruption controller: each budget counts the pods it selects and how many of
// them are Ready. Pods an eviction took recently (disruptedPods) count as disrupted until they go.
func (w *world) syncBudgets(ctx context.Context) error {
	pdbs := &policyv1.PodDisruptionBudgetList{}
	if err := w.c.List(ctx, pdbs, client.InNamespace(w.namespace)); err != nil {
		return err
	}
	for i := range pdbs.Items {
		pdb := &pdbs.Items[i]
		pods := &corev1.PodList{}
		if err := w.c.List(ctx, pods, client.InNamespace(w.namespace), client.MatchingLabels(pdb.Spec.Selector.MatchLabels)); err != nil {
			return err
		}
		want := pdb.Status.DeepCopy()
		want.ObservedGeneration, want.ExpectedPods, want.CurrentHealthy = pdb.Generation, 0, 0
		disrupted := map[string]metav1.Time{}
		for _, p := range pods.Items {
			want.ExpectedPods++
			// An evicted pod counts as disrupted until it goes; a pod created since is a new one.
			if at, evicted := pdb.Status.DisruptedPods[p.Name]; evicted && p.DeletionTimestamp == nil &&
				p.CreationTimestamp.Before(&at) {
				disrupted[p.Name] = at
				continue
			}
			if resources.PodReady(&p) {
				want.CurrentHealthy++
			}
		}
		want.DisruptedPods = disrupted
		maxUnavailable := int32(0)
		if pdb.Spec.MaxUnavailable != nil {
			v, _ := intstr.GetScaledValueFromIntOrPercent(pdb.Spec.MaxUnavailable, int(want.ExpectedPods), true)
			maxUnavailable = int32(v)
		}
		want.DesiredHealthy = max(want.ExpectedPods-maxUnavailable, 0)
		want.DisruptionsAllowed = max(want.CurrentHealthy-want.DesiredHealthy, 0)
		if len(want.DisruptedPods) == 0 {
			want.DisruptedPods = nil
		}
		if equality.Semantic.DeepEqual(&pdb.Status, want) {
			continue
		}
		pdb.Status = *want
		if err := client.IgnoreNotFound(w.c.Status().Update(ctx, pdb)); err != nil && !apierrors.IsConflict(err) {
			return err
		}
	}
	return nil
}

func (w *world) wake() {
	w.mu.Lock()
	keys := slices.Collect(maps.Keys(w.probed))
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

// Refresh implements Prober: a snapshot is read when it is asked for, so a new one is there at once.
func (w *world) Refresh(types.NamespacedName) { w.wake() }

// Snapshot implements Prober: every probed pod whose asd runs answers, in one cluster whose size is
// the number of answering nodes (pods marked alone form clusters of their own), read just now.
func (w *world) Snapshot(key types.NamespacedName) (aerospike.ClusterHealth, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	spec, ok := w.probed[key]
	if !ok {
		return aerospike.ClusterHealth{}, false
	}
	now := time.Now()
	byName := w.podsByName(key)
	up := w.upNodes(spec, byName)
	health := aerospike.ClusterHealth{ExpectedSize: len(spec.Targets), Nodes: map[string]aerospike.NodeHealth{}, ReadAt: now}
	for _, t := range spec.Targets {
		h := aerospike.NodeHealth{Addr: t.Addr, ReadAt: now, Err: aerospike.ErrUnreachable}
		p := byName[t.PodName]
		switch {
		case p != nil && slices.Contains(up, t.PodName):
			h.Err, h.Facts = nil, w.facts(now.Sub(w.started[p.UID]), len(up), fmt.Sprintf("KEY%d", len(up)), len(spec.Targets))
		case p != nil && w.alone[t.PodName] && !w.unreachable:
			h.Err, h.Facts = nil, w.facts(now.Sub(w.started[p.UID]), 1, "ALONE"+t.PodName, len(spec.Targets))
		}
		health.Nodes[t.PodName] = h
	}
	if len(w.alone) > 0 && health.Split(slices.Sorted(maps.Keys(health.Nodes))) {
		health.SplitSince, health.SplitSettled = now.Add(-time.Minute), true
	}
	return health, true
}

func (w *world) podsByName(key types.NamespacedName) map[string]*corev1.Pod {
	// Only the cluster's pods: a snapshot is read at every reconcile, and listing every cluster's pods
	// each time made 40 clusters of 8 pods take five minutes to come up (BenchmarkManagerMemory).
	pods := &corev1.PodList{}
	_ = w.c.List(context.Background(), pods, client.InNamespace(key.Namespace),
		client.MatchingLabels{ackov1alpha1.LabelInstance: key.Name})
	byName := map[string]*corev1.Pod{}
	for i := range pods.Items {
		byName[pods.Items[i].Name] = &pods.Items[i]
	}
	return byName
}

// upNodes are the probed pods whose asd runs in the common cluster. Callers hold w.mu.
func (w *world) upNodes(spec aerospike.ProbeSpec, byName map[string]*corev1.Pod) []string {
	var up []string
	for _, t := range spec.Targets {
		p := byName[t.PodName]
		if p == nil || p.DeletionTimestamp != nil || w.unreachable || w.alone[t.PodName] || w.down[t.PodName] ||
			w.lostNodes[p.Spec.NodeName] {
			continue
		}
		if _, started := w.started[p.UID]; started {
			up = append(up, t.PodName)
		}
	}
	sort.Strings(up)
	return up
}

// facts are a node's answers: migrations when the world migrates, and cluster-stable's verdict on
// the size the reading asked about.
func (w *world) facts(uptime time.Duration, size int, key string, asked int) aerospike.NodeFacts {
	f := aerospike.NodeFacts{Uptime: uptime, ClusterSize: size, ClusterKey: key, ClusterIntegrity: true}
	if w.migrating {
		f.MigratePartitionsRemaining = 100
	}
	switch {
	case size != asked:
		f.ClusterStableErr = &aerospike.InfoError{Command: "cluster-stable", Code: 7, Message: "cluster not specified size"}
	case w.migrating:
		f.ClusterStableErr = &aerospike.InfoError{Command: "cluster-stable", Code: 7, Message: "unstable cluster"}
	default:
		f.ClusterStableKey = key
	}
	return f
}

// PrepareRestart implements podexec.Signaller: the config it is given is copied into the pod's own
// file (the simulated node's).
func (w *world) PrepareRestart(_ context.Context, pod *corev1.Pod, configHash string) error {
	if err := w.exec(pod); err != nil {
		return err
	}
	w.mu.Lock()
	signalErr := w.signalErr
	w.mu.Unlock()
	if signalErr != nil {
		if err := signalErr(pod.Name); err != nil { // may block, as a hung exec does: not under the lock
			return err
		}
	}
	if w.sim != nil {
		if err := w.copyConfig(pod, configHash); err != nil {
			return err
		}
	}
	w.mu.Lock()
	w.copied[pod.UID] = configHash
	w.mu.Unlock()
	return nil
}

// SignalRestart implements podexec.Signaller: asd restarts in place (uptime from zero, same pod),
// loading the config copied for it.
func (w *world) SignalRestart(_ context.Context, pod *corev1.Pod) error {
	if err := w.exec(pod); err != nil {
		return err
	}
	w.mu.Lock()
	configHash := w.copied[pod.UID]
	w.mu.Unlock()
	if w.sim != nil {
		if _, err := w.sim.WarmRestart(pod.Name); err != nil {
			return err
		}
	}
	w.mu.Lock()
	refused := w.refuses != nil && w.refuses(configHash)
	w.mu.Unlock()
	if refused {
		// An exec round trip takes a while: the reconcile that takes the result then reads the status
		// the operator wrote before the signal (a cache that lags makes the result's write conflict, the
		// result is dropped, and the restart is settled by asd's uptime, which a refused config never
		// gives).
		time.Sleep(300 * time.Millisecond)
	}
	w.mu.Lock()
	w.warm[pod.Name]++
	w.loaded[pod.Name] = configHash
	w.started[pod.UID] = time.Now()
	if refused {
		// The file is copied and the signal goes out; the new asd exits on the file, and so does every
		// later start of this container: the pod's own copy keeps it.
		w.crashFrom[pod.UID] = time.Now().Add(time.Hour)
		delete(w.started, pod.UID)
	}
	w.mu.Unlock()
	w.wake()
	return nil
}

// crashNow makes the kubelet report the crash loop of every asd that refused its config.
func (w *world) crashNow() {
	w.set(func(w *world) {
		for uid := range w.crashFrom {
			w.crashFrom[uid] = time.Now()
		}
	})
}

// ReadConfigs implements podexec.Signaller: the simulated node's files (without a simulator the world
// keeps no files).
func (w *world) ReadConfigs(_ context.Context, pod *corev1.Pod) (string, string, error) {
	if err := w.exec(pod); err != nil {
		return "", "", err
	}
	if w.sim == nil {
		return "", "", errors.New("the test world keeps no config files")
	}
	return w.nodeConfigs(pod)
}

// CopyConfig implements podexec.Signaller.
func (w *world) CopyConfig(_ context.Context, pod *corev1.Pod, configHash string) error {
	if err := w.exec(pod); err != nil {
		return err
	}
	if w.sim == nil {
		return nil
	}
	return w.copyConfig(pod, configHash)
}

// exec fails as every exec into the pod does when the test says so (the operator process is gone).
func (w *world) exec(pod *corev1.Pod) error {
	w.mu.Lock()
	execErr := w.execErr
	w.mu.Unlock()
	if execErr != nil {
		return execErr(pod.Name)
	}
	return nil
}

var _ podexec.Signaller = (*world)(nil)

func (w *world) warmRestarts(name string) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.warm[name]
}
