package cluster

import (
	"context"
	"fmt"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ackov1alpha1 "github.com/acko-io/acko/api/v1alpha1"
	"github.com/acko-io/acko/internal/config"
	"github.com/acko-io/acko/internal/validation"
	"github.com/acko-io/acko/test/testcluster"
)

// Racks the model found (model_holes_test.go, points 0 and 11): a layout switch past the webhook, and a
// removed rack whose pod crash-loops on a config asd refuses.

func setOfRack(id int32) *appsv1.StatefulSet {
	return &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("set-%d", id),
		Labels: map[string]string{ackov1alpha1.LabelRack: fmt.Sprint(id)}}}
}

func TestLayoutChange(t *testing.T) {
	single, multi := testcluster.Build(), testcluster.Build(testcluster.WithRacks(ackov1alpha1.Rack{ID: 1}, ackov1alpha1.Rack{ID: 3}))
	// The webhook's answer to the same switch: the controller refuses it with the same words.
	_, webhook := validation.ValidateUpdate(single, multi, ackov1alpha1.DefaultClusterDomain)
	switched := webhook.ToAggregate().Error()
	for _, tc := range []struct {
		name    string
		cluster *ackov1alpha1.AerospikeCluster
		racks   []int32 // the racks of the StatefulSets that run
		// orphans are the racks of pods that run with no StatefulSet: a volume growth deleted theirs
		// without its pods, to create it again.
		orphans []int32
		want    string
	}{
		{"a new cluster", multi, nil, nil, ""},
		{"single rack as it runs", single, []int32{0}, nil, ""},
		{"racks added and removed", multi, []int32{1, 2}, nil, ""},
		{"single to multi-rack", multi, []int32{0}, nil, switched},
		{"multi-rack to single", single, []int32{2, 3}, nil, switched},
		{"both layouts run (an older operator)", multi, []int32{0, 1}, nil, switched},
		{"racks replaced to grow their volumes", multi, nil, []int32{1, 2}, ""},
		// Seed 10381: the switch came while the StatefulSets were gone; the single-rack one was created
		// beside the multi-rack pods, and the spec fixed back could never run.
		{"multi-rack to single while the racks are replaced", single, nil, []int32{1, 2}, switched},
		{"single to multi-rack while the rack is replaced", multi, []int32{1}, []int32{0}, switched},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sets := map[string]*appsv1.StatefulSet{}
			for _, id := range tc.racks {
				sets[setOfRack(id).Name] = setOfRack(id)
			}
			pods := map[string]*corev1.Pod{}
			for _, id := range tc.orphans {
				pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("pod-%d", id), Labels: setOfRack(id).Labels}}
				pods[pod.Name] = pod
			}
			got := ""
			if errs := layoutChange(tc.cluster, sets, pods); len(errs) > 0 {
				got = errs.ToAggregate().Error()
			}
			if got != tc.want {
				t.Errorf("layoutChange = %q, want %q", got, tc.want)
			}
		})
	}
}

// Point 0: a switch to the multi-rack layout that got past the webhook stops before any child is
// applied (the new racks' pods would start beside the old ones, the old StatefulSet would be lowered
// with no step), with the webhook's message in the InvalidSpec condition.
func TestALayoutSwitchPastTheWebhookStopsBeforeAnyChange(t *testing.T) {
	f := newDoorFixture(t, testcluster.Build(sized(5)))
	before := f.cluster()
	f.edit(func(c *ackov1alpha1.AerospikeCluster) {
		c.Spec.RackConfig = &ackov1alpha1.RackConfig{Racks: []ackov1alpha1.Rack{{ID: 1}, {ID: 2}}}
	})
	_, webhook := validation.ValidateUpdate(before, f.cluster(), ackov1alpha1.DefaultClusterDomain)
	st := newClusterState(f.cluster(), doorNow)
	f.must(f.r.observePods(f.ctx, st))
	if stop, err := f.r.renderChildren(f.ctx, st); stop || err != nil {
		t.Fatalf("renderChildren: stop=%v err=%v %s", stop, err, st.invalid)
	}
	stop, err := f.r.observe(f.ctx, st)
	if !stop || err != nil || st.invalidReason != ackov1alpha1.ReasonInvalidSpec || st.invalid != webhook.ToAggregate().Error() {
		t.Fatalf("observe: stop=%v err=%v %s: %q; want InvalidSpec %q", stop, err, st.invalidReason, st.invalid,
			webhook.ToAggregate().Error())
	}
}

