package cluster

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ackov1alpha1 "github.com/acko-io/acko/api/v1alpha1"
)

// Local volumes and lost Kubernetes nodes in the model (issue 38). A cluster with local volumes has one
// claim of a local class per pod ("data-<pod>"), provisioned on a Kubernetes node of its own (the
// scheduler's selected-node annotation); the pod runs there. A lost node is Not Ready: its pod stays,
// not Ready, its asd unreachable, its data kept on the claim. A pod deleted there stays Terminating until
// the node's kubelet confirms (the node comes back) or the node is deleted (the pod garbage collector
// force-deletes its pods); the StatefulSet recreates it on the same claim, which pins it to the lost node.
// The node comes back (asd with its data) or is deleted (its claims stay until the operator gives them up).
//
// Data accounting. A partition has no copy in the cluster when every node holding it is lost (its copy
// only on a lost node's claim) or emptied (its claim given up by the operator and its successor not yet
// refilled). When the lost and emptied nodes are at least the copies, such partitions exist: the model
// keeps them as an absentSet. DataLoss: the operator deletes a claim that makes a partition's copies all
// destroyed (the emptied nodes of the set, and the lost nodes whose claims it deleted, reach the copies).

const (
	// modelLocalClass is the storage class of the model's local volumes.
	modelLocalClass = "local-ssd"
	// modelLocalVolume is the claim template (and pod volume) of the local volumes.
	modelLocalVolume = "data"
	// modelKubeletFinalizer holds a pod deleted on a lost node until its kubelet confirms.
	modelKubeletFinalizer = "model.acko.io/kubelet"
	// modelNodeLostAfter is spec.storage.localVolumes.nodeLostAfterSeconds in the model: short enough
	// that give-ups happen in a sequence.
	modelNodeLostAfter = 40
)

// absentSet: partitions whose every copy was on these nodes when they had no copy in the cluster.
type absentSet struct {
	copies int
	// destroyed: nodes whose copies are gone for good (emptied, or their claims given up since).
	destroyed map[string]bool
	// lost: nodes whose copies exist only on their claims on a lost node.
	lost map[string]bool
}

// withLocalVolumes gives the cluster a local volume per pod, given up after modelNodeLostAfter.
func withLocalVolumes(c *ackov1alpha1.AerospikeCluster) {
	c.Spec.Storage = &ackov1alpha1.StorageSpec{
		Volumes: []ackov1alpha1.VolumeSpec{{Name: modelLocalVolume, Path: "/opt/aerospike/data",
			Size: resource.MustParse("10Gi"), StorageClassName: ptr.To(modelLocalClass)}},
		LocalVolumes: &ackov1alpha1.LocalVolumesSpec{StorageClasses: []string{modelLocalClass},
			NodeLostAfterSeconds: ptr.To[int32](modelNodeLostAfter)},
	}
}

// claimName is the claim of a pod made from a template, as the StatefulSet controller names it.
func claimName(tmpl, pod string) string { return tmpl + "-" + pod }

// mountClaims is the StatefulSet controller's part of a new pod with claim templates: each claim (created
// when it does not exist, on a new Kubernetes node for a local class) mounted, and the pod bound to the
// node of its local claim; it returns that node ("" when none) and whether the node is lost or gone.
func (w *modelWorld) mountClaims(ctx context.Context, sts *appsv1.StatefulSet, pod *corev1.Pod) (string, bool) {
	node, lost := "", false
	for _, t := range sts.Spec.VolumeClaimTemplates {
		name := claimName(t.Name, pod.Name)
		pod.Spec.Volumes = append(pod.Spec.Volumes, corev1.Volume{Name: t.Name,
			VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: name}}})
		pvc := &corev1.PersistentVolumeClaim{}
		if err := w.api.Get(ctx, client.ObjectKey{Namespace: w.ns, Name: name}, pvc); err != nil {
			pvc = &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: w.ns, Name: name, Labels: t.Labels},
				Spec: *t.Spec.DeepCopy(), Status: corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimBound,
					Capacity: t.Spec.Resources.Requests.DeepCopy()}}
			if ptr.Deref(pvc.Spec.StorageClassName, "") == modelLocalClass {
				pvc.Annotations = map[string]string{annotationSelectedNode: w.newKubernetesNode(ctx)}
			}
			if err := w.api.Create(ctx, pvc); err != nil {
				panic(err)
			}
		}
		if n := pvc.Annotations[annotationSelectedNode]; n != "" {
			node, lost = n, w.k8sLost[n] || !w.k8sExists(ctx, n)
		}
	}
	if !lost {
		pod.Spec.NodeName = node // a lost node's pod is not scheduled: its claim pins it there
	}
	return node, lost
}

