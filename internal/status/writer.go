// Package status is the one place an AerospikeCluster's status is written (CloudNativePG's
// pattern): named transactions, each skipped when it changes nothing. Summaries are retried on conflict
// on a fresh read; state-machine transitions are written with optimistic locking at the
// resourceVersion they were decided on, and a conflict means "decide again" (ErrStale), never a blind
// retry.
package status

import (
	"context"
	"errors"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ackov1alpha1 "github.com/acko-io/acko/api/v1alpha1"
)

// ErrStale is returned by a transition whose status write conflicted: the step was decided on an
// older version of the cluster, so it is decided again on the next reconcile instead of retried.
var ErrStale = errors.New("status changed since it was read")

// Writer writes status. Both kinds of write skip a write that changes nothing and update the
// caller's object in place, so later phases see what was written.
type Writer struct {
	client client.Client
	// reader reads the cluster fresh from the API server after a conflict (the cache may lag).
	reader client.Reader
}

// NewWriter writes through c, re-reading through reader (the manager's API reader, around the cache).
func NewWriter(c client.Client, reader client.Reader) *Writer {
	return &Writer{client: c, reader: reader}
}

// Update applies an idempotent mutation (phase, conditions, pod facts) with retry-on-conflict;
// the first attempt uses the cached object, each retry a fresh read. A fresh read of a newer
// generation ends it with ErrStale: the status is decided again for the new spec.
func (w *Writer) Update(ctx context.Context, cluster *ackov1alpha1.AerospikeCluster,
	mutate func(*ackov1alpha1.AerospikeClusterStatus)) error {
	return w.update(ctx, cluster, false, mutate)
}

// UpdateFresh is Update with a fresh read before every attempt, for writes that must not be
// decided on a lagging cache (ADR-0018: the pause acknowledgement).
func (w *Writer) UpdateFresh(ctx context.Context, cluster *ackov1alpha1.AerospikeCluster,
	mutate func(*ackov1alpha1.AerospikeClusterStatus)) error {
	return w.update(ctx, cluster, true, mutate)
}

func (w *Writer) update(ctx context.Context, cluster *ackov1alpha1.AerospikeCluster, fresh bool,
	mutate func(*ackov1alpha1.AerospikeClusterStatus)) error {
	if fresh && !changes(cluster, mutate) {
		// The cache already shows this status: a paused cluster's reconciles make no API call at all.
		return nil
	}
	target := cluster.DeepCopy()
	first := true
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if fresh || !first {
			if err := w.reader.Get(ctx, client.ObjectKeyFromObject(cluster), target); err != nil {
				return err
			}
			if target.Generation != cluster.Generation {
				// The spec changed since this status was decided (a pause, say): writing it would
				// describe the old spec, e.g. say Running on a cluster that is now paused.
				return ErrStale
			}
		}
		first = false
		return w.write(ctx, target, mutate)
	})
	if err == nil {
		*cluster = *target
	}
	return err
}

// WriteStatus applies a state-machine transition with optimistic locking at the cluster's
// resourceVersion; see operations.StatusWriter.
func (w *Writer) WriteStatus(ctx context.Context, cluster *ackov1alpha1.AerospikeCluster,
	mutate func(*ackov1alpha1.AerospikeClusterStatus)) error {
	target := cluster.DeepCopy()
	if err := w.write(ctx, target, mutate); err != nil {
		if apierrors.IsConflict(err) {
			return ErrStale
		}
		return err
	}
	*cluster = *target
	return nil
}

func (w *Writer) write(ctx context.Context, cluster *ackov1alpha1.AerospikeCluster,
	mutate func(*ackov1alpha1.AerospikeClusterStatus)) error {
	if !changes(cluster, mutate) {
		return nil
	}
	mutate(&cluster.Status)
	return w.client.Status().Update(ctx, cluster)
}

// changes reports whether mutate would change the cluster's status.
func changes(cluster *ackov1alpha1.AerospikeCluster, mutate func(*ackov1alpha1.AerospikeClusterStatus)) bool {
	after := cluster.Status.DeepCopy()
	mutate(after)
	return !equality.Semantic.DeepEqual(&cluster.Status, after)
}
