package kubectlacko

import (
	"cmp"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	ackov1alpha1 "github.com/acko-io/acko/api/v1alpha1"
)

// maxEvents is how many of the latest events status shows.
const maxEvents = 10

// Pod states in status when no pod object says otherwise.
const (
	podMissing     = "Missing"
	podTerminating = "Terminating"
)

// phasePending is the operation phase status shows for an operation in the spec that has not
// started yet (the API has no phase for it).
const phasePending = "Pending"

// clusterReport is what `kubectl acko status` shows; -o json|yaml prints it as is.
type clusterReport struct {
	Name               string             `json:"name"`
	Namespace          string             `json:"namespace"`
	Phase              string             `json:"phase"`
	Paused             bool               `json:"paused"`
	Size               int32              `json:"size"`
	ReadyPods          int32              `json:"readyPods"`
	Image              string             `json:"image"`
	Generation         int64              `json:"generation"`
	ObservedGeneration int64              `json:"observedGeneration"`
	Conditions         []metav1.Condition `json:"conditions"`
	// PendingChanges is the PendingChanges condition's message while spec changes wait for resume.
	PendingChanges string           `json:"pendingChanges,omitempty"`
	Pods           []podReport      `json:"pods"`
	Operation      *operationReport `json:"operation,omitempty"`
	Events         []eventReport    `json:"events"`
}

// podReport is one pod of the cluster: what the operator recorded and what the pod object says.
type podReport struct {
	Name  string `json:"name"`
	Rack  int32  `json:"rack"`
	PodIP string `json:"podIP,omitempty"`
	// State is the pod's phase, Terminating, or Missing when no pod exists.
	State string `json:"state"`
	Ready bool   `json:"ready"`
	// AerospikeReady is the status of the pod's acko.io/aerospike-ready condition, where it has one.
	AerospikeReady    string       `json:"aerospikeReady,omitempty"`
	Image             string       `json:"image,omitempty"`
	LastRestartReason string       `json:"lastRestartReason,omitempty"`
	LastRestartTime   *metav1.Time `json:"lastRestartTime,omitempty"`
	Created           *metav1.Time `json:"created,omitempty"`
}

// operationReport is the current or last operation with its progress.
type operationReport struct {
	ID   string `json:"id"`
	Kind string `json:"kind"`
	// Phase is InProgress, Completed, Error, or Pending for an operation that has not started.
	Phase         string   `json:"phase"`
	Total         int      `json:"total"`
	Completed     int      `json:"completed"`
	Failed        int      `json:"failed"`
	CompletedPods []string `json:"completedPods,omitempty"`
	FailedPods    []string `json:"failedPods,omitempty"`
	CurrentPod    string   `json:"currentPod,omitempty"`
	Message       string   `json:"message,omitempty"`
}

// eventReport is one event of the cluster.
type eventReport struct {
	Type     string      `json:"type"`
	Reason   string      `json:"reason"`
	Message  string      `json:"message"`
	Count    int32       `json:"count"`
	LastSeen metav1.Time `json:"lastSeen"`
}

// buildReport puts together what status shows from the cluster, its pods and its events.
func buildReport(c *ackov1alpha1.AerospikeCluster, pods []corev1.Pod, events []corev1.Event) clusterReport {
	r := clusterReport{
		Name: c.Name, Namespace: c.Namespace, Phase: string(c.Status.Phase), Paused: c.Spec.Paused,
		Size: c.Spec.Size, ReadyPods: c.Status.ReadyPods, Image: c.Spec.Image,
		Generation: c.Generation, ObservedGeneration: c.Status.ObservedGeneration,
		Conditions: c.Status.Conditions, Pods: podReports(c, pods), Operation: operationOf(c),
		Events: latestEvents(events, maxEvents),
	}
	if r.Conditions == nil {
		r.Conditions = []metav1.Condition{}
	}
	if pc := meta.FindStatusCondition(c.Status.Conditions, ackov1alpha1.ConditionPendingChanges); pc != nil &&
		pc.Status == metav1.ConditionTrue {
		r.PendingChanges = pc.Message
	}
	return r
}

// podReports lists every pod the spec asks for, the status records or that exists, in the
// operator's order (rack, then ordinal).
func podReports(c *ackov1alpha1.AerospikeCluster, pods []corev1.Pod) []podReport {
	byName := map[string]*corev1.Pod{}
	for i := range pods {
		byName[pods[i].Name] = &pods[i]
	}
	names := c.DesiredPodNames()
	for name := range c.Status.Pods {
		names = append(names, name)
	}
	for name := range byName {
		names = append(names, name)
	}
	slices.SortFunc(names, func(a, b string) int { return comparePods(c, a, b) })
	names = slices.Compact(names)

	out := make([]podReport, 0, len(names))
	for _, name := range names {
		out = append(out, podReportOf(c, name, byName[name]))
	}
	return out
}