func (w *modelWorld) newKubernetesNode(ctx context.Context) string {
	w.k8sSeq++
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("k8s-%d", w.k8sSeq)}}
	if err := w.api.Create(ctx, node); err != nil {
		panic(err)
	}
	w.setNodeReady(ctx, node.Name, true)
	return node.Name
}

func (w *modelWorld) k8sExists(ctx context.Context, name string) bool {
	return w.api.Get(ctx, client.ObjectKey{Name: name}, &corev1.Node{}) == nil
}

func (w *modelWorld) setNodeReady(ctx context.Context, name string, ready bool) {
	node := &corev1.Node{}
	if err := w.api.Get(ctx, client.ObjectKey{Name: name}, node); err != nil {
		panic(err)
	}
	status := corev1.ConditionTrue
	if !ready {
		status = corev1.ConditionFalse
	}
	node.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: status,
		LastHeartbeatTime: metav1.NewTime(w.now()), LastTransitionTime: metav1.NewTime(w.now())}}
	if err := w.api.Status().Update(ctx, node); err != nil {
		panic(err)
	}
}

// lostKubelet is all that changes a pod on a lost node: the node lifecycle controller marks it not Ready.
func (w *modelWorld) lostKubelet(ctx context.Context, pod *corev1.Pod) {
	want := pod.Status.DeepCopy()
	setPodCondition(want, corev1.ContainersReady, false, metav1.NewTime(w.now()))
	setPodCondition(want, corev1.PodReady, false, metav1.NewTime(w.now()))
	if podStatusEqual(&pod.Status, want) {
		return
	}
	pod.Status = *want
	if err := w.api.Status().Update(ctx, pod); err != nil {
		panic(err)
	}
}

// onLostNode: the pod is bound to a Kubernetes node that is Not Ready (its kubelet cannot confirm a
// deletion).
func (w *modelWorld) onLostNode(pod *corev1.Pod) bool {
	return pod.Spec.NodeName != "" && w.k8sLost[pod.Spec.NodeName]
}

// deleteOnLostNode deletes a pod whose kubelet does not answer: it stays Terminating.
func (w *modelWorld) deleteOnLostNode(ctx context.Context, pod *corev1.Pod) {
	if !slices.Contains(pod.Finalizers, modelKubeletFinalizer) {
		pod.Finalizers = append(pod.Finalizers, modelKubeletFinalizer)
		if err := w.api.Update(ctx, pod); err != nil {
			panic(err)
		}
	}
	if err := client.IgnoreNotFound(w.api.Delete(ctx, pod)); err != nil {
		panic(err)
	}
	w.logf("pod %s Terminating until the kubelet of %s confirms", pod.Name, pod.Spec.NodeName)
}

// forceDelete removes a pod at once (grace 0, or the pod garbage collector after its node was deleted).
func (w *modelWorld) forceDelete(ctx context.Context, pod *corev1.Pod) {
	if slices.Contains(pod.Finalizers, modelKubeletFinalizer) {
		pod.Finalizers = slices.DeleteFunc(pod.Finalizers, func(f string) bool { return f == modelKubeletFinalizer })
		if err := client.IgnoreNotFound(w.api.Update(ctx, pod)); err != nil {
			panic(err)
		}
	}
	if err := client.IgnoreNotFound(w.api.Delete(ctx, pod)); err != nil {
		panic(err)
	}
}

// loseNode makes the pod's Kubernetes node Not Ready: the asd of every pod bound there (or pinned there
// by its claim) is cut off, its data kept on the claim.
func (w *modelWorld) loseNode(ctx context.Context, k8s string) {
	w.k8sLost[k8s] = true
	w.setNodeReady(ctx, k8s, false)
	for _, name := range slices.Sorted(maps.Keys(w.nodes)) {
		if n := w.nodes[name]; n.k8s == k8s {
			w.takeDown(name, "node "+k8s+" lost")
			w.lostCopies[name] = !n.holdsNothing() && !n.copiesRemade()
			n.lost = true
			w.splitOff[k8s] = w.splitOff[k8s] || n.side != 0 || w.unmerged[name]
		}
	}
	w.noteAbsent(ctx)
}

