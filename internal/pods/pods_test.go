package pods

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ackov1alpha1 "github.com/acko-io/acko/api/v1alpha1"
	"github.com/acko-io/acko/test/testenv"
)

// What is recorded of a pod instance never lands on a newer pod of the name: on a real kube-apiserver
// a merge patch carrying another UID is refused (metadata.uid: field is immutable), and the record of an
// instance that is gone is no error. (A fake client would rewrite the UID instead.)
func TestARecordOfAnOldInstanceNeverLandsOnTheNewOne(t *testing.T) {
	env, cfg, err := testenv.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Stop() })
	c, err := client.New(cfg, client.Options{Scheme: scheme.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	current := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "aero-2",
		Annotations: map[string]string{ackov1alpha1.AnnotationConfigHash: "from-the-configmap"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: ackov1alpha1.AerospikeContainerName, Image: "aerospike"}}}}
	if err := c.Create(ctx, current); err != nil {
		t.Fatal(err)
	}
	old := current.DeepCopy()
	old.UID = types.UID("00000000-0000-0000-0000-000000000001")
	if err := RecordConfig(ctx, c, old, "what-the-old-one-ran"); err != nil {
		t.Fatalf("recording for an instance that is gone: %v", err)
	}
	got := &corev1.Pod{}
	if err := c.Get(ctx, client.ObjectKeyFromObject(current), got); err != nil {
		t.Fatal(err)
	}
	if got.UID != current.UID || got.Annotations[ackov1alpha1.AnnotationConfigHash] != "from-the-configmap" {
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
