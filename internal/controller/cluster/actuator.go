package cluster

import (
	"context"
	"fmt"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ackov1alpha1 "github.com/acko-io/acko/api/v1alpha1"
	"github.com/acko-io/acko/internal/operations"
	"github.com/acko-io/acko/internal/pods"
	"github.com/acko-io/acko/internal/tasks"
)

// The actuator: the only code of the project that takes an Aerospike node down (ARCHITECTURE.md). A
// caller hands it an intent (takeDown: the pods, the kind of take-down, when it was decided, why) and
// the act to do (an act: a restart in place, a removal, a give-up, an operation's eviction or signal);
// the actuator runs the door (door.go: the kind's waits and checks, the pods read again, fresh readings,
// a last look, the step's record held) and acts only when the door lets the intent go, recording the
// step's progress and the refusals it meets. Nothing else in the project evicts or deletes an Aerospike
// pod, deletes its claims, signals asd, sets a StatefulSet's replicas or deletes one:
// test/arch/acts_test.go fails if code outside this file does, or calls into it but through its entries.
// A StatefulSet's replicas are set only by setReplicas, which lowers a set below a pod of its only as far
// as the door let it in this reconcile (scaleDownStep); a StatefulSet is deleted only by deleteSet, with
// its pods only once it has none.

// act is what the actuator does once the door let an intent go.
type act interface {
	do(ctx context.Context, r *AerospikeClusterReconciler, st *clusterState) (string, error)
}

// takeDownNow is the actuator's door for callers: the door, then the act. It says what the act did, or
// the door's verdict when the intent may not go now.
func (r *AerospikeClusterReconciler) takeDownNow(ctx context.Context, st *clusterState, intent takeDown,
	a act) (string, verdict, error) {
	if v, err := r.mayActNow(ctx, st, intent); v.why != "" || err != nil {
		return "", v, err
	}
	done, err := a.do(ctx, r, st)
	return done, verdict{}, err
}

// restartAttempt restarts asd in place in the pods of a rolling-restart step, or in the nodes outside a
// stuck exchange: one move of the attempt each time the door lets it (restartStep).
type restartAttempt struct {
	task     string
	pods     []string
	prepared bool
}

func (a restartAttempt) do(ctx context.Context, r *AerospikeClusterReconciler, st *clusterState) (string, error) {
	return "", r.restartStep(ctx, st, a.task, a.pods, a.prepared)
}

// removal evicts or deletes the pods of an eviction or replacement step, one after the other: it says
// why an eviction was refused, or that the pods are being recreated.
type removal struct {
	method ackov1alpha1.PodUpdateMethod
	names  []string
}

func (a removal) do(ctx context.Context, r *AerospikeClusterReconciler, st *clusterState) (string, error) {
	for _, name := range a.names {
		if refused, err := r.removeStepPod(ctx, st, a.method, name); err != nil || refused != "" {
			return refused, err
		}
	}
	return "pod is being recreated", nil
}

// volumesGivenUp gives up the local volumes of pods pinned on lost nodes: each recorded first
// (recordGivenUp), so that its successor counts as not holding its copies until its refill is seen to
// end, then its claims and the pod deleted. It says what it deleted.
type volumesGivenUp struct {
	due []pinnedPod
}

func (a volumesGivenUp) do(ctx context.Context, r *AerospikeClusterReconciler, st *clusterState) (string, error) {
	if err := r.recordGivenUp(ctx, st, a.due); err != nil {
		return "", err
	}
	done := make([]string, 0, len(a.due))
	for _, p := range a.due {
		what, err := r.deleteLost(ctx, st, p)
		if err != nil {
			return "", err
		}
		done = append(done, what)
	}
	return "deleted " + strings.Join(done, "; "), nil
}

// scaleDownStep lets a StatefulSet go down to replicas in this reconcile: the step of a scale-down, or
// of a removed rack, the door let go. setReplicas then writes it with the set (applyChildren,
// removeOldRacks), and the StatefulSet controller deletes the leaving pods.
type scaleDownStep struct {
	set      string
	replicas int32
}

func (a scaleDownStep) do(_ context.Context, _ *AerospikeClusterReconciler, st *clusterState) (string, error) {
	if st.scaleDowns == nil {
		st.scaleDowns = map[string]int32{}
	}
	st.scaleDowns[a.set] = a.replicas
	return "", nil
}

