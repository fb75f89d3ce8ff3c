package cluster

import (
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	ackov1alpha1 "github.com/acko-io/acko/api/v1alpha1"
	"github.com/acko-io/acko/internal/aerospike"
)

// A restart in place recorded for a pod that a drain evicted before the signal (found on the local
// cluster: the recreated pod stayed not Ready for good, its gate held by the old record, and the roll
// waited for it to be Ready): only the instance the step was recorded for is held.
func TestHeldPodsHoldOnlyTheRecordedInstance(t *testing.T) {
	for _, tc := range []struct {
		name     string
		podUID   string
		done     bool
		wantHeld bool
	}{
		{"recorded, not signalled yet", "old", false, true},
		{"signalled, asd not seen restarting yet", "old", true, true},
		{"recreated before the signal", "new", false, false},
		{"recreated after the step was marked done", "new", true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := &clusterState{
				cluster: &ackov1alpha1.AerospikeCluster{Status: ackov1alpha1.AerospikeClusterStatus{
					Pods: map[string]ackov1alpha1.PodStatus{"p-0": {Update: &ackov1alpha1.PodUpdate{
						Method: ackov1alpha1.UpdateInPlace, UID: "old", Done: tc.done, ConfigHash: "abc"}}},
				}},
				pods: map[string]*corev1.Pod{"p-0": {ObjectMeta: metav1.ObjectMeta{Name: "p-0", UID: types.UID(tc.podUID)}}},
			}
			_, held := st.heldPods()["p-0"]
			if held != tc.wantHeld {
				t.Fatalf("held = %v, want %v", held, tc.wantHeld)
			}
		})
	}
}

// A pod back from its restart waits for its gate; when a node elsewhere hangs, the gate stays False
// (the cluster is one node short) and the wait must name the silent node, not only the pod followed
// (found on the local cluster: "waiting for the node to rejoin the cluster" for as long as it hung).
func TestWaitForAPodBackNamesTheNodeThatDoesNotAnswer(t *testing.T) {
	now := time.Now()
	member := aerospike.NodeHealth{ReadAt: now, Facts: aerospike.NodeFacts{ClusterKey: "K", ClusterSize: 2}}
	st := &clusterState{members: []string{"p-0", "p-1", "p-2"}, healthOK: true, health: aerospike.ClusterHealth{
		ExpectedSize: 3, ReadAt: now, Nodes: map[string]aerospike.NodeHealth{
			"p-0": {ReadAt: now, Err: fmt.Errorf("%w: i/o timeout", aerospike.ErrUnreachable)}, "p-1": member, "p-2": member,
		}}}
	const wait = "waiting for the node to rejoin the cluster"
	if got, want := st.becauseUnstable(wait), wait+" (not answering: p-0)"; got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
	st.health.Nodes["p-0"] = member
	if got := st.becauseUnstable(wait); !strings.HasPrefix(got, wait+" (p-0: ") {
		t.Fatalf("a node that answers but is not settled: got %q", got)
	}
}
