package cluster

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	ackov1alpha1 "github.com/acko-io/acko/api/v1alpha1"
	"github.com/acko-io/acko/internal/aerospike"
	"github.com/acko-io/acko/internal/liveconfig"
	"github.com/acko-io/acko/internal/pods"
	"github.com/acko-io/acko/internal/resources"
	"github.com/acko-io/acko/internal/status"
	"github.com/acko-io/acko/internal/tasks"
	"github.com/acko-io/acko/test/testcluster"
)

// Issue 22's data-loss sequences, each on a cluster observed through a fake client and a fake prober (no
// control plane): the deciders and the door every take-down goes through run as in a reconcile.

var doorNow = time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)

// fakeProber serves one reading and counts the fresh readings asked for.
type fakeProber struct {
	health    aerospike.ClusterHealth
	refreshed int
}

func (p *fakeProber) Ensure(types.NamespacedName, aerospike.ProbeSpec) {}
func (p *fakeProber) Stop(types.NamespacedName)                        {}
func (p *fakeProber) Snapshot(types.NamespacedName) (aerospike.ClusterHealth, bool) {
	return p.health, true
}
func (p *fakeProber) Refresh(types.NamespacedName) { p.refreshed++ }

// doorFixture is a cluster whose pods were created from before's StatefulSets, all Ready, their nodes one
// stable cluster read just now.
type doorFixture struct {
	t      *testing.T
	ctx    context.Context
	c      client.Client
	r      *AerospikeClusterReconciler
	prober *fakeProber
	key    types.NamespacedName
	// instances counts the pods created per name: each gets a new UID (uid-NAME first).
	instances map[string]int
}

func newDoorFixture(t *testing.T, before *ackov1alpha1.AerospikeCluster) *doorFixture {
	t.Helper()
	f := &doorFixture{t: t, ctx: context.Background(), prober: &fakeProber{}, instances: map[string]int{}}
	f.key = types.NamespacedName{Namespace: before.Namespace, Name: before.Name}
	sch := runtime.NewScheme()
	f.must(clientgoscheme.AddToScheme(sch))
	f.must(ackov1alpha1.AddToScheme(sch))
	f.c = fake.NewClientBuilder().WithScheme(sch).WithStatusSubresource(&ackov1alpha1.AerospikeCluster{}).Build()
	f.r = &AerospikeClusterReconciler{Client: f.c, APIReader: f.c, Scheme: sch, Probers: f.prober,
		Status: status.NewWriter(f.c, f.c), Tasks: tasks.New(0), Clock: clocktesting.NewFakePassiveClock(doorNow)}
	f.must(f.c.Create(f.ctx, before.DeepCopy()))
	st := newClusterState(before, doorNow)
	if _, err := f.r.renderChildren(f.ctx, st); err != nil || st.invalid != "" {
		t.Fatalf("render: %v %s", err, st.invalid)
	}
	f.prober.health = aerospike.ClusterHealth{Nodes: map[string]aerospike.NodeHealth{}, ReadAt: doorNow}
	for _, sts := range st.sets {
		sts.UID = types.UID("uid-" + sts.Name)
		sts.OwnerReferences = []metav1.OwnerReference{{APIVersion: ackov1alpha1.GroupVersion.String(),
			Kind: "AerospikeCluster", Name: before.Name, UID: before.UID, Controller: ptr.To(true)}}
		f.must(f.c.Create(f.ctx, sts))
		for o := range *sts.Spec.Replicas {
			f.addPod(sts, before.PodName(rackOf(sts), o))
		}
	}
	f.prober.health.ExpectedSize = len(f.prober.health.Nodes)
	pdb := &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Namespace: before.Namespace,
		Name: before.PodDisruptionBudgetName(), OwnerReferences: []metav1.OwnerReference{{
			APIVersion: ackov1alpha1.GroupVersion.String(), Kind: "AerospikeCluster", Name: before.Name,
			UID: before.UID, Controller: ptr.To(true)}}}}
	f.must(f.c.Create(f.ctx, pdb))
	f.budget(int32(len(f.prober.health.Nodes)))
	return f
}

func (f *doorFixture) must(err error) {
	f.t.Helper()
	if err != nil {
		f.t.Fatal(err)
	}
}

// addPod creates a pod of sts as its StatefulSet controller would, Ready, its node a stable member.
func (f *doorFixture) addPod(sts *appsv1.StatefulSet, name string) {
	tmpl := sts.Spec.Template
	uid := types.UID("uid-" + name)
	if f.instances[name]++; f.instances[name] > 1 {
		uid = types.UID(fmt.Sprintf("uid-%s-%d", name, f.instances[name]))
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: sts.Namespace, Name: name, UID: uid,
			Labels: tmpl.Labels, Annotations: tmpl.Annotations, OwnerReferences: []metav1.OwnerReference{{
				APIVersion: "apps/v1", Kind: "StatefulSet", Name: sts.Name, UID: sts.UID, Controller: ptr.To(true)}}},
		Spec: tmpl.Spec,
		Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "10.0.0.1",
			ContainerStatuses: []corev1.ContainerStatus{{Name: ackov1alpha1.AerospikeContainerName,
				State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}},
			Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}},
	}
	f.must(f.c.Create(f.ctx, pod))
	f.prober.health.Nodes[name] = aerospike.NodeHealth{ReadAt: doorNow, Facts: aerospike.NodeFacts{
		NodeID: "BB9" + name, ClusterKey: "K", ClusterStableKey: "K", ClusterIntegrity: true, Uptime: time.Hour}}
	for n, h := range f.prober.health.Nodes {
		h.Facts.ClusterSize = len(f.prober.health.Nodes)
		f.prober.health.Nodes[n] = h
	}
}

// budget sets the PodDisruptionBudget's status as the disruption controller would: healthy of all pods.
func (f *doorFixture) budget(healthy int32) {
	pdb := &policyv1.PodDisruptionBudget{}
	f.must(f.c.Get(f.ctx, client.ObjectKey{Namespace: f.key.Namespace, Name: f.cluster().PodDisruptionBudgetName()}, pdb))
	pdb.Status.ExpectedPods, pdb.Status.CurrentHealthy = int32(len(f.prober.health.Nodes)), healthy
	f.must(f.c.Status().Update(f.ctx, pdb))
}

// edit changes the cluster's spec.
func (f *doorFixture) edit(change func(c *ackov1alpha1.AerospikeCluster)) {
	c := f.cluster()
	change(c)
	f.must(f.c.Update(f.ctx, c))
}

