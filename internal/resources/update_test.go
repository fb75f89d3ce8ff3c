package resources

import (
	"maps"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/acko-io/acko/api/v1alpha1"
)

// asStored is obj as the API server returns it after creation: defaults filled in, metadata and status
// set, and a label and annotation added by someone else.
func asStored(obj client.Object) client.Object {
	stored := obj.DeepCopyObject().(client.Object)
	stored.SetResourceVersion("42")
	stored.SetUID("child-uid")
	stored.SetCreationTimestamp(metav1.Now())
	stored.SetManagedFields([]metav1.ManagedFieldsEntry{{Manager: "acko", Operation: metav1.ManagedFieldsOperationUpdate}})
	stored.GetLabels()["added-by"] = "someone-else"
	annotations := maps.Clone(stored.GetAnnotations())
	if annotations == nil {
		annotations = map[string]string{}
	}
	annotations["kubectl.kubernetes.io/last-applied-configuration"] = "{}"
	stored.SetAnnotations(annotations)
	switch o := stored.(type) {
	case *corev1.Service:
		defaultService(o)
	case *appsv1.StatefulSet:
		defaultStatefulSet(o)
	case *policyv1.PodDisruptionBudget:
		o.Status = policyv1.PodDisruptionBudgetStatus{CurrentHealthy: 3, DesiredHealthy: 2, ExpectedPods: 3}
	}
	return stored
}

func defaultService(s *corev1.Service) {
	if s.Spec.ClusterIP == "" {
		s.Spec.ClusterIP = "10.96.0.17"
	}
	s.Spec.ClusterIPs = []string{s.Spec.ClusterIP}
	s.Spec.SessionAffinity = corev1.ServiceAffinityNone
	s.Spec.IPFamilies = []corev1.IPFamily{corev1.IPv4Protocol}
	s.Spec.IPFamilyPolicy = ptr.To(corev1.IPFamilyPolicySingleStack)
	s.Spec.InternalTrafficPolicy = ptr.To(corev1.ServiceInternalTrafficPolicyCluster)
	if s.Spec.Type == corev1.ServiceTypeNodePort || s.Spec.Type == corev1.ServiceTypeLoadBalancer {
		for i := range s.Spec.Ports {
			s.Spec.Ports[i].NodePort = 31000 + int32(i)
		}
		if s.Spec.ExternalTrafficPolicy == "" {
			s.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyCluster
		}
	}
}

func defaultStatefulSet(s *appsv1.StatefulSet) {
	s.Spec.RevisionHistoryLimit = ptr.To[int32](10)
	s.Spec.PersistentVolumeClaimRetentionPolicy = &appsv1.StatefulSetPersistentVolumeClaimRetentionPolicy{
		WhenDeleted: appsv1.RetainPersistentVolumeClaimRetentionPolicyType,
		WhenScaled:  appsv1.RetainPersistentVolumeClaimRetentionPolicyType,
	}
	pod := &s.Spec.Template.Spec
	pod.RestartPolicy = corev1.RestartPolicyAlways
	pod.DNSPolicy = corev1.DNSClusterFirst
	pod.SchedulerName = corev1.DefaultSchedulerName
	pod.TerminationGracePeriodSeconds = ptr.To[int64](30)
	if pod.SecurityContext == nil {
		pod.SecurityContext = &corev1.PodSecurityContext{}
	}
	for i := range pod.Containers {
		pod.Containers[i].TerminationMessagePath = corev1.TerminationMessagePathDefault
		pod.Containers[i].TerminationMessagePolicy = corev1.TerminationMessageReadFile
		pod.Containers[i].ImagePullPolicy = corev1.PullIfNotPresent
	}
	for i := range pod.Volumes {
		if cm := pod.Volumes[i].ConfigMap; cm != nil {
			cm.DefaultMode = ptr.To[int32](0o644)
		}
	}
	s.Status = appsv1.StatefulSetStatus{Replicas: 3, ReadyReplicas: 3, CurrentRevision: "aero-5d4f"}
}

