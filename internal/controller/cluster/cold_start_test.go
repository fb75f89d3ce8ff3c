package cluster

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	testingclock "k8s.io/utils/clock/testing"

	ackov1alpha1 "github.com/acko-io/acko/api/v1alpha1"
	"github.com/acko-io/acko/internal/aerospike"
	"github.com/acko-io/acko/test/testcluster"
)

// fakeLogs serves each pod's log lines; reads counts the reads.
type fakeLogs struct {
	lines map[string][]string
	reads int
	fail  bool // every read fails
}

func (f *fakeLogs) Tail(ctx context.Context, pod *corev1.Pod, container string, _ int64) ([]string, error) {
	f.reads++
	if _, bounded := ctx.Deadline(); !bounded {
		return nil, fmt.Errorf("a log read without a deadline can hold the reconcile")
	}
	if container != ackov1alpha1.AerospikeContainerName || f.fail {
		return nil, fmt.Errorf("container %s: cannot read", container)
	}
	return f.lines[pod.Name], nil
}

// coldScene is a device-backed cluster of pods c-0 (answers) and c-1 (its asd reads its device back
// until answering), observed by the cold start reading at the fake clock's time.
type coldScene struct {
	r                 *AerospikeClusterReconciler
	clk               *testingclock.FakePassiveClock
	logs              *fakeLogs
	c                 *ackov1alpha1.AerospikeCluster
	answering, ready1 bool
}

var coldT0 = time.Date(2026, 12, 3, 8, 0, 0, 0, time.UTC)

func newColdScene() *coldScene {
	c := testcluster.Build(testcluster.WithVolumes(testcluster.Volume("data", "/dev/xvdb", "10Gi", "Block")))
	c.Spec.AerospikeConfig.Value["namespaces"] = []any{map[string]any{"name": "test",
		"storage-engine": map[string]any{"type": "device", "devices": []any{"/dev/xvdb"}}}}
	logs := &fakeLogs{lines: map[string][]string{
		"c-0": {"INFO (as): service ready: soon there will be cake!"},
		"c-1": {"INFO (namespace): {test} beginning cold start", "INFO (drv_ssd): {test} loaded: objects 1000 device-pcts (10)"},
	}}
	clk := testingclock.NewFakePassiveClock(coldT0)
	return &coldScene{r: &AerospikeClusterReconciler{Logs: logs, Clock: clk}, clk: clk, logs: logs, c: c}
}

// observe runs the reading at the clock's time and records it in the cluster's status.
func (s *coldScene) observe(after time.Duration) *clusterState {
	s.clk.SetTime(coldT0.Add(after))
	now := s.clk.Now()
	st := newClusterState(s.c, now)
	st.members, st.healthOK = []string{"c-0", "c-1"}, true
	c1 := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "c-1"}}
	if s.ready1 {
		c1.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
	}
	st.pods = map[string]*corev1.Pod{"c-0": {ObjectMeta: metav1.ObjectMeta{Name: "c-0"}}, "c-1": c1}
	c1Health := aerospike.NodeHealth{ReadAt: now, Err: fmt.Errorf("%w: connection refused", aerospike.ErrUnreachable)}
	if s.answering {
		c1Health = aerospike.NodeHealth{ReadAt: now, Facts: aerospike.NodeFacts{ClusterSize: 1}}
	}
	st.health = aerospike.ClusterHealth{ReadAt: now, Nodes: map[string]aerospike.NodeHealth{
		"c-0": {ReadAt: now, Facts: aerospike.NodeFacts{ClusterSize: 1}}, "c-1": c1Health}}
	s.r.observeColdStarts(context.Background(), st)
	st.summarizePods(&s.c.Status)
	return st
}

func (s *coldScene) loading() *ackov1alpha1.DataLoading { return s.c.Status.Pods["c-1"].DataLoading }

