package cluster

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	ackov1alpha1 "github.com/acko-io/acko/api/v1alpha1"
	"github.com/acko-io/acko/internal/resources"
)

// childConflict is a child with the expected name that this cluster does not own: it is never
// adopted or changed.
type childConflict struct {
	kind, name string
}

func (c childConflict) Error() string {
	return fmt.Sprintf("%s %s exists and is not owned by this AerospikeCluster: rename the cluster or remove the %s",
		c.kind, c.name, c.kind)
}

func ownedBy(obj metav1.Object, c *ackov1alpha1.AerospikeCluster) bool {
	return metav1.IsControlledBy(obj, c)
}

// applyChildren creates or updates every child that differs from its desired form, steps scale
// downs one batch at a time, and removes the StatefulSets of racks that are gone once empty.
func (r *AerospikeClusterReconciler) applyChildren(ctx context.Context, st *clusterState) (bool, error) {
	objects, err := r.withBudget(ctx, st, slices.Clone(st.objects))
	if err != nil {
		return true, err
	}
	for _, obj := range objects {
		if stop, err := r.applyChild(ctx, st, obj); stop || err != nil {
			return stop, err
		}
	}
	if err := r.forgetRemoved(ctx, st); err != nil {
		return true, err
	}
	if err := r.removePodServices(ctx, st); err != nil {
		return true, err
	}
	budget := min(int(st.cluster.BatchSize()), st.maxDown)
	for _, rack := range st.racks {
		sts := st.sets[st.cluster.StatefulSetName(rack.ID)]
		replicas, err := r.rackReplicas(ctx, st, sts.Name, rack.Size, &budget)
		if err != nil {
			return true, err
		}
		st.deferred = st.deferred || replicas != rack.Size
		if err := st.setReplicas(sts, replicas); err != nil {
			return true, err
		}
		if stop, err := r.applyChild(ctx, st, sts); stop || err != nil {
			return stop, err
		}
	}
	if stop, err := r.removeOldRacks(ctx, st, &budget); stop || err != nil {
		return true, err
	}
	st.applied = !st.deferred
	return false, nil
}

// pdbMaxUnavailable is the safety rule for drains: maxDown (replication-factor − 1) nodes while the
// latest reading shows the cluster stable, and none while it is not: a node that migrates still serves
// (it is Ready), but a second node down before migrations finish can hold the last copy of a partition.
// Before the prober's first reading (the operator just started) the budget stays as it is. While a pod
// leaves the cluster (scale down, rack removal) it allows none: once the StatefulSet deletes the pod the
// budget counts one pod fewer and would let a drain through before a reading shows the migrations.
// It never counts pods that do not run yet (a scale-up's): a partition has at most one copy per running
// node, so min(replication-factor, running nodes) − 1 may be down.
func (st *clusterState) pdbMaxUnavailable(maxDown int) int {
	// A node refilling after its volumes were given up may lack copies: it counts as down.
	maxDown = max(0, min(maxDown, max(1, len(st.members)-1))-len(st.refilling()))
	if len(st.recordedLeaving()) > 0 {
		return 0
	}
	if !st.healthOK {
		if pdb := st.existingPDB; pdb != nil && pdb.Spec.MaxUnavailable != nil {
			return min(pdb.Spec.MaxUnavailable.IntValue(), maxDown)
		}
		return 0
	}
	if stable, _ := st.stable(); !stable {
		return 0
	}
	return maxDown
}