func TestFreshlyStoredChildrenNeedNoUpdate(t *testing.T) {
	c := newCluster(withRacks(v1alpha1.Rack{ID: 1}, v1alpha1.Rack{ID: 2}), withVolumes(volume("data", "/data", "1Gi", "")))
	for _, obj := range allChildren(t, c) {
		if NeedsUpdate(asStored(obj), obj) {
			t.Errorf("%T %s: a stored copy with server defaults needs an update", obj, obj.GetName())
		}
	}
}

func TestNeedsUpdateSeesRealChanges(t *testing.T) {
	c := newCluster()
	rack := c.RackPlan()[0]
	sts := func(mods ...func(*v1alpha1.AerospikeCluster)) *appsv1.StatefulSet {
		c := newCluster(mods...)
		return StatefulSet(c, c.RackPlan()[0], "hash-1")
	}
	headless := HeadlessService(c)
	pdb := PodDisruptionBudget(c, 1, 1)
	for _, tc := range []struct {
		name              string
		existing, desired client.Object
	}{
		{"config data", asStored(ConfigMap(c, rack, "a", nil)), ConfigMap(c, rack, "b", nil)},
		{"replicas", asStored(sts()), sts(func(c *v1alpha1.AerospikeCluster) { c.Spec.Size = 4 })},
		{"image", asStored(sts()), sts(func(c *v1alpha1.AerospikeCluster) { c.Spec.Image = "aerospike:ce-8.1.2.0" })},
		{"config hash", asStored(sts()), StatefulSet(c, rack, "hash-2")},
		{"pod spec", asStored(sts()), sts(withPod(v1alpha1.PodOverrides{ServiceAccountName: "sa"}))},
		{"update strategy", mutate(asStored(sts()), func(s *appsv1.StatefulSet) {
			s.Spec.UpdateStrategy = appsv1.StatefulSetUpdateStrategy{}
		}), sts()},
		{"label removed", mutate(asStored(headless), func(s *corev1.Service) {
			delete(s.Labels, v1alpha1.LabelManagedBy)
		}), headless},
		{"service port", mutate(asStored(headless), func(s *corev1.Service) {
			s.Spec.Ports[3].TargetPort = intstr.FromInt32(3004)
		}), headless},
		{"publishNotReadyAddresses", mutate(asStored(headless), func(s *corev1.Service) {
			s.Spec.PublishNotReadyAddresses = false
		}), headless},
		{"service selector", mutate(asStored(ClientService(c)), func(s *corev1.Service) {
			s.Spec.Selector = map[string]string{"app": "other"}
		}), ClientService(c)},
		{"budget", mutate(asStored(pdb), func(p *policyv1.PodDisruptionBudget) {
			p.Spec.MaxUnavailable = ptr.To(intstr.FromInt32(2))
		}), pdb},
		{"budget while stable", asStored(PodDisruptionBudget(c, 1, 2)), pdb},
		{"kind mismatch", asStored(headless), pdb},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if !NeedsUpdate(tc.existing, tc.desired) {
				t.Fatal("NeedsUpdate = false, want true")
			}
			if tc.name == "kind mismatch" {
				return // nothing to apply: the reconciler reports such a child as a conflict
			}
			ApplyOwnedFields(tc.existing, tc.desired)
			if NeedsUpdate(tc.existing, tc.desired) {
				t.Errorf("still needs an update after ApplyOwnedFields: %+v", tc.existing)
			}
		})
	}
}

func mutate[T client.Object](obj client.Object, fn func(T)) client.Object {
	fn(obj.(T))
	return obj
}

