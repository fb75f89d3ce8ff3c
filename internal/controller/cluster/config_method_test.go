package cluster

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ackov1alpha1 "github.com/acko-io/acko/api/v1alpha1"
	"github.com/acko-io/acko/internal/config"
	"github.com/acko-io/acko/test/testcluster"
)

// A config change is tried live only when the planner says the node takes all of it live; the file a
// pod runs is known from the rack's ConfigMap, which keeps it while a pod runs it.

// withConfigMaps creates the ConfigMaps the cluster's pods were started from, as applyChildren does.
func (f *doorFixture) withConfigMaps() {
	st := f.observe()
	for _, obj := range st.objects {
		if cm, ok := obj.(*corev1.ConfigMap); ok {
			cm.OwnerReferences = []metav1.OwnerReference{{APIVersion: ackov1alpha1.GroupVersion.String(),
				Kind: "AerospikeCluster", Name: f.key.Name, UID: "uid-1", Controller: ptr.To(true)}}
			f.must(f.c.Create(f.ctx, cm))
		}
	}
}

func methods(st *clusterState) map[string]ackov1alpha1.PodUpdateMethod {
	out := map[string]ackov1alpha1.PodUpdateMethod{}
	for _, o := range st.outdated {
		out[o.pod.Name] = o.method
	}
	return out
}

func TestConfigMethodFollowsThePlan(t *testing.T) {
	three := func(c *ackov1alpha1.AerospikeCluster) {
		replicationFactor(3)(c)
		c.Spec.RollingUpdateBatchSize = ptr.To(int32(2))
	}
	for _, tc := range []struct {
		name       string
		change     []func(*ackov1alpha1.AerospikeCluster)
		configMaps bool
		noLive     bool
		want       ackov1alpha1.PodUpdateMethod
	}{
		{"a dynamic change", []func(*ackov1alpha1.AerospikeCluster){testcluster.WithService("proto-fd-max", int64(20000))}, true, false,
			ackov1alpha1.UpdateLive},
		{"a static change", []func(*ackov1alpha1.AerospikeCluster){testcluster.WithService("work-directory", "/opt/aerospike/other")},
			true, false, ackov1alpha1.UpdateInPlace},
		{"a static and a dynamic change", []func(*ackov1alpha1.AerospikeCluster){testcluster.WithService("proto-fd-max", int64(20000)),
			testcluster.WithService("work-directory", "/opt/aerospike/other")}, true, false, ackov1alpha1.UpdateInPlace},
		{"a dynamic change with no LiveConfigurer", []func(*ackov1alpha1.AerospikeCluster){
			testcluster.WithService("proto-fd-max", int64(20000))}, true, true, ackov1alpha1.UpdateInPlace},
		{"a static change to pods whose file is not known: the applier decides", []func(*ackov1alpha1.AerospikeCluster){
			testcluster.WithService("work-directory", "/opt/aerospike/other")}, false, false, ackov1alpha1.UpdateLive},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newDoorFixture(t, testcluster.Build(sized(3), three))
			if tc.configMaps {
				f.withConfigMaps()
			}
			running := f.observe().desiredConfigHash(f.observe().pods["aero-0"])
			for _, change := range tc.change {
				f.edit(change)
			}
			st := f.observe()
			st.noLive = tc.noLive
			st.outdated = st.findOutdated()
			got := methods(st)
			if len(got) != 3 {
				t.Fatalf("outdated %v", got)
			}
			for pod, m := range got {
				if m != tc.want {
					t.Errorf("%s: %s, want %s", pod, m, tc.want)
				}
				checkChangeHanded(t, st, pod, running, tc.configMaps, m, tc.noLive)
			}
			if batch, hold := st.nextBatch(); hold != "" || len(batch) != 1 {
				t.Errorf("a config change goes one pod at a time, as before: batch %d, hold %q", len(batch), hold)
			}
			cm := configMapOf(t, st)
			if kept, ok := cm.Data[runningKey(running)]; tc.configMaps != ok || ok && config.Hash(kept) != running {
				t.Errorf("the ConfigMap keeps %v the file the pods run (%s): %v", tc.configMaps, running, keys(cm.Data))
			}
		})
	}
}

// checkChangeHanded: what the applier is handed for the pod is the plan its method was chosen by (live
// exactly when chosen live, unless live changes are off), from the config it runs, or none to make its
// own when that file is not known.
func checkChangeHanded(t *testing.T, st *clusterState, pod, running string, known bool,
	chosen ackov1alpha1.PodUpdateMethod, noLive bool) {
	t.Helper()
	desired := st.desiredConfigHash(st.pods[pod])
	change := st.liveChange(st.pods[pod], desired)
	if change.From != running || change.To != desired || (change.Plan != nil) != known {
		t.Errorf("%s: the change handed to the applier is %s → %s, planned %v", pod, change.From, change.To,
			change.Plan != nil)
	}
	if change.Plan != nil && !noLive && change.Plan.Live() != (chosen == ackov1alpha1.UpdateLive) {
		t.Errorf("%s: chosen %s, but the plan handed to the applier is %+v", pod, chosen, *change.Plan)
	}
}