// recordedLeaving lists the pods recorded as leaving the cluster, sorted (a record is cleared once its pod
// is gone).
func (st *clusterState) recordedLeaving() []string {
	var out []string
	for name, p := range st.cluster.Status.Pods {
		if p.Update != nil && p.Update.Method == ackov1alpha1.UpdateRemove {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

// applyChild creates obj, or updates the existing child when it differs in what the operator owns.
func (r *AerospikeClusterReconciler) applyChild(ctx context.Context, st *clusterState, desired client.Object) (bool, error) {
	existing, kind, err := r.readChild(ctx, desired)
	switch {
	case apierrors.IsNotFound(err):
		return r.createChild(ctx, st, kind, desired)
	case err != nil:
		return true, err
	}
	return r.updateChild(ctx, st, kind, existing, desired)
}

// updateRemovedChild updates a child of a removed rack that still exists. One that is gone is not
// created again: the cache may list its rack's StatefulSet a moment after the rack was deleted.
func (r *AerospikeClusterReconciler) updateRemovedChild(ctx context.Context, st *clusterState,
	desired client.Object) (bool, error) {
	existing, kind, err := r.readChild(ctx, desired)
	switch {
	case apierrors.IsNotFound(err):
		return false, nil
	case err != nil:
		return true, err
	}
	return r.updateChild(ctx, st, kind, existing, desired)
}

// readChild reads the existing child of desired's kind and name from the cache.
func (r *AerospikeClusterReconciler) readChild(ctx context.Context, desired client.Object) (client.Object, string, error) {
	gvk, err := apiutil.GVKForObject(desired, r.Scheme)
	if err != nil {
		return nil, "", err
	}
	existing, ok := desired.DeepCopyObject().(client.Object)
	if !ok {
		return nil, gvk.Kind, fmt.Errorf("cannot copy %s", gvk.Kind)
	}
	return existing, gvk.Kind, r.Get(ctx, client.ObjectKeyFromObject(desired), existing)
}

// updateChild updates existing when it differs from desired in what the operator owns. An update
// conflict means the cache was behind: it is retried on a fresh read, and is no failure.
func (r *AerospikeClusterReconciler) updateChild(ctx context.Context, st *clusterState, kind string,
	existing, desired client.Object) (bool, error) {
	switch {
	case !ownedBy(existing, st.cluster):
		return r.conflict(st, kind, desired.GetName())
	case !resources.NeedsUpdate(existing, desired):
		return false, nil
	}
	first := true
	return false, retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if !first {
			if err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(desired), existing); err != nil {
				return err
			}
		}
		first = false
		resources.ApplyOwnedFields(existing, desired)
		return r.Update(ctx, existing)
	})
}

func (r *AerospikeClusterReconciler) createChild(ctx context.Context, st *clusterState, kind string,
	obj client.Object) (bool, error) {
	err := r.Create(ctx, obj)
	if apierrors.IsAlreadyExists(err) {
		// Not in our label-selected cache: someone else's, or ours created a moment ago and not in the
		// cache yet (a reconcile that ran before its watch event): the API server tells.
		existing, ok := obj.DeepCopyObject().(client.Object)
		if !ok {
			return true, fmt.Errorf("cannot copy %s", kind)
		}
		if err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(obj), existing); err != nil {
			return true, fmt.Errorf("read %s %s after its create was refused: %w", kind, obj.GetName(), err)
		}
		return r.updateChild(ctx, st, kind, existing, obj)
	}
	if err != nil {
		return true, err
	}
	st.addEvent(corev1.EventTypeNormal, ackov1alpha1.EventCreated, "Create", obj, "Created %s %s", kind, obj.GetName())
	return false, nil
}

func (r *AerospikeClusterReconciler) conflict(st *clusterState, kind, name string) (bool, error) {
	st.invalid, st.invalidReason = childConflict{kind: kind, name: name}.Error(), ackov1alpha1.ReasonChildConflict
	return true, nil
}

// plannedReplicas is what a rack's StatefulSet should ask for now. Scale ups happen at once. A scale
// down goes one batch at a time (budget, shared by all racks: at most min(rollingUpdateBatchSize,
// replication-factor − 1) pods), highest ordinals first: the leaving pods are recorded (status
// update Remove), their readiness gates held False until the PodDisruptionBudget counts them (so a
// drain cannot take another node meanwhile), and only then does the StatefulSet lose them.
func (r *AerospikeClusterReconciler) plannedReplicas(ctx context.Context, st *clusterState, existing *appsv1.StatefulSet,
	desired int32, budget *int) (int32, error) {
	if existing.Spec.Replicas == nil || *existing.Spec.Replicas <= desired {
		if existing.Spec.Replicas != nil && *existing.Spec.Replicas < desired {
			st.setWork(ackov1alpha1.ReasonScaling, "Scaling %s up from %d to %d pods", existing.Name, *existing.Spec.Replicas, desired)
			st.addEvent(corev1.EventTypeNormal, ackov1alpha1.EventScaled, "Scale", existing,
				"Scaling %s up from %d to %d pods", existing.Name, *existing.Spec.Replicas, desired)
		}
		return desired, nil
	}
	current := *existing.Spec.Replicas
	leaving := st.leavingPods(existing)
	if len(leaving) == 0 {
		return r.chooseLeaving(ctx, st, existing, desired, budget)
	}
	*budget -= len(leaving)
	next := lowestOrdinal(leaving)
	if next >= current {
		st.setWork(ackov1alpha1.ReasonScaling, "Waiting for %s to leave", strings.Join(leaving, ", "))
		return current, nil
	}
	// Recorded under a larger budget (the running factor went down since), in this rack or with the
	// other racks' (model seed 41369: one pod leaving in each of two racks, each rack held by the other's).
	if len(leaving) > st.maxDown || len(st.recordedLeaving()) > st.maxDown {
		st.setWork(ackov1alpha1.ReasonScaling, "Scaling %s down: %s leave fewer at a time", existing.Name, strings.Join(leaving, ", "))
		return current, r.decideLeavingAgain(ctx, st, leaving)
	}
	if stray := st.unrecordedFrom(existing, next); len(stray) > 0 {
		st.setWork(ackov1alpha1.ReasonScaling, "Scaling %s down: %s would go too, not recorded leaving; choosing the "+
			"leaving pods again", existing.Name, strings.Join(stray, ", "))
		return current, r.decideLeavingAgain(ctx, st, leaving)
	}
	intent := takeDown{what: "Scale down of " + existing.Name, kind: actScaleDown, pods: leaving, decided: st.decidedAt(leaving)}
	if _, v, err := r.takeDownNow(ctx, st, intent, scaleDownStep{set: existing.Name, replicas: next}); v.why != "" || err != nil {
		if v.held {
			st.setWork(ackov1alpha1.ReasonRestartBlocked, "%s", v.why)
		} else {
			st.setWork(ackov1alpha1.ReasonScaling, "Scaling %s down waits: %s", existing.Name, v.why)
		}
		return current, err
	}
	st.setWork(ackov1alpha1.ReasonScaling, "Scaling %s down from %d to %d pods", existing.Name, current, next)
	st.addEvent(corev1.EventTypeNormal, ackov1alpha1.EventScaled, "Scale", existing,
		"Scaling %s down from %d to %d pods: %s leave the cluster", existing.Name, current, next, strings.Join(leaving, ", "))
	return next, nil
}