// The pods a scale-down names are the StatefulSet's own (<StatefulSet>-<ordinal>), whatever layout the
// spec has: before point 0's fix, a spec of the other layout named pods that did not exist and the
// replicas were lowered at once, with no step and no check. (observe refuses such a spec first.)
func TestAScaleDownNamesThePodsOfItsStatefulSet(t *testing.T) {
	f := newDoorFixture(t, testcluster.Build(sized(5)))
	st := f.observe()
	st.cluster.Spec.RackConfig = &ackov1alpha1.RackConfig{Racks: []ackov1alpha1.Rack{{ID: 1}}}
	budget := st.maxDown
	replicas, err := f.r.plannedReplicas(f.ctx, st, st.existingSets["aero"], 0, &budget)
	if err != nil || replicas != 5 || st.work == nil || !strings.Contains(st.work.message, "check SafetyRule") {
		t.Fatalf("replicas %d, %v, work %+v: want 5, aero-4 held by the checks (the pods of the spec's racks are missing)",
			replicas, err, st.work)
	}
}

// crashLoopPod: asd refuses the pod's config; the kubelet backs off.
func crashLoopPod(p *corev1.Pod) {
	notReady(p)
	p.Status.ContainerStatuses[0].State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}}
}

// moreFileDescriptors is a config change (service.proto-fd-max).
func moreFileDescriptors(c *ackov1alpha1.AerospikeCluster) {
	svc, _ := c.Spec.AerospikeConfig.Value["service"].(map[string]any)
	if svc == nil {
		svc = map[string]any{}
	}
	svc["proto-fd-max"] = int64(20000)
	c.Spec.AerospikeConfig.Value["service"] = svc
}

// removeRack1 removes rack 1 of a cluster of racks 1 and 2, two pods each.
func removeRack1(c *ackov1alpha1.AerospikeCluster) {
	c.Spec.Size, c.Spec.RackConfig.Racks = 2, c.Spec.RackConfig.Racks[1:]
}

// Which leaving pods (rack 1 removed, or a scale-down) are brought up to date: only a broken one whose
// template or config is not the spec's. One that works is not restarted (it is about to go), one broken
// on the spec's own config would only be replaced again, and one recorded leaving is on its way out.
func TestALeavingPodIsReplacedOnlyWhenBrokenAndOutdated(t *testing.T) {
	twoRacks := testcluster.Build(sized(4), testcluster.WithRacks(ackov1alpha1.Rack{ID: 1}, ackov1alpha1.Rack{ID: 2}))
	for _, tc := range []struct {
		name    string
		cluster *ackov1alpha1.AerospikeCluster
		edits   []func(*ackov1alpha1.AerospikeCluster)
		broken  string
		leaving bool
		want    string // the outdated pods: name/method
	}{
		{"rack removed, config changed, its pods work", twoRacks, []func(*ackov1alpha1.AerospikeCluster){removeRack1, moreFileDescriptors},
			"", false, "aero-2-1/Live aero-2-0/Live"},
		{"rack removed, config changed, a pod of it broken", twoRacks, []func(*ackov1alpha1.AerospikeCluster){removeRack1, moreFileDescriptors},
			"aero-1-0", false, "aero-2-1/Live aero-2-0/Live aero-1-0/Replace"},
		{"rack removed, a pod of it broken on the spec's own config", twoRacks, []func(*ackov1alpha1.AerospikeCluster){removeRack1},
			"aero-1-0", false, ""},
		{"rack removed, a broken pod recorded leaving", twoRacks, []func(*ackov1alpha1.AerospikeCluster){removeRack1, moreFileDescriptors},
			"aero-1-0", true, "aero-2-1/Live aero-2-0/Live"},
		{"size decreased, config changed, a leaving pod broken", testcluster.Build(sized(5)), []func(*ackov1alpha1.AerospikeCluster){sized(3), moreFileDescriptors},
			"aero-3", false, "aero-3/Replace aero-2/Live aero-1/Live aero-0/Live"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newDoorFixture(t, tc.cluster)
			for _, e := range tc.edits {
				f.edit(e)
			}
			if tc.broken != "" {
				f.pod(tc.broken, crashLoopPod)
			}
			if tc.leaving {
				f.record(tc.broken, ackov1alpha1.PodUpdate{Method: ackov1alpha1.UpdateRemove, Started: metav1.NewMicroTime(doorNow)})
			}
			var got []string
			for _, o := range f.observe().outdated {
				got = append(got, o.pod.Name+"/"+string(o.method))
			}
			if strings.Join(got, " ") != tc.want {
				t.Errorf("outdated = %q, want %q", strings.Join(got, " "), tc.want)
			}
		})
	}
}