// nodeBack is the lost node Ready again (its admin takes the out-of-service taint off): its asd answer
// with the data of their claims, its kubelet confirms the deletion of its Terminating pods.
func (w *modelWorld) nodeBack(ctx context.Context, k8s string) {
	delete(w.k8sLost, k8s)
	delete(w.splitOff, k8s)
	if w.outOfService[k8s] {
		delete(w.outOfService, k8s)
		w.setOutOfService(ctx, k8s, false)
	}
	w.setNodeReady(ctx, k8s, true)
	for _, n := range w.nodes {
		if n.k8s == k8s {
			n.lost = false
		}
	}
	w.confirmTerminating(ctx, func(pod *corev1.Pod) bool { return pod.Spec.NodeName == k8s })
}

// nodeDeleted is the lost node's Node deleted: the pod garbage collector force-deletes the pods bound to
// it; the claims stay.
func (w *modelWorld) nodeDeleted(ctx context.Context, k8s string) {
	delete(w.k8sLost, k8s)
	delete(w.splitOff, k8s)
	delete(w.outOfService, k8s)
	if err := w.api.Delete(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: k8s}}); err != nil {
		panic(err)
	}
	w.podsGoneFrom(ctx, k8s, "pod garbage collector (node "+k8s+" deleted)")
}

// shutDown is the lost node shut down by its admin and tainted node.kubernetes.io/out-of-service (as
// NodeLost advises): its asd stop, their data kept on the claims; the taint evicts the pods bound there and
// the pod garbage collector force-deletes them (their successors, pinned there by their claims, wait).
func (w *modelWorld) shutDown(ctx context.Context, k8s string) {
	w.outOfService[k8s] = true
	w.setOutOfService(ctx, k8s, true)
	w.podsGoneFrom(ctx, k8s, "out-of-service taint on node "+k8s)
}

func (w *modelWorld) setOutOfService(ctx context.Context, k8s string, on bool) {
	node := &corev1.Node{}
	if err := w.api.Get(ctx, client.ObjectKey{Name: k8s}, node); err != nil {
		panic(err)
	}
	node.Spec.Taints = slices.DeleteFunc(node.Spec.Taints, func(t corev1.Taint) bool { return t.Key == corev1.TaintNodeOutOfService })
	if on {
		node.Spec.Taints = append(node.Spec.Taints, corev1.Taint{Key: corev1.TaintNodeOutOfService, Value: "nodeshutdown",
			Effect: corev1.TaintEffectNoExecute})
	}
	if err := w.api.Update(ctx, node); err != nil {
		panic(err)
	}
}

// podsGoneFrom removes every pod bound to the Kubernetes node at once (by: who).
func (w *modelWorld) podsGoneFrom(ctx context.Context, k8s, by string) {
	for name, pod := range w.pods() {
		if pod.Spec.NodeName == k8s && pod.DeletionTimestamp == nil {
			w.takeDown(name, by)
			delete(w.nodes, name)
		}
	}
	w.confirmTerminating(ctx, func(pod *corev1.Pod) bool { return pod.Spec.NodeName == k8s })
}

func (w *modelWorld) confirmTerminating(ctx context.Context, on func(*corev1.Pod) bool) {
	for _, pod := range w.pods() {
		if on(pod) {
			w.forceDelete(ctx, pod)
			delete(w.nodes, pod.Name)
		}
	}
}

// lostClaims are the pods whose local claim is on a lost or deleted Kubernetes node.
func (w *modelWorld) lostClaims(ctx context.Context) []string {
	list := &corev1.PersistentVolumeClaimList{}
	w.list(list)
	var out []string
	for _, pvc := range list.Items {
		if n := pvc.Annotations[annotationSelectedNode]; n != "" && pvc.DeletionTimestamp == nil && (w.k8sLost[n] || !w.k8sExists(ctx, n)) {
			out = append(out, strings.TrimPrefix(pvc.Name, modelLocalVolume+"-"))
		}
	}
	slices.Sort(out)
	return out
}