// setReplicas sets the replicas a StatefulSet is written with. Fewer than it asks for now, below a pod
// of its that exists, would have the StatefulSet controller delete that pod with no check: it is
// refused unless the door let the set go down that far in this reconcile (scaleDownStep). Pods above
// what the set asks for now are its own, already leaving.
func (st *clusterState) setReplicas(set *appsv1.StatefulSet, replicas int32) error {
	if existing := st.existingSets[set.Name]; existing != nil && existing.Spec.Replicas != nil {
		current := *existing.Spec.Replicas
		if granted, ok := st.scaleDowns[set.Name]; replicas < current && (!ok || replicas < granted) {
			for o := replicas; o < current; o++ {
				if name := ackov1alpha1.StatefulSetPodName(set.Name, o); st.pods[name] != nil {
					return fmt.Errorf("StatefulSet %s would go down from %d to %d replicas, taking pod %s, which the "+
						"door did not let go", set.Name, current, replicas, name)
				}
			}
		}
	}
	set.Spec.Replicas = ptr.To(replicas)
	return nil
}

// deleteSet deletes a StatefulSet of the cluster: orphaning its pods, as read (its UID and version: one
// changed since may ask for other pods), to create it again with larger claim templates; or with them,
// only once it has none (a removed rack).
func (r *AerospikeClusterReconciler) deleteSet(ctx context.Context, st *clusterState, set *appsv1.StatefulSet,
	orphan bool) error {
	var opts []client.DeleteOption
	if orphan {
		uid, version := set.UID, set.ResourceVersion
		opts = append(opts, client.PropagationPolicy(metav1.DeletePropagationOrphan),
			client.Preconditions{UID: &uid, ResourceVersion: &version})
	} else if n := rackPods(st, set); n > 0 {
		return fmt.Errorf("StatefulSet %s still has %d pods: deleting it would take them down", set.Name, n)
	}
	return r.Delete(ctx, set, opts...)
}

// operationActuator is the actuator as an operation's executor uses it (operations.Actuator): the
// operation's take-downs go through the same door, with the operation's intent (operationIntent).
type operationActuator struct {
	r  *AerospikeClusterReconciler
	st *clusterState
}

var _ operations.Actuator = operationActuator{}

func (a operationActuator) MayTakeDown(ctx context.Context, pod string, warm bool) (string, error) {
	v, err := a.r.mayActNow(ctx, a.st, a.st.operationIntent(pod, warm))
	return v.why, err
}

func (a operationActuator) Evict(ctx context.Context, pod *corev1.Pod, uid types.UID) (why, refused string, err error) {
	refused, v, err := a.r.takeDownNow(ctx, a.st, a.st.operationIntent(pod.Name, false), podEviction{pod: pod, uid: uid})
	return v.why, refused, err
}

func (a operationActuator) Signal(ctx context.Context, pod *corev1.Pod, task tasks.Key) (string, error) {
	_, v, err := a.r.takeDownNow(ctx, a.st, a.st.operationIntent(pod.Name, true), asdSignal{pod: pod, task: task})
	return v.why, err
}

// podEviction evicts one instance of a pod (a PodRestart): it says why the eviction was refused.
type podEviction struct {
	pod *corev1.Pod
	uid types.UID
}

func (a podEviction) do(ctx context.Context, r *AerospikeClusterReconciler, _ *clusterState) (string, error) {
	return pods.Remove(ctx, r.Client, a.pod, a.uid, true)
}

// asdSignal restarts asd in a pod whose restart was prepared (a WarmRestart), in the background task.
type asdSignal struct {
	pod  *corev1.Pod
	task tasks.Key
}

func (a asdSignal) do(_ context.Context, r *AerospikeClusterReconciler, _ *clusterState) (string, error) {
	r.Tasks.Run(a.task, func(ctx context.Context) (string, error) { return "", r.Executor.Signaller.SignalRestart(ctx, a.pod) })
	return "", nil
}

