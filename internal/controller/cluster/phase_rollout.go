package cluster

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	ackov1alpha1 "github.com/acko-io/acko/api/v1alpha1"
	"github.com/acko-io/acko/internal/metrics"
	"github.com/acko-io/acko/internal/resources"
)

// rollingRestart brings outdated pods up to date in batches, rack by rack, each batch at most
// min(rollingUpdateBatchSize, replication-factor − 1) pods and gated on the safety checks. Every
// step is recorded in status.pods[].update before the pod is touched and followed until the pod is
// back, so that an operator restarted at any point finishes it without doing it twice.
func (r *AerospikeClusterReconciler) rollingRestart(ctx context.Context, st *clusterState) (bool, error) {
	defer st.describeMoves()
	st.checkCurrentPods()
	inFlight, err := r.followUpdates(ctx, st)
	if err != nil || inFlight || st.stuck != "" {
		return true, err
	}
	if len(st.outdated) == 0 {
		return false, nil
	}
	if name := st.setNotYetUpdated(); name != "" {
		// A pod replaced before its StatefulSet controller has the new template would come back with
		// the old one and need a second restart.
		st.setWork(ackov1alpha1.ReasonRollingRestart, "Waiting for StatefulSet %s to take the new template", name)
		return true, nil
	}
	batch, hold := st.nextBatch()
	if hold != "" {
		st.setWork(ackov1alpha1.ReasonRestartBlocked, "%s", hold)
		return true, nil
	}
	if why := r.checkOpenFileLimits(st, batch); why != "" {
		st.setWork(ackov1alpha1.ReasonRestartBlocked, "%s", why)
		return true, nil
	}
	return true, r.startBatch(ctx, st, batch)
}

// nextBatch picks the next pods to update: broken pods first (replacing them takes no node down;
// still at most replication-factor − 1 at once), then the outdated pods in order, all of one rack and
// one method, at most min(rollingUpdateBatchSize, replication-factor − 1), one at a time for live
// changes. hold says why the batch may not start now ("" when it may).
func (st *clusterState) nextBatch() (batch []outdatedPod, hold string) {
	// Broken pods first, then pods not Ready: they are down already (or their node serves while a
	// container is not ready), and while one is not Ready the budget refuses the eviction of any other.
	// An operation in progress holds everything but the broken pods: replacing them takes no node down,
	// and its next pod may be waiting for just that node.
	first := st.outdated[0]
	broken := slices.IndexFunc(st.outdated, func(o outdatedPod) bool { return o.method == ackov1alpha1.UpdateReplace })
	switch {
	case broken >= 0:
		first = st.outdated[broken]
	case slices.ContainsFunc(st.outdated, isTogether):
		// It takes no node down, and an operation's next pod waits for it.
		if why := st.operationRecording(); why != "" {
			return nil, holdReason("Rolling restart", "NoOperationStep", why)
		}
		return slices.DeleteFunc(slices.Clone(st.outdated), func(o outdatedPod) bool { return !isTogether(o) }), ""
	case st.operationInProgress():
		return nil, holdReason("Rolling restart", "NoOperationInProgress",
			"operation "+st.cluster.Status.OperationStatus.ID+" is in progress")
	default:
		if i := slices.IndexFunc(st.outdated, func(o outdatedPod) bool { return !resources.PodReady(o.pod) }); i >= 0 {
			first = st.outdated[i]
		}
	}
	limit := st.batchLimit(first)
	batch = append(batch, first)
	for _, o := range st.outdated {
		if o.pod != first.pod && sameStep(o, first) && len(batch) < limit {
			batch = append(batch, o)
		}
	}
	if !methodOf(first.method).waitsForChecks() {
		return batch, ""
	}
	if check, why := st.mayTakeDown(podsOf(batch)); check != "" {
		return nil, holdReason("Rolling restart", check, why)
	}
	return batch, ""
}

// batchLimit is how many pods a batch that starts with first may take: its method's limit, and one for a
// move off a blocked node (spec.nodeBlockList), each after the last one's refill.
func (st *clusterState) batchLimit(first outdatedPod) int {
	if isMove(first) {
		return 1
	}
	return methodOf(first.method).batchLimit(st)
}

