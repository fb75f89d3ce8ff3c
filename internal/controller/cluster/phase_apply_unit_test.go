package cluster

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/acko-io/acko/test/testcluster"
)

// A child the operator created a moment ago, which the cache does not show yet, is its own: its create
// refused with AlreadyExists is no conflict (the model showed the cluster Error Stalled ChildConflict for a
// retry interval). A child of the same name that another owner made still is one.
func TestChildNotInTheCacheYetIsNoConflict(t *testing.T) {
	f := newDoorFixture(t, testcluster.Build(sized(3)))
	st := f.observe()
	var svc *corev1.Service
	for _, obj := range st.objects {
		if s, ok := obj.(*corev1.Service); ok {
			svc = s
			break
		}
	}
	if svc == nil {
		t.Fatal("no Service among the children")
	}
	f.must(f.c.Create(f.ctx, svc.DeepCopy()))
	// The cache lags: it has not seen the Service the operator created.
	f.r.Client = interceptor.NewClient(f.c.(client.WithWatch), interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			if _, ok := obj.(*corev1.Service); ok {
				return apierrors.NewNotFound(corev1.Resource("services"), key.Name)
			}
			return c.Get(ctx, key, obj, opts...)
		}})
	if stop, err := f.r.applyChild(f.ctx, st, svc.DeepCopy()); stop || err != nil || st.invalid != "" {
		t.Fatalf("our own Service not in the cache: stop=%v err=%v invalid=%q", stop, err, st.invalid)
	}

	foreign := svc.DeepCopy()
	f.must(f.c.Delete(f.ctx, foreign))
	foreign.ResourceVersion, foreign.OwnerReferences = "", nil
	f.must(f.c.Create(f.ctx, foreign))
	if stop, err := f.r.applyChild(f.ctx, st, svc.DeepCopy()); !stop || err != nil ||
		!strings.Contains(st.invalid, "is not owned by this AerospikeCluster") {
		t.Fatalf("a foreign Service: stop=%v err=%v invalid=%q", stop, err, st.invalid)
	}
}