func (f *doorFixture) cluster() *ackov1alpha1.AerospikeCluster {
	c := &ackov1alpha1.AerospikeCluster{}
	f.must(f.c.Get(f.ctx, f.key, c))
	return c
}

// pod changes a pod in the API server.
func (f *doorFixture) pod(name string, change func(p *corev1.Pod)) {
	p := &corev1.Pod{}
	f.must(f.c.Get(f.ctx, client.ObjectKey{Namespace: f.key.Namespace, Name: name}, p))
	change(p)
	wanted := p.Status
	f.must(f.c.Update(f.ctx, p))
	p.Status = wanted
	f.must(f.c.Status().Update(f.ctx, p))
}

func notReady(p *corev1.Pod) { p.Status.Conditions[0].Status = corev1.ConditionFalse }

// node changes a node's reading.
func (f *doorFixture) node(name string, change func(h *aerospike.NodeHealth)) {
	h := f.prober.health.Nodes[name]
	change(&h)
	f.prober.health.Nodes[name] = h
}

// migrating: every node counts partitions to migrate and cluster-stable says so.
func (f *doorFixture) migrating() {
	for name := range f.prober.health.Nodes {
		f.node(name, func(h *aerospike.NodeHealth) {
			h.Facts.MigratePartitionsRemaining = 100
			h.Facts.ClusterStableErr = &aerospike.InfoError{Command: "cluster-stable", Code: 7, Message: "unstable cluster"}
		})
	}
}

// record writes a pod's step into the cluster's status.
func (f *doorFixture) record(name string, u ackov1alpha1.PodUpdate) {
	c := f.cluster()
	u.UID = "uid-" + name
	setUpdate(&c.Status, name, &u)
	f.must(f.c.Status().Update(f.ctx, c))
}

// observe runs a reconcile's first phases.
func (f *doorFixture) observe() *clusterState {
	f.t.Helper()
	st := newClusterState(f.cluster(), doorNow)
	if err := f.r.observePods(f.ctx, st); err != nil {
		f.t.Fatalf("observePods: %v", err)
	}
	for _, p := range []func(context.Context, *clusterState) (bool, error){f.r.renderChildren, f.r.observe} {
		if stop, err := p(f.ctx, st); stop || err != nil {
			f.t.Fatalf("stop=%v err=%v invalid=%s", stop, err, st.invalid)
		}
	}
	return st
}

// afterLastLook runs an act's door as two reconciles would: the first asks for a last look at every
// node, the prober answers with readings taken just after (after may change them: what happened in
// between), and the second decides on them.
func (f *doorFixture) afterLastLook(door func(st *clusterState) (string, error), after func()) (string, error) {
	f.t.Helper()
	asked := f.prober.refreshed
	why, err := door(f.observe())
	if err != nil || !strings.Contains(why, lookingAgain) || f.prober.refreshed == asked {
		return why, err
	}
	for name := range f.prober.health.Nodes {
		f.node(name, func(h *aerospike.NodeHealth) { h.ReadAt = doorNow.Add(time.Millisecond) })
	}
	if after != nil {
		after()
	}
	return door(f.observe())
}

func (f *doorFixture) exists(name string) bool {
	return f.c.Get(f.ctx, client.ObjectKey{Namespace: f.key.Namespace, Name: name}, &corev1.Pod{}) == nil
}

func sized(n int32) func(*ackov1alpha1.AerospikeCluster) {
	return func(c *ackov1alpha1.AerospikeCluster) { c.Spec.Size = n }
}

func replicationFactor(rf int) func(*ackov1alpha1.AerospikeCluster) {
	return func(c *ackov1alpha1.AerospikeCluster) {
		c.Spec.AerospikeConfig.Value["namespaces"].([]any)[0].(map[string]any)["replication-factor"] = int64(rf)
	}
}

func newImage(c *ackov1alpha1.AerospikeCluster) { c.Spec.Image = "aerospike:ce-8.1.2.0" }

// Point 1: replication-factor 2, 5 → 4. aero-4 was recorded leaving while the cluster was stable; then
// aero-1's asd crashed and came back empty, migrating. The budget shows 3 of 5 healthy (aero-4 held,
// aero-1 not Ready): the replicas must stay at 5 until aero-1's data is back. Rack removal goes the same
// way (removeOldRacks scales a removed rack down through plannedReplicas).
func TestScaleDownActsOnlyThroughTheChecks(t *testing.T) {
	for _, tc := range []struct {
		name  string
		crash func(f *doorFixture)
	}{
		{"a node migrates after a crash", func(f *doorFixture) {
			f.pod("aero-1", notReady)
			f.migrating()
		}},
		// lookAgain reported only pods the cache showed Ready: a pod the cache never saw Ready went unnoticed.
		{"a pod is not Ready", func(f *doorFixture) { f.pod("aero-1", notReady) }},
		{"a node is silent", func(f *doorFixture) {
			f.node("aero-1", func(h *aerospike.NodeHealth) { h.Err = aerospike.ErrUnreachable })
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newDoorFixture(t, testcluster.Build(sized(5)))
			f.edit(func(c *ackov1alpha1.AerospikeCluster) { c.Spec.Size = 4 })
			f.record("aero-4", ackov1alpha1.PodUpdate{Method: ackov1alpha1.UpdateRemove,
				Started: metav1.NewMicroTime(doorNow.Add(-10 * time.Second))})
			f.pod("aero-4", notReady) // its gate held
			tc.crash(f)
			f.budget(3)
			st := f.observe()
			budget := st.maxDown
			replicas, err := f.r.plannedReplicas(f.ctx, st, st.existingSets["aero"], 4, &budget)
			if err != nil {
				t.Fatal(err)
			}
			if replicas != 5 {
				t.Fatalf("replicas = %d, want 5 (held: %v)", replicas, st.work)
			}
			if st.work == nil || st.work.reason != ackov1alpha1.ReasonRestartBlocked {
				t.Fatalf("work = %+v, want RestartBlocked", st.work)
			}
		})
	}
}

