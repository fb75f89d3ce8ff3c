package cluster

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	ackov1alpha1 "github.com/acko-io/acko/api/v1alpha1"
	"github.com/acko-io/acko/internal/resources"
)

// A pod whose node advertises another external address than the pod's own is recreated; only a
// reading of the asd its container runs now, of a Ready pod, in the list advertiseAs names, decides.
func TestAddressMoved(t *testing.T) {
	const pod = "aero-1"
	for _, tc := range []struct {
		name       string
		advertise  ackov1alpha1.AdvertiseAs
		std, alt   string
		uptime     time.Duration
		notReady   bool
		wantsMoved bool
	}{
		{"the node advertises the pod's address", "", "10.0.0.5:3000", "203.0.113.1:31001", time.Minute, false, false},
		{"the node advertises an old node port", "", "10.0.0.5:3000", "203.0.113.1:30999", time.Minute, false, true},
		{"the node advertises no external address", "", "10.0.0.5:3000", "", time.Minute, false, false},
		{"the reading is of an asd older than the container", "", "", "203.0.113.1:30999", time.Hour, false, false},
		{"the pod is not Ready", "", "", "203.0.113.1:30999", time.Minute, true, false},
		{"advertiseAs Access reads the standard list", ackov1alpha1.AdvertiseAccess, "10.0.0.5:3000", "", time.Minute, false, true},
		{"advertiseAs Access, the pod's address among others", ackov1alpha1.AdvertiseAccess,
			"10.0.0.9:3000,203.0.113.1:31001", "", time.Minute, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := settledState()
			st.cluster.Spec.ExternalAccess = &ackov1alpha1.ExternalAccess{Type: ackov1alpha1.ExternalNodePort, AdvertiseAs: tc.advertise}
			st.addresses = map[string]resources.PodAddress{pod: {Node: "n1", Address: "203.0.113.1", Port: 31001}}
			p := st.pods[pod]
			p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: ackov1alpha1.AerospikeContainerName,
				State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(statusNow.Add(-2 * time.Minute))}}}}
			if tc.notReady {
				p.Status.Conditions[0].Status = corev1.ConditionFalse
			}
			n := st.health.Nodes[pod]
			n.Facts.ServiceStd, n.Facts.ServiceAlt, n.Facts.Uptime = tc.std, tc.alt, tc.uptime
			st.health.Nodes[pod] = n
			if got := st.addressMoved(p); got != tc.wantsMoved {
				t.Errorf("addressMoved = %v, want %v", got, tc.wantsMoved)
			}
		})
	}
}

// With external access turned off, a pod's status keeps the address its node still advertises until the
// pod has rolled; the others drop it at once.
func TestStatusKeepsTheAddressAPodStillAdvertises(t *testing.T) {
	st := settledState()
	s := &ackov1alpha1.AerospikeClusterStatus{Pods: map[string]ackov1alpha1.PodStatus{}}
	for name := range st.pods {
		s.Pods[name] = ackov1alpha1.PodStatus{ExternalAddress: "203.0.113.1:31001"}
	}
	st.outdated = []outdatedPod{{pod: st.pods["aero-1"], reason: ackov1alpha1.RestartReasonPodSpecChanged}}
	st.summarizePods(s)
	if got := s.Pods["aero-1"].ExternalAddress; got != "203.0.113.1:31001" {
		t.Errorf("the pod still to roll shows %q", got)
	}
	if got := s.Pods["aero-0"].ExternalAddress; got != "" {
		t.Errorf("a pod that rolled still shows %q", got)
	}
}
