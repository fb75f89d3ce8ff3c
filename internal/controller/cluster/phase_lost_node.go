package cluster

import (
	"context"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ackov1alpha1 "github.com/acko-io/acko/api/v1alpha1"
	"github.com/acko-io/acko/internal/resources"
)

// annotationSelectedNode is where the scheduler records the node a claim's volume is provisioned on
// (WaitForFirstConsumer classes: local-path, TopoLVM, OpenEBS LocalPV...).
const annotationSelectedNode = "volume.kubernetes.io/selected-node"

// pinnedPod is a pod held by local volumes (spec.storage.localVolumes) on a Kubernetes node that is
// gone or not Ready: it cannot run anywhere else while its claims exist.
type pinnedPod struct {
	pod    *corev1.Pod
	node   string
	lost   string    // how: "deleted", "not Ready"
	since  time.Time // when the node was first seen so (for a deleted node: when the pod stopped)
	claims []*corev1.PersistentVolumeClaim
	// outOfService: the Kubernetes node is deleted or tainted node.kubernetes.io/out-of-service (its
	// admin says it is shut down): no asd runs there any more, so the pod may be deleted without its
	// kubelet's word (grace 0). Else a node that does not report may still run asd, cut off: a pod
	// deleted with no grace would start its successor beside it, two asd under one identity.
	outOfService bool
	// givenUp: the pod is Terminating after a give-up the door let through; it waits only for its
	// node's kubelet, or for the node to be out of service.
	givenUp bool
}

// giveUpAt is when the pod's volumes may be given up.
func (p pinnedPod) giveUpAt(lv *ackov1alpha1.LocalVolumesSpec) time.Time {
	return p.since.Add(lv.NodeLostAfter())
}

// recoverLostNodes finds the pods held by local volumes on a lost node and, once the node has been
// lost for spec.storage.localVolumes.nodeLostAfterSeconds, deletes their claims and then the pod, so
// that the StatefulSet recreates it elsewhere with new, empty volumes that migrations refill. Through
// the door, under the safety rule: the other nodes must hold every copy (all up, stable, no
// migrations, no node whose volumes were given up before and not seen refilled), so that the data
// given up exists elsewhere. The pods due are judged together, as many as the rule allows (two lost
// nodes at replication-factor 3), every lost node excluded from the nodes the door waits for. The
// NodeLost condition says what waits for what. A crash between the deletes is safe: the claims wait
// for the pod (their protection finalizer), and the next reconcile finds the pod still pinned and
// deletes it.
func (r *AerospikeClusterReconciler) recoverLostNodes(ctx context.Context, st *clusterState) (bool, error) {
	if err := r.forgetRefilled(ctx, st); err != nil {
		return false, err
	}
	lv := localVolumes(st.cluster)
	var pinned []pinnedPod
	var err error
	if lv != nil {
		if pinned, err = r.findPinned(ctx, st, lv); err != nil {
			return false, err
		}
	}
	// A pinned pod's node does not answer: it is not counted as a running node the others are measured by.
	lost := make([]string, 0, len(pinned))
	for _, p := range pinned {
		lost = append(lost, p.pod.Name)
	}
	st.members = slices.DeleteFunc(st.members, func(m string) bool { return slices.Contains(lost, m) })
	if err = r.recordLost(ctx, st, lost); err != nil || len(pinned) == 0 {
		return false, err
	}
	due := st.mayGiveUpTogether(slices.DeleteFunc(slices.Clone(pinned), func(p pinnedPod) bool {
		return p.givenUp || st.now.Before(p.giveUpAt(lv))
	}))
	verdict := ""
	if len(due) > 0 {
		if verdict, err = r.giveUp(ctx, st, due, lost, lv); err != nil {
			return false, err
		}
	}
	lines, err := r.describePinned(ctx, st, pinned, due, lv)
	if err != nil {
		return false, err
	}
	if verdict != "" {
		lines = append(lines, verdict)
	}
	st.nodeLost = strings.Join(lines, "; ")
	st.setWork(ackov1alpha1.ReasonLocalVolumesPinned, "%s", st.nodeLost)
	return false, nil
}