// batchSize is min(rollingUpdateBatchSize, replication-factor − 1).
func (st *clusterState) batchSize() int {
	return min(int(st.cluster.BatchSize()), st.maxDown)
}

// sameStep: o may go in the batch of first: same method, same rack, both moves or neither.
func sameStep(o, first outdatedPod) bool {
	return o.method == first.method && isMove(o) == isMove(first) && rackOf(o.pod) == rackOf(first.pod)
}

// attempted: the pod's step may have acted already (a restart signal may have gone out, an eviction was
// refused): it is followed, never decided again.
func (st *clusterState) attempted(pod string) bool {
	u := st.cluster.Status.Pods[pod].Update
	return u != nil && (u.Attempted != nil || u.NodeStartedBefore != nil)
}

// isTogether: the pod takes a new replication-factor with every other node, in one batch of them all.
func isTogether(o outdatedPod) bool { return o.method == ackov1alpha1.UpdateLiveTogether }

func podsOf(batch []outdatedPod) []string {
	names := make([]string, len(batch))
	for i, o := range batch {
		names[i] = o.pod.Name
	}
	return names
}

// startBatch records the batch, then acts on what needs no more waiting: replacing broken pods and
// evicting pods. A restart in place first takes the disruption budget (followUpdates goes on with it);
// a live change starts its background task.
func (r *AerospikeClusterReconciler) startBatch(ctx context.Context, st *clusterState, batch []outdatedPod) error {
	started := metav1.NewMicroTime(st.now)
	if err := r.record(ctx, st, func(s *ackov1alpha1.AerospikeClusterStatus) {
		for _, o := range batch {
			setUpdate(s, o.pod.Name, &ackov1alpha1.PodUpdate{
				Method: o.method, UID: string(o.pod.UID), Reason: o.reason, Started: started,
				ConfigHash: st.desiredConfigHash(o.pod), VolumeSizes: grownSizes(st.cluster, o.reason),
			})
		}
	}); err != nil {
		return err
	}
	names := make([]string, 0, len(batch))
	for _, o := range batch {
		names = append(names, fmt.Sprintf("%s (%s, %s)", o.pod.Name, o.reason, methodOf(o.method).text()))
	}
	st.setWork(ackov1alpha1.ReasonRollingRestart, "Updating %s", strings.Join(names, ", "))
	st.addEvent(corev1.EventTypeNormal, ackov1alpha1.EventRollingRestartStarted, "Restart", nil,
		"Updating %s; %d pods to go after this batch", strings.Join(names, ", "), len(st.outdated)-len(batch))
	_, err := r.followUpdates(ctx, st)
	return err
}

// desiredConfigHash is the config identity of the pod's rack (a removed rack's too: it follows the spec).
func (st *clusterState) desiredConfigHash(pod *corev1.Pod) string {
	if sts := st.desiredSet(pod); sts != nil {
		return sts.Spec.Template.Annotations[ackov1alpha1.AnnotationConfigHash]
	}
	return ""
}

// grownSizes are the volume sizes a VolumeGrown restart gives the pod's asd.
func grownSizes(c *ackov1alpha1.AerospikeCluster, reason ackov1alpha1.RestartReason) string {
	if reason != ackov1alpha1.RestartReasonVolumeGrown {
		return ""
	}
	return resources.VolumeSizes(c)
}

func setUpdate(s *ackov1alpha1.AerospikeClusterStatus, pod string, u *ackov1alpha1.PodUpdate) {
	if s.Pods == nil {
		s.Pods = map[string]ackov1alpha1.PodStatus{}
	}
	p := s.Pods[pod]
	p.Update = u
	s.Pods[pod] = p
}