// restartStep takes a restart in place of the pods one step, once the door let it: an attempt not yet
// prepared is recorded (the time and the nodes' start, so that an operator restarted meanwhile settles
// it from the nodes' uptimes) and prepared in a background task, each pod on the config its step
// records; a prepared one is signalled in the background task named task.
func (r *AerospikeClusterReconciler) restartStep(ctx context.Context, st *clusterState, task string, pods []string,
	prepared bool) error {
	targets := make([]*corev1.Pod, 0, len(pods))
	for _, p := range pods {
		targets = append(targets, st.pods[p])
	}
	if prepared {
		r.prepared.remove(st.key, task)
		r.Tasks.Run(tasks.Key{Cluster: st.key, Name: task}, func(ctx context.Context) (string, error) {
			return "", forEachPod(targets, func(pod *corev1.Pod) error { return r.Executor.Signaller.SignalRestart(ctx, pod) })
		})
		return nil
	}
	attempt := metav1.NewMicroTime(st.now)
	if err := r.record(ctx, st, func(s *ackov1alpha1.AerospikeClusterStatus) {
		for _, p := range pods {
			started := metav1.NewMicroTime(st.health.NodeStarted(p))
			s.Pods[p].Update.NodeStartedBefore, s.Pods[p].Update.Attempted = &started, &attempt
		}
	}); err != nil {
		return err
	}
	hashes := map[string]string{}
	for _, p := range pods {
		hashes[p] = st.cluster.Status.Pods[p].Update.ConfigHash
	}
	r.prepared.set(st.key, task, preparedAttempt{attempt: attempt.Time})
	r.Tasks.Run(tasks.Key{Cluster: st.key, Name: prepareTask(task)}, func(ctx context.Context) (string, error) {
		return "", forEachPod(targets, func(pod *corev1.Pod) error {
			return r.Executor.Signaller.PrepareRestart(ctx, pod, hashes[pod.Name])
		})
	})
	return nil
}

// forEachPod runs do on each pod in turn, up to the first error (which names its pod).
func forEachPod(pods []*corev1.Pod, do func(*corev1.Pod) error) error {
	for _, pod := range pods {
		if err := do(pod); err != nil {
			return fmt.Errorf("%s: %w", pod.Name, err)
		}
	}
	return nil
}

// removeStepPod evicts or deletes the pod of a step the door let through (a move gives up its local
// claims first) and records the step done; refused says why the eviction was refused.
func (r *AerospikeClusterReconciler) removeStepPod(ctx context.Context, st *clusterState, method ackov1alpha1.PodUpdateMethod,
	name string) (refused string, err error) {
	pod, u := st.pods[name], st.cluster.Status.Pods[name].Update
	gaveUp := ""
	if movesOff(u) {
		if gaveUp, refused, err = r.giveUpForMove(ctx, st, pod); err != nil {
			return "", err
		}
	}
	evict := method == ackov1alpha1.UpdateEvict && !st.countedDisrupted(name)
	if refused == "" {
		refused, err = pods.Remove(ctx, r.Client, pod, types.UID(u.UID), evict)
	}
	if refused != "" && u.Attempted == nil {
		err = r.recordRefused(ctx, st, name)
	}
	if err != nil || refused != "" {
		return refused, err
	}
	switch {
	case method == ackov1alpha1.UpdateReplace:
		st.addEvent(corev1.EventTypeNormal, ackov1alpha1.EventPodReplaced, "Restart", pod,
			"Deleted pod %s, broken by its container state (%s), to recreate it with the current spec", name, st.broken[name])
	case movesOff(u):
		how := "evicted"
		if !evict {
			how = "deleted" // counted disrupted already: its eviction would wait for nothing
		}
		st.addEvent(corev1.EventTypeNormal, ackov1alpha1.EventPodMovedOffNode, "MoveOffNode", pod,
			"Moving pod %s off node %s (spec.nodeBlockList): %s%s it; it is recreated on another node, and the next "+
				"pod moves once the cluster is stable again", name, pod.Spec.NodeName, gaveUp, how)
	}
	return "", r.markDone(ctx, st, name, u)
}

