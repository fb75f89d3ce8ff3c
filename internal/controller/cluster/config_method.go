package cluster

import (
	"context"
	"maps"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ackov1alpha1 "github.com/acko-io/acko/api/v1alpha1"
	"github.com/acko-io/acko/internal/config"
	"github.com/acko-io/acko/internal/config/live"
	"github.com/acko-io/acko/internal/liveconfig"
	"github.com/acko-io/acko/internal/resources"
)

// runningPrefix names the ConfigMap keys that keep the files the rack's pods still run:
// running-<config hash>.conf.
const runningPrefix = "running-"

func runningKey(hash string) string { return runningPrefix + hash + ".conf" }

// keepRunningConfigs keeps in the rack's ConfigMap, beside the desired file, every file a pod of the
// rack still runs (it was the ConfigMap's file when the pod loaded it), until no pod runs it: the
// method of a config change is chosen by comparing the file a pod runs with the desired one, and the
// ConfigMap is where that file is known without asking the pod. A file it never held (pods older than
// this operator) stays unknown. Both are recorded in st.configs by identity.
func (r *AerospikeClusterReconciler) keepRunningConfigs(ctx context.Context, st *clusterState, cm *corev1.ConfigMap,
	rack int32) error {
	desired := config.Hash(cm.Data[config.FileName])
	st.configs[desired] = cm.Data[config.FileName]
	existing := &corev1.ConfigMap{}
	switch err := r.Get(ctx, client.ObjectKeyFromObject(cm), existing); {
	case apierrors.IsNotFound(err):
		return nil
	case err != nil:
		return err
	case !ownedBy(existing, st.cluster):
		return nil // applyChild reports the conflict
	}
	known := map[string]string{}
	for key, text := range existing.Data {
		if key == config.FileName || strings.HasPrefix(key, runningPrefix) {
			known[config.Hash(text)] = text
		}
	}
	delete(known, desired)
	running := runningHashes(st.pods, rack)
	if !allIn(known, running) {
		// A file is about to be dropped: the cache may lag a pod's record of the file it runs (model seed
		// 50724: a record made one step before was not seen, the file was dropped, the pod's file was
		// unknown ever after, and a replication-factor change went to it alone). Ask the API server.
		pods, err := r.readPods(ctx, st)
		if err != nil {
			return err
		}
		maps.Copy(running, runningHashes(pods, rack))
	}
	for hash, text := range known {
		if running[hash] {
			cm.Data[runningKey(hash)] = text
			st.configs[hash] = text
		}
	}
	return nil
}

// runningHashes are the config hashes the rack's pods record.
func runningHashes(pods map[string]*corev1.Pod, rack int32) map[string]bool {
	hashes := map[string]bool{}
	for _, pod := range pods {
		if rackOf(pod) == rack {
			hashes[pod.Annotations[ackov1alpha1.AnnotationConfigHash]] = true
		}
	}
	return hashes
}

// allIn: every key of known is in set.
func allIn(known map[string]string, set map[string]bool) bool {
	for k := range known {
		if !set[k] {
			return false
		}
	}
	return true
}

// keepPodFiles gives a file of its own, beyond the spec's size, to every pod the rack's StatefulSet may
// create or recreate: each ordinal below its replicas, and below the highest pod that exists (a
// StatefulSet created again over its pods asks for them all, replicasToCreate). A pod that leaves in a
// scale-down may still be recreated (a drain, a delete) before its StatefulSet shrinks, and its init
// container copies its file (model seed 51575: a pod deleted below a leaving one was recreated by the
// StatefulSet created again, with no file, and crash-looped for good).
func (r *AerospikeClusterReconciler) keepPodFiles(ctx context.Context, st *clusterState, cm *corev1.ConfigMap, rack int32) error {
	setName := st.cluster.StatefulSetName(rack)
	count := int32(0)
	sts := &appsv1.StatefulSet{}
	switch err := r.Get(ctx, client.ObjectKey{Namespace: st.cluster.Namespace, Name: setName}, sts); {
	case err == nil && sts.Spec.Replicas != nil:
		count = *sts.Spec.Replicas
	case err != nil && !apierrors.IsNotFound(err):
		return err
	}
	for name, pod := range st.pods {
		if o, ok := podOrdinal(setName, name); ok && rackOf(pod) == rack {
			count = max(count, o+1)
		}
	}
	for ordinal := range count {
		name := ackov1alpha1.StatefulSetPodName(setName, ordinal)
		key, content, ok := resources.PodConfigFile(st.cluster, name, cm.Data[config.FileName], st.addresses.Of(name))
		if ok && cm.Data[key] == "" {
			cm.Data[key] = content
		}
	}
	return nil
}