// followUpdates takes every recorded step one move further and reports whether any is still under
// way. Steps not taken yet are taken together, method by method, after the safety checks; a step
// whose pod is back is cleared; one whose pod does not come back within the progress deadline stops
// the rollout (RolloutStuck).
func (r *AerospikeClusterReconciler) followUpdates(ctx context.Context, st *clusterState) (bool, error) {
	waiting, pending, err := r.followStarted(ctx, st)
	if err != nil {
		return true, err
	}
	for _, method := range rollMethods {
		pods := pending[method]
		if len(pods) == 0 {
			continue
		}
		if methodOf(method).takesDown() && len(pods)+st.heldBesides(pods) > st.maxDown && !slices.ContainsFunc(pods, st.attempted) {
			// Recorded under a larger budget (the factor went down since), with the pods the operator holds
			// down for other steps (a scale-down's leaving pods recorded meanwhile), and not tried yet:
			// decided again, or each would wait for the other for ever (model seed 66944).
			for _, p := range pods {
				if err := r.clearUpdate(ctx, st, p); err != nil {
					return true, err
				}
			}
			continue
		}
		why, err := r.takeStep(ctx, st, method, pods)
		if err != nil {
			return true, err
		}
		for _, p := range pods {
			waiting = append(waiting, p+": "+why)
			st.checkRefused(actEvict, p, refusedSince(st.cluster.Status.Pods[p].Update))
		}
	}
	if len(waiting) > 0 {
		st.setWork(ackov1alpha1.ReasonRollingRestart, "Waiting for %s", strings.Join(waiting, "; "))
	}
	return len(waiting) > 0, nil
}

// heldBesides counts the pods other than these whose gates the operator holds down for a step of its own.
func (st *clusterState) heldBesides(pods []string) int {
	n := 0
	for name := range st.heldPods() {
		if !slices.Contains(pods, name) {
			n++
		}
	}
	return n
}

// followStarted follows the steps that happened (or were decided again) and sorts the ones not taken
// yet by method; waiting says what the followed ones wait for.
func (r *AerospikeClusterReconciler) followStarted(ctx context.Context, st *clusterState) (
	waiting []string, pending map[ackov1alpha1.PodUpdateMethod][]string, err error) {
	pending = map[ackov1alpha1.PodUpdateMethod][]string{}
	for _, name := range slices.Sorted(maps.Keys(st.cluster.Status.Pods)) {
		u := st.cluster.Status.Pods[name].Update
		if u == nil || u.Method == ackov1alpha1.UpdateRemove {
			continue
		}
		switch st.fateOf(name, u) {
		case decideAgain:
			err = r.clearUpdate(ctx, st, name)
		case stepPending:
			pending[u.Method] = append(pending[u.Method], name)
		default:
			var why string
			if why, err = r.followBack(ctx, st, name, u); why != "" {
				if dl := st.dataLoading(name); dl != nil {
					why = dl.Message
				}
				waiting = append(waiting, name+": "+why)
				st.checkDeadline(name, u, why)
			}
		}
		if err != nil {
			return nil, nil, err
		}
	}
	return waiting, pending, nil
}

// stepFate is what becomes of a recorded step in this reconcile.
type stepFate int

const (
	// followStep: the step happened (or is being settled); it is followed until the pod is back.
	followStep stepFate = iota
	// stepPending: the step has not happened yet; it is taken after the checks.
	stepPending
	// decideAgain: the step no longer fits; it is cleared and the pod is decided again.
	decideAgain
)

// fateOf decides what becomes of a recorded step. A step not taken yet that no longer fits (reverted,
// changed again, or the pod broke) is decided again. So is a finished step whose restart is over while
// its pod is outdated again (the spec changed since, e.g. a revert): that pod can never come back as the
// spec now wants it, so following it would wait forever. Decided again, it is replaced or restarted
// like any other outdated pod, through the same checks (a broken pod is replaced at once).
func (st *clusterState) fateOf(name string, u *ackov1alpha1.PodUpdate) stepFate {
	pod := st.pods[name]
	sameInstance := pod != nil && string(pod.UID) == u.UID && pod.DeletionTimestamp == nil
	switch {
	case sameInstance && !u.Done:
		return st.fateNotTaken(name, u)
	case u.Done && (st.isOutdated(name) || !slices.Contains(st.cluster.DesiredPodNames(), name)) &&
		st.restartOver(name, u, sameInstance):
		// Or a scale-down since leaves the pod out: it leaves as it is, through the door, and is not
		// rolled (findOutdated), so following it would wait for ever for a spec it never gets (model
		// seed 42532: a new pod kept from Ready by a sidecar the user then removed).
		return decideAgain
	}
	return followStep
}