func configMapOf(t *testing.T, st *clusterState) *corev1.ConfigMap {
	t.Helper()
	for _, obj := range st.objects {
		if cm, ok := obj.(*corev1.ConfigMap); ok {
			return cm
		}
	}
	t.Fatal("no ConfigMap rendered")
	return nil
}

func keys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

// Once no pod runs a file, the ConfigMap no longer keeps it.
func TestRunningConfigDroppedOnceNoPodRunsIt(t *testing.T) {
	f := newDoorFixture(t, testcluster.Build(sized(3)))
	f.withConfigMaps()
	f.edit(testcluster.WithService("proto-fd-max", int64(20000)))
	st := f.observe()
	cm := configMapOf(t, st)
	f.must(f.c.Update(f.ctx, cm)) // as applyChildren writes it
	desired := st.desiredConfigHash(st.pods["aero-0"])
	for _, name := range []string{"aero-0", "aero-1", "aero-2"} {
		f.pod(name, func(p *corev1.Pod) { p.Annotations[ackov1alpha1.AnnotationConfigHash] = desired })
	}
	if data := configMapOf(t, f.observe()).Data; slices.ContainsFunc(keys(data), func(k string) bool {
		return strings.HasPrefix(k, runningPrefix)
	}) {
		t.Errorf("every pod runs the desired file, the ConfigMap still keeps %v", keys(data))
	}
}

// fakeLimits answers one open-file limit and counts the reads.
type fakeLimits struct {
	limit int64
	reads atomic.Int32
}

func (l *fakeLimits) OpenFileLimit(context.Context, *corev1.Pod) (int64, error) {
	l.reads.Add(1)
	return l.limit, nil
}

// proto-fd-max above the pod's open-file limit stops the rollout before any pod is touched, with the
// limit named; at or under it, the batch goes.
func TestProtoFdMaxAboveTheOpenFileLimitStopsBeforeAnyRestart(t *testing.T) {
	for _, tc := range []struct {
		value int64
		stuck bool
	}{{30000, true}, {20000, false}} {
		f := newDoorFixture(t, testcluster.Build(sized(3)))
		limits := &fakeLimits{limit: 20000}
		f.r.Limits = limits
		ctx, cancel := context.WithCancel(f.ctx)
		go func() { _ = f.r.Tasks.Start(ctx) }()
		waitRunnerStarted(f.r.Tasks) // a task run before Start has set its context fails at once
		t.Cleanup(cancel)
		f.withConfigMaps()
		f.edit(testcluster.WithService("proto-fd-max", tc.value))
		st := f.observe()
		batch, _ := st.nextBatch()
		if why := f.r.checkOpenFileLimits(st, batch); !strings.HasPrefix(why, "reading the open-file limit of pod ") {
			t.Fatalf("before the limit is read: %q", why)
		}
		var results map[string]outcome
		for deadline := time.Now().Add(5 * time.Second); results == nil && time.Now().Before(deadline); {
			time.Sleep(10 * time.Millisecond)
			results = f.r.Tasks.Take(f.key)
		}
		st = f.observe()
		st.results = results
		why := f.r.checkOpenFileLimits(st, batch)
		if tc.stuck {
			want := "pod aero-2 runs under an open-file limit of 20000"
			if !strings.HasPrefix(why, want) || st.stuck != why || !strings.Contains(why, "can't set proto-fd-max 30000 > system limit 20000") {
				t.Errorf("proto-fd-max %d: why %q, stuck %q", tc.value, why, st.stuck)
			}
		} else if why != "" || st.stuck != "" {
			t.Errorf("proto-fd-max %d under the limit: why %q, stuck %q", tc.value, why, st.stuck)
		}
		// read once per pod
		st = f.observe()
		_ = f.r.checkOpenFileLimits(st, batch)
		if n := limits.reads.Load(); n != 1 {
			t.Errorf("the limit was read %d times", n)
		}
	}
}

// The open-file limits read hold only the pods that exist: a pod's entry goes once it is gone, a
// cluster's with it.
func TestOpenFileLimitsKeepOnlyThePodsThatExist(t *testing.T) {
	var l openFileLimits
	key, other := types.NamespacedName{Namespace: "ns", Name: "aero"}, types.NamespacedName{Namespace: "ns", Name: "b"}
	pod := func(uid string) *corev1.Pod { return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{UID: types.UID(uid)}} }
	l.keep(key, "u0", 1000, map[string]*corev1.Pod{"aero-0": pod("u0"), "aero-1": pod("u1")})
	l.keep(key, "u1", 2000, map[string]*corev1.Pod{"aero-0": pod("u0"), "aero-1": pod("u1")})
	l.keep(other, "v0", 3000, map[string]*corev1.Pod{"b-0": pod("v0")})
	if limit, ok := l.get(key, "u1"); !ok || limit != 2000 {
		t.Errorf("aero-1's limit = %d, %v; want 2000", limit, ok)
	}
	// aero-0 was recreated (new UID u2): reading its limit drops the old instance's.
	l.keep(key, "u2", 4000, map[string]*corev1.Pod{"aero-0": pod("u2"), "aero-1": pod("u1")})
	if _, ok := l.get(key, "u0"); ok {
		t.Error("the limit of a pod that is gone is kept")
	}
	if limit, ok := l.get(key, "u1"); !ok || limit != 2000 {
		t.Errorf("aero-1's limit = %d, %v after another pod's read; want 2000", limit, ok)
	}
	l.forget(key)
	if _, ok := l.get(key, "u2"); ok {
		t.Error("a deleted cluster's limits are kept")
	}
	if limit, ok := l.get(other, "v0"); !ok || limit != 3000 {
		t.Errorf("another cluster's limit = %d, %v; want 3000", limit, ok)
	}
}

