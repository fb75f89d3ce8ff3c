package controller

import (
	"context"
	"net"
	"sort"
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ackov1alpha1 "github.com/acko-io/acko/api/v1alpha1"
	"github.com/acko-io/acko/internal/aerospike"
	"github.com/acko-io/acko/internal/config"
	"github.com/acko-io/acko/internal/resources"
	"github.com/acko-io/acko/internal/validation"
)

// validateSpec runs the webhook's validator again (webhooks can be bypassed): a spec that cannot be
// applied is reported in status and waits for the user, instead of failing reconcile after reconcile.
func (r *AerospikeClusterReconciler) validateSpec(_ context.Context, st *clusterState) (bool, error) {
	if errs := validation.ValidateClusterSpec(st.cluster); len(errs) > 0 {
		st.invalid, st.invalidReason = errs.ToAggregate().Error(), ackov1alpha1.ReasonInvalidSpec
		return true, nil
	}
	return false, nil
}

// renderChildren builds the desired children with the pure builders.
func (r *AerospikeClusterReconciler) renderChildren(_ context.Context, st *clusterState) (bool, error) {
	c := st.cluster
	st.racks = c.RackPlan()
	st.sets = map[string]*appsv1.StatefulSet{}
	st.objects = []client.Object{resources.HeadlessService(c), resources.ClientService(c), resources.PodDisruptionBudget(c)}
	for _, rack := range st.racks {
		conf, err := config.Render(c, rack, r.ClusterDomain)
		if err != nil {
			st.invalid, st.invalidReason = err.Error(), ackov1alpha1.ReasonInvalidSpec
			return true, nil
		}
		st.objects = append(st.objects, resources.ConfigMap(c, rack, conf))
		sts := resources.StatefulSet(c, rack, config.Hash(conf))
		st.sets[sts.Name] = sts
	}
	return false, nil
}

// observe reads the pods and StatefulSets from the cache and the Aerospike health from the
// prober's cache: no network call.
func (r *AerospikeClusterReconciler) observe(ctx context.Context, st *clusterState) (bool, error) {
	c := st.cluster
	pods := &corev1.PodList{}
	if err := r.List(ctx, pods, client.InNamespace(c.Namespace), client.MatchingLabels(c.SelectorLabels())); err != nil {
		return true, err
	}
	st.pods = map[string]*corev1.Pod{}
	for i := range pods.Items {
		st.pods[pods.Items[i].Name] = &pods.Items[i]
	}
	sets := &appsv1.StatefulSetList{}
	if err := r.List(ctx, sets, client.InNamespace(c.Namespace), client.MatchingLabels(c.SelectorLabels())); err != nil {
		return true, err
	}
	st.existingSets = map[string]*appsv1.StatefulSet{}
	for i := range sets.Items {
		if ownedBy(&sets.Items[i], c) {
			st.existingSets[sets.Items[i].Name] = &sets.Items[i]
		}
	}
	st.health, st.healthOK = r.Probers.Snapshot(st.key)
	st.outdated = st.findOutdated()
	return false, nil
}

// findOutdated lists the pods whose template differs from their rack's desired StatefulSet, in
// restart order: rack by rack, highest ordinal first (as a StatefulSet rolling update would).
func (st *clusterState) findOutdated() []outdatedPod {
	var out []outdatedPod
	for _, pod := range st.pods {
		sts := st.sets[st.cluster.StatefulSetName(rackOf(pod))]
		if sts == nil || pod.DeletionTimestamp != nil {
			continue // a rack being removed is scaled down, not rolled
		}
		if reason, needed := resources.RestartReason(pod, sts); needed {
			out = append(out, outdatedPod{pod: pod, reason: reason})
		}
	}
	sort.Slice(out, func(i, j int) bool {
		ri, oi, _ := st.cluster.ParsePodName(out[i].pod.Name)
		rj, oj, _ := st.cluster.ParsePodName(out[j].pod.Name)
		if ri != rj {
			return ri < rj
		}
		return oi > oj
	})
	return out
}

// rackOf reads the rack id label the builders put on pods and StatefulSets.
func rackOf(obj metav1.Object) int32 {
	id, err := strconv.ParseInt(obj.GetLabels()[ackov1alpha1.LabelRack], 10, 32)
	if err != nil {
		return 0
	}
	return int32(id)
}

// ensureProber keeps the prober's targets and pace in step with the pods; it polls faster while
// the operator waits on the cluster.
func (r *AerospikeClusterReconciler) ensureProber(st *clusterState) {
	var targets []aerospike.Target
	for name, pod := range st.pods {
		if pod.Status.PodIP != "" {
			targets = append(targets, aerospike.Target{PodName: name, Addr: net.JoinHostPort(pod.Status.PodIP, "3000")})
		}
	}
	sort.Slice(targets, func(i, j int) bool { return targets[i].PodName < targets[j].PodName })
	r.Probers.Ensure(st.key, aerospike.ProbeSpec{Targets: targets, ExpectedSize: st.expectedSize, Busy: st.work != nil})
}