// A removed rack is scaled down like any other: one pod at a time, its ordinal read from the pod's name
// (its rack is no longer in the spec; found by the crash table, which asked for -1 replicas).
func TestARemovedRackStepsDownOnePodAtATime(t *testing.T) {
	f := newDoorFixture(t, testcluster.Build(sized(4), testcluster.WithRacks(ackov1alpha1.Rack{ID: 1}, ackov1alpha1.Rack{ID: 2})))
	f.edit(func(c *ackov1alpha1.AerospikeCluster) {
		c.Spec.Size, c.Spec.RackConfig.Racks = 2, c.Spec.RackConfig.Racks[:1]
	})
	f.record("aero-2-1", ackov1alpha1.PodUpdate{Method: ackov1alpha1.UpdateRemove,
		Started: metav1.NewMicroTime(doorNow.Add(-10 * time.Second))})
	f.pod("aero-2-1", notReady)
	f.budget(3)
	var replicas int32
	_, err := f.afterLastLook(func(st *clusterState) (string, error) {
		budget := st.maxDown
		var err error
		replicas, err = f.r.plannedReplicas(f.ctx, st, st.existingSets["aero-2"], 0, &budget)
		if st.work == nil {
			return "", err
		}
		return st.work.message, err
	}, nil)
	if err != nil || replicas != 1 {
		t.Fatalf("replicas %d, %v; want 1", replicas, err)
	}
}

// Issue 38, model seed 20305: a volume growth deleted rack 2's StatefulSet without its pods, and the rack
// was removed before it was created again. It is created again over its pods, asking for both, so that
// they leave through the door one step at a time; never created, they ran on for ever.
func TestARemovedRacksOrphanedPodsLeaveThroughItsStatefulSet(t *testing.T) {
	f := newDoorFixture(t, testcluster.Build(sized(4), testcluster.WithRacks(ackov1alpha1.Rack{ID: 1}, ackov1alpha1.Rack{ID: 2})))
	f.edit(func(c *ackov1alpha1.AerospikeCluster) {
		c.Spec.Size, c.Spec.RackConfig.Racks = 2, c.Spec.RackConfig.Racks[:1]
	})
	// growVolumes deleted it with orphan propagation: the garbage collector drops the pods' owner.
	f.must(f.c.Delete(f.ctx, &appsv1.StatefulSet{ObjectMeta: f.meta("aero-2")}))
	for _, name := range []string{"aero-2-0", "aero-2-1"} {
		f.pod(name, func(p *corev1.Pod) { p.OwnerReferences = nil })
	}
	if _, err := f.r.applyChildren(f.ctx, f.observe()); err != nil {
		t.Fatal(err)
	}
	sts := &appsv1.StatefulSet{}
	f.must(f.c.Get(f.ctx, client.ObjectKey{Namespace: f.key.Namespace, Name: "aero-2"}, sts))
	if got := ptr.Deref(sts.Spec.Replicas, 0); got != 2 {
		t.Fatalf("removed rack's StatefulSet created again with %d replicas over its 2 pods, want 2", got)
	}
}

// Point 2: a size decrease together with a pending roll. The reconcile that records aero-4 leaving must
// not take another pod down in its rolling restart: the set of pods down or leaving is recomputed when
// the roll decides, not taken from observe.
func TestALeaveRecordedInThisReconcileHoldsTheRoll(t *testing.T) {
	f := newDoorFixture(t, testcluster.Build(sized(5)))
	f.edit(newImage)
	st := f.observe()
	for _, sts := range st.sets { // the StatefulSets took the new template in an earlier reconcile
		existing := st.existingSets[sts.Name]
		existing.Spec.Template = sts.Spec.Template
		f.must(f.c.Update(f.ctx, existing))
	}
	f.edit(sized(4))
	st = f.observe()
	budget := st.maxDown
	if _, err := f.r.plannedReplicas(f.ctx, st, st.existingSets["aero"], 4, &budget); err != nil {
		t.Fatal(err)
	}
	if u := st.cluster.Status.Pods["aero-4"].Update; u == nil || u.Method != ackov1alpha1.UpdateRemove {
		t.Fatalf("aero-4 not recorded leaving: %+v", st.cluster.Status.Pods["aero-4"])
	}
	batch, hold := st.nextBatch()
	if len(batch) > 0 || !strings.Contains(hold, "check SafetyRule") || !strings.Contains(hold, "aero-4 (leaving the cluster)") {
		t.Fatalf("batch %v, hold %q: want the roll held by SafetyRule naming aero-4", podsOf(batch), hold)
	}
}

// Point 11: a size decrease together with an image change does not restart the pod about to leave.
func TestAPodThatLeavesIsNotRolled(t *testing.T) {
	f := newDoorFixture(t, testcluster.Build(sized(5)))
	f.edit(func(c *ackov1alpha1.AerospikeCluster) {
		newImage(c)
		c.Spec.Size = 4
	})
	st := f.observe()
	got := podsOf(st.outdated)
	if want := []string{"aero-3", "aero-2", "aero-1", "aero-0"}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("outdated = %v, want %v", got, want)
	}
}

// Point 3: raising replication-factor from 2 to 3 (with an image change and a batch of 2). Until every
// node runs the new factor, the rule, the batch and the PodDisruptionBudget stay at one node.
func TestTheRuleFollowsTheRunningReplicationFactor(t *testing.T) {
	f := newDoorFixture(t, testcluster.Build(sized(5)))
	f.edit(func(c *ackov1alpha1.AerospikeCluster) {
		replicationFactor(3)(c)
		newImage(c)
		c.Spec.RollingUpdateBatchSize = ptr.To(int32(2))
	})
	st := f.observe()
	if got := st.runningReplicationFactor(); got != 2 {
		t.Fatalf("running replication factor = %d, want 2", got)
	}
	if st.maxDown != 1 || st.pdbMaxUnavailable(st.maxDown) != 1 {
		t.Fatalf("maxDown %d, PodDisruptionBudget maxUnavailable %d: want 1 and 1", st.maxDown, st.pdbMaxUnavailable(st.maxDown))
	}
	if batch, hold := st.nextBatch(); len(batch) != 1 || hold != "" {
		t.Fatalf("batch %v (hold %q), want one pod", podsOf(batch), hold)
	}

	// Every pod runs the new config: the new factor holds.
	g := newDoorFixture(t, testcluster.Build(sized(5), replicationFactor(3)))
	if st := g.observe(); st.runningReplicationFactor() != 3 || st.maxDown != 2 {
		t.Fatalf("settled at factor 3: running %d, maxDown %d", st.runningReplicationFactor(), st.maxDown)
	}
	// A pod created by an older operator, without the annotation, that runs another config counts as 2.
	g.pod("aero-3", func(p *corev1.Pod) {
		delete(p.Annotations, ackov1alpha1.AnnotationReplicationFactor)
		p.Annotations[ackov1alpha1.AnnotationConfigHash] = "older"
	})
	if st := g.observe(); st.runningReplicationFactor() != 2 {
		t.Fatalf("a pod of unknown factor: running %d, want 2", st.runningReplicationFactor())
	}
	// A restart in place records the new config and drops the factor of the one the pod was created with.
	pod := &corev1.Pod{}
	g.must(g.c.Get(g.ctx, client.ObjectKey{Namespace: g.key.Namespace, Name: "aero-2"}, pod))
	g.must(pods.RecordConfig(g.ctx, g.c, pod, "loaded-in-place"))
	g.must(g.c.Get(g.ctx, client.ObjectKey{Namespace: g.key.Namespace, Name: "aero-2"}, pod))
	rf, kept := pod.Annotations[ackov1alpha1.AnnotationReplicationFactor]
	if hash := pod.Annotations[ackov1alpha1.AnnotationConfigHash]; kept || hash != "loaded-in-place" {
		t.Fatalf("after RecordConfig: factor %q (kept %v), config %q", rf, kept, hash)
	}
}