// fateNotTaken decides what becomes of a step not recorded as taken: decided again when it no longer
// fits, else taken. A restart in place that happened unrecorded (the operator stopped before it learned
// of it) is followed as taken whatever the spec says since, so that the pod records the config its asd
// loaded.
func (st *clusterState) fateNotTaken(name string, u *ackov1alpha1.PodUpdate) stepFate {
	if methodOf(u.Method).happenedUnrecorded(st, name, u) || !st.superseded(name, u) {
		return stepPending
	}
	return decideAgain
}

// restartOver: the finished step's pod is no longer on its way back from it: a new instance runs, or
// its method says it is over on the same one (a restart in place).
func (st *clusterState) restartOver(name string, u *ackov1alpha1.PodUpdate, sameInstance bool) bool {
	return !sameInstance || methodOf(u.Method).overOnSameInstance(st, name, u)
}

func (st *clusterState) isOutdated(name string) bool {
	return slices.ContainsFunc(st.outdated, func(o outdatedPod) bool { return o.pod.Name == name })
}

// superseded: the recorded step has not happened and no longer fits the pod: the change was
// reverted or changed again, or the pod broke and is to be replaced instead. It is decided again.
func (st *clusterState) superseded(name string, u *ackov1alpha1.PodUpdate) bool {
	if u.Done {
		return false
	}
	idx := slices.IndexFunc(st.outdated, func(o outdatedPod) bool { return o.pod.Name == name })
	if idx < 0 {
		return true
	}
	o, method := st.outdated[idx], methodOf(u.Method)
	if st.moveStarted(o.pod) {
		return false // a move whose claims are given up is finished: the pod cannot start again on them
	}
	return !method.standsFor(o.method) || isMove(o) != movesOff(u) ||
		u.ConfigHash != "" && u.ConfigHash != st.desiredConfigHash(o.pod) ||
		method.needsEveryPodReady() && resources.PodReady(o.pod) && st.notReadyOutdated()
}

// notReadyOutdated: an outdated pod with no step is not Ready. It goes first (nextBatch): meanwhile the
// budget refuses the eviction of any Ready pod, and the PodsReady check holds a live change of any other
// pod, so an eviction or a live change recorded before would wait forever (model seed 40344: a live
// change of one pod recorded, then a drain recreated another on a config asd refuses, and the sidecar
// the user added made it outdated too; the live change waited for it to be Ready, its replacement for
// the live change).
func (st *clusterState) notReadyOutdated() bool {
	return slices.ContainsFunc(st.outdated, func(o outdatedPod) bool {
		return !resources.PodReady(o.pod) && st.cluster.Status.Pods[o.pod.Name].Update == nil
	})
}

// takeStep takes the recorded steps of one method that have not happened yet, and says what they
// wait for now.
func (r *AerospikeClusterReconciler) takeStep(ctx context.Context, st *clusterState, method ackov1alpha1.PodUpdateMethod,
	names []string) (string, error) {
	return methodOf(method).takeStep(ctx, r, st, names)
}

// movesOff: the step moves its pod off a blocked node (spec.nodeBlockList).
func movesOff(u *ackov1alpha1.PodUpdate) bool {
	return u != nil && u.Reason == ackov1alpha1.RestartReasonNodeBlocked
}

// recordRefused records when the eviction of the pod's step was first refused: a refusal that lasts the
// progress deadline stalls the rollout (checkRefused), counted from there, not from the step's record,
// so that a step held long by the checks is not reported Stalled at its first refusal.
func (r *AerospikeClusterReconciler) recordRefused(ctx context.Context, st *clusterState, name string) error {
	at := metav1.NewMicroTime(st.now)
	return r.record(ctx, st, func(s *ackov1alpha1.AerospikeClusterStatus) {
		if u := s.Pods[name].Update; u != nil && u.Attempted == nil {
			u.Attempted = &at
		}
	})
}

