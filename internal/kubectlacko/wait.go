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
	// backupTimeout bounds backup and restore: asbackup and asrestore take as long as the data needs.
	backupTimeout = 2 * time.Hour
)

// watchCluster calls observe with the cluster as it is and after every change, until observe says
// done or fails, the cluster is deleted, or ctx ends. It re-lists after a broken watch, so a long
// wait survives API server timeouts.
func (s *session) watchCluster(ctx context.Context, name string,
	observe func(*ackov1alpha1.AerospikeCluster) (bool, error)) error {
	return watchNamed(ctx, s, "AerospikeCluster", name, &ackov1alpha1.AerospikeCluster{},
		func() client.ObjectList { return &ackov1alpha1.AerospikeClusterList{} }, observe)
}

// watchNamed is watchCluster for any kind: obj is an empty object of the kind, newList an empty list
// of it.
func watchNamed[T client.Object](ctx context.Context, s *session, kind, name string, obj T,
	newList func() client.ObjectList, observe func(T) (bool, error)) error {
	one := func(raw metav1.ListOptions) []client.ListOption {
		return []client.ListOption{client.InNamespace(s.namespace), client.MatchingFields{"metadata.name": name},
			&client.ListOptions{Raw: &raw}}
	}
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, raw metav1.ListOptions) (runtime.Object, error) {
			list := newList()
			return list, s.client.List(ctx, list, one(raw)...)
		},
		WatchFuncWithContext: func(ctx context.Context, raw metav1.ListOptions) (watch.Interface, error) {
			return s.client.Watch(ctx, newList(), one(raw)...)
		},
	}
	_, err := watchtools.UntilWithSync(ctx, lw, obj, nil,
		func(ev watch.Event) (bool, error) {
			switch ev.Type {
			case watch.Deleted:
				return false, fmt.Errorf("%s %s/%s was deleted", kind, s.namespace, name)
			case watch.Error:
				return false, apierrors.FromObject(ev.Object)
			}
			o, ok := ev.Object.(T)
			if !ok {
				return false, nil
			}
			return observe(o)
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