// stubLive is a LiveConfigurer whose changes the tests never run (the runner is not started).
type stubLive struct{}

func (stubLive) Apply(context.Context, *corev1.Pod, liveconfig.Change) (string, error) {
	return "", nil
}
func (stubLive) ApplyTogether(context.Context, []*corev1.Pod, []*corev1.Pod, map[string]liveconfig.Change) (string, error) {
	return "", nil
}

// factorDown is a cluster of size pods whose replication-factor goes from 3 to 2, observed.
func factorDown(t *testing.T, size int32) (*doorFixture, *clusterState) {
	f := newDoorFixture(t, testcluster.Build(sized(size), replicationFactor(3)))
	f.withConfigMaps()
	f.r.Live = stubLive{}
	f.edit(replicationFactor(2))
	return f, f.observe()
}

// Model seed 40089: a live change of the replication-factor from 3 to 2 reached the nodes and was never
// recorded (the API server away, the operator restarted), then the spec went back to 3: the pods' config
// hash said 3 while the nodes ran 2, and a batch of 2 evictions took both copies down. The change sets the
// smaller factor on each pod before any node takes it, and the rule follows it until the pod records the
// config its node runs.
func TestAnUnrecordedFactorChangeKeepsTheSmallerFactor(t *testing.T) {
	f, st := factorDown(t, 5)
	if name := st.factorPending(); name == "" {
		t.Fatalf("no pod takes the new factor live: outdated %v", podsOf(st.outdated))
	}
	names := podsOf(st.outdated)
	if _, err := f.r.applyTogether(f.ctx, st, names); err != nil {
		t.Fatal(err)
	}
	for _, name := range names {
		pod := &corev1.Pod{}
		f.must(f.c.Get(f.ctx, client.ObjectKey{Namespace: f.key.Namespace, Name: name}, pod))
		if got := pod.Annotations[ackov1alpha1.AnnotationFactorChanging]; got != "2" {
			t.Fatalf("%s: %s = %q before the change ran, want 2", name, ackov1alpha1.AnnotationFactorChanging, got)
		}
	}
	// The change ran on the nodes and was never recorded; the spec goes back to 3 with a new image and a
	// batch of 2: the pods' config hash is the desired one again.
	f.edit(func(c *ackov1alpha1.AerospikeCluster) {
		replicationFactor(3)(c)
		newImage(c)
		c.Spec.RollingUpdateBatchSize = ptr.To(int32(2))
	})
	st = f.observe()
	if got := st.runningReplicationFactor(); got != 2 || st.maxDown != 1 {
		t.Fatalf("running replication factor %d, maxDown %d: want 2 and 1", got, st.maxDown)
	}
	if batch, hold := st.nextBatch(); len(batch) != 1 || hold != "" {
		t.Fatalf("batch %v (hold %q), want one pod", podsOf(batch), hold)
	}
	// Recording the config the node runs (a restart, or the change recorded) drops it.
	pod := &corev1.Pod{}
	f.must(f.c.Get(f.ctx, client.ObjectKey{Namespace: f.key.Namespace, Name: "aero-0"}, pod))
	f.must(pods.RecordConfig(f.ctx, f.c, pod, "restarted-in-place"))
	f.must(f.c.Get(f.ctx, client.ObjectKey{Namespace: f.key.Namespace, Name: "aero-0"}, pod))
	if got, kept := pod.Annotations[ackov1alpha1.AnnotationFactorChanging]; kept {
		t.Fatalf("after RecordConfig: %s = %q kept", ackov1alpha1.AnnotationFactorChanging, got)
	}
}

// Model seed 40344: a live change of aero-2 was recorded, then aero-1 broke (a drain recreated it on a
// config asd refuses) and another change made it outdated: the live change waited for aero-1 to be Ready
// (PodsReady), and aero-1's replacement waited behind the live change. A live change not taken yet is
// decided again while an outdated pod with no step is not Ready, so the broken pod is replaced first.
func TestALiveChangeGivesWayToABrokenPod(t *testing.T) {
	f := newDoorFixture(t, testcluster.Build(sized(3)))
	f.withConfigMaps()
	f.r.Live = stubLive{}
	f.edit(testcluster.WithService("proto-fd-max", int64(20000)))
	st := f.observe()
	f.record("aero-2", ackov1alpha1.PodUpdate{Method: ackov1alpha1.UpdateLive, Reason: ackov1alpha1.RestartReasonConfigChanged,
		Started: metav1.NewMicroTime(doorNow), ConfigHash: st.desiredConfigHash(st.pods["aero-2"])})
	f.pod("aero-1", func(p *corev1.Pod) {
		notReady(p)
		p.Status.ContainerStatuses[0].State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{
			Reason: "CrashLoopBackOff", Message: "asd refused its config"}}
	})
	st = f.observe()
	if fate := st.fateOf("aero-2", st.cluster.Status.Pods["aero-2"].Update); fate != decideAgain {
		t.Fatalf("the live change of aero-2 is %v, want decided again (%d)", fate, decideAgain)
	}
	if inFlight, err := f.r.followUpdates(f.ctx, st); err != nil || inFlight {
		t.Fatalf("a step is still followed (%v, %v): %+v", inFlight, err, st.work)
	}
	batch, hold := st.nextBatch()
	if len(batch) != 1 || batch[0].pod.Name != "aero-1" || batch[0].method != ackov1alpha1.UpdateReplace || hold != "" {
		t.Fatalf("batch %v (hold %q), want aero-1 replaced", podsOf(batch), hold)
	}
}