// Point 11: rack 1 is removed while aero-1-0 crash-loops on a config asd refuses. Rack 1's ConfigMap and
// template follow the spec (the fix of the config reaches it), the removal waits (aero-1-0 is down), and
// aero-1-0 is replaced through the door (it takes nothing down) with the fixed config; aero-1-1, which
// works, is not restarted.
func TestARemovedRackFollowsTheSpecUntilItIsGone(t *testing.T) {
	f := newDoorFixture(t, testcluster.Build(sized(4), testcluster.WithRacks(ackov1alpha1.Rack{ID: 1}, ackov1alpha1.Rack{ID: 2})))
	for _, obj := range f.observe().objects { // the ConfigMaps the racks were created with
		if cm, ok := obj.(*corev1.ConfigMap); ok {
			f.must(f.c.Create(f.ctx, cm))
		}
	}
	f.pod("aero-1-0", crashLoopPod)
	f.edit(removeRack1)
	f.edit(moreFileDescriptors)
	f.budget(3)

	st := f.observe()
	if stop, err := f.r.applyChildren(f.ctx, st); stop || err != nil {
		t.Fatalf("applyChildren: stop=%v err=%v %s", stop, err, st.invalid)
	}
	if st.work == nil || !strings.Contains(st.work.message, "check SafetyRule") {
		t.Fatalf("work %+v: want the removal of rack 1 held by SafetyRule (aero-1-0 is down)", st.work)
	}
	if conf := st.removedRacks["aero-1"].configMap.Data[config.FileName]; !strings.Contains(conf, "proto-fd-max 20000") {
		t.Fatalf("rack 1's config is not the spec's:\n%s", conf)
	}
	f.rackFollows(st.removedRacks["aero-1"], 2)

	st = f.observe() // the next reconcile: rack 1's StatefulSet has the template
	if _, err := f.r.rollingRestart(f.ctx, st); err != nil {
		t.Fatal(err)
	}
	if f.exists("aero-1-0") || !f.exists("aero-1-1") {
		t.Fatalf("aero-1-0 exists %v, aero-1-1 exists %v: want aero-1-0 replaced, aero-1-1 left alone (work %+v)",
			f.exists("aero-1-0"), f.exists("aero-1-1"), st.work)
	}
	if u := f.cluster().Status.Pods["aero-1-0"].Update; u == nil || u.Method != ackov1alpha1.UpdateReplace || !u.Done {
		t.Fatalf("aero-1-0's step %+v: want a replacement recorded and done", u)
	}
}

// A removed rack's child that is gone is not created again: the cache may list its StatefulSet a
// moment after the rack was deleted.
func TestARemovedRacksConfigMapIsNotCreatedAgain(t *testing.T) {
	f := newDoorFixture(t, testcluster.Build(sized(4), testcluster.WithRacks(ackov1alpha1.Rack{ID: 1}, ackov1alpha1.Rack{ID: 2})))
	f.edit(removeRack1)
	st := f.observe()
	if stop, err := f.r.updateRemovedChild(context.Background(), st, st.removedRacks["aero-1"].configMap); stop || err != nil {
		t.Fatalf("stop=%v err=%v", stop, err)
	}
	if err := f.c.Get(f.ctx, client.ObjectKey{Namespace: f.key.Namespace, Name: "aero-1-config"}, &corev1.ConfigMap{}); err == nil {
		t.Fatal("aero-1-config was created")
	}
}

// rackFollows checks that a removed rack's ConfigMap and StatefulSet in the API server have the spec's
// config and template (want, rendered by renderRemovedRacks), and replicas.
func (f *doorFixture) rackFollows(want removedRack, replicas int32) {
	f.t.Helper()
	cm, sts := &corev1.ConfigMap{}, &appsv1.StatefulSet{}
	f.must(f.c.Get(f.ctx, client.ObjectKeyFromObject(want.configMap), cm))
	f.must(f.c.Get(f.ctx, client.ObjectKeyFromObject(want.set), sts))
	hash := sts.Spec.Template.Annotations[ackov1alpha1.AnnotationConfigHash]
	if cm.Data[config.FileName] != want.configMap.Data[config.FileName] || *sts.Spec.Replicas != replicas ||
		hash != want.set.Spec.Template.Annotations[ackov1alpha1.AnnotationConfigHash] {
		f.t.Fatalf("%s: replicas %d, template config %s, ConfigMap\n%s\nwant %d replicas and the spec's config\n%s",
			sts.Name, *sts.Spec.Replicas, hash, cm.Data[config.FileName], replicas, want.configMap.Data[config.FileName])
	}
}
