package cluster

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	ackov1alpha1 "github.com/acko-io/acko/api/v1alpha1"
	"github.com/acko-io/acko/internal/aerospike"
	"github.com/acko-io/acko/test/testcluster"
)

// localCluster is a cluster of size pods at the replication factor whose volume "data" is local.
func localCluster(size int32, rf int) *ackov1alpha1.AerospikeCluster {
	c := testcluster.Build(sized(size), replicationFactor(rf))
	c.Spec.Storage = &ackov1alpha1.StorageSpec{
		Volumes: []ackov1alpha1.VolumeSpec{{Name: "data", Path: "/opt/aerospike/data", Size: resource.MustParse("10Gi"),
			StorageClassName: ptr.To("local")}},
		LocalVolumes: &ackov1alpha1.LocalVolumesSpec{StorageClasses: []string{"local"}},
	}
	return c
}

// loseNode puts the pod's local claim on a Kubernetes node that has been Not Ready for an hour: the pod
// still Running, Ready False, its node silent; the others form one stable cluster without it.
func (f *doorFixture) loseNode(name string) {
	f.t.Helper()
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-" + name}}
	f.must(f.c.Create(f.ctx, node))
	node.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionUnknown,
		LastTransitionTime: metav1.NewTime(doorNow.Add(-time.Hour))}}
	f.must(f.c.Status().Update(f.ctx, node))
	f.must(f.c.Create(f.ctx, &corev1.PersistentVolumeClaim{ObjectMeta: f.meta("data-" + name),
		Spec: corev1.PersistentVolumeClaimSpec{StorageClassName: ptr.To("local")}}))
	f.pod(name, func(p *corev1.Pod) {
		p.Spec.NodeName = "node-" + name
		p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: "data", VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data-" + name}}})
		notReady(p)
	})
	f.node(name, func(h *aerospike.NodeHealth) { h.Err = aerospike.ErrUnreachable })
	f.reform()
}

// onlyPodStatus writes a status that records one pod, changed by change.
func (f *doorFixture) onlyPodStatus(name string, change func(*ackov1alpha1.PodStatus)) {
	c := f.cluster()
	ps := c.Status.Pods[name]
	change(&ps)
	c.Status.Pods = map[string]ackov1alpha1.PodStatus{name: ps}
	f.must(f.c.Status().Update(f.ctx, c))
}

// reform: the nodes that answer form one stable cluster of their number.
func (f *doorFixture) reform() {
	n := 0
	for _, h := range f.prober.health.Nodes {
		if h.Err == nil {
			n++
		}
	}
	for name, h := range f.prober.health.Nodes {
		h.Facts.ClusterSize = n
		f.prober.health.Nodes[name] = h
	}
	f.prober.health.ExpectedSize = n
}

// giveUpPass runs recoverLostNodes as reconciles would, through the door's last look; it returns what
// the NodeLost condition says.
func (f *doorFixture) giveUpPass() string {
	f.t.Helper()
	var said string
	_, err := f.afterLastLook(func(st *clusterState) (string, error) {
		_, err := f.r.recoverLostNodes(f.ctx, st)
		said = st.nodeLost
		return said, err
	}, nil)
	f.must(err)
	return said
}

func (f *doorFixture) claimExists(name string) bool {
	return f.c.Get(f.ctx, client.ObjectKey{Namespace: f.key.Namespace, Name: name}, &corev1.PersistentVolumeClaim{}) == nil
}

// Issue 38, sequence 2: the nodes of pods 3 and 4 are lost at replication-factor 3; the other three form
// one stable cluster with every copy. Both are given up together; the door waits for neither's reading.
func TestTwoLostNodesAtReplicationFactor3AreGivenUpTogether(t *testing.T) {
	f := newDoorFixture(t, localCluster(5, 3))
	f.loseNode("aero-3")
	f.loseNode("aero-4")
	said := f.giveUpPass()
	for _, name := range []string{"aero-3", "aero-4"} {
		if f.exists(name) || f.claimExists("data-"+name) {
			t.Fatalf("pod %s or its claim not given up; NodeLost says: %s", name, said)
		}
		if g := f.cluster().Status.Pods[name].VolumesGivenUp; g == nil || g.UID != "uid-"+name {
			t.Fatalf("give-up of %s not recorded: %+v", name, g)
		}
	}
}