// Point 5: a reading older than the decision, or more than a moment old, is not enough to act on: the
// door asks the prober for a new one and the pod stays. (Against a real asd, the prober's snapshot said
// stable for 1.75 s after a node was stopped.)
func TestTheDoorActsOnlyOnFreshReadings(t *testing.T) {
	decided := doorNow.Add(-500 * time.Millisecond)
	for _, tc := range []struct {
		name   string
		readAt time.Time
		acts   bool
	}{
		{"read before the decision", decided.Add(-time.Millisecond), false},
		{"read after the decision but 2 s ago", doorNow.Add(-2 * time.Second), false},
		{"read after the decision, a moment ago", doorNow.Add(-100 * time.Millisecond), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newDoorFixture(t, testcluster.Build())
			f.edit(newImage)
			f.record("aero-2", ackov1alpha1.PodUpdate{Method: ackov1alpha1.UpdateEvict, Started: metav1.NewMicroTime(decided)})
			for name := range f.prober.health.Nodes {
				f.node(name, func(h *aerospike.NodeHealth) { h.ReadAt = tc.readAt })
			}
			why, err := f.afterLastLook(func(st *clusterState) (string, error) {
				return f.r.takeStep(f.ctx, st, ackov1alpha1.UpdateEvict, []string{"aero-2"})
			}, nil)
			if err != nil {
				t.Fatal(err)
			}
			if acted := !f.exists("aero-2"); acted != tc.acts {
				t.Fatalf("evicted = %v, want %v (%s)", acted, tc.acts, why)
			}
			if !tc.acts && (f.prober.refreshed == 0 || !strings.Contains(why, "fresh reading")) {
				t.Fatalf("refreshed %d times, waits %q: want a fresh reading asked for", f.prober.refreshed, why)
			}
		})
	}
}

// Point 5, closed to the act: once the checks pass on the prober's readings, the door asks for a last look
// and acts only on readings taken after it asked. A node that stops answering or restarts between the
// prober's round and the act is seen, and nothing is taken down; a reading older than the look is not
// enough, however young.
func TestTheDoorActsOnlyAfterALastLook(t *testing.T) {
	for _, tc := range []struct {
		name    string
		between func(f *doorFixture)
		acts    bool
	}{
		{"nothing happens in between", func(*doorFixture) {}, true},
		{"a node stops answering", func(f *doorFixture) {
			f.node("aero-0", func(h *aerospike.NodeHealth) { h.Err = aerospike.ErrUnreachable })
		}, false},
		{"a node restarted, empty and migrating", func(f *doorFixture) {
			f.migrating()
			f.node("aero-0", func(h *aerospike.NodeHealth) { h.Facts.Uptime = time.Second })
		}, false},
		{"the prober has not answered the look", func(f *doorFixture) {
			for name := range f.prober.health.Nodes {
				f.node(name, func(h *aerospike.NodeHealth) { h.ReadAt = doorNow })
			}
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newDoorFixture(t, testcluster.Build())
			f.edit(newImage)
			f.record("aero-2", ackov1alpha1.PodUpdate{Method: ackov1alpha1.UpdateEvict,
				Started: metav1.NewMicroTime(doorNow.Add(-time.Second))})
			for name := range f.prober.health.Nodes {
				f.node(name, func(h *aerospike.NodeHealth) { h.ReadAt = doorNow.Add(-100 * time.Millisecond) })
			}
			takeStep := func(st *clusterState) (string, error) {
				return f.r.takeStep(f.ctx, st, ackov1alpha1.UpdateEvict, []string{"aero-2"})
			}
			first, err := takeStep(f.observe())
			if err != nil || !strings.HasPrefix(first, lookingAgain) || f.prober.refreshed != 1 || !f.exists("aero-2") {
				t.Fatalf("first pass: %q, %v, %d readings asked for: want a last look asked for and nothing evicted",
					first, err, f.prober.refreshed)
			}
			why, err := f.afterLastLook(takeStep, func() { tc.between(f) })
			if err != nil {
				t.Fatal(err)
			}
			if acted := !f.exists("aero-2"); acted != tc.acts {
				t.Fatalf("evicted = %v, want %v (%s)", acted, tc.acts, why)
			}
		})
	}
}

// Point 6: while split, the operator takes no node down, inside the largest group or outside it; an
// operation the user asks for still restarts the pods it names, under the safety rule.
func TestNoTakeDownWhileSplit(t *testing.T) {
	f := newDoorFixture(t, testcluster.Build())
	f.edit(newImage)
	f.node("aero-2", func(h *aerospike.NodeHealth) { h.Facts.ClusterKey, h.Facts.ClusterSize = "ALONE", 1 })
	f.pod("aero-2", notReady)
	f.prober.health.SplitSince, f.prober.health.SplitSettled = doorNow.Add(-time.Minute), true
	st := f.observe()
	if !st.split {
		t.Fatal("not split")
	}
	// aero-2, alone, is the first to roll.
	if batch, hold := st.nextBatch(); len(batch) > 0 || !strings.Contains(hold, "check NoSplitBrain") {
		t.Fatalf("batch %v, hold %q: want the roll held by NoSplitBrain", podsOf(batch), hold)
	}
	for _, pod := range []string{"aero-2", "aero-0"} {
		if why, err := f.afterLastLook(func(st *clusterState) (string, error) {
			return operationActuator{r: f.r, st: st}.MayTakeDown(f.ctx, pod, false)
		}, nil); why != "" || err != nil {
			t.Fatalf("operation restarting %s while split: %q, %v; want it to go", pod, why, err)
		}
	}
	// Under the safety rule still: with aero-1 gone, no second node goes.
	f.must(f.c.Delete(f.ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: f.key.Namespace, Name: "aero-1"}}))
	if why, _ := (operationActuator{r: f.r, st: st}).MayTakeDown(f.ctx, "aero-2", false); !strings.Contains(why, "check SafetyRule") {
		t.Fatalf("operation restarting aero-2 with aero-1 gone: %q, want held by SafetyRule", why)
	}
}

// Point 12: an eviction that went out is finished only by a new pod: the old instance, still Ready in a
// cache that lags, does not clear the step.
func TestAnEvictionEndsOnlyWithANewPod(t *testing.T) {
	f := newDoorFixture(t, testcluster.Build())
	f.record("aero-2", ackov1alpha1.PodUpdate{Method: ackov1alpha1.UpdateEvict, Done: true,
		Started: metav1.NewMicroTime(doorNow.Add(-time.Second))})
	st := f.observe()
	why, err := f.r.followBack(f.ctx, st, "aero-2", st.cluster.Status.Pods["aero-2"].Update)
	if err != nil {
		t.Fatal(err)
	}
	if why == "" || f.cluster().Status.Pods["aero-2"].Update == nil {
		t.Fatalf("step cleared on the old instance (%q)", why)
	}
	f.must(f.c.Delete(f.ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: f.key.Namespace, Name: "aero-2"}}))
	f.addPod(f.observe().existingSets["aero"], "aero-2")
	st = f.observe()
	if why, err := f.r.followBack(f.ctx, st, "aero-2", st.cluster.Status.Pods["aero-2"].Update); why != "" || err != nil {
		t.Fatalf("new pod, Ready: %q, %v", why, err)
	}
	if u := f.cluster().Status.Pods["aero-2"].Update; u != nil {
		t.Fatalf("step not cleared: %+v", u)
	}
}

