package cluster

import (
	"context"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	ackov1alpha1 "github.com/acko-io/acko/api/v1alpha1"
)

// Which pods are moved off their node, and how: a Ready (or broken) pod on a blocked node, by an
// eviction with reason NodeBlocked, whatever else it waits for but a new replication-factor; a pod whose
// move gave up its volumes, wherever the list says; nothing else.
func TestMoveOff(t *testing.T) {
	on := func(name, node string, ready bool) *corev1.Pod {
		pod := readyPod(name)
		pod.UID, pod.Spec.NodeName = types.UID("uid-"+name), node
		if !ready {
			pod.Status.Conditions = nil
		}
		return pod
	}
	move := outdatedPod{reason: ackov1alpha1.RestartReasonNodeBlocked, method: ackov1alpha1.UpdateEvict}
	for _, tc := range []struct {
		name    string
		pod     *corev1.Pod
		in      outdatedPod
		needed  bool
		status  ackov1alpha1.PodStatus
		broken  bool
		want    outdatedPod
		outdate bool
	}{
		{name: "on a blocked node", pod: on("aero-0", "n1", true), want: move, outdate: true},
		{name: "on a blocked node, with a config change", pod: on("aero-0", "n1", true),
			in: outdatedPod{reason: ackov1alpha1.RestartReasonConfigChanged, method: ackov1alpha1.UpdateLive}, needed: true,
			want: move, outdate: true},
		{name: "on a blocked node, a new replication-factor first", pod: on("aero-0", "n1", true),
			in: outdatedPod{reason: ackov1alpha1.RestartReasonConfigChanged, method: ackov1alpha1.UpdateLiveTogether}, needed: true,
			want: outdatedPod{reason: ackov1alpha1.RestartReasonConfigChanged, method: ackov1alpha1.UpdateLiveTogether}, outdate: true},
		{name: "on a blocked node, not Ready: waits", pod: on("aero-0", "n1", false)},
		{name: "on a blocked node, broken", pod: on("aero-0", "n1", false), broken: true, want: move, outdate: true},
		{name: "on another node", pod: on("aero-0", "n2", true)},
		{name: "its move gave up its volumes, the node no longer blocked", pod: on("aero-0", "n2", true),
			status: ackov1alpha1.PodStatus{VolumesGivenUp: &ackov1alpha1.VolumesGivenUp{UID: "uid-aero-0"},
				Update: &ackov1alpha1.PodUpdate{Method: ackov1alpha1.UpdateEvict, Reason: ackov1alpha1.RestartReasonNodeBlocked, UID: "uid-aero-0"}},
			want: move, outdate: true},
		{name: "a lost node's give-up is not a move", pod: on("aero-0", "n2", true),
			status: ackov1alpha1.PodStatus{VolumesGivenUp: &ackov1alpha1.VolumesGivenUp{UID: "uid-aero-0"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := settledState()
			st.cluster.Spec.NodeBlockList = []string{"n1"}
			st.cluster.Status.Pods = map[string]ackov1alpha1.PodStatus{tc.pod.Name: tc.status}
			if tc.broken {
				st.broken = map[string]string{tc.pod.Name: "CrashLoopBackOff"}
			}
			tc.in.pod = tc.pod
			got, outdated := st.moveOff(tc.in, tc.needed)
			if outdated != tc.outdate || outdated && (got.reason != tc.want.reason || got.method != tc.want.method || got.pod != tc.pod) {
				t.Errorf("got %s/%s outdated %t, want %s/%s outdated %t", got.reason, got.method, outdated,
					tc.want.reason, tc.want.method, tc.outdate)
			}
		})
	}
}

// A move goes alone: a batch that starts with one takes no other pod, and no move joins another batch.
func TestMovesGoOneAtATime(t *testing.T) {
	st := settledState()
	st.cluster.Spec.RollingUpdateBatchSize = ptr.To[int32](3)
	st.maxDown = 2
	evict := outdatedPod{pod: readyPod("aero-1"), reason: ackov1alpha1.RestartReasonPodSpecChanged, method: ackov1alpha1.UpdateEvict}
	move := outdatedPod{pod: readyPod("aero-2"), reason: ackov1alpha1.RestartReasonNodeBlocked, method: ackov1alpha1.UpdateEvict}
	if got := st.batchLimit(move); got != 1 {
		t.Errorf("a move's batch takes %d pods, want 1", got)
	}
	if got := st.batchLimit(evict); got != 2 {
		t.Errorf("an eviction's batch takes %d pods, want 2", got)
	}
	if sameStep(move, evict) || sameStep(evict, move) {
		t.Errorf("a move joins an eviction's batch")
	}
}

// The claims a move gives up: those of a local class, or bound to a volume pinned to the pod's node;
// not a network claim, nor one pinned elsewhere.
func TestLocalClaims(t *testing.T) {
	claim := func(name, class, volume string) *corev1.PersistentVolumeClaim {
		return &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name},
			Spec: corev1.PersistentVolumeClaimSpec{StorageClassName: ptr.To(class), VolumeName: volume}}
	}
	pv := func(name, host string) *corev1.PersistentVolume {
		return &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.PersistentVolumeSpec{
			NodeAffinity: &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
				MatchExpressions: []corev1.NodeSelectorRequirement{{Key: corev1.LabelHostname, Operator: corev1.NodeSelectorOpIn,
					Values: []string{host}}}}}}}}}
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "aero-0"}, Spec: corev1.PodSpec{NodeName: "n1"}}
	for _, c := range []string{"data", "static", "network", "elsewhere", "gone"} {
		pod.Spec.Volumes = append(pod.Spec.Volumes, corev1.Volume{Name: c, VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: c + "-aero-0"}}})
	}
	objects := []client.Object{claim("data-aero-0", "local", ""), claim("static-aero-0", "manual", "pv-a"), pv("pv-a", "n1"),
		claim("network-aero-0", "network", "pv-b"), pv("pv-b", ""), claim("elsewhere-aero-0", "manual", "pv-c"), pv("pv-c", "n2")}
	scheme := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(scheme)
	r := &AerospikeClusterReconciler{APIReader: fake.NewClientBuilder().WithScheme(scheme).WithObjects(objects...).Build()}
	st := settledState()
	st.cluster.Spec.Storage = &ackov1alpha1.StorageSpec{LocalVolumes: &ackov1alpha1.LocalVolumesSpec{StorageClasses: []string{"local"}}}
	claims, err := r.localClaims(context.Background(), st, pod)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, c := range claims {
		names = append(names, c.Name)
	}
	if want := []string{"data-aero-0", "static-aero-0"}; !slices.Equal(names, want) {
		t.Errorf("local claims %v, want %v", names, want)
	}
}