// At replication-factor 2 two lost nodes may hold both copies of a partition: neither is given up.
func TestTwoLostNodesAtReplicationFactor2AreKept(t *testing.T) {
	f := newDoorFixture(t, localCluster(5, 2))
	f.loseNode("aero-3")
	f.loseNode("aero-4")
	said := f.giveUpPass()
	if !f.claimExists("data-aero-3") || !f.claimExists("data-aero-4") {
		t.Fatalf("a claim was given up; NodeLost says: %s", said)
	}
}

// Issue 38, sequence 3: replication-factor 2; pod 2's volumes were given up and its new node refills
// when pod 4's node is lost. The four others look stable with nothing to migrate (the partitions whose
// copies were on the old pod 2 and on pod 4 have none in the cluster), but pod 4's claim may hold their
// last copy: it is kept, the status says why and how to give it up anyway, and the annotation does.
func TestALostNodeIsKeptWhileAnEmptiedNodeRefills(t *testing.T) {
	f := newDoorFixture(t, localCluster(5, 2))
	f.onlyPodStatus("aero-2", func(ps *ackov1alpha1.PodStatus) {
		ps.VolumesGivenUp = &ackov1alpha1.VolumesGivenUp{UID: "uid-aero-2-before", At: metav1.NewTime(doorNow.Add(-time.Hour))}
	})
	f.loseNode("aero-4")
	said := f.giveUpPass()
	if !f.claimExists("data-aero-4") || !f.exists("aero-4") {
		t.Fatalf("pod aero-4's volumes given up while aero-2 refills; NodeLost says: %s", said)
	}
	for _, want := range []string{"aero-2 (" + stateRefilling + ")", "kubectl annotate pod aero-4 " + ackov1alpha1.AnnotationAcceptDataLoss + "=true"} {
		if !strings.Contains(said, want) {
			t.Fatalf("NodeLost says %q, want it to name %q", said, want)
		}
	}
	if g := f.cluster().Status.Pods["aero-2"].VolumesGivenUp; g == nil {
		t.Fatal("the record of aero-2 was forgotten while aero-4's node is lost")
	}
	f.pod("aero-4", func(p *corev1.Pod) { p.Annotations[ackov1alpha1.AnnotationAcceptDataLoss] = "true" })
	said = f.giveUpPass()
	if f.claimExists("data-aero-4") || f.exists("aero-4") {
		t.Fatalf("the user accepted the loss, but aero-4 was kept; NodeLost says: %s", said)
	}
}

// The record of a give-up ends once every desired pod runs and its node is in one stable cluster. A pod
// kept from Ready by a sidecar does not hold it (model hole 19: the pod waited for a roll the record held).
func TestARefillEndsInAFullStableCluster(t *testing.T) {
	f := newDoorFixture(t, localCluster(3, 2))
	c := f.cluster()
	c.Status.Pods = map[string]ackov1alpha1.PodStatus{"aero-1": {VolumesGivenUp: &ackov1alpha1.VolumesGivenUp{UID: "uid-aero-1-before"}}}
	f.must(f.c.Status().Update(f.ctx, c))
	f.migrating()
	st := f.observe()
	if _, err := f.r.recoverLostNodes(f.ctx, st); err != nil {
		t.Fatal(err)
	}
	if st.cluster.Status.Pods["aero-1"].VolumesGivenUp == nil {
		t.Fatal("the record ended while the node migrates")
	}
	if got := st.pdbMaxUnavailable(1); got != 0 {
		t.Fatalf("budget %d while a node refills, want 0", got)
	}
	f.settled()
	f.pod("aero-2", func(p *corev1.Pod) {
		for i, c := range p.Status.Conditions {
			if c.Type == corev1.PodReady {
				p.Status.Conditions[i].Status = corev1.ConditionFalse
			}
		}
		p.Status.ContainerStatuses = append(p.Status.ContainerStatuses, corev1.ContainerStatus{Name: "sidecar"})
	})
	st = f.observe()
	if _, err := f.r.recoverLostNodes(f.ctx, st); err != nil {
		t.Fatal(err)
	}
	if g := f.cluster().Status.Pods["aero-1"].VolumesGivenUp; g != nil {
		t.Fatalf("the record outlived the refill: %+v", g)
	}
}

