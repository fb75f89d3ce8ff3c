package cluster

import (
	"context"
	"fmt"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	ackov1alpha1 "github.com/acko-io/acko/api/v1alpha1"
	"github.com/acko-io/acko/internal/config"
	"github.com/acko-io/acko/internal/config/conffile"
	"github.com/acko-io/acko/internal/resources"
	"github.com/acko-io/acko/internal/tasks"
)

// OpenFileLimiter reads the open-file limit a pod's Aerospike container runs under (exec):
// podexec.Client.
type OpenFileLimiter interface {
	OpenFileLimit(ctx context.Context, pod *corev1.Pod) (int64, error)
}

// limitTask names the background read of a pod's open-file limit.
const limitTask = "open-file-limit/"

// checkOpenFileLimits holds a batch whose config raises proto-fd-max above the open-file limit of a
// pod: asd refuses it live ("can't set proto-fd-max 30000 > system limit 20000") and does not start
// with it, so the batch would end in a refusal, then a crash loop. The limit is read from the pod in
// the background, once per pod; meanwhile the batch waits (why). Above it, the rollout stops before
// any pod is touched (stuck: Stalled, RolloutStuck). Pods that already run the desired proto-fd-max,
// and broken pods (down already), are not checked.
func (r *AerospikeClusterReconciler) checkOpenFileLimits(st *clusterState, batch []outdatedPod) (why string) {
	if r.Limits == nil {
		return ""
	}
	for _, o := range batch {
		want, ok := st.protoFdMax(st.desiredConfigHash(o.pod), o.pod)
		running, known := st.protoFdMax(o.pod.Annotations[ackov1alpha1.AnnotationConfigHash], o.pod)
		if o.method == ackov1alpha1.UpdateReplace || !ok || known && running == want {
			continue
		}
		limit, reading := r.openFileLimit(st, o.pod)
		switch {
		case reading != "":
			return reading
		case want > limit:
			st.stuck = fmt.Sprintf("pod %s runs under an open-file limit of %d (Max open files in /proc/1/limits of its "+
				"Aerospike container) and the new config sets service.proto-fd-max %d: Aerospike refuses it live "+
				"(can't set proto-fd-max %d > system limit %d) and does not start with it; no pod is restarted: "+
				"set proto-fd-max to %d or less, or raise the container's open-file limit", o.pod.Name, limit, want,
				want, limit, limit)
			return st.stuck
		}
	}
	return ""
}

// openFileLimit is the pod's open-file limit once read; until then it starts the read (one task of the
// cluster at a time) and says what it waits for.
func (r *AerospikeClusterReconciler) openFileLimit(st *clusterState, pod *corev1.Pod) (limit int64, reading string) {
	if limit, ok := r.openFileLimits.get(st.key, pod.UID); ok {
		return limit, ""
	}
	name := limitTask + pod.Name
	reading = "reading the open-file limit of pod " + pod.Name
	if res, ok := st.results[name]; ok {
		if res.Err != nil {
			reading = fmt.Sprintf("%s: %v (trying again)", reading, res.Err)
		} else if limit, err := strconv.ParseInt(res.Note, 10, 64); err == nil {
			r.openFileLimits.keep(st.key, pod.UID, limit, st.pods)
			return limit, ""
		}
	}
	if _, busy := r.Tasks.Busy(st.key); !busy {
		r.Tasks.Run(tasks.Key{Cluster: st.key, Name: name}, func(ctx context.Context) (string, error) {
			limit, err := r.Limits.OpenFileLimit(ctx, pod)
			return strconv.FormatInt(limit, 10), err
		})
	}
	return 0, reading
}

// protoFdMax is the service.proto-fd-max of a known config file (by identity), read with the table of
// the pod's server version.
func (st *clusterState) protoFdMax(hash string, pod *corev1.Pod) (int64, bool) {
	text, ok := st.configs[hash]
	if !ok {
		return 0, false
	}
	f, err := conffile.Parse(text)
	if err != nil {
		return 0, false
	}
	table, _, _ := config.TableFor(resources.AerospikeImage(pod))
	for _, s := range conffile.Settings(f, table) {
		if s.Section.Path == "service" && s.Name == "proto-fd-max" {
			v, err := strconv.ParseInt(s.ServerValue(), 10, 64)
			return v, err == nil
		}
	}
	return 0, false
}

// openFileLimits are the open-file limits read, per cluster by pod UID. A cluster's entries go with it,
// and a pod's once it is gone (kept when the next one is read), so the cache holds the pods that exist.
type openFileLimits struct {
	perCluster[types.UID, int64]
}

// keep records a pod's limit and drops those of the cluster's pods that are gone.
func (l *openFileLimits) keep(key types.NamespacedName, uid types.UID, limit int64, pods map[string]*corev1.Pod) {
	live := map[types.UID]bool{}
	for _, p := range pods {
		live[p.UID] = true
	}
	l.retain(key, func(u types.UID) bool { return live[u] })
	l.set(key, uid, limit)
}