// findPinned lists the pods held by local volumes on a lost node, by name; a pod Terminating after a
// give-up is marked so.
func (r *AerospikeClusterReconciler) findPinned(ctx context.Context, st *clusterState,
	lv *ackov1alpha1.LocalVolumesSpec) ([]pinnedPod, error) {
	var pinned []pinnedPod
	for _, name := range slices.Sorted(maps.Keys(st.pods)) {
		pod := st.pods[name]
		if resources.PodReady(pod) {
			continue
		}
		p, err := r.pinnedBy(ctx, pod, lv.StorageClasses)
		if err != nil {
			return nil, fmt.Errorf("pod %s: %w", name, err)
		}
		if p != nil {
			g := st.cluster.Status.Pods[name].VolumesGivenUp
			p.givenUp = pod.DeletionTimestamp != nil && g != nil && g.UID == string(pod.UID)
			pinned = append(pinned, *p)
		}
	}
	return pinned, nil
}

// describePinned says, for the NodeLost condition, where each pinned pod stands; a pod Terminating after
// its give-up is deleted at once when its node is out of service by now.
func (r *AerospikeClusterReconciler) describePinned(ctx context.Context, st *clusterState, pinned, due []pinnedPod,
	lv *ackov1alpha1.LocalVolumesSpec) ([]string, error) {
	lines := make([]string, 0, len(pinned))
	for _, p := range pinned {
		line := fmt.Sprintf("pod %s: its local volumes are on node %s, %s since %s", p.pod.Name, p.node, p.lost,
			p.since.UTC().Format(time.RFC3339))
		switch at := p.giveUpAt(lv); {
		case p.givenUp:
			what, err := r.deleteGivenUpAgain(ctx, p)
			if err != nil {
				return nil, err
			}
			line += "; its volumes were given up: " + what
		case st.now.Before(at):
			line += "; they are given up at " + at.UTC().Format(time.RFC3339)
		case slices.ContainsFunc(due, func(d pinnedPod) bool { return d.pod.Name == p.pod.Name }):
		case st.mayHoldLastCopy(p.pod.Name):
			line += "; " + st.lastCopyKept(p.pod.Name)
		default:
			line += fmt.Sprintf("; given up after the pods before it (at most %d at a time)", st.maxDown)
		}
		lines = append(lines, line)
	}
	return lines, nil
}