// configMapSize is what the API server holds to its limit (corev1.MaxSecretSize): every key and value.
func configMapSize(cm *corev1.ConfigMap) int {
	size := 0
	for k, v := range cm.Data {
		size += len(k) + len(v)
	}
	return size
}

// configMethod is how a pod takes a new config, from the plan of livePlan: live only when the planner
// says the node takes all of it live (live.Compute from the file it runs to the desired one); a static or
// mixed change goes straight to a restart in place, as does every change with no LiveConfigurer. A pod
// whose file is not known is tried live: the applier then plans from the pod's own copy and falls back
// to a restart.
func (st *clusterState) configMethod(plan live.Plan, known bool, err error) ackov1alpha1.PodUpdateMethod {
	switch {
	case st.noLive:
		return ackov1alpha1.UpdateInPlace
	case !known:
		return ackov1alpha1.UpdateLive
	case err != nil || !plan.Live():
		return ackov1alpha1.UpdateInPlace
	}
	return ackov1alpha1.UpdateLive
}

// factorPending names a pod whose node must still take a new replication-factor ("" when none).
func (st *clusterState) factorPending() string {
	for _, o := range st.outdated {
		if o.method == ackov1alpha1.UpdateLiveTogether {
			return o.pod.Name
		}
	}
	return ""
}

// livePlan is the change from the config the pod's node runs to its rack's desired one; known is false
// when either file is not known.
func (st *clusterState) livePlan(pod *corev1.Pod) (plan live.Plan, known bool, err error) {
	return st.planTo(pod, st.desiredConfigHash(pod))
}

// liveChange is the change the applier takes the pod's node through to the config whose identity is
// to: the plan the method was chosen by, made from the files the operator keeps (none when it does not
// know them: the applier then plans from the pod's own copy).
func (st *clusterState) liveChange(pod *corev1.Pod, to string) liveconfig.Change {
	change := liveconfig.Change{From: pod.Annotations[ackov1alpha1.AnnotationConfigHash], To: to}
	if plan, known, err := st.planTo(pod, to); known && err == nil {
		change.Plan = &plan
	}
	return change
}

// planTo plans the change from the config the pod's node runs (its record) to the config whose identity
// is to; known is false when either file is not known.
func (st *clusterState) planTo(pod *corev1.Pod, to string) (plan live.Plan, known bool, err error) {
	runningHash := pod.Annotations[ackov1alpha1.AnnotationConfigHash]
	running, knownRunning := st.configs[runningHash]
	desired, knownDesired := st.configs[to]
	if !knownRunning || !knownDesired {
		return live.Plan{}, false, nil
	}
	if runningHash == to {
		return live.Plan{}, true, nil
	}
	table, _, _ := config.TableFor(resources.AerospikeImage(pod)) // the newest when the tag names none
	// The rack's templates, with the pod's node id as its own file has it (a file without one, of an
	// older operator, keeps none: adding it is a restart).
	own := config.PodValues{NodeID: config.PodNodeID(st.cluster, pod.Name)}
	plan, err = live.Compute(config.PodFile(running, own), config.PodFile(desired, own), table)
	return plan, true, err
}
