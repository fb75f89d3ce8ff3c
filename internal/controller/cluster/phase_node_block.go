package cluster

import (
	"context"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ackov1alpha1 "github.com/acko-io/acko/api/v1alpha1"
	"github.com/acko-io/acko/internal/resources"
)

// Node maintenance (spec.nodeBlockList). The pods' template keeps them off the blocked nodes (a required
// node affinity, outside the pod spec hash: pods elsewhere are not outdated by the list), and a pod on a
// blocked node is outdated with reason NodeBlocked: the rolling restart moves it, one pod at a time,
// through the same door as every take-down (an eviction step, checked again right before the act),
// and follows it until its successor is Ready elsewhere and the cluster is stable again (its copies
// refilled) before it moves the next. A pod with local volumes on its node gives them up with the
// move: recorded first in status.pods[].volumesGivenUp, as a lost node's, so that its successor counts
// as not holding its copies until a reading shows every node in one stable cluster; then its claims are
// deleted (they wait for the pod, under their protection finalizer) and the pod is evicted. From that
// record on the move is finished whatever the list says: the pod cannot start again on its claims.

// onBlockedNode: the pod runs on a node of spec.nodeBlockList.
func (st *clusterState) onBlockedNode(pod *corev1.Pod) bool {
	return pod.Spec.NodeName != "" && slices.Contains(st.cluster.Spec.NodeBlockList, pod.Spec.NodeName)
}

// volumesGivenUp: the operator gave up this pod instance's volumes (a move whose eviction is still to
// go, or a lost node's give-up).
func (st *clusterState) volumesGivenUp(pod *corev1.Pod) bool {
	g := st.cluster.Status.Pods[pod.Name].VolumesGivenUp
	return g != nil && g.UID == string(pod.UID)
}

// moveStarted: the pod's move off a blocked node gave up its volumes already (its eviction may still
// have to go): it is finished whatever the list says now.
func (st *clusterState) moveStarted(pod *corev1.Pod) bool {
	return st.volumesGivenUp(pod) && movesOff(st.cluster.Status.Pods[pod.Name].Update)
}

// mustMove: the pod is to be moved off its node: it runs on a blocked node, or its move gave up its
// volumes already. Only a pod that is Ready (or broken by its container state, whose asd serves
// nothing) is moved by the roll; one not Ready on a lost node is the lost-node path's (recoverLostNodes),
// and one that is starting is moved once it is Ready.
func (st *clusterState) mustMove(pod *corev1.Pod) bool {
	return (st.onBlockedNode(pod) || st.moveStarted(pod)) && (resources.PodReady(pod) || st.broken[pod.Name] != "")
}

// moveOff turns the outdated pod's update into a move when the pod must leave its node: an eviction
// (its successor gets the template that keeps it off the blocked nodes), reason NodeBlocked. A new
// replication-factor, which every node takes together, goes first.
func (st *clusterState) moveOff(o outdatedPod, needed bool) (outdatedPod, bool) {
	if !st.mustMove(o.pod) || needed && o.method == ackov1alpha1.UpdateLiveTogether {
		return o, needed
	}
	return outdatedPod{pod: o.pod, reason: ackov1alpha1.RestartReasonNodeBlocked, method: ackov1alpha1.UpdateEvict}, true
}

// isMove: the outdated pod is moved off a blocked node.
func isMove(o outdatedPod) bool { return o.reason == ackov1alpha1.RestartReasonNodeBlocked }

// localClaims are the pod's claims whose volumes live on its node: of a class of
// spec.storage.localVolumes, or bound to a persistent volume pinned to that node by hostname. Read from
// the API server: what is decided here deletes data.
func (r *AerospikeClusterReconciler) localClaims(ctx context.Context, st *clusterState,
	pod *corev1.Pod) ([]*corev1.PersistentVolumeClaim, error) {
	var classes []string
	if lv := localVolumes(st.cluster); lv != nil {
		classes = lv.StorageClasses
	}
	all, _, err := r.podClaims(ctx, pod)
	if err != nil {
		return nil, err
	}
	var out []*corev1.PersistentVolumeClaim
	for _, pvc := range all {
		local := ofClass(pvc, classes)
		if !local && pvc.Spec.VolumeName != "" {
			pv := &corev1.PersistentVolume{}
			if err := r.APIReader.Get(ctx, types.NamespacedName{Name: pvc.Spec.VolumeName}, pv); client.IgnoreNotFound(err) != nil {
				return nil, err
			} else if err == nil {
				local = pinnedHostname(pv) != "" && pinnedHostname(pv) == pod.Spec.NodeName
			}
		}
		if local {
			out = append(out, pvc)
		}
	}
	return out, nil
}

// describeMoves says, for status.pods[].nodeBlocked, where the move of each pod on a blocked node (or
// whose move is under way) stands; why is what holds the roll now ("" when nothing does).
func (st *clusterState) describeMoves() {
	st.moveWaits = map[string]string{}
	why := "waiting for its turn"
	if st.work != nil {
		why = st.work.message
	}
	for name, pod := range st.pods {
		u := st.cluster.Status.Pods[name].Update
		moving := movesOff(u)
		if !moving && !st.onBlockedNode(pod) {
			continue
		}
		node := pod.Spec.NodeName
		switch {
		case moving && u.Done:
			st.moveWaits[name] = "moved off its blocked node: " + why
		case moving:
			st.moveWaits[name] = fmt.Sprintf("being moved off node %s (one pod at a time, under the safety rule): %s", node, why)
		case st.isOutdated(name):
			st.moveWaits[name] = fmt.Sprintf("waits to be moved off node %s (one pod at a time, under the safety rule): %s", node, why)
		case pod.DeletionTimestamp != nil:
			st.moveWaits[name] = fmt.Sprintf("on node %s: terminating", node)
		default:
			st.moveWaits[name] = fmt.Sprintf("waits to be moved off node %s: the pod is not Ready (a pod not Ready on a lost "+
				"node is recovered by spec.storage.localVolumes)", node)
		}
	}
}
