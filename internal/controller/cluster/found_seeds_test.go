package cluster

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	ackov1alpha1 "github.com/acko-io/acko/api/v1alpha1"
	"github.com/acko-io/acko/internal/config"
	"github.com/acko-io/acko/test/testcluster"
)

// The deciders behind holes the model's seeds 41001-42000 found (modelFoundSeeds), each on a cluster
// observed through a fake client (the door's fixture).

// Seeds 41326, 41912: aero-4, broken, was replaced (its step done, the pod deleted), and a scale-down to 4
// since leaves it out: no StatefulSet creates it again, so its step ends instead of waiting for it.
func TestAReplacedPodTheSpecNoLongerHasIsNotWaitedFor(t *testing.T) {
	f := newDoorFixture(t, testcluster.Build(sized(5)))
	f.record("aero-4", ackov1alpha1.PodUpdate{Method: ackov1alpha1.UpdateReplace, Reason: ackov1alpha1.RestartReasonImageChanged,
		Started: metav1.NewMicroTime(doorNow), Done: true})
	f.must(f.c.Delete(f.ctx, &corev1.Pod{ObjectMeta: f.meta("aero-4")}))
	f.edit(sized(4))
	st := f.observe()
	why, err := f.r.followBack(f.ctx, st, "aero-4", st.cluster.Status.Pods["aero-4"].Update)
	if err != nil || why != "" {
		t.Fatalf("followBack = %q, %v: want the step over", why, err)
	}
	if u := f.cluster().Status.Pods["aero-4"].Update; u != nil {
		t.Fatalf("aero-4's step kept: %+v", u)
	}
}

// Seed 41369: a pod of each of two racks recorded leaving while the rule allowed two down; the rule now
// allows one. Each rack alone is within it, so each waited for the other's leave for ever: the leaves are
// decided again, fewer at a time.
func TestLeavesOfTwoRacksRecordedUnderALargerRuleAreDecidedAgain(t *testing.T) {
	f := newDoorFixture(t, testcluster.Build(sized(6), twoRacks))
	f.edit(sized(4))
	for _, name := range []string{"aero-1-2", "aero-2-2"} {
		f.record(name, ackov1alpha1.PodUpdate{Method: ackov1alpha1.UpdateRemove, Started: metav1.NewMicroTime(doorNow)})
	}
	st := f.observe()
	if st.maxDown != 1 {
		t.Fatalf("maxDown %d, want 1", st.maxDown)
	}
	budget := st.maxDown
	if _, err := f.r.plannedReplicas(f.ctx, st, st.existingSets["aero-1"], 2, &budget); err != nil {
		t.Fatal(err)
	}
	if u := f.cluster().Status.Pods["aero-1-2"].Update; u != nil {
		t.Fatalf("aero-1-2 still recorded leaving (%+v) beside aero-2-2: %+v", u, st.work)
	}
}

// Seed 41421: rack 2 is removed and a volume growth deleted its StatefulSet without its pods; aero-2-0 is
// gone meanwhile. The StatefulSet created again over aero-2-1 recreates aero-2-0, which needs its own file
// in the rack's ConfigMap (without one it crash-looped and held the removal).
func TestARemovedRackCreatedAgainHasAFileForEveryPod(t *testing.T) {
	f := newDoorFixture(t, testcluster.Build(sized(4), twoRacks))
	f.edit(func(c *ackov1alpha1.AerospikeCluster) {
		c.Spec.Size, c.Spec.RackConfig.Racks = 2, c.Spec.RackConfig.Racks[:1]
	})
	f.must(f.c.Delete(f.ctx, &appsv1.StatefulSet{ObjectMeta: f.meta("aero-2")}))
	f.pod("aero-2-1", func(p *corev1.Pod) { p.OwnerReferences = nil })
	f.must(f.c.Delete(f.ctx, &corev1.Pod{ObjectMeta: f.meta("aero-2-0")}))
	st := f.observe()
	rack, ok := st.removedRacks["aero-2"]
	if !ok {
		t.Fatalf("rack 2 not rendered as removed: %v", st.removedRacks)
	}
	for _, name := range []string{"aero-2-0", "aero-2-1"} {
		if rack.configMap.Data[config.PodFileKey(name, "")] == "" {
			t.Errorf("the removed rack's ConfigMap has no file for %s", name)
		}
	}
}

// Seed 42532: aero-3 was evicted for a new pod spec, and its new instance is kept from Ready by a sidecar;
// a scale-down since leaves it out. It is not rolled any more (it leaves as it is), so its step is over
// rather than followed until the progress deadline stalls the cluster for good.
func TestAFinishedStepOfALeavingPodIsNotFollowed(t *testing.T) {
	f := newDoorFixture(t, testcluster.Build(sized(4)))
	c := f.cluster()
	setUpdate(&c.Status, "aero-3", &ackov1alpha1.PodUpdate{Method: ackov1alpha1.UpdateEvict, UID: "uid-aero-3-before",
		Reason: ackov1alpha1.RestartReasonPodSpecChanged, Started: metav1.NewMicroTime(doorNow), Done: true})
	f.must(f.c.Status().Update(f.ctx, c))
	f.pod("aero-3", notReady)
	f.edit(sized(3))
	st := f.observe()
	if fate := st.fateOf("aero-3", st.cluster.Status.Pods["aero-3"].Update); fate != decideAgain {
		t.Fatalf("aero-3's finished step is %v, want decided again (%d)", fate, decideAgain)
	}
}