// A pod kept from Ready only by a sidecar whose readiness probe fails, while its gate is True and the
// readings show its node in the cluster, serves and holds its copies: it does not count as down for the
// safety rule and the Ready check (two such pods recreated from a spec with that sidecar would else hold
// the roll that fixes them for ever: model seeds 28, 34). Anything less than that still holds.
func TestSidecarNotReadyIsNotDown(t *testing.T) {
	sidecar := func(aerospikeReady bool, gate corev1.ConditionStatus) func(p *corev1.Pod) {
		return func(p *corev1.Pod) {
			p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionFalse},
				{Type: ackov1alpha1.PodConditionAerospikeReady, Status: gate}}
			p.Status.ContainerStatuses = []corev1.ContainerStatus{
				{Name: ackov1alpha1.AerospikeContainerName, Ready: aerospikeReady,
					State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}},
				{Name: "never-ready", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}
		}
	}
	for _, tc := range []struct {
		name  string
		setup func(f *doorFixture)
		held  string
	}{
		{"a sidecar not ready, the node in the cluster", func(f *doorFixture) { f.pod("aero-1", sidecar(true, corev1.ConditionTrue)) }, ""},
		{"the Aerospike container not ready", func(f *doorFixture) { f.pod("aero-1", sidecar(false, corev1.ConditionTrue)) }, "SafetyRule"},
		{"its gate False", func(f *doorFixture) { f.pod("aero-1", sidecar(true, corev1.ConditionFalse)) }, "SafetyRule"},
		{"its node silent", func(f *doorFixture) {
			f.pod("aero-1", sidecar(true, corev1.ConditionTrue))
			f.node("aero-1", func(h *aerospike.NodeHealth) { h.Err = aerospike.ErrUnreachable })
		}, "SafetyRule"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newDoorFixture(t, testcluster.Build(sized(3)))
			tc.setup(f)
			st := f.observe()
			if check, why := st.mayTakeDown([]string{"aero-2"}); check != tc.held {
				t.Fatalf("check %q (%s), want %q", check, why, tc.held)
			}
		})
	}
}

// A pod whose asd does not run (broken by its container state) holds no copy: taking it down takes no node
// down, whatever else is down. A scale-down of two pods a bad spec broke (a refused config on a scale-up)
// waited for ever on the safety rule, each counting the other (model seed 196). Taking down a pod that is
// only not Ready (a hung node keeps its data) still counts.
func TestTakingDownBrokenPodsTakesNoNodeDown(t *testing.T) {
	crashing := func(f *doorFixture, name string) {
		f.pod(name, func(p *corev1.Pod) {
			notReady(p)
			p.Status.ContainerStatuses[0].State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}}
		})
		delete(f.prober.health.Nodes, name) // no asd, no reading; the others form a smaller cluster
		f.prober.health.ExpectedSize = len(f.prober.health.Nodes)
		for n := range f.prober.health.Nodes {
			f.node(n, func(h *aerospike.NodeHealth) { h.Facts.ClusterSize = len(f.prober.health.Nodes) })
		}
	}
	notReadyPod := func(f *doorFixture, name string) { f.pod(name, notReady) }
	for _, tc := range []struct {
		name         string
		aero3, aero4 func(f *doorFixture, name string)
		held         string
	}{
		{"both leaving pods broken", crashing, crashing, ""},
		{"the pod taken down only not Ready", crashing, notReadyPod, "SafetyRule"},
		{"the other pod only not Ready, the one taken down broken", notReadyPod, crashing, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newDoorFixture(t, testcluster.Build(sized(5)))
			tc.aero3(f, "aero-3")
			tc.aero4(f, "aero-4")
			f.edit(sized(3))
			st := f.observe()
			if check, why := st.mayTakeDown([]string{"aero-4"}); check != tc.held {
				t.Fatalf("check %q (%s), want %q", check, why, tc.held)
			}
		})
	}
}

// Model seed 1549: two pods recorded leaving under replication-factor 3; the factor went back to 2
// before either left. Held by the safety rule (two down at once), the scale-down waited for ever; none
// gone yet, the leaves are decided again, one at a time.
func TestLeavesRecordedUnderALargerFactorAreDecidedAgain(t *testing.T) {
	f := newDoorFixture(t, testcluster.Build(sized(5)))
	f.edit(sized(3))
	for _, pod := range []string{"aero-3", "aero-4"} {
		f.record(pod, ackov1alpha1.PodUpdate{Method: ackov1alpha1.UpdateRemove,
			Started: metav1.NewMicroTime(doorNow.Add(-10 * time.Second))})
		f.pod(pod, notReady) // their gates held
	}
	f.budget(3)
	st := f.observe()
	if st.maxDown != 1 {
		t.Fatalf("maxDown %d, want 1 (replication-factor 2)", st.maxDown)
	}
	budget := st.maxDown
	replicas, err := f.r.plannedReplicas(f.ctx, st, st.existingSets["aero"], 3, &budget)
	if err != nil || replicas != 5 {
		t.Fatalf("replicas %d, %v; want 5 while decided again", replicas, err)
	}
	for _, pod := range []string{"aero-3", "aero-4"} {
		if u := f.cluster().Status.Pods[pod].Update; u != nil {
			t.Errorf("%s still recorded leaving: %+v", pod, u)
		}
	}
}

