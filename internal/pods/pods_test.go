package pods

import (
	"context"
	"encoding/json"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	ackov1alpha1 "github.com/acko-io/acko/api/v1alpha1"
)

// What is recorded of a pod instance never lands on a newer pod of the name: the API server refuses a
// patch whose metadata.uid differs (the fake client would rewrite the UID, so the test refuses as the API
// server does), and the record of an instance that is gone is no error.
func TestARecordOfAnOldInstanceNeverLandsOnTheNewOne(t *testing.T) {
	ctx := context.Background()
	current := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "aero-2", UID: "uid-new",
		Annotations: map[string]string{ackov1alpha1.AnnotationConfigHash: "from-the-configmap"}}}
	c := interceptor.NewClient(fake.NewClientBuilder().WithObjects(current).Build(), interceptor.Funcs{
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, p client.Patch, opts ...client.PatchOption) error {
			data, _ := p.Data(obj)
			var patch struct {
				Metadata struct{ UID string } `json:"metadata"`
			}
			if json.Unmarshal(data, &patch) == nil && patch.Metadata.UID != "" && patch.Metadata.UID != "uid-new" {
				return apierrors.NewInvalid(schema.GroupKind{Kind: "Pod"}, obj.GetName(),
					field.ErrorList{field.Invalid(field.NewPath("metadata", "uid"), patch.Metadata.UID, "field is immutable")})
			}
			return c.Patch(ctx, obj, p, opts...)
		},
	})
	old := current.DeepCopy()
	old.UID = "uid-old"
	if err := RecordConfig(ctx, c, old, "what-the-old-one-ran"); err != nil {
		t.Fatalf("recording for an instance that is gone: %v", err)
	}
	got := &corev1.Pod{}
	if err := c.Get(ctx, client.ObjectKeyFromObject(current), got); err != nil {
		t.Fatal(err)
	}
	if got.UID != "uid-new" || got.Annotations[ackov1alpha1.AnnotationConfigHash] != "from-the-configmap" {
		t.Fatalf("the old instance's record landed on the new pod: uid %s, config-hash %s", got.UID,
			got.Annotations[ackov1alpha1.AnnotationConfigHash])
	}
	if err := RecordConfig(ctx, c, got, "what-it-runs"); err != nil {
		t.Fatal(err)
	}
	if err := c.Get(ctx, client.ObjectKeyFromObject(current), got); err != nil || got.Annotations[ackov1alpha1.AnnotationConfigHash] != "what-it-runs" {
		t.Fatalf("the current instance's record: %v %v", got.Annotations, err)
	}
}