// A pod whose asd reads its device back: its log's progress goes to status and to the readiness gate,
// the wait's deadline counts from the last progress, and a log that stops moving keeps that time. A node
// that answers has no cold start, and its log is not read.
func TestColdStartProgress(t *testing.T) {
	s := newColdScene()
	st := s.observe(0)
	if dl := s.loading(); dl == nil || dl.Message != "loading data: test 1000 records, 10 of 100 % of its devices read" ||
		!dl.Progressed.Time.Equal(coldT0) {
		t.Fatalf("dataLoading %+v", dl)
	}
	if s.c.Status.Pods["c-0"].DataLoading != nil || s.logs.reads != 1 {
		t.Fatalf("the node that answers: dataLoading %+v, logs read %d times (want only c-1's)", s.c.Status.Pods["c-0"].DataLoading, s.logs.reads)
	}
	if ready, reason, msg := st.nodeGate("c-1"); ready || reason != gateLoadingData || !strings.HasPrefix(msg, "loading data: ") {
		t.Fatalf("gate %v %s %q", ready, reason, msg)
	}
	if got := st.progressSince("c-1", coldT0.Add(-time.Hour)); !got.Equal(coldT0) {
		t.Fatalf("progressSince %s, want the last progress %s", got, coldT0)
	}
	s.observe(time.Minute) // the log did not move
	if got := s.loading().Progressed.Time; !got.Equal(coldT0) {
		t.Fatalf("no progress, yet Progressed moved to %s", got)
	}
	s.logs.lines["c-1"] = append(s.logs.lines["c-1"], "INFO (drv_ssd): {test} loaded: objects 2000 device-pcts (20)")
	st = s.observe(2 * time.Minute)
	if got := s.loading(); got.Records != 2000 || !got.Progressed.Time.Equal(coldT0.Add(2*time.Minute)) {
		t.Fatalf("after progress: %+v", got)
	}
	if got := st.progressSince("c-1", coldT0.Add(3*time.Minute)); !got.Equal(coldT0.Add(3 * time.Minute)) {
		t.Fatalf("a wait that began after the last progress counts from its start, got %s", got)
	}
}

// The log says the load ended while the readings still show the node silent (found in CI: the roll went
// RolloutStuck in that moment, its deadline counted from the restart again): the end is progress.
func TestColdStartEndSeenInTheLogFirst(t *testing.T) {
	s := newColdScene()
	s.observe(0)
	s.logs.lines["c-1"] = append(s.logs.lines["c-1"], "INFO (drv_ssd): {test} read complete: UNIQUE 1300 records",
		"INFO (as): service ready: soon there will be cake!")
	st := s.observe(time.Minute)
	if got := s.loading(); got == nil || got.Message != dataLoaded || !got.Progressed.Time.Equal(coldT0.Add(time.Minute)) {
		t.Fatalf("after the load, before the node answers: %+v", got)
	}
	if got := st.progressSince("c-1", coldT0); !got.Equal(coldT0.Add(time.Minute)) {
		t.Fatalf("progressSince %s, want the load's end", got)
	}
}

// A log that cannot be read (found in CI, under load) keeps the progress last read: dropping it made
// the deadline count from the restart again.
func TestColdStartKeptWhenTheLogCannotBeRead(t *testing.T) {
	s := newColdScene()
	s.observe(0)
	s.logs.fail = true
	st := s.observe(30 * time.Second)
	if dl := s.loading(); dl == nil || !dl.Progressed.Time.Equal(coldT0) {
		t.Fatalf("dataLoading %+v", dl)
	}
	if got := st.progressSince("c-1", coldT0.Add(-time.Minute)); !got.Equal(coldT0) {
		t.Fatalf("progressSince %s, want the progress last read %s", got, coldT0)
	}
}

// The load ended (found by the e2e suite: the roll was stuck the moment the node answered, its deadline
// counted from the restart again): the end is progress, kept until the pod is Ready.
func TestColdStartEndIsProgress(t *testing.T) {
	s := newColdScene()
	s.observe(0)
	s.answering = true
	st := s.observe(4 * time.Minute)
	if got := s.loading(); got == nil || got.Message != dataLoaded || !got.Progressed.Time.Equal(coldT0.Add(4*time.Minute)) {
		t.Fatalf("after the load: %+v", got)
	}
	if got := st.progressSince("c-1", coldT0); !got.Equal(coldT0.Add(4 * time.Minute)) {
		t.Fatalf("progressSince %s, want the load's end", got)
	}
	if ready, reason, _ := st.nodeGate("c-1"); reason == gateLoadingData {
		t.Fatalf("a node that answers is not loading: gate %v %s", ready, reason)
	}
	s.observe(5 * time.Minute)
	if got := s.loading().Progressed.Time; !got.Equal(coldT0.Add(4 * time.Minute)) {
		t.Fatalf("rejoining is no further progress, yet Progressed is %s", got)
	}
	s.ready1 = true
	s.observe(6 * time.Minute)
	if got := s.loading(); got != nil {
		t.Fatalf("the pod is Ready: dataLoading %+v", got)
	}
}

// A cluster of memory namespaces has nothing to read back: no log is read.
func TestNoColdStartWithoutPersistentNamespaces(t *testing.T) {
	logs := &fakeLogs{lines: map[string][]string{"c-1": {"INFO (namespace): {test} beginning cold start"}}}
	r := &AerospikeClusterReconciler{Logs: logs}
	memory := testcluster.Build()
	st := newClusterState(memory, time.Now())
	st.members, st.healthOK = []string{"c-1"}, true
	st.pods = map[string]*corev1.Pod{"c-1": {ObjectMeta: metav1.ObjectMeta{Name: "c-1"}}}
	r.observeColdStarts(context.Background(), st)
	if logs.reads != 0 || len(st.loading) != 0 {
		t.Fatalf("%d log reads, loading %+v", logs.reads, st.loading)
	}
}
