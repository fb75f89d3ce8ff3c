package kubectlacko

import (
	"bytes"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	ackov1alpha1 "github.com/acko-io/acko/api/v1alpha1"
	"github.com/acko-io/acko/test/testcluster"
)

// pausedCluster is paused with a pending image change and an operation waiting for resume; one
// pod is missing, one terminating, and the pods carry the Aerospike readiness gate condition.
func pausedCluster() (*ackov1alpha1.AerospikeCluster, []corev1.Pod, []corev1.Event) {
	c := runningCluster()
	c.Generation = 7
	c.Spec.Paused = true
	c.Spec.Image = "aerospike:ce-8.1.2.0"
	c.Spec.Operations = []ackov1alpha1.OperationSpec{{Kind: ackov1alpha1.OperationPodRestart, ID: "fix-pod-2",
		PodList: []string{"aerospike-3node-2"}}}
	c.Status.Phase = ackov1alpha1.PhasePaused
	c.Status.Conditions = []metav1.Condition{
		condition(ackov1alpha1.ConditionReady, metav1.ConditionUnknown, ackov1alpha1.ReasonPaused,
			"Cluster paused by user: readiness is not tracked", 7, 3*time.Minute),
		condition(ackov1alpha1.ConditionReconciling, metav1.ConditionFalse, ackov1alpha1.ReasonPaused,
			"Cluster paused by user", 7, 3*time.Minute),
		condition(ackov1alpha1.ConditionPaused, metav1.ConditionTrue, ackov1alpha1.ReasonUserRequested,
			"Cluster paused by user", 7, 3*time.Minute),
		condition(ackov1alpha1.ConditionPendingChanges, metav1.ConditionTrue, ackov1alpha1.ReasonSpecChangedWhilePaused,
			"The spec changed while paused; the changes are applied on resume", 7, 90*time.Second),
		// A condition type this plugin does not know is shown like the others.
		condition("Stalled", metav1.ConditionFalse, "Progressing", "", 7, 3*time.Minute),
	}
	pods := runningPods(c)[:2]
	gate := func(p *corev1.Pod, s corev1.ConditionStatus) {
		p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: ackov1alpha1.PodConditionAerospikeReady, Status: s})
	}
	gate(&pods[0], corev1.ConditionTrue)
	gate(&pods[1], corev1.ConditionFalse)
	pods[1].DeletionTimestamp = agoPtr(time.Second)
	events := append(runningEvents(),
		event(corev1.EventTypeNormal, ackov1alpha1.EventPaused, "Cluster paused by user", 3*time.Minute))
	events[0].Series = &corev1.EventSeries{Count: 3, LastObservedTime: metav1.NewMicroTime(fixedNow.Add(-time.Minute))}
	return c, pods, events
}

// failedCluster ended a PodRestart in Error on its second pod.
func failedCluster() *ackov1alpha1.AerospikeCluster {
	c := runningCluster()
	c.Namespace = "prod"
	c.Status.OperationStatus = &ackov1alpha1.OperationStatus{
		ID: "fix-pods", Kind: ackov1alpha1.OperationPodRestart, Phase: ackov1alpha1.OperationError,
		TargetPods:    []string{"aerospike-3node-0", "aerospike-3node-1", "aerospike-3node-2"},
		CompletedPods: []string{"aerospike-3node-0"}, FailedPods: []string{"aerospike-3node-1"},
		Message: "pod aerospike-3node-1 did not come back within 10m0s",
	}
	return c
}

// inProgressCluster is restarting its second pod.
func inProgressCluster() *ackov1alpha1.AerospikeCluster {
	c := runningClusterNamed("cache")
	c.Status.Phase = ackov1alpha1.PhaseReconciling
	c.Status.ReadyPods = 2
	c.Status.OperationStatus = &ackov1alpha1.OperationStatus{
		ID: "held", Kind: ackov1alpha1.OperationWarmRestart, Phase: ackov1alpha1.OperationInProgress,
		TargetPods: []string{"cache-0", "cache-1", "cache-2"}, CompletedPods: []string{"cache-0"},
		CurrentPod: "cache-1",
	}
	return c
}

func TestStatusRendering(t *testing.T) {
	paused, pausedPods, pausedEvents := pausedCluster()
	failed, inProgress := failedCluster(), inProgressCluster()
	cases := map[string]clusterReport{
		"status-running": buildReport(runningCluster(), runningPods(runningCluster()), runningEvents()),
		"status-paused":  buildReport(paused, pausedPods, pausedEvents),
		"status-failed": buildReport(failed, runningPods(failed), []corev1.Event{
			event(corev1.EventTypeWarning, ackov1alpha1.EventOperation, failed.Status.OperationStatus.Message, time.Minute),
		}),
		"status-in-progress": buildReport(inProgress, []corev1.Pod{
			pod(inProgress, "cache-0", "127.1.0.4", true, 2*time.Hour),
			pod(inProgress, "cache-1", "127.1.0.5", false, 2*time.Hour),
			pod(inProgress, "cache-2", "127.1.0.6", true, 2*time.Hour),
		}, nil),
	}
	for name, report := range cases {
		t.Run(name, func(t *testing.T) {
			var human, js, yml bytes.Buffer
			if err := renderStatus(&human, report, fixedNow); err != nil {
				t.Fatal(err)
			}
			if err := printData(&js, outputJSON, report); err != nil {
				t.Fatal(err)
			}
			if err := printData(&yml, outputYAML, report); err != nil {
				t.Fatal(err)
			}
			golden(t, name, human.Bytes())
			golden(t, name+".json", js.Bytes())
			golden(t, name+".yaml", yml.Bytes())
		})
	}
}