// A moved pod whose claims were deleted but which is not evicted yet still holds its data: it does not
// count as refilling (the budget would refuse its own eviction); once Terminating, or replaced, it does.
func TestMovedPodRefillsOnceGone(t *testing.T) {
	st := settledState()
	pod := st.pods["aero-1"]
	pod.UID = "uid-1"
	st.cluster.Status.Pods = map[string]ackov1alpha1.PodStatus{"aero-1": {VolumesGivenUp: &ackov1alpha1.VolumesGivenUp{UID: "uid-1"}}}
	if got := st.refilling(); len(got) != 0 {
		t.Errorf("refilling %v while the pod still runs on its volumes", got)
	}
	if got := st.pdbMaxUnavailable(1); got != 1 {
		t.Errorf("budget maxUnavailable %d, want 1: the move's own eviction must go", got)
	}
	now := metav1.Now()
	pod.DeletionTimestamp = &now
	if got := st.refilling(); !slices.Equal(got, []string{"aero-1"}) {
		t.Errorf("refilling %v once the pod is Terminating, want [aero-1]", got)
	}
	pod.DeletionTimestamp, pod.UID = nil, "uid-2"
	if got := st.refilling(); !slices.Equal(got, []string{"aero-1"}) {
		t.Errorf("refilling %v with the successor, want [aero-1]", got)
	}
}

// With one copy of each partition (replication-factor 1, or one node) a move gives up nothing: the pod's
// local volumes hold the only copy of its partitions. It says why, and its claim stays.
func TestMoveKeepsTheOnlyCopy(t *testing.T) {
	for _, tc := range []struct {
		name    string
		factor  int64
		members int
	}{
		{"replication-factor 1", 1, 3},
		{"one node at replication-factor 2", 2, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := settledState()
			setReplicationFactor(st.cluster, tc.factor)
			st.members = st.members[:tc.members]
			st.cluster.Spec.Storage = &ackov1alpha1.StorageSpec{LocalVolumes: &ackov1alpha1.LocalVolumesSpec{StorageClasses: []string{"local"}}}
			pod := st.pods[st.members[0]]
			pod.Spec.NodeName = "n1"
			pod.Spec.Volumes = []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{
				PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data-" + pod.Name}}}}
			claim := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: pod.Namespace, Name: "data-" + pod.Name},
				Spec: corev1.PersistentVolumeClaimSpec{StorageClassName: ptr.To("local")}}
			scheme := runtime.NewScheme()
			_ = clientgoscheme.AddToScheme(scheme)
			c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(claim).Build()
			r := &AerospikeClusterReconciler{Client: c, APIReader: c}
			gaveUp, refused, err := r.giveUpForMove(context.Background(), st, pod)
			if err != nil || gaveUp != "" || !strings.Contains(refused, "hold the only copy of its partitions") {
				t.Fatalf("gave up %q, refused %q, err %v: want a refusal", gaveUp, refused, err)
			}
			if err := c.Get(context.Background(), client.ObjectKeyFromObject(claim), &corev1.PersistentVolumeClaim{}); err != nil {
				t.Errorf("the claim: %v", err)
			}
		})
	}
}