// settled: migrations ended, cluster-stable agrees.
func (f *doorFixture) settled() {
	for name := range f.prober.health.Nodes {
		f.node(name, func(h *aerospike.NodeHealth) {
			h.Facts.MigratePartitionsRemaining, h.Facts.ClusterStableErr = 0, nil
		})
	}
}

// kubeletGone makes the fixture's API server hold a pod deleted with a grace period, as a real one does
// while the pod's kubelet cannot confirm the deletion: the pod stays, Terminating. It returns the grace
// of each pod delete the operator made (-1: the default).
func (f *doorFixture) kubeletGone() *[]int64 {
	graces := &[]int64{}
	f.r.Client = interceptor.NewClient(f.c.(client.WithWatch), interceptor.Funcs{Delete: func(ctx context.Context, c client.WithWatch,
		obj client.Object, opts ...client.DeleteOption) error {
		pod, isPod := obj.(*corev1.Pod)
		if !isPod {
			return c.Delete(ctx, obj, opts...)
		}
		o := (&client.DeleteOptions{}).ApplyOptions(opts)
		*graces = append(*graces, ptr.Deref(o.GracePeriodSeconds, -1))
		held := &corev1.Pod{}
		if err := c.Get(ctx, client.ObjectKeyFromObject(pod), held); err != nil {
			return err
		}
		if ptr.Deref(o.GracePeriodSeconds, -1) == 0 {
			held.Finalizers = nil // a force delete removes it whatever its kubelet says
		} else {
			held.Finalizers = []string{"test.acko.io/kubelet-confirms"}
		}
		if err := c.Update(ctx, held); err != nil {
			return err
		}
		return client.IgnoreNotFound(c.Delete(ctx, held))
	}})
	return graces
}

func (f *doorFixture) terminating(name string) bool {
	p := &corev1.Pod{}
	return f.c.Get(f.ctx, client.ObjectKey{Namespace: f.key.Namespace, Name: name}, p) == nil && p.DeletionTimestamp != nil
}

// Issue 38: a lost node's asd may be alive and cut off. Its pod is force-deleted (grace 0, so that the
// StatefulSet starts its successor at once) only when the Kubernetes node is gone or tainted
// out-of-service; before that, a normal delete leaves the pod Terminating, so that two asd never run
// under one identity, and the NodeLost condition says what it waits for.
func TestALostNodesPodIsForceDeletedOnlyOnceItsNodeIsOutOfService(t *testing.T) {
	f := newDoorFixture(t, localCluster(3, 2))
	graces := f.kubeletGone()
	f.loseNode("aero-2")
	said := f.giveUpPass()
	if f.claimExists("data-aero-2") || !f.terminating("aero-2") || slices.Contains(*graces, 0) {
		t.Fatalf("want the claim given up and the pod Terminating, deleted with its grace; deletes' graces %v; NodeLost says: %s",
			*graces, said)
	}
	for _, want := range []string{"pod aero-2 is Terminating", corev1.TaintNodeOutOfService} {
		if !strings.Contains(said, want) {
			t.Fatalf("NodeLost says %q, want it to name %q", said, want)
		}
	}
	node := &corev1.Node{}
	f.must(f.c.Get(f.ctx, client.ObjectKey{Name: "node-aero-2"}, node))
	node.Spec.Taints = append(node.Spec.Taints, corev1.Taint{Key: corev1.TaintNodeOutOfService, Value: "nodeshutdown",
		Effect: corev1.TaintEffectNoExecute})
	f.must(f.c.Update(f.ctx, node))
	said = f.giveUpPass()
	if f.exists("aero-2") || !slices.Contains(*graces, 0) {
		t.Fatalf("the node is out of service, the pod is still there (graces %v); NodeLost says: %s", *graces, said)
	}
}

