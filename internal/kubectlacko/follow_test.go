package kubectlacko

import (
	"bytes"
	"testing"
	"time"

	ackov1alpha1 "github.com/acko-io/acko/api/v1alpha1"
)

// TestFollowerPrintsEachChangeOnce feeds the follower the states a watch delivers: a paused cluster,
// its resume, the operation pod by pod, and its end in Error.
func TestFollowerPrintsEachChangeOnce(t *testing.T) {
	clock := fixedNow
	var out bytes.Buffer
	f := newOperationFollower(&out, "op-1", func() time.Time { return clock })

	c := runningCluster()
	c.Spec.Paused = true
	states := []func(){
		func() {},
		func() {}, // the same state again prints nothing
		func() { c.Spec.Paused, c.Status.Phase = false, ackov1alpha1.PhaseReconciling },
		func() {
			c.Status.OperationStatus = &ackov1alpha1.OperationStatus{ID: "op-1", Kind: ackov1alpha1.OperationPodRestart,
				Phase: ackov1alpha1.OperationInProgress, TargetPods: []string{"a-0", "a-1"}, CurrentPod: "a-0"}
		},
		func() { st := c.Status.OperationStatus; st.CompletedPods, st.CurrentPod = []string{"a-0"}, "a-1" },
		func() {
			st := c.Status.OperationStatus
			st.FailedPods, st.CurrentPod, st.Phase = []string{"a-1"}, "", ackov1alpha1.OperationError
			st.Message = "pod a-1 did not come back within 10m0s"
			clock = clock.Add(95 * time.Second)
		},
	}
	var err error
	var done bool
	for i, change := range states {
		change()
		done, err = f.observe(c)
		if done != (i == len(states)-1) {
			t.Fatalf("state %d: done %t", i, done)
		}
	}
	want := "waiting: the cluster is paused; the operation starts when it is resumed " +
		"(kubectl acko resume aerospike-3node -n aerospike)\n" +
		"waiting: the operation starts when the cluster is Running (phase Reconciling)\n" +
		"started: PodRestart of 2 pods: a-0, a-1\n" +
		"  a-0 restarting\n" +
		"  a-0 restarted (1/2)\n" +
		"  a-1 restarting\n" +
		"  a-1 FAILED\n" +
		"Error after 1m35s: 1 pods restarted, 1 failed\n"
	if out.String() != want {
		t.Errorf("printed\n%s\nwant\n%s", out.String(), want)
	}
	if err == nil || err.Error() != "operation op-1 ended in Error; failed pods: a-1: pod a-1 did not come back within 10m0s" {
		t.Errorf("error %v", err)
	}
}