// refilling are the pods whose local volumes the operator gave up and whose node has not been seen
// refilled since (status.pods[*].volumesGivenUp), sorted: they count as not holding their copies. A pod
// moved off a blocked node whose claims were just deleted, still Ready and not yet evicted, still holds
// its data (its volumes stay mounted until it goes): it is not counted, or the PodDisruptionBudget would
// refuse its own eviction.
func (st *clusterState) refilling() []string {
	var out []string
	for name, p := range st.cluster.Status.Pods {
		if g := p.VolumesGivenUp; g != nil && !st.stillHolds(name, g) {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

// stillHolds: the pod instance whose volumes were given up still runs on them, Ready and not Terminating.
func (st *clusterState) stillHolds(name string, g *ackov1alpha1.VolumesGivenUp) bool {
	pod := st.pods[name]
	return pod != nil && string(pod.UID) == g.UID && pod.DeletionTimestamp == nil && resources.PodReady(pod)
}

// forgetRefilled clears the give-up records once the refill is seen to end: the pod given up was
// replaced, and a reading shows every desired pod running and its node in one stable cluster with no
// migrations. A cluster stable without a node is no proof: a node lost while another refilled leaves
// partitions with no copy in the cluster, hence nothing to migrate (issue 38).
func (r *AerospikeClusterReconciler) forgetRefilled(ctx context.Context, st *clusterState) error {
	refilling := st.refilling()
	if len(refilling) == 0 {
		return nil
	}
	// Readiness is not asked: a pod kept from Ready by a sidecar waits for a roll that the record holds,
	// and the record would wait for it (model hole 19).
	for _, name := range st.cluster.DesiredPodNames() {
		if !slices.Contains(st.members, name) {
			return nil
		}
	}
	if stable, _ := st.stable(); !stable {
		return nil
	}
	return r.record(ctx, st, func(s *ackov1alpha1.AerospikeClusterStatus) {
		for _, name := range refilling {
			if p, ok := s.Pods[name]; ok && st.pods[name] != nil && p.VolumesGivenUp != nil &&
				p.VolumesGivenUp.UID != string(st.pods[name].UID) {
				p.VolumesGivenUp = nil
				s.Pods[name] = p
			}
		}
	})
}

// recordLost keeps status.pods[*].lostNode and status.stableReplicationFactor in step with the pods
// pinned on lost nodes (lost) and the readings (lostRecords). It writes only what changes.
func (r *AerospikeClusterReconciler) recordLost(ctx context.Context, st *clusterState, lost []string) error {
	stableFactor, next := st.lostRecords(lost)
	current := map[string]*ackov1alpha1.LostNode{}
	for name, p := range st.cluster.Status.Pods {
		if p.LostNode != nil {
			current[name] = p.LostNode
		}
	}
	if stableFactor == st.cluster.Status.StableReplicationFactor && equality.Semantic.DeepEqual(current, next) {
		return nil
	}
	return r.record(ctx, st, func(s *ackov1alpha1.AerospikeClusterStatus) {
		s.StableReplicationFactor = stableFactor
		if s.Pods == nil {
			s.Pods = map[string]ackov1alpha1.PodStatus{}
		}
		for name, p := range s.Pods {
			p.LostNode = next[name]
			s.Pods[name] = p
		}
		for name, rec := range next {
			p := s.Pods[name]
			p.LostNode = rec
			s.Pods[name] = p
		}
	})
}

// lostRecords are the stable factor and the lost-node records this reconcile's readings give. A pod seen
// lost for the first time is recorded with the copies every partition is known to have: the factor run,
// or the stable one while a raised factor migrates; it only goes down while the pod's copies are not made
// again. A reading of the other nodes in one stable cluster with no migrations marks them made again when
// the nodes lost or refilling were too few to hold every copy of a partition. A record goes once its pod
// runs off the lost node (or is no longer desired); a pod deleted and not yet recreated keeps it.
func (st *clusterState) lostRecords(lost []string) (int32, map[string]*ackov1alpha1.LostNode) {
	factor := int32(st.runningReplicationFactor())
	stableFactor := st.cluster.Status.StableReplicationFactor
	switch {
	case st.everyDesiredNodeStable():
		stableFactor = factor
	case stableFactor > 0: // 0: never seen stable, the factor run is all there is to go by
		stableFactor = min(stableFactor, factor)
		factor = stableFactor
	}
	next := map[string]*ackov1alpha1.LostNode{}
	for _, name := range lost {
		switch rec := st.cluster.Status.Pods[name].LostNode; {
		case rec == nil, !rec.CopiesRemade && factor < rec.Factor:
			next[name] = &ackov1alpha1.LostNode{Factor: factor}
		default:
			next[name] = rec
		}
	}
	desired := st.cluster.DesiredPodNames()
	for name, p := range st.cluster.Status.Pods {
		if _, ok := next[name]; !ok && p.LostNode != nil && st.pods[name] == nil && slices.Contains(desired, name) {
			next[name] = p.LostNode // deleted on its lost node: its successor is pinned there too
		}
	}
	if st.copiesRemadeWithout(next) {
		for name, rec := range next {
			next[name] = &ackov1alpha1.LostNode{Factor: rec.Factor, CopiesRemade: true}
		}
	}
	return stableFactor, next
}

// everyDesiredNodeStable: a reading shows every desired node in one cluster with no migrations.
func (st *clusterState) everyDesiredNodeStable() bool {
	for _, name := range st.cluster.DesiredPodNames() {
		if !slices.Contains(st.members, name) {
			return false
		}
	}
	stable, _ := st.stable()
	return stable
}

// copiesRemadeWithout: this reading proves that the running nodes hold every copy the lost nodes had
// (records): each desired node but them in one cluster with no migrations, and the nodes lost with
// copies not made again, with the refilling ones, fewer than the copies each partition had, so that
// every partition kept one copy in the cluster to make the others from.
func (st *clusterState) copiesRemadeWithout(records map[string]*ackov1alpha1.LostNode) bool {
	unremade, factor := 0, int32(math.MaxInt32)
	for _, rec := range records {
		if !rec.CopiesRemade {
			unremade++
			factor = min(factor, rec.Factor)
		}
	}
	if unremade == 0 || int32(unremade+len(st.refilling())) > factor-1 {
		return false
	}
	for _, name := range st.cluster.DesiredPodNames() {
		if records[name] == nil && !slices.Contains(st.members, name) {
			return false
		}
	}
	stable, _ := st.stable()
	return stable
}

// unremadeLost are the pods recorded lost whose copies were not seen made again, sorted.
func (st *clusterState) unremadeLost() []string {
	var out []string
	for name, p := range st.cluster.Status.Pods {
		if p.LostNode != nil && !p.LostNode.CopiesRemade {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

// lostFactor is the fewest copies recorded for the lost nodes whose copies were not made again.
func (st *clusterState) lostFactor() int {
	f := math.MaxInt32
	for _, name := range st.unremadeLost() {
		f = min(f, int(st.cluster.Status.Pods[name].LostNode.Factor))
	}
	return f
}

// mayHoldLastCopy: the pod's node was lost before the others made its copies again, and the user did not
// accept losing them.
func (st *clusterState) mayHoldLastCopy(name string) bool {
	rec := st.cluster.Status.Pods[name].LostNode
	return rec != nil && !rec.CopiesRemade && !acceptsLoss(st.pods[name])
}

// lastCopyKept says why a lost pod's volumes are kept beyond what mayGiveUpTogether lets go.
func (st *clusterState) lastCopyKept(name string) string {
	with := ""
	if others := slices.DeleteFunc(st.unremadeLost(), func(n string) bool { return n == name }); len(others) > 0 {
		with = " (lost too: " + strings.Join(others, ", ") + ")"
	}
	return fmt.Sprintf("kept: its node was lost before the other nodes made its copies again%s, and at "+
		"replication-factor %d the lost nodes may hold the last copy of some partitions: at most %d of them are "+
		"given up without the user's word; the others wait until a node comes back, or the user accepts the loss: "+
		"kubectl annotate pod %s %s=true", with, st.lostFactor(), st.lostFactor()-1, name, ackov1alpha1.AnnotationAcceptDataLoss)
}

// acceptsLoss: the user accepts losing the copies only the pod's volumes may hold
// (acko.io/accept-data-loss=true on the pod).
func acceptsLoss(pod *corev1.Pod) bool {
	return pod != nil && pod.Annotations[ackov1alpha1.AnnotationAcceptDataLoss] == "true"
}

// mayGiveUpTogether are the pods due that may be given up together: at most maxDown, and of those that
// may hold the last copy of some partitions, fewer than the copies each partition had (lostFactor − 1),
// so that one copy stays on a claim kept or in the cluster (model hole 40: at replication-factor 2, two
// nodes lost one after the other before the first one's copies were made again, the factor raised to 3
// meanwhile; both were given up together).
func (st *clusterState) mayGiveUpTogether(due []pinnedPod) []pinnedPod {
	room := st.lostFactor() - 1
	out := make([]pinnedPod, 0, len(due))
	for _, p := range due {
		if len(out) == st.maxDown {
			break
		}
		if st.mayHoldLastCopy(p.pod.Name) {
			if room <= 0 {
				continue
			}
			room--
		}
		out = append(out, p)
	}
	return out
}

// localVolumes is spec.storage.localVolumes, nil when not set.
func localVolumes(c *ackov1alpha1.AerospikeCluster) *ackov1alpha1.LocalVolumesSpec {
	if c.Spec.Storage == nil {
		return nil
	}
	return c.Spec.Storage.LocalVolumes
}

// giveUp deletes the local claims of the pinned pods due, and then the pods, once the door lets them
// go together: each is recorded first (volumesGivenUp), so that its successor counts as not holding its
// copies until its refill is seen to end. It says what happened or why it waits.
func (r *AerospikeClusterReconciler) giveUp(ctx context.Context, st *clusterState, due []pinnedPod, lost []string,
	lv *ackov1alpha1.LocalVolumesSpec) (string, error) {
	names := make([]string, 0, len(due))
	var decided time.Time
	accepted := true
	for _, p := range due {
		names = append(names, p.pod.Name)
		if at := p.giveUpAt(lv); at.After(decided) {
			decided = at
		}
		accepted = accepted && acceptsLoss(p.pod)
	}
	done, v, err := r.takeDownNow(ctx, st, takeDown{what: "giving up the volumes of " + strings.Join(names, ", "),
		kind: actGiveUp, pods: names, decided: decided, absent: lost, acceptLoss: accepted}, volumesGivenUp{due: due})
	why := v.why
	if err != nil || why != "" {
		if refilling := st.refilling(); len(refilling) > 0 && !accepted && v.held {
			why += fmt.Sprintf("; the volumes are kept: %s refill after their volumes were given up, and until "+
				"a reading shows every node in one stable cluster the lost nodes may hold the last copy of some "+
				"partitions; to give them up anyway, accepting that loss: kubectl annotate pod %s %s=true",
				strings.Join(refilling, ", "), strings.Join(names, " "), ackov1alpha1.AnnotationAcceptDataLoss)
		}
		return why, err
	}
	return done, nil
}

// splitOffKept says why the volumes of the pods due are kept ("" when they are not): a pod whose node
// last answered from outside the largest cluster may have taken writes, alone, that no other node has; a
// stable cluster without it proves nothing of them. Kept until the node comes back and its migrations end, or the
// user accepts the loss on the pod.
func (st *clusterState) splitOffKept(due []string) string {
	var kept, names []string
	for _, name := range due {
		since := st.cluster.Status.Pods[name].SplitOff
		if since != nil && !acceptsLoss(st.pods[name]) {
			kept = append(kept, fmt.Sprintf("%s (split off since %s)", name, since.UTC().Format(time.RFC3339)))
			names = append(names, name)
		}
	}
	if len(kept) == 0 {
		return ""
	}
	return fmt.Sprintf("the volumes are kept: %s last answered from outside the cluster, and may hold writes "+
		"no other node has; they are kept until the node comes back and the migrations that merge them end; "+
		"to give them up anyway, "+
		"accepting that loss: kubectl annotate pod %s %s=true", strings.Join(kept, ", "),
		strings.Join(names, " "), ackov1alpha1.AnnotationAcceptDataLoss)
}

// recordGivenUp records the pods whose volumes are about to be given up (before anything is deleted).
func (r *AerospikeClusterReconciler) recordGivenUp(ctx context.Context, st *clusterState, due []pinnedPod) error {
	at := metav1.NewTime(st.now)
	return r.record(ctx, st, func(s *ackov1alpha1.AerospikeClusterStatus) {
		for _, p := range due {
			ps := s.Pods[p.pod.Name]
			if ps.VolumesGivenUp == nil || ps.VolumesGivenUp.UID != string(p.pod.UID) {
				ps.VolumesGivenUp = &ackov1alpha1.VolumesGivenUp{UID: string(p.pod.UID), At: at}
			}
			ps.SplitOff = nil // what it may have taken alone goes with its volumes
			if s.Pods == nil {
				s.Pods = map[string]ackov1alpha1.PodStatus{}
			}
			s.Pods[p.pod.Name] = ps
		}
	})
}

// outOfServiceWait says what a given-up pod on a node that may still run asd waits for.
func outOfServiceWait(p pinnedPod) string {
	return fmt.Sprintf("pod %s is Terminating until the kubelet of node %s confirms that asd stopped (a node cut off "+
		"from the API server may still run it, and its successor must not run beside it); once the node is shut down, "+
		"delete the node or taint it (kubectl taint nodes %s %s=nodeshutdown:NoExecute) and the operator deletes the "+
		"pod at once", p.pod.Name, p.node, p.node, corev1.TaintNodeOutOfService)
}

// pinnedBy says whether the pod is held by claims of the local classes on a node that is gone or not
// Ready (nil when not). The claims, their volumes and the node are read from the API server: what is
// decided here deletes data.
func (r *AerospikeClusterReconciler) pinnedBy(ctx context.Context, pod *corev1.Pod, classes []string) (*pinnedPod, error) {
	var claims []*corev1.PersistentVolumeClaim
	node := pod.Spec.NodeName
	// A claim gone was given up already (an earlier attempt, where no protection finalizer held it): the
	// pod cannot start again on it either.
	all, gone, err := r.podClaims(ctx, pod)
	if err != nil {
		return nil, err
	}
	for _, pvc := range all {
		if !ofClass(pvc, classes) {
			continue
		}
		on, err := r.claimNode(ctx, pvc)
		if err != nil {
			return nil, err
		}
		if node == "" {
			node = on
		}
		// A claim on another node was made since for a new instance of the pod (the cache may still show
		// the old one): it is not pinned to this node, and giving this node up must not delete it.
		if on != "" && on != node {
			continue
		}
		claims = append(claims, pvc)
	}
	if len(claims) == 0 && !gone || node == "" {
		return nil, nil
	}
	n := &corev1.Node{}
	switch err := r.APIReader.Get(ctx, types.NamespacedName{Name: node}, n); {
	case apierrors.IsNotFound(err):
		n = nil
	case err != nil:
		return nil, err
	}
	lost, since := nodeLost(n, pod)
	if lost == "" {
		return nil, nil
	}
	return &pinnedPod{pod: pod, node: node, lost: lost, since: since, claims: claims, outOfService: outOfService(n)}, nil
}

// podClaims reads the pod's claims from the API server (what is decided from them deletes data); gone
// says whether one of them no longer exists.
func (r *AerospikeClusterReconciler) podClaims(ctx context.Context, pod *corev1.Pod) (claims []*corev1.PersistentVolumeClaim,
	gone bool, err error) {
	for _, v := range pod.Spec.Volumes {
		if v.PersistentVolumeClaim == nil {
			continue
		}
		pvc := &corev1.PersistentVolumeClaim{}
		err := r.APIReader.Get(ctx, types.NamespacedName{Namespace: pod.Namespace, Name: v.PersistentVolumeClaim.ClaimName}, pvc)
		switch {
		case apierrors.IsNotFound(err):
			gone = true
		case err != nil:
			return nil, false, err
		default:
			claims = append(claims, pvc)
		}
	}
	return claims, gone, nil
}

// ofClass: the claim is of one of the storage classes (spec.storage.localVolumes.storageClasses).
func ofClass(pvc *corev1.PersistentVolumeClaim, classes []string) bool {
	return pvc.Spec.StorageClassName != nil && slices.Contains(classes, *pvc.Spec.StorageClassName)
}

// claimNode is the node a claim's volume lives on: the scheduler's choice for a provisioned volume, or
// the hostname its persistent volume is pinned to (a static local volume); "" when neither says.
func (r *AerospikeClusterReconciler) claimNode(ctx context.Context, pvc *corev1.PersistentVolumeClaim) (string, error) {
	if n := pvc.Annotations[annotationSelectedNode]; n != "" {
		return n, nil
	}
	if pvc.Spec.VolumeName == "" {
		return "", nil
	}
	pv := &corev1.PersistentVolume{}
	if err := r.APIReader.Get(ctx, types.NamespacedName{Name: pvc.Spec.VolumeName}, pv); err != nil {
		return "", client.IgnoreNotFound(err)
	}
	return pinnedHostname(pv), nil
}

// pinnedHostname is the one hostname a persistent volume's node affinity requires ("" when it
// requires none, or allows several nodes).
func pinnedHostname(pv *corev1.PersistentVolume) string {
	if pv.Spec.NodeAffinity == nil || pv.Spec.NodeAffinity.Required == nil {
		return ""
	}
	host := ""
	for _, term := range pv.Spec.NodeAffinity.Required.NodeSelectorTerms {
		for _, e := range term.MatchExpressions {
			if e.Key != corev1.LabelHostname {
				continue
			}
			if e.Operator != corev1.NodeSelectorOpIn || len(e.Values) != 1 || host != "" && host != e.Values[0] {
				return ""
			}
			host = e.Values[0]
		}
	}
	return host
}

// outOfService: the node is deleted (nil) or tainted node.kubernetes.io/out-of-service.
func outOfService(node *corev1.Node) bool {
	return node == nil || slices.ContainsFunc(node.Spec.Taints, func(t corev1.Taint) bool {
		return t.Key == corev1.TaintNodeOutOfService
	})
}

// nodeLost says how the node is lost ("" when it is not) and since when: deleted (nil) since the pod
// stopped running on it, or not Ready since its Ready condition last changed.
func nodeLost(node *corev1.Node, pod *corev1.Pod) (string, time.Time) {
	if node == nil {
		return "deleted", podStoppedAt(pod)
	}
	for _, c := range node.Status.Conditions {
		if c.Type == corev1.NodeReady {
			if c.Status == corev1.ConditionTrue {
				return "", time.Time{}
			}
			return stateNotReady, c.LastTransitionTime.Time
		}
	}
	return stateNotReady, node.CreationTimestamp.Time // a node that never reported
}

// podStoppedAt is when the pod last stopped being Ready, or was found unschedulable; its creation when
// neither is recorded.
func podStoppedAt(pod *corev1.Pod) time.Time {
	for _, c := range pod.Status.Conditions {
		if (c.Type == corev1.PodReady || c.Type == corev1.PodScheduled) && c.Status != corev1.ConditionTrue {
			return c.LastTransitionTime.Time
		}
	}
	return pod.CreationTimestamp.Time
}
