package kubectlacko

import (
	"context"
	"errors"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ackov1alpha1 "github.com/acko-io/acko/api/v1alpha1"
)

// Default deadlines of the commands (--timeout).
const (
	readTimeout    = time.Minute
	pauseTimeout   = 2 * time.Minute
	restartTimeout = 30 * time.Minute
)

// watchCluster calls observe with the cluster as it is and after every change, until observe says
// done or fails, the cluster is deleted, or ctx ends. It re-lists after a broken watch, so a long
// wait survives API server timeouts.
func (s *session) watchCluster(ctx context.Context, name string,
	observe func(*ackov1alpha1.AerospikeCluster) (bool, error)) error {
	one := func(raw metav1.ListOptions) []client.ListOption {
		return []client.ListOption{client.InNamespace(s.namespace), client.MatchingFields{"metadata.name": name},
			&client.ListOptions{Raw: &raw}}
	}
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, raw metav1.ListOptions) (runtime.Object, error) {
			list := &ackov1alpha1.AerospikeClusterList{}
			return list, s.client.List(ctx, list, one(raw)...)
		},
		WatchFuncWithContext: func(ctx context.Context, raw metav1.ListOptions) (watch.Interface, error) {
			return s.client.Watch(ctx, &ackov1alpha1.AerospikeClusterList{}, one(raw)...)
		},
	}
	_, err := watchtools.UntilWithSync(ctx, lw, &ackov1alpha1.AerospikeCluster{}, nil,
		func(ev watch.Event) (bool, error) {
			switch ev.Type {
			case watch.Deleted:
				return false, fmt.Errorf("AerospikeCluster %s/%s was deleted", s.namespace, name)
			case watch.Error:
				return false, apierrors.FromObject(ev.Object)
			}
			c, ok := ev.Object.(*ackov1alpha1.AerospikeCluster)
			if !ok {
				return false, nil
			}
			return observe(c)
		})
	if err != nil && ctx.Err() != nil {
		return ctx.Err()
	}
	return err
}

// timedOut rewrites a deadline that passed into what the user should know: what was awaited, for
// how long, and that the request itself stands.
func timedOut(err error, timeout time.Duration, what string) error {
	if errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("timed out after %s (--timeout) waiting for %s", timeout, what)
	}
	return err
}
