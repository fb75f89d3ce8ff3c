package controller

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	ackov1alpha1 "github.com/acko-io/acko/api/v1alpha1"
	"github.com/acko-io/acko/internal/aerospike"
	"github.com/acko-io/acko/internal/config"
)

// LogReader reads the last lines of a pod's container log (pods.LogTail).
type LogReader interface {
	Tail(ctx context.Context, pod *corev1.Pod, container string, lines int64) ([]string, error)
}

// coldStartLogLines is how much of asd's log tells where a cold start is: its ticker writes a line per
// namespace every 2 s, and nothing else is logged meanwhile.
const coldStartLogLines = 64

// observeColdStarts reads, for each pod whose container runs while its node answers nothing, whether
// its asd is reading its persistent namespaces back (aerospike.ParseColdStart): a Community Edition asd
// always cold starts, opening its ports only once its devices are read, minutes to hours on large ones.
// The progress goes to status.pods[*].dataLoading, and what counts as progress moves the restart's
// deadline (progressSince). Only clusters with persistent namespaces, only pods that do not answer:
// a steady cluster reads no log.
func (r *AerospikeClusterReconciler) observeColdStarts(ctx context.Context, st *clusterState) {
	if r.Logs == nil || !st.healthOK || !config.HasPersistentNamespace(st.cluster) {
		return
	}
	st.loading = map[string]*ackov1alpha1.DataLoading{}
	for _, name := range st.members {
		if st.answers(name) {
			continue
		}
		lines, err := r.Logs.Tail(ctx, st.pods[name], ackov1alpha1.AerospikeContainerName, coldStartLogLines)
		if err != nil {
			// No log is no reason to fail the reconcile: the pod is waited for as any other.
			logf.FromContext(ctx).V(1).Info("cannot read the Aerospike log", "pod", name, "error", err.Error())
			continue
		}
		cs, loading := aerospike.ParseColdStart(lines)
		if !loading {
			continue
		}
		dl := &ackov1alpha1.DataLoading{Message: cs.String(), Records: cs.Records(), Progressed: metav1.NewTime(st.now)}
		if prev := st.cluster.Status.Pods[name].DataLoading; prev != nil && prev.Message == dl.Message {
			dl.Progressed = prev.Progressed // no progress since
		}
		st.loading[name] = dl
	}
}

// dataLoading is the pod's cold start as this reconcile read it, else as status last recorded it,
// while its node answers nothing (nil otherwise).
func (st *clusterState) dataLoading(pod string) *ackov1alpha1.DataLoading {
	if st.answers(pod) {
		return nil
	}
	if st.loading != nil {
		return st.loading[pod]
	}
	return st.cluster.Status.Pods[pod].DataLoading
}

// progressSince is when a wait for the pod that began at started last saw progress: a cold start that
// advances moves it on, so only time without progress counts against a deadline.
func (st *clusterState) progressSince(pod string, started time.Time) time.Time {
	if dl := st.dataLoading(pod); dl != nil && dl.Progressed.After(started) {
		return dl.Progressed.Time
	}
	return started
}