// comparePods orders pod names by rack and ordinal; names outside the layout go last, by name.
func comparePods(c *ackov1alpha1.AerospikeCluster, a, b string) int {
	ra, oa, okA := c.ParsePodName(a)
	rb, ob, okB := c.ParsePodName(b)
	switch {
	case okA && okB:
		return cmp.Or(cmp.Compare(ra, rb), cmp.Compare(oa, ob))
	case okA != okB:
		if okA {
			return -1
		}
		return 1
	}
	return cmp.Compare(a, b)
}

func podReportOf(c *ackov1alpha1.AerospikeCluster, name string, pod *corev1.Pod) podReport {
	r := podReport{Name: name, State: podMissing}
	if rack, _, ok := c.ParsePodName(name); ok {
		r.Rack = rack
	}
	if st, ok := c.Status.Pods[name]; ok {
		r.Rack, r.PodIP, r.Image = st.Rack, st.PodIP, st.Image
		r.LastRestartReason, r.LastRestartTime = string(st.LastRestartReason), st.LastRestartTime
	}
	if pod == nil {
		return r
	}
	r.State = string(pod.Status.Phase)
	if pod.DeletionTimestamp != nil {
		r.State = podTerminating
	}
	r.PodIP = cmp.Or(pod.Status.PodIP, r.PodIP)
	created := pod.CreationTimestamp
	r.Created = &created
	for _, cond := range pod.Status.Conditions {
		switch string(cond.Type) {
		case string(corev1.PodReady):
			r.Ready = cond.Status == corev1.ConditionTrue
		case ackov1alpha1.PodConditionAerospikeReady:
			r.AerospikeReady = string(cond.Status)
		}
	}
	return r
}

// operationOf is the operation status shows: one in the spec that has not started yet, else the
// current or last one the status records.
func operationOf(c *ackov1alpha1.AerospikeCluster) *operationReport {
	if op := pendingOperation(c); op != nil {
		total := len(op.PodList)
		if total == 0 {
			total = int(c.Spec.Size)
		}
		return &operationReport{ID: op.ID, Kind: string(op.Kind), Phase: phasePending, Total: total}
	}
	st := c.Status.OperationStatus
	if st == nil {
		return nil
	}
	return &operationReport{
		ID: st.ID, Kind: string(st.Kind), Phase: string(st.Phase),
		Total: len(st.TargetPods), Completed: len(st.CompletedPods), Failed: len(st.FailedPods),
		CompletedPods: st.CompletedPods, FailedPods: st.FailedPods, CurrentPod: st.CurrentPod, Message: st.Message,
	}
}

// latestEvents returns the newest n events, oldest first.
func latestEvents(events []corev1.Event, n int) []eventReport {
	out := make([]eventReport, 0, len(events))
	for i := range events {
		e := &events[i]
		count := e.Count
		if e.Series != nil {
			count = e.Series.Count
		}
		out = append(out, eventReport{Type: e.Type, Reason: e.Reason, Message: e.Message,
			Count: max(count, 1), LastSeen: lastSeen(e)})
	}
	slices.SortStableFunc(out, func(a, b eventReport) int { return a.LastSeen.Compare(b.LastSeen.Time) })
	return out[max(0, len(out)-n):]
}

// lastSeen is when an event last happened, for events of both the core and the events.k8s.io API.
func lastSeen(e *corev1.Event) metav1.Time {
	switch {
	case e.Series != nil && !e.Series.LastObservedTime.IsZero():
		return metav1.NewTime(e.Series.LastObservedTime.Time)
	case !e.LastTimestamp.IsZero():
		return e.LastTimestamp
	case !e.EventTime.IsZero():
		return metav1.NewTime(e.EventTime.Time)
	}
	return e.CreationTimestamp
}

// listItem is one row of `kubectl acko list`; -o json|yaml prints a list of them.
type listItem struct {
	Name      string           `json:"name"`
	Namespace string           `json:"namespace"`
	Size      int32            `json:"size"`
	ReadyPods int32            `json:"readyPods"`
	Phase     string           `json:"phase"`
	Paused    bool             `json:"paused"`
	Operation *operationReport `json:"operation,omitempty"`
	Created   metav1.Time      `json:"created"`
}

// listItems summarises clusters for list, by namespace and name.
func listItems(clusters []ackov1alpha1.AerospikeCluster) []listItem {
	out := make([]listItem, 0, len(clusters))
	for i := range clusters {
		c := &clusters[i]
		out = append(out, listItem{Name: c.Name, Namespace: c.Namespace, Size: c.Spec.Size,
			ReadyPods: c.Status.ReadyPods, Phase: string(c.Status.Phase), Paused: c.Spec.Paused,
			Operation: operationOf(c), Created: c.CreationTimestamp})
	}
	slices.SortFunc(out, func(a, b listItem) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
	})
	return out
}