// refusedSince is when the eviction of a step not taken yet was first refused (zero when it was not).
func refusedSince(u *ackov1alpha1.PodUpdate) time.Time {
	if u == nil || u.Done || u.Method != ackov1alpha1.UpdateEvict || u.Attempted == nil {
		return time.Time{}
	}
	return u.Attempted.Time
}

// checkRefused stops the rollout (Stalled, RolloutStuck) when the pod's eviction has been refused since
// since for longer than the progress deadline (a zero since: it was not refused).
func (st *clusterState) checkRefused(kind actKind, pod string, since time.Time) {
	if st.stuck == "" {
		st.stuck = st.refusedTooLong(kind, pod, since)
	}
}

// refusedTooLong is refusedFor on this reconcile's observations, for a take-down of the given kind: a
// take-down that the checks hold now (a node down, migrations) waits for them, which is progress, not
// for the refusal of its last attempt.
func (st *clusterState) refusedTooLong(kind actKind, pod string, since time.Time) string {
	if since.IsZero() {
		return ""
	}
	if check, _ := st.view().run(kind, []string{pod}); check != "" {
		return ""
	}
	return refusedFor(pod, since, st.now, st.cluster.ProgressDeadline())
}

// refusedFor says why an eviction refused since since (zero: not refused) stalls the cluster, once the
// refusals have lasted longer than the progress deadline ("" until then). Only the user can end it:
// a second PodDisruptionBudget over the pods (the API server then refuses every eviction), or a budget
// that counts pods unhealthy, or allows no disruption, for that long. The eviction is still tried at
// every reconcile, through the checks, and goes as soon as the budget lets it. The message stays the
// same from one reconcile to the next (between two attempts the checks wait for fresh readings); the
// refusal's own words are in the Reconciling condition until the deadline, and in an operation's message.
func refusedFor(pod string, since, now time.Time, deadline time.Duration) string {
	if since.IsZero() || now.Sub(since) <= deadline {
		return ""
	}
	return fmt.Sprintf("the eviction of pod %s has been refused since %s, longer than the progress deadline (%s): "+
		"another PodDisruptionBudget selects the cluster's pods (the API server refuses every eviction then: delete it), "+
		"or the PodDisruptionBudget allows no disruption (kubectl get pdb shows which pods it counts unhealthy); "+
		"the eviction is tried again at every reconcile and goes as soon as the budget lets it",
		pod, since.UTC().Format(time.RFC3339), deadline)
}

// countedDisrupted: the pod is not Ready and the PodDisruptionBudget counts it as disrupted: deleting it
// frees no disruption for a drain, while its eviction is refused whenever another pod is not Ready too
// (unhealthy pods are evicted only while the budget is healthy). The door has looked at that moment.
func (st *clusterState) countedDisrupted(pod string) bool {
	taken, _ := st.budgetTaken([]string{pod})
	return taken
}

// followBack follows a step that happened until its pod is back: a new instance (a new UID) that is
// Ready (its node a member of the cluster again), or, in place, a node that restarted and is Ready
// again; then until the cluster is stable again (afterStep).
func (r *AerospikeClusterReconciler) followBack(ctx context.Context, st *clusterState, name string,
	u *ackov1alpha1.PodUpdate) (string, error) {
	pod := st.pods[name]
	if why, followed, err := methodOf(u.Method).followSameInstance(ctx, r, st, pod, u); followed {
		return why, err
	}
	switch {
	case !u.Done:
		return "recording the restart", r.markDone(ctx, st, name, u) // the operator stopped after the act
	case pod == nil && !slices.Contains(st.cluster.DesiredPodNames(), name):
		// Gone, and a scale-down (or a rack's removal) since keeps it from being created again: nothing
		// comes back to wait for (model seeds 41326, 41912: a replaced pod beyond the new size). Should
		// its StatefulSet still create it, it is a leaving pod like any other.
		return "", r.clearUpdate(ctx, st, name)
	case pod == nil || pod.DeletionTimestamp != nil || string(pod.UID) == u.UID:
		// The same instance after its eviction is a cache behind: the step ends with a new pod only.
		return "pod is being recreated", nil
	case !st.backFromStep(name):
		return st.becauseUnstable("pod is not Ready yet"), nil
	case st.afterStep() != "":
		return st.afterStep(), nil
	}
	return "", r.clearUpdate(ctx, st, name)
}