// noteAbsent records the partitions that have no copy in the cluster now: when the nodes whose copies
// are only on lost claims (not made again by the members since), with the nodes the operator emptied, are
// at least the copies.
func (w *modelWorld) noteAbsent(ctx context.Context) {
	lost := slices.DeleteFunc(w.lostClaims(ctx), func(p string) bool { return !w.lostCopies[p] })
	if len(lost)+len(w.emptied) < w.copies || len(lost) == 0 {
		return
	}
	a := &absentSet{copies: w.copies, destroyed: maps.Clone(w.emptied), lost: map[string]bool{}}
	for _, p := range lost {
		a.lost[p] = true
	}
	key := fmt.Sprint(a.copies, slices.Sorted(maps.Keys(a.destroyed)), slices.Sorted(maps.Keys(a.lost)))
	for _, b := range w.absent {
		if fmt.Sprint(b.copies, slices.Sorted(maps.Keys(b.destroyed)), slices.Sorted(maps.Keys(b.lost))) == key {
			return
		}
	}
	w.absent = append(w.absent, a)
	w.logf("some partitions have no copy in the cluster: their copies are on %v (emptied) and %v (claims on lost nodes)",
		slices.Sorted(maps.Keys(a.destroyed)), slices.Sorted(maps.Keys(a.lost)))
}

// claimDeleted judges the operator's delete of a pod's local claim: DataLoss when some partition then
// has no copy anywhere. The pod counts as emptied until its successor's refill ends.
func (w *modelWorld) claimDeleted(ctx context.Context, pvc *corev1.PersistentVolumeClaim) {
	if pvc.Annotations[annotationSelectedNode] == "" {
		return
	}
	pod := strings.TrimPrefix(pvc.Name, modelLocalVolume+"-")
	w.noteAbsent(ctx)
	w.logf("operator deletes claim %s (on node %s)", pvc.Name, pvc.Annotations[annotationSelectedNode])
	if w.unmerged[pod] && !w.accepted[pod] {
		w.violate("DataLoss", "the operator deleted claim %s, which holds the writes its node took alone while split off: "+
			"they never reached the other nodes", pvc.Name)
	}
	delete(w.unmerged, pod)
	w.emptied[pod] = true
	delete(w.lostCopies, pod)
	w.absent = slices.DeleteFunc(w.absent, func(a *absentSet) bool {
		if !a.lost[pod] {
			return false
		}
		delete(a.lost, pod)
		a.destroyed[pod] = true
		switch {
		case len(a.destroyed) < a.copies:
			return false
		case w.accepted[pod]:
			// The model's sets are coarse: the whole set is taken as lost by the user's word.
			w.logf("partitions whose %d copies were on %v are gone: the user accepted the loss of %s",
				a.copies, slices.Sorted(maps.Keys(a.destroyed)), pod)
			return true
		}
		w.violate("DataLoss", "the operator deleted claim %s: partitions whose %d copies were on %v have none left",
			pvc.Name, a.copies, slices.Sorted(maps.Keys(a.destroyed)))
		return false
	})
	delete(w.accepted, pod)
}

// refilled: migrations ended on the main side with these members: an emptied member holds what the cluster
// holds again, and a lost node back among them brings back its partitions.
func (w *modelWorld) refilled(members []string) {
	for _, m := range members {
		delete(w.emptied, m)
	}
	w.absent = slices.DeleteFunc(w.absent, func(a *absentSet) bool {
		for _, m := range members {
			delete(a.lost, m)
		}
		return len(a.lost) == 0 || len(a.lost)+len(a.destroyed) < a.copies
	})
}

// mayDeleteNode: the admin deletes a lost node only when its volumes can be given up without a loss
// (no more lost claims than the copies allow down, no partition without a copy in the cluster, nothing
// emptied refilling, no node lost while split off): else the operator rightly keeps them for ever,
// waiting for the user's word.
func (w *modelWorld) mayDeleteNode() bool {
	return len(w.lostClaims(context.Background())) <= w.copies-1 && len(w.absent) == 0 && len(w.emptied) == 0 &&
		len(w.splitOff) == 0
}

// lostNodes are the Kubernetes nodes lost now, sorted.
func (w *modelWorld) lostNodes() []string { return slices.Sorted(maps.Keys(w.k8sLost)) }

