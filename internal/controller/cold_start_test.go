package controller

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
}

func (f *fakeLogs) Tail(_ context.Context, pod *corev1.Pod, container string, _ int64) ([]string, error) {
	f.reads++
	if container != ackov1alpha1.AerospikeContainerName {
		return nil, fmt.Errorf("container %s", container)
	}
	return f.lines[pod.Name], nil
}

// A pod whose asd reads its device back: its log's progress goes to status and to the readiness gate,
// the wait's deadline counts from the last progress, and a log that stops moving keeps that time. A node
// that answers has no cold start, and its log is not read; nor is any log of a cluster of memory
// namespaces.
func TestColdStartProgress(t *testing.T) {
	device := testcluster.Build(testcluster.WithVolumes(testcluster.Volume("data", "/dev/xvdb", "10Gi", "Block")))
	device.Spec.AerospikeConfig.Value["namespaces"] = []any{map[string]any{"name": "test",
		"storage-engine": map[string]any{"type": "device", "devices": []any{"/dev/xvdb"}}}}
	t0 := time.Date(2026, 12, 3, 8, 0, 0, 0, time.UTC)
	clk := testingclock.NewFakePassiveClock(t0)
	logs := &fakeLogs{lines: map[string][]string{
		"c-0": {"INFO (as): service ready: soon there will be cake!"},
		"c-1": {"INFO (namespace): {test} beginning cold start", "INFO (drv_ssd): {test} loaded: objects 1000 device-pcts (10)"},
	}}
	r := &AerospikeClusterReconciler{Logs: logs, Clock: clk}
	observe := func(c *ackov1alpha1.AerospikeCluster) *clusterState {
		now := clk.Now()
		st := newClusterState(c, now)
		st.members, st.healthOK = []string{"c-0", "c-1"}, true
		st.pods = map[string]*corev1.Pod{"c-0": {ObjectMeta: metav1.ObjectMeta{Name: "c-0"}}, "c-1": {ObjectMeta: metav1.ObjectMeta{Name: "c-1"}}}
		st.health = aerospike.ClusterHealth{ReadAt: now, Nodes: map[string]aerospike.NodeHealth{
			"c-0": {ReadAt: now, Facts: aerospike.NodeFacts{ClusterSize: 1}},
			"c-1": {ReadAt: now, Err: fmt.Errorf("%w: connection refused", aerospike.ErrUnreachable)}}}
		r.observeColdStarts(context.Background(), st)
		st.summarizePods(&c.Status)
		return st
	}

	st := observe(device)
	dl := device.Status.Pods["c-1"].DataLoading
	if dl == nil || dl.Message != "loading data: test 1000 records, 10 of 100 % of its devices read" || !dl.Progressed.Time.Equal(t0) {
		t.Fatalf("dataLoading %+v", dl)
	}
	if device.Status.Pods["c-0"].DataLoading != nil || logs.reads != 1 {
		t.Fatalf("the node that answers: dataLoading %+v, logs read %d times (want only c-1's)", device.Status.Pods["c-0"].DataLoading, logs.reads)
	}
	if ready, reason, msg := st.nodeGate("c-1"); ready || reason != gateLoadingData || !strings.HasPrefix(msg, "loading data: ") {
		t.Fatalf("gate %v %s %q", ready, reason, msg)
	}
	if got := st.progressSince("c-1", t0.Add(-time.Hour)); !got.Equal(t0) {
		t.Fatalf("progressSince %s, want the last progress %s", got, t0)
	}

	clk.SetTime(t0.Add(time.Minute)) // the log did not move
	observe(device)
	if got := device.Status.Pods["c-1"].DataLoading.Progressed.Time; !got.Equal(t0) {
		t.Fatalf("no progress, yet Progressed moved to %s", got)
	}
	logs.lines["c-1"] = append(logs.lines["c-1"], "INFO (drv_ssd): {test} loaded: objects 2000 device-pcts (20)")
	clk.SetTime(t0.Add(2 * time.Minute))
	st = observe(device)
	if got := device.Status.Pods["c-1"].DataLoading; got.Records != 2000 || !got.Progressed.Time.Equal(t0.Add(2*time.Minute)) {
		t.Fatalf("after progress: %+v", got)
	}
	if got := st.progressSince("c-1", t0.Add(3*time.Minute)); !got.Equal(t0.Add(3 * time.Minute)) {
		t.Fatalf("a wait that began after the last progress counts from its start, got %s", got)
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
	if logs.reads != 0 || st.loading != nil {
		t.Fatalf("%d log reads, loading %+v", logs.reads, st.loading)
	}
}