// backFromStep: the new instance is Ready, or only the operator's own hold on its gate keeps it from
// Ready (an operation's warm restart of it begins) while its containers are ready and its node is a
// member: the operation waits for this step's end to take it down, which must not wait for the operation.
func (st *clusterState) backFromStep(name string) bool {
	pod := st.pods[name]
	if resources.PodReady(pod) {
		return true
	}
	if _, held := st.held[name]; !held || len(resources.NotReadyContainers(pod)) > 0 {
		return false
	}
	ready, _, _ := st.nodeGate(name)
	return ready
}

// decidedAt is when the latest of the pods' steps was recorded: the act needs readings taken after it.
func (st *clusterState) decidedAt(pods []string) time.Time {
	var at time.Time
	for _, p := range pods {
		if u := st.cluster.Status.Pods[p].Update; u != nil && u.Started.After(at) {
			at = u.Started.Time
		}
	}
	return at
}

// afterStep is what a step whose pod is back (Ready: its node serves again) still waits for: the
// cluster stable, its migrations ended ("" once it is). Followed as the step's own wait, not as a next
// step that a safety check holds, so that migrations, which take hours with a lot of data, are
// progress (no RolloutStuck, no RollingRestartBlocked warning).
func (st *clusterState) afterStep() string {
	if stable, why := st.stable(); !stable {
		return "pod is back; waiting for the cluster to be stable: " + why
	}
	return ""
}

// markDone records that the step happened, with the pod's restart reason and time.
func (r *AerospikeClusterReconciler) markDone(ctx context.Context, st *clusterState, name string,
	u *ackov1alpha1.PodUpdate) error {
	at := metav1.NewTime(st.now)
	err := r.record(ctx, st, func(s *ackov1alpha1.AerospikeClusterStatus) {
		p := s.Pods[name]
		if p.Update == nil {
			return
		}
		p.Update.Done = true
		p.LastRestartReason, p.LastRestartTime = u.Reason, &at
		s.Pods[name] = p
	})
	if err == nil {
		metrics.RecordRestart(st.key, u.Reason)
	}
	return err
}

func (r *AerospikeClusterReconciler) clearUpdate(ctx context.Context, st *clusterState, name string) error {
	err := r.record(ctx, st, func(s *ackov1alpha1.AerospikeClusterStatus) {
		if p, ok := s.Pods[name]; ok {
			p.Update = nil
			s.Pods[name] = p
		}
	})
	if err == nil && len(st.outdated) == 0 && !st.updatesPending() {
		st.addEvent(corev1.EventTypeNormal, ackov1alpha1.EventRollingRestartFinished, "Restart", nil,
			"Rolling restart finished: every pod runs the current template and config")
	}
	return err
}

// updatesPending reports whether any pod has a recorded step.
func (st *clusterState) updatesPending() bool {
	for _, p := range st.cluster.Status.Pods {
		if p.Update != nil {
			return true
		}
	}
	return false
}

// checkDeadline stops the rollout when a restarted pod has not come back within the progress
// deadline, counted from the restart. It counts until the pod is Ready, or until every container of
// the pod is ready and its node is a member of the cluster: real migrations take minutes, and a node
// that migrates is making progress, but a container whose readiness never passes (a sidecar's probe)
// is not. (A step not taken yet waits on the safety checks, which name what they wait for.)
func (st *clusterState) checkDeadline(name string, u *ackov1alpha1.PodUpdate, why string) {
	deadline := st.cluster.ProgressDeadline()
	since := u.Started.Time
	if at := st.cluster.Status.Pods[name].LastRestartTime; u.Done && at != nil {
		since = at.Time
	}
	since = st.progressSince(name, since)
	pod := st.pods[name]
	notReady := resources.NotReadyContainers(pod)
	if st.now.Sub(since) <= deadline || resources.PodReady(pod) || len(notReady) == 0 && st.isMember(name) {
		return
	}
	st.stuck = fmt.Sprintf("pod %s did not come back within the progress deadline (%s): %s; %s", name, deadline,
		st.notReadyState(name, why), stuckAdvice)
}