// Issue 39: a node that came back with the old replication-factor sticks the exchange; every node is then
// not Ready and cluster-stable errs everywhere, so a roll's checks hold every restart for good. The door
// lets exactly the way out through: restarting the node in no cluster while the others are one cluster;
// never a node in a cluster (it may hold the only copy of a partition), nor while another node is unheard.
func TestTheDoorEndsAStuckExchangeOnlyByTheNodeOutside(t *testing.T) {
	stuck := func(f *doorFixture) {
		f.migrating()
		for _, name := range []string{"aero-0", "aero-1", "aero-2"} {
			f.pod(name, notReady)
		}
		f.node("aero-2", func(h *aerospike.NodeHealth) {
			h.Facts.ClusterSize, h.Facts.ClusterKey, h.Facts.MigratePartitionsRemaining = 0, "0", 0
		})
	}
	for _, tc := range []struct {
		name  string
		kind  actKind
		pod   string
		after func(f *doorFixture)
		check string // "" when the act may go
	}{
		{"the roll's checks hold the way out", actEvict, "aero-2", nil, "check SafetyRule"},
		{"the node outside", actEndStuckExchange, "aero-2", nil, ""},
		{"a node holding data", actEndStuckExchange, "aero-1", nil, "check OutsideCluster"},
		{"another node unheard", actEndStuckExchange, "aero-2", func(f *doorFixture) {
			f.node("aero-0", func(h *aerospike.NodeHealth) { h.Err = aerospike.ErrUnreachable })
		}, "check OthersInOneCluster"},
		{"the others in two clusters", actEndStuckExchange, "aero-2", func(f *doorFixture) {
			f.node("aero-0", func(h *aerospike.NodeHealth) { h.Facts.ClusterKey, h.Facts.ClusterSize = "OTHER", 1 })
		}, "check OthersInOneCluster"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newDoorFixture(t, testcluster.Build())
			stuck(f)
			act := takeDown{what: "restart", kind: tc.kind, pods: []string{tc.pod}, decided: doorNow.Add(-time.Second)}
			why, err := f.afterLastLook(func(st *clusterState) (string, error) { v, err := f.r.mayActNow(f.ctx, st, act); return v.why, err },
				func() {
					if tc.after != nil {
						tc.after(f)
					}
				})
			if err != nil {
				t.Fatal(err)
			}
			if tc.check == "" && why != "" || tc.check != "" && !strings.Contains(why, tc.check) {
				t.Fatalf("the door says %q, want held by %q", why, tc.check)
			}
		})
	}
}

// Every wait of an act is the door's, named in its list, and comes before the pods are read again: a task
// running, an attempt not settled (unless this operator prepared it), the budget not counting the pods
// (not for an eviction, which asks it), an operation restarting a pod, a lost node split off. A wait is
// no hold; a check that holds is (RestartBlocked).
func TestTheDoorOwnsEveryWait(t *testing.T) {
	attempted := func(f *doorFixture) {
		f.record("aero-2", ackov1alpha1.PodUpdate{Method: ackov1alpha1.UpdateInPlace,
			Started: metav1.NewMicroTime(doorNow.Add(-time.Minute)), Attempted: ptr.To(metav1.NewMicroTime(doorNow.Add(-time.Second)))})
	}
	for _, tc := range []struct {
		name  string
		act   takeDown
		setup func(f *doorFixture)
		want  string
		held  bool
	}{
		{"a task runs", takeDown{kind: actRestartInPlace}, func(f *doorFixture) {
			ctx, cancel := context.WithCancel(f.ctx)
			f.t.Cleanup(cancel)
			go func() { _ = f.r.Tasks.Start(ctx) }()
			waitRunnerStarted(f.r.Tasks)
			f.r.Tasks.Run(tasks.Key{Cluster: f.key, Name: "live/aero-0"}, func(ctx context.Context) (string, error) {
				<-ctx.Done()
				return "", nil
			})
		}, "waiting for live/aero-0", false},
		{"an attempt not settled", takeDown{kind: actRestartInPlace}, attempted,
			"settling whether the last restart attempt went out", false},
		{"an attempt this operator prepared: the budget next", takeDown{kind: actRestartInPlace, prepared: true}, attempted,
			"waiting for pod aero-2 to report not Ready", false},
		{"a scale-down: the budget", takeDown{kind: actScaleDown}, nil, "waiting for pod aero-2 to report not Ready", false},
		{"a scale-down while an operation restarts a pod", takeDown{kind: actScaleDown}, func(f *doorFixture) {
			c := f.cluster()
			c.Status.OperationStatus = &ackov1alpha1.OperationStatus{ID: "op-1", Kind: ackov1alpha1.OperationWarmRestart,
				Phase: ackov1alpha1.OperationInProgress, CurrentPod: "aero-0"}
			f.must(f.c.Status().Update(f.ctx, c))
		}, "operation op-1 is restarting pod aero-0", false},
		{"a warm restart: the budget", takeDown{kind: actOperation, warm: true}, nil, "waiting for pod aero-2 to report not Ready", false},
		{"a pod restart asks the budget itself: the checks", takeDown{kind: actOperation}, (*doorFixture).migrating,
			"check ClusterStable", true},
		{"an eviction: the checks", takeDown{kind: actEvict}, (*doorFixture).migrating, "check ClusterStable", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newDoorFixture(t, testcluster.Build())
			if tc.setup != nil {
				tc.setup(f)
			}
			act := tc.act
			act.what, act.pods, act.decided = "the act", []string{"aero-2"}, doorNow.Add(-time.Second)
			v, err := f.r.mayActNow(f.ctx, f.observe(), act)
			if err != nil || !strings.Contains(v.why, tc.want) || v.held != tc.held {
				t.Fatalf("the door says %q (held %v, %v); want %q (held %v)", v.why, v.held, err, tc.want, tc.held)
			}
		})
	}
}

// A lost node last seen split off is kept by the door's NotSplitOff wait, before anything is read again.
func TestTheDoorKeepsASplitOffNode(t *testing.T) {
	f := newDoorFixture(t, localCluster(5, 2))
	f.onlyPodStatus("aero-4", func(ps *ackov1alpha1.PodStatus) { ps.SplitOff = &metav1.Time{Time: doorNow.Add(-time.Hour)} })
	v, err := f.r.mayActNow(f.ctx, f.observe(), takeDown{what: "giving up", kind: actGiveUp, pods: []string{"aero-4"},
		absent: []string{"aero-4"}, decided: doorNow.Add(-time.Second)})
	if err != nil || !strings.HasPrefix(v.why, "the volumes are kept: aero-4 (split off since") || v.held {
		t.Fatalf("the door says %q (held %v, %v)", v.why, v.held, err)
	}
}