// rackReplicas is what a rack's StatefulSet should ask for now, whether it exists or not.
func (r *AerospikeClusterReconciler) rackReplicas(ctx context.Context, st *clusterState, name string, desired int32,
	budget *int) (int32, error) {
	if existing := st.existingSets[name]; existing != nil {
		return r.plannedReplicas(ctx, st, existing, desired, budget)
	}
	return st.replicasToCreate(name, desired), nil
}

// replicasToCreate is what a rack's StatefulSet that does not exist is created with: its desired size,
// or more while pods of higher ordinals run (the StatefulSet was deleted without its pods, to grow their
// volumes, during or before a scale-down): it must not ask for fewer replicas than the pods the
// operator has not yet removed through the door, or the StatefulSet controller deletes them at once,
// no leave recorded, no check, no budget. The scale-down then goes on one step at a time. A pod the
// door let go (recorded leaving) that is already terminating is not asked for again.
func (st *clusterState) replicasToCreate(name string, desired int32) int32 {
	replicas := desired
	for podName, pod := range st.pods {
		o, ok := podOrdinal(name, podName)
		if !ok || o < replicas || pod.DeletionTimestamp != nil && slices.Contains(st.recordedLeaving(), podName) {
			continue
		}
		replicas = o + 1
	}
	if replicas > desired {
		st.setWork(ackov1alpha1.ReasonScaling, "Creating StatefulSet %s with %d replicas over its running pods; "+
			"the scale down to %d goes on through the safety checks", name, replicas, desired)
	}
	return replicas
}

// podOrdinal is the ordinal of a pod of the StatefulSet named set (false when the pod is not one of its).
func podOrdinal(set, pod string) (int32, bool) {
	rest, found := strings.CutPrefix(pod, set+"-")
	o, err := strconv.ParseInt(rest, 10, 32)
	return int32(o), found && err == nil
}