const stuckAdvice = "no further pod is restarted: fix the spec (the pod is then replaced or restarted with it, at " +
	"once when it is broken, else after the safety checks) or raise spec.progressDeadlineSeconds"

// notReadyState names what keeps a pod not Ready: its broken container, its containers not ready, or why.
func (st *clusterState) notReadyState(name, why string) string {
	notReady := resources.NotReadyContainers(st.pods[name])
	switch broken := st.broken[name]; {
	case broken != "":
		return broken
	case len(notReady) > 0:
		return "containers not ready: " + strings.Join(notReady, ", ")
	}
	return why
}

// checkCurrentPods stalls the cluster when a pod that already runs the current spec with no step of its
// own (created by a scale up, or recreated after a deletion, a drain or an operation) has been kept from
// being Ready by its containers for longer than the progress deadline: the spec does not work, and while
// that pod is not Ready the budget refuses every other eviction and the safety rule holds every other
// take-down, so a rollout or an operation would wait for it until its own deadline, and the status would
// show that wait instead of the spec to fix. A node that does not answer (its containers ready) is the
// cluster's trouble, not the spec's: the checks wait for it.
func (st *clusterState) checkCurrentPods() {
	deadline := st.cluster.ProgressDeadline()
	// Leaving pods too: one that the spec broke holds the scale-down (it is down) until the spec is fixed.
	for _, name := range slices.Sorted(maps.Keys(st.pods)) {
		pod := st.pods[name]
		if pod == nil || resources.PodReady(pod) || st.isOutdated(name) || !st.runsDesired(pod) ||
			st.cluster.Status.Pods[name].Update != nil ||
			st.broken[name] == "" && len(resources.NotReadyContainers(pod)) == 0 ||
			st.now.Sub(st.progressSince(name, notReadySince(pod))) <= deadline {
			continue
		}
		st.stuck = fmt.Sprintf("pod %s, which runs the current spec, has not been Ready for the progress deadline (%s): "+
			"%s; %s", name, deadline, st.notReadyState(name, "not Ready"), stuckAdvice)
		return
	}
}

// runsDesired: the pod runs its rack's desired template and config (a leaving pod is not rolled, so
// not being outdated does not tell).
func (st *clusterState) runsDesired(pod *corev1.Pod) bool {
	set := st.desiredSet(pod)
	if set == nil {
		return false
	}
	_, outdated := resources.RestartReason(pod, set)
	return !outdated
}

// notReadySince is when the pod last stopped being Ready (its creation if it never was).
func notReadySince(pod *corev1.Pod) time.Time {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady && c.Status != corev1.ConditionTrue && !c.LastTransitionTime.IsZero() {
			return c.LastTransitionTime.Time
		}
	}
	return pod.CreationTimestamp.Time
}

// isMember: the pod runs and its node is in the cluster (the largest group).
func (st *clusterState) isMember(name string) bool {
	if !slices.Contains(st.members, name) || !st.healthOK {
		return false
	}
	groups, _ := st.health.Groups(st.members)
	return len(groups) > 0 && slices.Contains(groups[0].Pods, name)
}

// setNotYetUpdated names a StatefulSet whose observed state (from this reconcile's start) is not
// yet the desired template, or whose controller has not seen its latest generation ("" when none).
func (st *clusterState) setNotYetUpdated() string {
	desiredSets := maps.Clone(st.sets)
	for name, rack := range st.removedRacks {
		desiredSets[name] = rack.set // a broken pod of a removed rack is replaced too
	}
	for name, desired := range desiredSets {
		existing := st.existingSets[name]
		if existing == nil || resources.NeedsUpdate(existing, desired) ||
			existing.Status.ObservedGeneration < existing.Generation {
			return name
		}
	}
	return ""
}
