package cluster

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	ackov1alpha1 "github.com/acko-io/acko/api/v1alpha1"
	"github.com/acko-io/acko/internal/aerospike"
	"github.com/acko-io/acko/internal/config"
	"github.com/acko-io/acko/internal/resources"
)

// coldStartLogLines is how much of asd's log tells where a cold start is: its ticker writes a line per
// namespace every 5 s (asd 8.1.2.0's storage.c, TICKER_INTERVAL), and nothing else is logged meanwhile.
const coldStartLogLines = 64

// observeColdStarts reads, for each pod whose container runs while its node answers nothing, whether
// its asd is reading its persistent namespaces back (aerospike.ParseColdStart): a Community Edition asd
// always cold starts, opening its ports only once its devices are read, minutes to hours on large ones.
// The progress goes to status.pods[*].dataLoading, and what counts as progress moves the restart's
// deadline (progressSince). The end of the load is progress too: the record stays, "data loaded", until
// the pod is Ready, so that rejoining has its own deadline. Only clusters with persistent namespaces,
// only pods that do not answer: a steady cluster reads no log.
func (r *AerospikeClusterReconciler) observeColdStarts(ctx context.Context, st *clusterState) {
	if r.Logs == nil || !st.healthOK {
		return
	}
	st.loading = map[string]*ackov1alpha1.DataLoading{}
	if !config.HasPersistentNamespace(st.cluster) {
		return
	}
	for _, name := range st.members {
		prev := st.cluster.Status.Pods[name].DataLoading
		if st.answers(name) {
			if prev != nil && !resources.PodReady(st.pods[name]) {
				st.loading[name] = loaded(prev, st.now)
			}
			continue
		}
		lines, err := r.readLog(ctx, st.pods[name])
		if err != nil {
			// No log is no reason to fail the reconcile; the progress last read stands until the next read
			// (found in CI: a read that failed under load dropped it, and the deadline counted from the restart).
			logf.FromContext(ctx).V(1).Info("cannot read the Aerospike log", "pod", name, "error", err.Error())
			if prev != nil {
				st.loading[name] = prev
			}
			continue
		}
		cs, loading := aerospike.ParseColdStart(lines)
		if !loading {
			// The log says the load ended before a reading shows the node answering (found in CI): that
			// end is progress as well.
			if prev != nil && !resources.PodReady(st.pods[name]) {
				st.loading[name] = loaded(prev, st.now)
			}
			continue
		}
		dl := &ackov1alpha1.DataLoading{Message: cs.String(), Records: cs.Records(), Progressed: metav1.NewTime(st.now)}
		if prev != nil && prev.Message == dl.Message {
			dl.Progressed = prev.Progressed // no progress since
		}
		st.loading[name] = dl
	}
}

// logReadTimeout bounds one log read: a kubelet that does not answer must not hold the reconcile.
const logReadTimeout = 5 * time.Second

// readLog reads the tail of the pod's Aerospike log, within logReadTimeout.
func (r *AerospikeClusterReconciler) readLog(ctx context.Context, pod *corev1.Pod) ([]string, error) {
	ctx, cancel := context.WithTimeout(ctx, logReadTimeout)
	defer cancel()
	return r.Logs.Tail(ctx, pod, ackov1alpha1.AerospikeContainerName, coldStartLogLines)
}

// dataLoaded is the message of a cold start that ended: the node answers, and rejoins.
const dataLoaded = "data loaded; rejoining the cluster"

// loaded is the record of a cold start that ended: its end is progress.
func loaded(prev *ackov1alpha1.DataLoading, now time.Time) *ackov1alpha1.DataLoading {
	if prev.Message == dataLoaded {
		return prev
	}
	return &ackov1alpha1.DataLoading{Message: dataLoaded, Records: prev.Records, Progressed: metav1.NewTime(now)}
}

// coldStart is the pod's last cold start as this reconcile read it, else as status last recorded it
// (nil when none is under way or just ended).
func (st *clusterState) coldStart(pod string) *ackov1alpha1.DataLoading {
	if st.loading != nil {
		return st.loading[pod]
	}
	return st.cluster.Status.Pods[pod].DataLoading
}

// dataLoading is the pod's cold start while its node answers nothing (nil otherwise).
func (st *clusterState) dataLoading(pod string) *ackov1alpha1.DataLoading {
	if st.answers(pod) {
		return nil
	}
	return st.coldStart(pod)
}

// progressSince is when a wait for the pod that began at started last saw progress: a cold start that
// advances, and its end, move it on, so only time without progress counts against a deadline.
func (st *clusterState) progressSince(pod string, started time.Time) time.Time {
	if dl := st.coldStart(pod); dl != nil && dl.Progressed.After(started) {
		return dl.Progressed.Time
	}
	return started
}