// ApplyOwnedFields keeps what the server or others set, and what Kubernetes will not let change.
func TestApplyOwnedFieldsKeepsTheRest(t *testing.T) {
	c := newCluster()
	rack := c.RackPlan()[0]
	existing := asStored(StatefulSet(c, rack, "old")).(*appsv1.StatefulSet)
	existing.Spec.Selector.MatchLabels["legacy"] = "x" // pretend the stored selector differs
	bigger := newCluster(func(c *v1alpha1.AerospikeCluster) { c.Spec.Size = 7 })
	desired := StatefulSet(bigger, bigger.RackPlan()[0], "new")
	ApplyOwnedFields(existing, desired)
	switch {
	case *existing.Spec.Replicas != 7 || existing.Spec.Template.Annotations[v1alpha1.AnnotationConfigHash] != "new":
		t.Errorf("owned fields not applied: replicas %d template %v", *existing.Spec.Replicas, existing.Spec.Template.Annotations)
	case existing.Spec.Selector.MatchLabels["legacy"] != "x":
		t.Error("the immutable selector was replaced")
	case existing.Labels["added-by"] != "someone-else" || existing.ResourceVersion != "42":
		t.Errorf("foreign labels or metadata lost: %v %q", existing.Labels, existing.ResourceVersion)
	case ptr.Deref(existing.Spec.RevisionHistoryLimit, 0) != 10:
		t.Error("server defaults outside the owned fields were dropped")
	}
	svc := asStored(HeadlessService(c)).(*corev1.Service)
	svc.Spec.Ports = nil
	ApplyOwnedFields(svc, HeadlessService(c))
	if svc.Spec.ClusterIP != corev1.ClusterIPNone || len(svc.Spec.Ports) != 4 || NeedsUpdate(svc, HeadlessService(c)) {
		t.Errorf("service after ApplyOwnedFields: %+v", svc.Spec)
	}
}

// A per-pod Service keeps its allocated node port (the address its pod advertises) through an update,
// and an update sees a changed traffic policy, class or annotation.
func TestPodServiceUpdates(t *testing.T) {
	nodePort := newCluster(func(c *v1alpha1.AerospikeCluster) {
		c.Spec.ExternalAccess = &v1alpha1.ExternalAccess{Type: v1alpha1.ExternalNodePort}
	})
	lb := newCluster(func(c *v1alpha1.AerospikeCluster) {
		c.Spec.ExternalAccess = &v1alpha1.ExternalAccess{Type: v1alpha1.ExternalLoadBalancer,
			LoadBalancerClass: ptr.To("a"), ServiceAnnotations: map[string]string{"k": "v"}}
	})
	for _, c := range []*v1alpha1.AerospikeCluster{nodePort, lb} {
		if desired := PodService(c, "aero-0"); NeedsUpdate(asStored(desired), desired) {
			t.Errorf("%s: a stored per-pod Service needs an update", c.Spec.ExternalAccess.Type)
		}
	}
	existing := asStored(PodService(nodePort, "aero-0")).(*corev1.Service)
	desired := PodService(lb, "aero-0")
	if !NeedsUpdate(existing, desired) {
		t.Fatal("NodePort to LoadBalancer needs no update")
	}
	ApplyOwnedFields(existing, desired)
	switch {
	case NeedsUpdate(existing, desired):
		t.Errorf("still needs an update: %+v", existing.Spec)
	case existing.Spec.Ports[0].NodePort != 31000:
		t.Errorf("node port %d, want the allocated 31000 kept", existing.Spec.Ports[0].NodePort)
	case existing.Spec.ExternalTrafficPolicy != corev1.ServiceExternalTrafficPolicyCluster ||
		ptr.Deref(existing.Spec.LoadBalancerClass, "") != "a" || existing.Annotations["k"] != "v":
		t.Errorf("owned fields not applied: %+v %v", existing.Spec, existing.Annotations)
	}
	for name, change := range map[string]func(*corev1.Service){
		"traffic policy": func(s *corev1.Service) { s.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyLocal },
		"class":          func(s *corev1.Service) { s.Spec.LoadBalancerClass = ptr.To("b") },
		"annotation":     func(s *corev1.Service) { delete(s.Annotations, "k") },
	} {
		stored := asStored(desired).(*corev1.Service)
		change(stored)
		if !NeedsUpdate(stored, desired) {
			t.Errorf("a changed %s needs no update", name)
		}
	}
}