// A pod whose Kubernetes node was deleted is force-deleted at once: no kubelet will ever confirm.
func TestAPodOfADeletedNodeIsForceDeleted(t *testing.T) {
	f := newDoorFixture(t, localCluster(3, 2))
	graces := f.kubeletGone()
	f.loseNode("aero-2")
	f.must(f.c.Delete(f.ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-aero-2"}}))
	said := f.giveUpPass()
	if f.exists("aero-2") || !slices.Equal(*graces, []int64{0}) {
		t.Fatalf("pod of a deleted node not force-deleted (graces %v); NodeLost says: %s", *graces, said)
	}
}

// A node seen answering from outside the largest cluster of a split may take writes alone (AP mode): its
// status records it split off, a node that then falls silent keeps the record, and one that answers
// from inside clears it.
func TestSplitOffIsRecordedUntilTheNodeAnswersFromInside(t *testing.T) {
	f := newDoorFixture(t, localCluster(5, 2))
	f.node("aero-4", func(h *aerospike.NodeHealth) { h.Facts.ClusterKey, h.Facts.ClusterSize = "K-alone", 1 })
	f.prober.health.SplitSettled = true
	since := f.observe().splitOff("aero-4", nil)
	if since == nil || !since.Time.Equal(doorNow) {
		t.Fatalf("aero-4 answers alone in a split: splitOff %v, want %v", since, doorNow)
	}
	if got := f.observe().splitOff("aero-0", nil); got != nil {
		t.Fatalf("aero-0 answers from the largest cluster: splitOff %v", got)
	}
	f.node("aero-4", func(h *aerospike.NodeHealth) { h.Err = aerospike.ErrUnreachable })
	if got := f.observe().splitOff("aero-4", since); got != since {
		t.Fatalf("a silent node keeps what it last showed: splitOff %v, want %v", got, since)
	}
	f.prober.health.SplitSettled = false
	f.node("aero-4", func(h *aerospike.NodeHealth) { h.Err, h.Facts.ClusterKey, h.Facts.ClusterSize = nil, "K", 5 })
	if got := f.observe().splitOff("aero-4", since); got != nil {
		t.Fatalf("aero-4 answers from inside: splitOff %v, want none", got)
	}
}

// Model hole 26: before the split settles, a node seen answering from a cluster of its own with asd up
// longer than a join takes is recorded split off (a restarted operator saw aero-1-1 alone for 7 s before its
// Kubernetes node was lost); a node that just started, is in no cluster or answers from the cluster it was in
// (shutting down) is not; nor is a lost node's pod, no member any more, whose last reading shows it in the
// cluster of the others.
func TestSplitOffIsRecordedBeforeTheSplitSettles(t *testing.T) {
	f := newDoorFixture(t, localCluster(5, 2))
	alone := func(uptime time.Duration, size int) *metav1.Time {
		f.node("aero-4", func(h *aerospike.NodeHealth) {
			h.Facts.ClusterKey, h.Facts.ClusterSize, h.Facts.Uptime = "K-alone", size, uptime
		})
		return f.observe().splitOff("aero-4", nil)
	}
	if since := alone(aerospike.DefaultSplitGrace+time.Second, 1); since == nil || !since.Time.Equal(doorNow) {
		t.Fatalf("aero-4 up for long, alone in a cluster of its own, split not settled: splitOff %v, want %v", since, doorNow)
	}
	if since := alone(3*time.Second, 1); since != nil {
		t.Fatalf("aero-4 started 3 s ago and is not in the cluster yet: splitOff %v, want none", since)
	}
	if since := alone(time.Hour, 0); since != nil {
		t.Fatalf("aero-4 in no cluster takes no write: splitOff %v, want none", since)
	}
	if since := alone(time.Hour, 5); since != nil {
		t.Fatalf("aero-4 answers from the cluster of 5 it was in (shutting down): splitOff %v, want none", since)
	}
	f.node("aero-4", func(h *aerospike.NodeHealth) { h.Facts.ClusterKey, h.Facts.ClusterSize = "K", 5 })
	st := f.observe()
	st.members = slices.DeleteFunc(st.members, func(m string) bool { return m == "aero-4" })
	if since := st.splitOff("aero-4", nil); since != nil {
		t.Fatalf("a lost pod whose last reading is in the others' cluster: splitOff %v, want none", since)
	}
}

// Model seed 50603: the mesh split aero-4 off alone, then its Kubernetes node was lost. The others form
// one stable cluster, but aero-4's volume may hold the writes it took alone: it is kept, NodeLost says why
// and how to give it up anyway, and the annotation does (the record going with the volumes).
func TestALostNodeSplitOffIsKept(t *testing.T) {
	f := newDoorFixture(t, localCluster(5, 2))
	f.onlyPodStatus("aero-4", func(ps *ackov1alpha1.PodStatus) { ps.SplitOff = &metav1.Time{Time: doorNow.Add(-2 * time.Hour)} })
	f.loseNode("aero-4")
	said := f.giveUpPass()
	if !f.claimExists("data-aero-4") || !f.exists("aero-4") {
		t.Fatalf("the volumes of aero-4, split off before its node was lost, were given up; NodeLost says: %s", said)
	}
	for _, want := range []string{"aero-4 (split off since", "kubectl annotate pod aero-4 " + ackov1alpha1.AnnotationAcceptDataLoss + "=true"} {
		if !strings.Contains(said, want) {
			t.Fatalf("NodeLost says %q, want it to name %q", said, want)
		}
	}
	f.pod("aero-4", func(p *corev1.Pod) { p.Annotations[ackov1alpha1.AnnotationAcceptDataLoss] = "true" })
	said = f.giveUpPass()
	if f.claimExists("data-aero-4") {
		t.Fatalf("the user accepted the loss, but aero-4's claim was kept; NodeLost says: %s", said)
	}
	if got := f.cluster().Status.Pods["aero-4"].SplitOff; got != nil {
		t.Fatalf("the split-off record outlived the volumes: %v", got)
	}
}

// Model seed 75543: a node split off while the cluster was paused was never recorded (a paused reconcile
// wrote no pod facts); lost then, its give-up after the resume deleted the only claim with its writes. The
// record follows the readings, which every reconcile follows first, paused or not.
func TestSplitOffIsRecordedWhilePaused(t *testing.T) {
	f := newDoorFixture(t, localCluster(5, 2))
	f.edit(func(c *ackov1alpha1.AerospikeCluster) { c.Spec.Paused = true })
	f.node("aero-4", func(h *aerospike.NodeHealth) { h.Facts.ClusterKey, h.Facts.ClusterSize = "K-alone", 1 })
	f.prober.health.SplitSettled = true
	if err := f.r.followReadings(f.ctx, newClusterState(f.cluster(), doorNow)); err != nil {
		t.Fatal(err)
	}
	if got := f.cluster().Status.Pods["aero-4"].SplitOff; got == nil || !got.Time.Equal(doorNow) {
		t.Fatalf("aero-4 split off since %v, want %v", got, doorNow)
	}
}