// Model seed 66944: the roll recorded a step of aero-2 at replication-factor 3 (two may be down), the
// scale-down then recorded aero-4 leaving, and the factor went down to 2: at the door each counted the
// other as down, and neither went. A step not tried yet is decided again when it and the pods the operator
// holds down for its other steps exceed the budget; the scale-down's record stays.
func TestARollStepGivesWayWhenTheHeldPodsExceedTheBudget(t *testing.T) {
	f := newDoorFixture(t, testcluster.Build(sized(5)))
	f.edit(newImage)
	f.record("aero-2", ackov1alpha1.PodUpdate{Method: ackov1alpha1.UpdateEvict, Reason: ackov1alpha1.RestartReasonImageChanged,
		Started: metav1.NewMicroTime(doorNow)})
	st := f.observe()
	if fate := st.fateOf("aero-2", st.cluster.Status.Pods["aero-2"].Update); fate != stepPending || st.maxDown != 1 {
		t.Fatalf("aero-2's step is %v at maxDown %d, want pending (%d) at 1", fate, st.maxDown, stepPending)
	}
	if _, err := f.r.followUpdates(f.ctx, st); err != nil {
		t.Fatal(err)
	}
	if f.cluster().Status.Pods["aero-2"].Update == nil {
		t.Fatal("alone within the budget, aero-2's step was decided again")
	}
	f.record("aero-4", ackov1alpha1.PodUpdate{Method: ackov1alpha1.UpdateRemove, Started: metav1.NewMicroTime(doorNow)})
	if _, err := f.r.followUpdates(f.ctx, f.observe()); err != nil {
		t.Fatal(err)
	}
	c := f.cluster()
	if c.Status.Pods["aero-2"].Update != nil || c.Status.Pods["aero-4"].Update == nil {
		t.Fatalf("aero-2 %+v, aero-4 %+v: want aero-2's step decided again, aero-4's record kept",
			c.Status.Pods["aero-2"].Update, c.Status.Pods["aero-4"].Update)
	}
}

// Model seed 69975: a replication-factor change set live on a pod whose WarmRestart had been signalled
// and had not recorded the config it loaded yet; the operation then recorded that older config over the
// live one. The live change waits for the record.
func TestALiveFactorChangeWaitsForAWarmRestartsRecord(t *testing.T) {
	f := newDoorFixture(t, testcluster.Build(sized(3)))
	f.withConfigMaps()
	f.edit(replicationFactor(3))
	st := f.observe()
	st.outdated = st.findOutdated()
	if got := methods(st); got["aero-0"] != ackov1alpha1.UpdateLiveTogether {
		t.Fatalf("methods %v, want the factor live on every node together", got)
	}
	st.cluster.Status.OperationStatus = &ackov1alpha1.OperationStatus{ID: "op", Kind: ackov1alpha1.OperationWarmRestart,
		Phase: ackov1alpha1.OperationInProgress, CurrentPod: "aero-1", CurrentPodSignalled: true, CurrentPodConfigHash: "copied"}
	if batch, hold := st.nextBatch(); len(batch) > 0 || !strings.Contains(hold, "operation op records the config pod aero-1 restarted with") {
		t.Fatalf("batch %v, hold %q: want the live change held for the operation's record", podsOf(batch), hold)
	}
	st.cluster.Status.OperationStatus.CurrentPodConfigHash = "" // recorded
	if batch, hold := st.nextBatch(); len(batch) != 3 || hold != "" {
		t.Fatalf("batch %v, hold %q: want every pod together once the record is made", podsOf(batch), hold)
	}
}

// Model hole 30: a pod created while the ConfigMap had taken a new config and its StatefulSet's template
// not yet copied the new file under the old annotation. Its report says which it copied: a pod that has
// recorded nothing since it was created records that one; a pod that recorded a later config keeps it.
func TestAPodRecordsTheConfigItReportsCopying(t *testing.T) {
	f := newDoorFixture(t, testcluster.Build(sized(3)))
	report := func(hash string) func(p *corev1.Pod) {
		return func(p *corev1.Pod) {
			p.Annotations[ackov1alpha1.AnnotationReplicationFactor] = "2"
			p.Status.InitContainerStatuses = []corev1.ContainerStatus{{Name: resources.ConfigReportContainer,
				State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
					Message: "namespace test {\n}\n# acko.io/config-hash " + hash + "\n"}}}}
		}
	}
	f.pod("aero-1", report("copied"))
	f.pod("aero-2", report("copied"))
	f.pod("aero-2", func(p *corev1.Pod) { delete(p.Annotations, ackov1alpha1.AnnotationReplicationFactor) }) // recorded since
	template := f.observe().pods["aero-0"].Annotations[ackov1alpha1.AnnotationConfigHash]

	st := f.observe()
	if got := st.pods["aero-1"].Annotations[ackov1alpha1.AnnotationConfigHash]; got != "copied" {
		t.Fatalf("aero-1 records %q, want the config it copied", got)
	}
	pod := &corev1.Pod{}
	f.must(f.c.Get(f.ctx, client.ObjectKey{Namespace: f.key.Namespace, Name: "aero-1"}, pod))
	if pod.Annotations[ackov1alpha1.AnnotationConfigHash] != "copied" || pod.Annotations[ackov1alpha1.AnnotationReplicationFactor] != "" {
		t.Fatalf("aero-1's annotations in the API server: %v", pod.Annotations)
	}
	if got := st.pods["aero-2"].Annotations[ackov1alpha1.AnnotationConfigHash]; got != template {
		t.Fatalf("aero-2 records %q, want its later record %q kept", got, template)
	}
	if reason, outdated := resources.RestartReason(st.pods["aero-1"], st.sets["aero"]); !outdated {
		t.Fatalf("aero-1 runs a config its template does not say, yet it is not outdated (%s)", reason)
	}
}

// Model seed 73902: a replication-factor change to 2 ran while the user set 3 again; its steps were
// decided again for the spec's config, and its success recorded that config on the pods, whose nodes ran
// 2. A success records what the change applied.
func TestAFactorChangeRecordsWhatItApplied(t *testing.T) {
	f, st := factorDown(t, 3)
	names := podsOf(st.outdated)
	applied := st.desiredConfigHash(st.pods["aero-0"])
	if _, err := f.r.applyTogether(f.ctx, st, names); err != nil {
		t.Fatal(err)
	}
	for _, name := range names {
		f.record(name, ackov1alpha1.PodUpdate{Method: ackov1alpha1.UpdateLiveTogether, ConfigHash: "the spec's now"})
	}
	st = f.observe()
	st.results = map[string]tasks.Result{togetherTask: {Note: "replication-factor 2 on 3 nodes"}}
	if _, err := f.r.applyTogether(f.ctx, st, names); err != nil {
		t.Fatal(err)
	}
	for _, name := range names {
		pod := &corev1.Pod{}
		f.must(f.c.Get(f.ctx, client.ObjectKey{Namespace: f.key.Namespace, Name: name}, pod))
		if got := pod.Annotations[ackov1alpha1.AnnotationConfigHash]; got != applied {
			t.Fatalf("%s records %q, want the config applied %q", name, got, applied)
		}
	}
}