// eventLoseNode: the Kubernetes node of a serving pod is lost (issue 38: one, two, during a refill).
func (m *modelRun) eventLoseNode() bool {
	var candidates []string
	for _, name := range m.servingPods() {
		if m.w.nodes[name].k8s != "" {
			candidates = append(candidates, name)
		}
	}
	pod := m.pick(candidates)
	if pod == "" || len(m.w.lostClaims(context.Background())) >= 2 || !m.mayFault() {
		return false
	}
	k8s := m.w.nodes[pod].k8s
	m.w.logf("event: Kubernetes node %s of %s is lost (Not Ready)", k8s, pod)
	m.w.loseNode(context.Background(), k8s)
	return true
}

// eventNodeRecovers: a lost node comes back Ready, or its admin deletes it.
func (m *modelRun) eventNodeRecovers() bool {
	k8s := m.pick(m.w.lostNodes())
	if k8s == "" {
		return false
	}
	if m.w.rng.IntN(2) == 0 || !m.w.mayDeleteNode() {
		m.w.logf("event: Kubernetes node %s is Ready again", k8s)
		m.w.nodeBack(context.Background(), k8s)
	} else {
		m.w.logf("event: the admin deletes Kubernetes node %s", k8s)
		m.w.nodeDeleted(context.Background(), k8s)
	}
	return true
}

// localAdmin is what the people around a cluster with local volumes do about a lost node besides deleting
// it or bringing it back (drawn per sequence, seedAdmin).
type localAdmin struct {
	// shutDownAfter (0: never): once a lost node has been lost that long, or a pod given up waits
	// Terminating there (NodeLost says to), the admin shuts it down and taints it out-of-service. Before the
	// give-up (20 s, under modelNodeLostAfter) the taint evicts the pods, whose successors wait pinned.
	shutDownAfter time.Duration
	// acceptsLoss: once NodeLost has asked for modelAcceptAfter to annotate a lost pod whose volumes it
	// keeps, the user does: acko.io/accept-data-loss=true.
	acceptsLoss bool
}

// modelAcceptAfter is how long the user reads NodeLost's advice before accepting the loss.
const modelAcceptAfter = 2 * time.Minute

// seedAdmin: in a sequence with local volumes, the admin shuts lost nodes down in one in two, the user
// accepts losses in one in three (never in the replayed seeds: they replay the sequence they were found by).
func seedAdmin(seed uint64) localAdmin {
	if seed%5 != 3 || slices.Contains(modelFoundSeeds, seed) || slices.Contains(modelHoleSeeds, seed) {
		return localAdmin{}
	}
	a := localAdmin{acceptsLoss: seed/10%3 == 0}
	if seed/5%2 == 0 {
		a.shutDownAfter = []time.Duration{20 * time.Second, 3 * time.Minute}[seed/10%2]
	}
	return a
}

// adminActs runs the admin's and the user's acts that are due.
func (m *modelRun) adminActs() {
	ctx := context.Background()
	if m.admin.shutDownAfter > 0 {
		for _, k8s := range m.w.lostNodes() {
			if !m.w.outOfService[k8s] && (m.w.terminatingOn(k8s) || m.w.now().Sub(m.w.lostSince(ctx, k8s)) >= m.admin.shutDownAfter) {
				m.w.logf("event: the admin shuts lost node %s down and taints it out-of-service", k8s)
				m.w.shutDown(ctx, k8s)
			}
		}
	}
	if !m.admin.acceptsLoss {
		return
	}
	asked := acceptAsked(meta.FindStatusCondition(m.w.cluster().Status.Conditions, ackov1alpha1.ConditionNodeLost))
	for pod := range m.w.acceptAsked {
		if !slices.Contains(asked, pod) {
			delete(m.w.acceptAsked, pod)
		}
	}
	for _, pod := range asked {
		since, ok := m.w.acceptAsked[pod]
		if !ok {
			m.w.acceptAsked[pod] = m.w.now()
			continue
		}
		if m.w.accepted[pod] || m.w.now().Sub(since) < modelAcceptAfter {
			continue
		}
		p := &corev1.Pod{}
		if m.w.api.Get(ctx, client.ObjectKey{Namespace: m.w.ns, Name: pod}, p) != nil {
			continue
		}
		m.w.logf("event: the user accepts the loss: kubectl annotate pod %s %s=true", pod, ackov1alpha1.AnnotationAcceptDataLoss)
		metav1.SetMetaDataAnnotation(&p.ObjectMeta, ackov1alpha1.AnnotationAcceptDataLoss, "true")
		if err := m.w.api.Update(ctx, p); err != nil {
			panic(err)
		}
		m.w.accepted[pod] = true
	}
}

