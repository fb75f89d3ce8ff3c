package kubectlacko

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	ackov1alpha1 "github.com/acko-io/acko/api/v1alpha1"
	"github.com/acko-io/acko/test/testcluster"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// fixedNow is the clock of every rendering test.
var fixedNow = time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC)

func ago(d time.Duration) metav1.Time { return metav1.NewTime(fixedNow.Add(-d)) }

func agoPtr(d time.Duration) *metav1.Time {
	t := ago(d)
	return &t
}

// golden compares got with testdata/<name>.golden; -update rewrites the file.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (go test -update writes it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("output differs from %s (go test -update rewrites it)\n--- got\n%s\n--- want\n%s", path, got, want)
	}
}

func condition(typ string, status metav1.ConditionStatus, reason, message string, gen int64, since time.Duration) metav1.Condition {
	return metav1.Condition{Type: typ, Status: status, Reason: reason, Message: message, ObservedGeneration: gen,
		LastTransitionTime: ago(since)}
}

// runningCluster is a 3-node cluster after a completed WarmRestart.
func runningCluster() *ackov1alpha1.AerospikeCluster { return runningClusterNamed("aerospike-3node") }

func runningClusterNamed(name string) *ackov1alpha1.AerospikeCluster {
	c := testcluster.New("aerospike", name, 3)
	c.UID, c.Generation, c.CreationTimestamp = "uid-1", 4, ago(2*time.Hour)
	c.Status = ackov1alpha1.AerospikeClusterStatus{
		Phase: ackov1alpha1.PhaseRunning, ObservedGeneration: 4, Size: 3, ReadyPods: 3,
		Conditions: []metav1.Condition{
			condition(ackov1alpha1.ConditionReady, metav1.ConditionTrue, ackov1alpha1.ReasonClusterReady,
				"All 3 pods are Ready and the Aerospike cluster is stable", 4, 5*time.Minute),
			condition(ackov1alpha1.ConditionReconciling, metav1.ConditionFalse, ackov1alpha1.ReasonUpToDate,
				"The cluster matches its spec", 4, 5*time.Minute),
		},
		Pods: map[string]ackov1alpha1.PodStatus{},
		OperationStatus: &ackov1alpha1.OperationStatus{
			ID: "261125-094500-k2x9qa", Kind: ackov1alpha1.OperationWarmRestart, Phase: ackov1alpha1.OperationCompleted,
			TargetPods: c.DesiredPodNames(), CompletedPods: c.DesiredPodNames(),
		},
		FinishedOperations: []string{"261125-094500-k2x9qa"},
	}
	for i, name := range c.DesiredPodNames() {
		c.Status.Pods[name] = ackov1alpha1.PodStatus{PodIP: fmt.Sprintf("127.1.0.%d", 4+i), Image: testcluster.Image,
			LastRestartReason: ackov1alpha1.RestartReasonWarmRestart, LastRestartTime: agoPtr(14*time.Minute - time.Duration(i)*time.Minute)}
	}
	return c
}

// pod is a Running pod of the cluster, Ready or not.
func pod(c *ackov1alpha1.AerospikeCluster, name, ip string, ready bool, created time.Duration) corev1.Pod {
	status := corev1.ConditionFalse
	if ready {
		status = corev1.ConditionTrue
	}
	return corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: c.Namespace, CreationTimestamp: ago(created),
			Labels: c.SelectorLabels()},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: ip,
			Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: status}}},
	}
}

func runningPods(c *ackov1alpha1.AerospikeCluster) []corev1.Pod {
	return []corev1.Pod{
		pod(c, "aerospike-3node-0", "127.1.0.4", true, 2*time.Hour),
		pod(c, "aerospike-3node-1", "127.1.0.5", true, 2*time.Hour),
		pod(c, "aerospike-3node-2", "127.1.0.6", true, 2*time.Hour),
	}
}

// event is a core event as the events.k8s.io recorder writes it (eventTime, no lastTimestamp).
func event(typ, reason, message string, at time.Duration) corev1.Event {
	return corev1.Event{Type: typ, Reason: reason, Message: message, EventTime: metav1.NewMicroTime(fixedNow.Add(-at))}
}

func runningEvents() []corev1.Event {
	return []corev1.Event{
		event(corev1.EventTypeNormal, ackov1alpha1.EventOperation, "Operation 261125-094500-k2x9qa Completed: "+
			"3 pods completed, 0 failed", 12*time.Minute),
		event(corev1.EventTypeNormal, ackov1alpha1.EventOperation, "Started WarmRestart operation "+
			"261125-094500-k2x9qa on 3 pods", 15*time.Minute),
		event(corev1.EventTypeNormal, ackov1alpha1.EventPodWarmRestarted, "Sent SIGUSR1 to aerospike-3node-0",
			14*time.Minute),
	}
}