// Issue 24: each pod's own file names its node id; a pod that leaves in a scale-down keeps its file
// while its StatefulSet may create it again (a drain or a delete first; model seed 51575), and loses it
// once it is gone and its StatefulSet asks for it no more. The status shows the node id each node reports.
func TestEveryExistingPodHasItsFile(t *testing.T) {
	f := newDoorFixture(t, testcluster.Build(sized(3)))
	f.edit(sized(2))
	st := f.observe()
	data := configMapOf(t, st).Data
	for name, id := range map[string]string{"aero-0": "A00000", "aero-1": "A00001", "aero-2": "A00002"} {
		if want := "\tnode-id " + id + "\n"; !strings.Contains(data[config.PodFileKey(name, "")], want) {
			t.Errorf("%s's file lacks %q: %v", name, want, keys(data))
		}
	}
	f.must(f.c.Delete(f.ctx, st.pods["aero-2"]))
	if data := configMapOf(t, f.observe()).Data; data[config.PodFileKey("aero-2", "")] == "" {
		t.Errorf("the file of a pod its StatefulSet recreates is dropped: %v", keys(data))
	}
	sts := &appsv1.StatefulSet{}
	f.must(f.c.Get(f.ctx, client.ObjectKey{Namespace: f.key.Namespace, Name: "aero"}, sts))
	sts.Spec.Replicas = ptr.To(int32(2))
	f.must(f.c.Update(f.ctx, sts))
	if data := configMapOf(t, f.observe()).Data; data[config.PodFileKey("aero-2", "")] != "" {
		t.Errorf("the file of a pod neither desired nor existing nor asked for is kept: %v", keys(data))
	}
	s := st.cluster.Status.DeepCopy()
	st.summarizePods(s)
	if got := s.Pods["aero-1"].NodeID; got != "BB9aero-1" {
		t.Errorf("status.pods[aero-1].nodeID = %q, want what its node reports", got)
	}
}

// A file per pod: a config too large for one ConfigMap once per pod (here 3500 sets) is refused with the
// way out, not retried against the API server's "too long".
func TestAConfigTooLargeForItsConfigMapIsRefused(t *testing.T) {
	f := newDoorFixture(t, testcluster.Build(sized(3)))
	withSets := func(n int) *ackov1alpha1.AerospikeCluster {
		c := testcluster.Build(sized(8))
		sets := make([]any, n)
		for i := range sets {
			sets[i] = map[string]any{"name": fmt.Sprintf("set%04d", i), "default-ttl": "1d"}
		}
		c.Spec.AerospikeConfig.Value["namespaces"].([]any)[0].(map[string]any)["sets"] = sets
		return c
	}
	st := newClusterState(withSets(3500), doorNow)
	stop, err := f.r.renderChildren(f.ctx, st)
	if err != nil || !stop || !strings.Contains(st.invalid, "more than the 1048576 bytes Kubernetes allows") {
		t.Fatalf("stop %v, err %v, invalid %q", stop, err, st.invalid)
	}
	st = newClusterState(withSets(1000), doorNow)
	if stop, err := f.r.renderChildren(f.ctx, st); err != nil || stop {
		t.Fatalf("1000 sets: stop %v, err %v, invalid %q", stop, err, st.invalid)
	}
}

// A file the pods run is dropped from the ConfigMap only when the API server says no pod records it: the
// cache may lag a record made a moment ago (model seed 50724: the pod's file was unknown ever after).
func TestRunningFileKeptWhileTheCacheLags(t *testing.T) {
	f := newDoorFixture(t, testcluster.Build(sized(3)))
	f.withConfigMaps()
	running := f.observe().desiredConfigHash(f.observe().pods["aero-0"])
	f.edit(testcluster.WithService("proto-fd-max", int64(20000)))
	st := f.observe()
	desired := st.desiredConfigHash(st.pods["aero-0"])
	for name, pod := range st.pods { // the cache says every pod records the desired file already
		stale := pod.DeepCopy()
		stale.Annotations[ackov1alpha1.AnnotationConfigHash] = desired
		st.pods[name] = stale
	}
	cm := configMapOf(t, st).DeepCopy()
	delete(cm.Data, runningKey(running))
	if err := f.r.keepRunningConfigs(f.ctx, st, cm, 0); err != nil {
		t.Fatal(err)
	}
	if kept, ok := cm.Data[runningKey(running)]; !ok || config.Hash(kept) != running {
		t.Fatalf("the file the pods run (%s) was dropped on a stale cache: %v", running, keys(cm.Data))
	}
}