// giveUpForMove gives up the local volumes of a pod moved off a blocked node, right before its
// eviction (the door let the move through: every other node holds every copy): recorded first, then
// its claims deleted. It says what it deleted ("" when the pod has no local volume), or why it may not:
// with one copy of each partition (replication-factor 1, or a cluster of one node) the volumes hold
// the only copy of the pod's partitions, and the door's rule (one node down) does not protect them.
func (r *AerospikeClusterReconciler) giveUpForMove(ctx context.Context, st *clusterState,
	pod *corev1.Pod) (gaveUp, refused string, err error) {
	claims, err := r.localClaims(ctx, st, pod)
	if err != nil || len(claims) == 0 {
		return "", "", err
	}
	if !st.moveStarted(pod) {
		if copies := min(st.runningReplicationFactor(), len(st.members)); copies < 2 {
			return "", fmt.Sprintf("the local volumes of pod %s hold the only copy of its partitions (one copy of each "+
				"in the cluster): moving it would lose them; raise the replication-factor to 2 or more, or take node %s "+
				"off spec.nodeBlockList", pod.Name, pod.Spec.NodeName), nil
		}
		if err := r.recordGivenUp(ctx, st, []pinnedPod{{pod: pod}}); err != nil {
			return "", "", err
		}
	}
	names, err := r.deleteClaims(ctx, claims)
	if err != nil {
		return "", "", err
	}
	return "deleted its local claims " + strings.Join(names, ", ") + " (migrations refill its successor's empty volumes); ", "", nil
}

// deleteClaims deletes the claims (each of the instance read); a claim deleted already waits for its pod.
func (r *AerospikeClusterReconciler) deleteClaims(ctx context.Context, claims []*corev1.PersistentVolumeClaim) ([]string, error) {
	names := make([]string, 0, len(claims))
	for _, c := range claims {
		names = append(names, c.Name)
		if c.DeletionTimestamp != nil {
			continue // deleted by an earlier attempt: it waits for the pod
		}
		if err := r.Delete(ctx, c, client.Preconditions{UID: &c.UID}); client.IgnoreNotFound(err) != nil && !apierrors.IsConflict(err) {
			return nil, fmt.Errorf("delete claim %s: %w", c.Name, err)
		}
	}
	return names, nil
}

// deleteLost deletes a pinned pod's local claims and then the pod; it says what it deleted.
func (r *AerospikeClusterReconciler) deleteLost(ctx context.Context, st *clusterState, p pinnedPod) (string, error) {
	names, err := r.deleteClaims(ctx, p.claims)
	if err != nil {
		return "", err
	}
	waits, err := r.deletePinnedPod(ctx, p)
	if err != nil {
		return "", err
	}
	what := "claims " + strings.Join(names, ", ") + " and pod " + p.pod.Name
	if len(names) == 0 {
		what = "pod " + p.pod.Name + " (its claims were gone already)"
	}
	st.addEvent(corev1.EventTypeWarning, ackov1alpha1.EventLocalVolumesDeleted, "GiveUpVolumes", p.pod,
		"Node %s %s since %s: deleted %s; the pod is recreated with empty volumes and refilled by migrations; %s",
		p.node, p.lost, p.since.UTC().Format(time.RFC3339), what, waits)
	return what + "; " + waits, nil
}

// deleteGivenUpAgain deletes again a pod whose volumes were given up (the door let it go) and that is
// still Terminating: once its node is out of service it goes at once (describePinned). It refuses any
// other pod.
func (r *AerospikeClusterReconciler) deleteGivenUpAgain(ctx context.Context, p pinnedPod) (string, error) {
	if !p.givenUp {
		return "", fmt.Errorf("pod %s: its volumes were not given up: only the give-up deletes it", p.pod.Name)
	}
	return r.deletePinnedPod(ctx, p)
}

// deletePinnedPod deletes a pinned pod whose volumes were given up: at once (grace 0) when its node is
// out of service, else with its grace, so that it stays Terminating until its kubelet confirms that asd
// stopped. It says which.
func (r *AerospikeClusterReconciler) deletePinnedPod(ctx context.Context, p pinnedPod) (string, error) {
	opts := []client.DeleteOption{client.Preconditions{UID: &p.pod.UID}}
	if p.outOfService {
		opts = append(opts, client.GracePeriodSeconds(0))
	} else if p.pod.DeletionTimestamp != nil {
		return outOfServiceWait(p), nil // deleted already: a second delete changes nothing
	}
	if err := r.Delete(ctx, p.pod, opts...); client.IgnoreNotFound(err) != nil && !apierrors.IsConflict(err) {
		return "", fmt.Errorf("delete pod %s: %w", p.pod.Name, err)
	}
	if p.outOfService {
		return fmt.Sprintf("pod %s deleted at once (node %s is deleted or out of service): its successor starts elsewhere",
			p.pod.Name, p.node), nil
	}
	return outOfServiceWait(p), nil
}