func TestStatusReport(t *testing.T) {
	paused, pods, events := pausedCluster()
	r := buildReport(paused, pods, events)
	if r.PendingChanges == "" {
		t.Error("a True PendingChanges condition is not shown as pending changes")
	}
	if r.Operation == nil || r.Operation.Phase != phasePending || r.Operation.ID != "fix-pod-2" || r.Operation.Total != 1 {
		t.Errorf("the operation waiting for resume is not shown as Pending: %+v", r.Operation)
	}
	states := map[string]string{}
	for _, p := range r.Pods {
		states[p.Name] = p.State + "/" + p.AerospikeReady
	}
	want := map[string]string{"aerospike-3node-0": "Running/True", "aerospike-3node-1": "Terminating/False",
		"aerospike-3node-2": "Missing/"}
	if len(states) != len(want) {
		t.Errorf("pods %v, want %v", states, want)
	}
	for name, s := range want {
		if states[name] != s {
			t.Errorf("pod %s: %q, want %q", name, states[name], s)
		}
	}
	if last := r.Events[len(r.Events)-1]; last.Count != 3 || !last.LastSeen.Equal(ptr(ago(time.Minute))) {
		t.Errorf("an event series is shown by its last occurrence and count: %+v", last)
	}
}

func TestPodsInRackOrder(t *testing.T) {
	c := testcluster.New("aerospike", "c", 4)
	c.Spec.RackConfig = &ackov1alpha1.RackConfig{Racks: []ackov1alpha1.Rack{{ID: 10}, {ID: 9}}}
	stray := pod(c, "c-stray", "", true, time.Hour)
	var names []string
	for _, p := range podReports(c, []corev1.Pod{stray}) {
		names = append(names, p.Name)
	}
	want := []string{"c-9-0", "c-9-1", "c-10-0", "c-10-1", "c-stray"}
	if !slices.Equal(names, want) {
		t.Errorf("pods %v, want %v (rack, then ordinal, then names outside the layout)", names, want)
	}
}

func ptr[T any](v T) *T { return &v }

func TestLatestEventsKeepsTheNewest(t *testing.T) {
	var events []corev1.Event
	for i := range 15 {
		events = append(events, event(corev1.EventTypeNormal, "Tick", strings.Repeat("x", i+1), time.Duration(i)*time.Minute))
	}
	got := latestEvents(events, maxEvents)
	if len(got) != maxEvents {
		t.Fatalf("%d events, want %d", len(got), maxEvents)
	}
	// The newest (0 minutes ago, message "x") is last; the oldest kept is 9 minutes ago.
	if got[len(got)-1].Message != "x" || got[0].Message != strings.Repeat("x", 10) {
		t.Errorf("not the newest %d in order: first %q, last %q", maxEvents, got[0].Message, got[len(got)-1].Message)
	}
}

func TestListRendering(t *testing.T) {
	paused, _, _ := pausedCluster()
	paused.Namespace = "staging"
	items := listItems([]ackov1alpha1.AerospikeCluster{*failedCluster(), *runningCluster(), *paused, *inProgressCluster()})
	var ns, all, js, yml bytes.Buffer
	if err := renderList(&ns, items[:2], false, fixedNow); err != nil {
		t.Fatal(err)
	}
	if err := renderList(&all, items, true, fixedNow); err != nil {
		t.Fatal(err)
	}
	if err := printData(&js, outputJSON, items); err != nil {
		t.Fatal(err)
	}
	if err := printData(&yml, outputYAML, items); err != nil {
		t.Fatal(err)
	}
	golden(t, "list", ns.Bytes())
	golden(t, "list-all-namespaces", all.Bytes())
	golden(t, "list.json", js.Bytes())
	golden(t, "list.yaml", yml.Bytes())
}

func TestProgressBar(t *testing.T) {
	for _, tc := range []struct {
		done, failed, total int
		want                string
	}{
		{0, 0, 0, "[--------------------]"},
		{0, 0, 3, "[--------------------]"},
		{1, 0, 3, "[######--------------]"},
		{1, 1, 3, "[######xxxxxxx-------]"},
		{3, 0, 3, "[####################]"},
		{8, 0, 8, "[####################]"},
	} {
		if got := progressBar(tc.done, tc.failed, tc.total); got != tc.want {
			t.Errorf("progressBar(%d, %d, %d) = %s, want %s", tc.done, tc.failed, tc.total, got, tc.want)
		}
	}
}

func TestCheckOutput(t *testing.T) {
	for _, ok := range []string{"", "json", "yaml"} {
		if err := checkOutput(ok); err != nil {
			t.Errorf("-o %q: %v", ok, err)
		}
	}
	err := checkOutput("wide")
	if err == nil || !strings.Contains(err.Error(), `unknown output format "wide": use -o json or -o yaml`) {
		t.Errorf("-o wide: %v", err)
	}
}