// unrecordedFrom lists the StatefulSet's pods from ordinal next up that are not recorded leaving as the
// instance that runs: lowering the replicas to next would remove them with no step recorded and no check
// (model seed 20006: a leaving pod deleted by hand came back as a new instance, which went with its
// neighbour's step). Their leaving is decided again.
func (st *clusterState) unrecordedFrom(sts *appsv1.StatefulSet, next int32) []string {
	var out []string
	for name, pod := range st.pods {
		o, ok := podOrdinal(sts.Name, name)
		if !ok || o < next || !metav1.IsControlledBy(pod, sts) || pod.DeletionTimestamp != nil {
			continue
		}
		if u := st.cluster.Status.Pods[name].Update; u == nil || u.Method != ackov1alpha1.UpdateRemove || u.UID != string(pod.UID) {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

// decideLeavingAgain forgets pods recorded leaving under a larger budget (the replication-factor went
// down since), none of them gone yet: chosen again, fewer at once, instead of held by the safety rule
// for ever (model seed 1549).
func (r *AerospikeClusterReconciler) decideLeavingAgain(ctx context.Context, st *clusterState, leaving []string) error {
	return r.record(ctx, st, func(s *ackov1alpha1.AerospikeClusterStatus) {
		for _, name := range leaving {
			if p, ok := s.Pods[name]; ok && p.Update != nil && p.Update.Method == ackov1alpha1.UpdateRemove {
				p.Update = nil
				s.Pods[name] = p
			}
		}
	})
}

// lowestOrdinal is the lowest StatefulSet ordinal among the pods, read from their names as the
// StatefulSet controller writes them (<StatefulSet>-<ordinal>): a removed rack is no longer in the spec.
func lowestOrdinal(pods []string) int32 {
	lowest := int32(-1)
	for _, p := range pods {
		o, err := strconv.ParseInt(p[strings.LastIndex(p, "-")+1:], 10, 32)
		if err == nil && (lowest < 0 || int32(o) < lowest) {
			lowest = int32(o)
		}
	}
	return lowest
}

// chooseLeaving records the next pods of a scale down, the highest ordinals first, once the safety
// checks let them go; it returns the replicas to ask for now. Pods of those ordinals that do not
// exist need nothing: the StatefulSet simply stops recreating them.
func (r *AerospikeClusterReconciler) chooseLeaving(ctx context.Context, st *clusterState, sts *appsv1.StatefulSet,
	desired int32, budget *int) (int32, error) {
	current := *sts.Spec.Replicas
	n := min(int(current-desired), *budget)
	if n <= 0 {
		st.setWork(ackov1alpha1.ReasonScaling, "Scaling %s down to %d pods waits for another rack's step", sts.Name, desired)
		return current, nil
	}
	*budget -= n
	var pods []string
	for o := current - 1; o >= current-int32(n); o-- {
		// Named as the StatefulSet controller names them, not from the spec (whose layout may differ).
		if name := ackov1alpha1.StatefulSetPodName(sts.Name, o); st.pods[name] != nil {
			pods = append(pods, name)
		}
	}
	if len(pods) == 0 {
		return current - int32(n), nil
	}
	if why := st.operationHold(); why != "" {
		st.setWork(ackov1alpha1.ReasonScaling, "Scaling %s down to %d pods waits: %s", sts.Name, desired, why)
		return current, nil
	}
	if check, why := st.mayTakeDown(pods); check != "" {
		st.setWork(ackov1alpha1.ReasonRestartBlocked, "%s", holdReason("Scale down of "+sts.Name, check, why))
		return current, nil
	}
	st.setWork(ackov1alpha1.ReasonScaling, "Scaling %s down: %s leave the cluster", sts.Name, strings.Join(pods, ", "))
	started := metav1.NewMicroTime(st.now)
	return current, r.record(ctx, st, func(s *ackov1alpha1.AerospikeClusterStatus) {
		for _, p := range pods {
			setUpdate(s, p, &ackov1alpha1.PodUpdate{Method: ackov1alpha1.UpdateRemove, UID: string(st.pods[p].UID), Started: started})
		}
	})
}

// leavingPods are the pods of a StatefulSet recorded as leaving that still exist.
func (st *clusterState) leavingPods(sts *appsv1.StatefulSet) []string {
	return slices.DeleteFunc(st.recordedLeaving(), func(name string) bool {
		return st.pods[name] == nil || !metav1.IsControlledBy(st.pods[name], sts)
	})
}

// forgetRemoved clears the records of pods that left, and of leaving pods the spec wants again.
func (r *AerospikeClusterReconciler) forgetRemoved(ctx context.Context, st *clusterState) error {
	var gone []string
	desired := st.cluster.DesiredPodNames()
	for name, p := range st.cluster.Status.Pods {
		if p.Update == nil || p.Update.Method != ackov1alpha1.UpdateRemove {
			continue
		}
		pod := st.pods[name]
		if pod == nil || string(pod.UID) != p.Update.UID || slices.Contains(desired, name) && pod.DeletionTimestamp == nil {
			gone = append(gone, name)
		}
	}
	if len(gone) == 0 {
		return nil
	}
	return r.record(ctx, st, func(s *ackov1alpha1.AerospikeClusterStatus) {
		for _, name := range gone {
			if p, ok := s.Pods[name]; ok {
				p.Update = nil
				s.Pods[name] = p
			}
		}
	})
}

// operationHold: a scale down waits while an operation restarts a pod (from the moment it is recorded
// as the current pod). Between pods the scale down goes first, through the door like any take-down, and
// the operation's next pod waits for the pods recorded leaving (operationNodesUp): whichever was recorded
// first goes first, so neither waits for the other until the operation's deadline.
func (st *clusterState) operationHold() string {
	if op := st.cluster.Status.OperationStatus; st.operationInProgress() && op.CurrentPod != "" {
		return "operation " + op.ID + " is restarting pod " + op.CurrentPod
	}
	return ""
}

// operationRecording: a WarmRestart signalled its current pod and has not yet recorded the config the
// restart loaded. A live change waits for that record, which would otherwise overwrite its own.
func (st *clusterState) operationRecording() string {
	if op := st.cluster.Status.OperationStatus; st.operationInProgress() && op.CurrentPodSignalled && op.CurrentPodConfigHash != "" {
		return "operation " + op.ID + " records the config pod " + op.CurrentPod + " restarted with"
	}
	return ""
}

func (st *clusterState) operationInProgress() bool {
	op := st.cluster.Status.OperationStatus
	return op != nil && op.Phase == ackov1alpha1.OperationInProgress
}

// removeOldRacks scales the StatefulSets of removed racks to zero like any scale down (their config
// and template following the spec meanwhile), then deletes them and their ConfigMaps. One that a volume
// growth deleted without its pods is created again over them (replicasToCreate), so that they too leave
// through the door (model seed 20305: they ran on, never removed).
func (r *AerospikeClusterReconciler) removeOldRacks(ctx context.Context, st *clusterState, budget *int) (bool, error) {
	for name, rack := range st.removedRacks {
		existing := st.existingSets[name]
		if existing == nil {
			if stop, err := r.recreateRemovedRack(ctx, st, rack); stop || err != nil {
				return true, err
			}
			continue
		}
		replicas, err := r.plannedReplicas(ctx, st, existing, 0, budget)
		if err != nil {
			return true, err
		}
		if replicas > 0 || ptr.Deref(existing.Spec.Replicas, 0) > 0 {
			if stop, err := r.scaleRemovedRack(ctx, st, name, rack, replicas); stop || err != nil {
				return true, err
			}
			continue
		}
		if rackPods(st, existing) > 0 {
			st.deferred = true
			st.setWork(ackov1alpha1.ReasonScaling, "Waiting for the pods of %s to go", name)
			continue
		}
		if err := r.deleteRack(ctx, st, existing); err != nil {
			return true, err
		}
	}
	return false, nil
}

// scaleRemovedRack writes a removed rack's StatefulSet with the replicas planned (plannedReplicas), its
// config and template following the spec until the rack is gone (renderRemovedRacks).
func (r *AerospikeClusterReconciler) scaleRemovedRack(ctx context.Context, st *clusterState, name string, rack removedRack,
	replicas int32) (bool, error) {
	st.deferred = true
	st.setWork(ackov1alpha1.ReasonScaling, "Removing rack StatefulSet %s", name)
	if err := st.setReplicas(rack.set, replicas); err != nil {
		return true, err
	}
	for _, obj := range []client.Object{rack.configMap, rack.set} {
		if stop, err := r.updateRemovedChild(ctx, st, obj); stop || err != nil {
			return true, err
		}
	}
	return false, nil
}

// recreateRemovedRack creates a removed rack's StatefulSet (and ConfigMap) again over its orphaned pods,
// asking for every one not yet removed through the door; the next reconcile scales it down.
func (r *AerospikeClusterReconciler) recreateRemovedRack(ctx context.Context, st *clusterState, rack removedRack) (bool, error) {
	replicas := st.replicasToCreate(rack.set.Name, 0)
	if replicas == 0 {
		return false, nil
	}
	st.deferred = true
	if err := st.setReplicas(rack.set, replicas); err != nil {
		return true, err
	}
	for _, obj := range []client.Object{rack.configMap, rack.set} {
		if stop, err := r.applyChild(ctx, st, obj); stop || err != nil {
			return true, err
		}
	}
	return false, nil
}

func rackPods(st *clusterState, sts *appsv1.StatefulSet) int {
	n := 0
	for _, pod := range st.pods {
		if metav1.IsControlledBy(pod, sts) {
			n++
		}
	}
	return n
}

func (r *AerospikeClusterReconciler) deleteRack(ctx context.Context, st *clusterState, sts *appsv1.StatefulSet) error {
	if err := client.IgnoreNotFound(r.deleteSet(ctx, st, sts, false)); err != nil {
		return err
	}
	name := st.cluster.ConfigMapName(rackOf(sts))
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: sts.Namespace, Name: name}}
	if err := client.IgnoreNotFound(r.Delete(ctx, cm)); err != nil {
		return err
	}
	st.addEvent(corev1.EventTypeNormal, ackov1alpha1.EventScaled, "Scale", sts, "Removed rack StatefulSet %s", sts.Name)
	return nil
}