// acceptAsked are the pods NodeLost asks the user to annotate to give their volumes up anyway.
func acceptAsked(c *metav1.Condition) []string {
	if c == nil {
		return nil
	}
	const ask = "kubectl annotate pod "
	var pods []string
	for rest := c.Message; ; {
		i := strings.Index(rest, ask)
		if i < 0 {
			return pods
		}
		rest = rest[i+len(ask):]
		j := strings.Index(rest, " "+ackov1alpha1.AnnotationAcceptDataLoss+"=true")
		if j < 0 {
			return pods
		}
		pods = append(pods, strings.Fields(rest[:j])...)
		rest = rest[j:]
	}
}

// terminatingOn: a pod bound to the Kubernetes node is Terminating (given up, its kubelet away).
func (w *modelWorld) terminatingOn(k8s string) bool {
	for _, pod := range w.pods() {
		if pod.Spec.NodeName == k8s && pod.DeletionTimestamp != nil {
			return true
		}
	}
	return false
}

// lostSince is when the Kubernetes node became Not Ready.
func (w *modelWorld) lostSince(ctx context.Context, k8s string) time.Time {
	node := &corev1.Node{}
	if err := w.api.Get(ctx, client.ObjectKey{Name: k8s}, node); err != nil || len(node.Status.Conditions) == 0 {
		return w.now()
	}
	return node.Status.Conditions[0].LastTransitionTime.Time
}

// healNodes ends every lost node (the world heals): it comes back, or its admin deletes it and the
// operator gives up its volumes.
func (w *modelWorld) healNodes() {
	for _, k8s := range w.lostNodes() {
		if w.rng.IntN(2) == 0 || !w.mayDeleteNode() {
			w.logf("Kubernetes node %s is Ready again", k8s)
			w.nodeBack(context.Background(), k8s)
		} else {
			w.logf("the admin deletes Kubernetes node %s", k8s)
			w.nodeDeleted(context.Background(), k8s)
		}
	}
}

// twoLostAtRF3 is the sequence 2 in the model: the nodes of pods 3 and 4 lost at replication-factor
// 3, then deleted by their admin: both claims are given up (together or one after the other), no copy lost.
func twoLostAtRF3(m *modelRun) {
	ctx := context.Background()
	three, four := m.w.nodes["aero-3"].k8s, m.w.nodes["aero-4"].k8s
	m.w.logf("event: Kubernetes nodes of aero-3 and aero-4 are lost")
	m.w.loseNode(ctx, three)
	m.w.loseNode(ctx, four)
	m.steps(10)
	m.w.logf("event: the admin deletes both")
	m.w.nodeDeleted(ctx, three)
	m.w.nodeDeleted(ctx, four)
	m.stepUntil(10*time.Minute, func() bool { return len(m.w.lostClaims(ctx)) == 0 })
}

// lostDuringRefill is the sequence 3: pod 2's node is lost and deleted, its claim given up; while
// its successor refills, pod 4's node is lost: its claim holds the last copy of some partitions, and must
// be kept past the grace time (until the node comes back, when the world heals).
func lostDuringRefill(m *modelRun) {
	ctx := context.Background()
	two := m.w.nodes["aero-2"].k8s
	m.w.logf("event: Kubernetes node of aero-2 is lost, and deleted by its admin")
	m.w.loseNode(ctx, two)
	m.w.nodeDeleted(ctx, two)
	m.stepUntil(5*time.Minute, func() bool {
		return m.w.emptied["aero-2"] && m.w.nodes["aero-2"] != nil && m.w.nodes["aero-2"].serving()
	})
	m.w.logf("event: Kubernetes node of aero-4 is lost while aero-2 refills")
	m.w.loseNode(ctx, m.w.nodes["aero-4"].k8s)
	m.steps(120)
}

// localRF3 is a cluster with local volumes at replication-factor 3.
func localRF3(c *ackov1alpha1.AerospikeCluster) {
	withLocalVolumes(c)
	setReplicationFactor(c, 3)
}
