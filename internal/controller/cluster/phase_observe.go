package cluster

import (
	"context"
	"fmt"
	"maps"
	"net"
	"slices"
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ackov1alpha1 "github.com/acko-io/acko/api/v1alpha1"
	"github.com/acko-io/acko/internal/aerospike"
	"github.com/acko-io/acko/internal/config"
	"github.com/acko-io/acko/internal/pods"
	"github.com/acko-io/acko/internal/resources"
	"github.com/acko-io/acko/internal/validation"
)

// validateSpec runs the webhook's validator again (webhooks can be bypassed): a spec that cannot be
// applied is reported in status and waits for the user, instead of failing reconcile after reconcile.
// The server's own rules (ConfigViolations) are held against it only once it is known whether they
// would reach a pod (holdViolations).
func (r *AerospikeClusterReconciler) validateSpec(_ context.Context, st *clusterState) (bool, error) {
	if errs := validation.ValidateClusterSpec(st.cluster); len(errs) > 0 {
		st.invalid, st.invalidReason = errs.ToAggregate().Error(), ackov1alpha1.ReasonInvalidSpec
		return true, nil
	}
	st.violations = validation.ConfigViolations(st.cluster, r.ClusterDomain)
	return false, nil
}

// holdViolations ratchets the server's rules as the webhook does: a spec that breaks them stops
// before any pod is touched when it would bring a new config or template to a pod (or create the
// cluster); a cluster accepted before the rules, whose pods already run what the spec says, keeps
// working and shows the violations in the ConfigWarning condition.
func (r *AerospikeClusterReconciler) holdViolations(_ context.Context, st *clusterState) (bool, error) {
	if len(st.violations) == 0 {
		return false, nil
	}
	msg := st.violations.ToAggregate().Error()
	if len(st.outdated) > 0 || len(st.pods) == 0 {
		st.invalid, st.invalidReason = msg, ackov1alpha1.ReasonInvalidSpec
		return true, nil
	}
	st.configWarning = msg
	return false, nil
}

// renderChildren builds the desired children with the pure builders; each rack's ConfigMap also keeps
// the files its pods still run (keepRunningConfigs).
func (r *AerospikeClusterReconciler) renderChildren(ctx context.Context, st *clusterState) (bool, error) {
	c := st.cluster
	st.racks = c.RackPlan()
	st.sets = map[string]*appsv1.StatefulSet{}
	st.configs = map[string]string{}
	st.objects = append([]client.Object{resources.HeadlessService(c), resources.ClientService(c)}, st.podServices()...)
	if err := r.resolveAddresses(ctx, st); err != nil {
		return true, err
	}
	for _, rack := range st.racks {
		cm, sts, err := r.renderRack(c, rack, st.addresses)
		if err != nil {
			st.invalid, st.invalidReason = err.Error(), ackov1alpha1.ReasonInvalidSpec
			return true, nil
		}
		if err := r.keepRunningConfigs(ctx, st, cm, rack.ID); err != nil {
			return true, err
		}
		if err := r.keepPodFiles(ctx, st, cm, rack.ID); err != nil {
			return true, err
		}
		if size := configMapSize(cm); size > corev1.MaxSecretSize {
			st.invalid, st.invalidReason = fmt.Sprintf("the ConfigMap %s of rack %d would hold %d bytes (the config "+
				"once for the rack and once per pod), more than the %d bytes Kubernetes allows: make aerospikeConfig "+
				"smaller", cm.Name, rack.ID, size, corev1.MaxSecretSize), ackov1alpha1.ReasonInvalidSpec
			return true, nil
		}
		st.objects = append(st.objects, cm)
		st.sets[sts.Name] = sts
	}
	return false, nil
}

// renderRack builds a rack's ConfigMap and StatefulSet (its replicas are the rack's size).
func (r *AerospikeClusterReconciler) renderRack(c *ackov1alpha1.AerospikeCluster, rack ackov1alpha1.RackPlacement,
	addresses resources.PodAddresses) (*corev1.ConfigMap, *appsv1.StatefulSet, error) {
	conf, err := config.Render(c, rack, r.ClusterDomain)
	if err != nil {
		return nil, nil, err
	}
	sts := resources.StatefulSet(c, rack, config.Hash(conf))
	sts.Spec.Template.Annotations[ackov1alpha1.AnnotationReplicationFactor] = strconv.Itoa(config.ReplicationFactor(c))
	return resources.ConfigMap(c, rack, conf, addresses), sts, nil
}

// observePods reads the pods and the PodDisruptionBudget from the cache and the Aerospike health from
// the prober's cache: what the readiness gates and the budget follow (followReadings), which every
// reconcile needs, paused or not. No network call beyond the API server's cache.
func (r *AerospikeClusterReconciler) observePods(ctx context.Context, st *clusterState) error {
	c := st.cluster
	pods := &corev1.PodList{}
	if err := r.List(ctx, pods, client.InNamespace(c.Namespace), client.MatchingLabels(c.SelectorLabels())); err != nil {
		return err
	}
	st.pods = map[string]*corev1.Pod{}
	st.broken = map[string]string{}
	for i := range pods.Items {
		pod := &pods.Items[i]
		st.pods[pod.Name] = pod
		if resources.PodRunning(pod) {
			st.members = append(st.members, pod.Name)
		}
		if broken, why := resources.Broken(pod); broken {
			st.broken[pod.Name] = why
		}
	}
	slices.Sort(st.members)
	if err := r.recordCopiedConfigs(ctx, st); err != nil {
		return err
	}
	pdb := &policyv1.PodDisruptionBudget{}
	switch err := r.Get(ctx, client.ObjectKey{Namespace: c.Namespace, Name: c.PodDisruptionBudgetName()}, pdb); {
	case err == nil && ownedBy(pdb, c):
		st.existingPDB = pdb
	case err != nil && !apierrors.IsNotFound(err):
		return err
	}
	st.health, st.healthOK = r.Probers.Snapshot(st.key)
	st.health.Nodes = readingsOfTheirPods(st.health.Nodes, st.pods)
	st.split = st.healthOK && st.health.SplitSettled
	st.maxDown = st.runningMaxDown()
	st.held = st.heldPods()
	return nil
}

// recordCopiedConfigs records on each pod the config its init container copied when the pod started, where
// that is not the one its template's annotation says: the ConfigMap takes a new config before the
// StatefulSet's template does, and a pod created between the two (the operator killed, or the spec turned
// invalid, in between) copied the new file under the old annotation. Reading as running the old config, it
// was never outdated: after the user's fix of a config asd refuses it crash-looped for good (model hole 30).
// Only a pod that records nothing since it was created (it still has the template's replication-factor
// annotation) is judged by its report: a later record (a live change, a restart in place) is newer.
func (r *AerospikeClusterReconciler) recordCopiedConfigs(ctx context.Context, st *clusterState) error {
	for name, pod := range st.pods {
		copied := resources.CopiedConfig(pod)
		_, fromTemplate := pod.Annotations[ackov1alpha1.AnnotationReplicationFactor]
		if copied == "" || !fromTemplate || copied == pod.Annotations[ackov1alpha1.AnnotationConfigHash] {
			continue
		}
		if err := pods.RecordConfig(ctx, r.Client, pod, copied); err != nil {
			return err
		}
		recorded := pod.DeepCopy()
		recorded.Annotations[ackov1alpha1.AnnotationConfigHash] = copied
		delete(recorded.Annotations, ackov1alpha1.AnnotationReplicationFactor)
		delete(recorded.Annotations, ackov1alpha1.AnnotationFactorChanging)
		st.pods[name] = recorded
	}
	return nil
}

// readingsOfTheirPods keeps the readings taken of the pods as they are: a reading of an earlier instance
// of a pod's name (taken at another address, or before the pod was created) says nothing of the new one,
// which would otherwise read as a member of the cluster, Ready, before its node ever answered (model: a
// pod recreated right after its eviction was counted healthy by the budget while it refilled).
func readingsOfTheirPods(nodes map[string]aerospike.NodeHealth, pods map[string]*corev1.Pod) map[string]aerospike.NodeHealth {
	kept := make(map[string]aerospike.NodeHealth, len(nodes))
	for name, n := range nodes {
		pod := pods[name]
		if pod != nil && (n.ReadAt.Before(pod.CreationTimestamp.Time) ||
			pod.Status.PodIP != "" && n.Addr != "" && n.Addr != probeAddr(pod)) {
			continue
		}
		kept[name] = n
	}
	return kept
}

// probeAddr is where the prober reads the pod's node.
func probeAddr(pod *corev1.Pod) string { return net.JoinHostPort(pod.Status.PodIP, "3000") }

// observe reads the StatefulSets, finds the outdated pods and takes the background tasks' results
// (the pods were read by observePods).
func (r *AerospikeClusterReconciler) observe(ctx context.Context, st *clusterState) (bool, error) {
	c := st.cluster
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
	if errs := layoutChange(c, st.existingSets, st.pods); len(errs) > 0 {
		st.invalid, st.invalidReason = errs.ToAggregate().Error(), ackov1alpha1.ReasonInvalidSpec
		return true, nil
	}
	if err := r.renderRemovedRacks(st); err != nil {
		st.invalid, st.invalidReason = err.Error(), ackov1alpha1.ReasonInvalidSpec
		return true, nil
	}
	st.maxDown = st.runningMaxDown() // again, now that the desired configs are rendered
	st.outdated = st.findOutdated()
	st.results = r.takeResults(st)
	r.observeColdStarts(ctx, st)
	return false, nil
}

// layoutChange refuses a spec whose rack layout is not the one the cluster runs: a switch between the
// single-rack and the multi-rack layout that got past the webhook. Applied, it would start the new
// layout's pods beside the old ones and remove the old StatefulSets, whose pods no scale-down step names.
// The layout that runs is the StatefulSets' and that of the pods without one: a volume growth deletes a
// StatefulSet without its pods to create it again, and a switch in that window must not create the
// other layout's StatefulSet beside them (model seed 10381).
func layoutChange(c *ackov1alpha1.AerospikeCluster, sets map[string]*appsv1.StatefulSet,
	pods map[string]*corev1.Pod) field.ErrorList {
	running := make([]metav1.Object, 0, len(sets)+len(pods))
	for _, name := range slices.Sorted(maps.Keys(sets)) {
		running = append(running, sets[name])
	}
	for _, name := range slices.Sorted(maps.Keys(pods)) {
		if pod := pods[name]; pod.DeletionTimestamp == nil && metav1.GetControllerOf(pod) == nil {
			running = append(running, pod)
		}
	}
	for _, obj := range running {
		if errs := validation.LayoutChange(rackOf(obj) != 0, c.MultiRack()); len(errs) > 0 {
			return errs
		}
	}
	return nil
}

// renderRemovedRacks renders the children of the racks the spec no longer has, whose StatefulSets run
// until their pods have left: the spec's config and pod template, without the rack's own settings
// (gone with it). So a fix of the spec reaches them too: a pod of theirs that crash-loops on a config
// asd refuses is replaced with the fixed one (findOutdated), instead of holding the removal for ever.
// A removed rack whose StatefulSet a volume growth deleted without its pods is rendered too, from the
// pods: it is created again over them (removeOldRacks), or they would never leave (model seed 20305).
func (r *AerospikeClusterReconciler) renderRemovedRacks(st *clusterState) error {
	st.removedRacks = map[string]removedRack{}
	racks := map[string]ackov1alpha1.RackPlacement{}
	for name, existing := range st.existingSets {
		racks[name] = ackov1alpha1.RackPlacement{ID: rackOf(existing), Size: ptr.Deref(existing.Spec.Replicas, 0)}
	}
	for _, pod := range st.orphans() {
		if name := st.cluster.StatefulSetName(rackOf(pod)); st.existingSets[name] == nil {
			// Its replicas are set in removeOldRacks, up to the highest ordinal that runs; the ConfigMap
			// holds a file for each pod below it, which the StatefulSet creates again if missing (model
			// seed 41421: a pod recreated with no file of its own crash-looped, holding the removal).
			rack := racks[name]
			ordinal, _ := podOrdinal(name, pod.Name)
			rack.ID, rack.Size = rackOf(pod), max(rack.Size, ordinal+1)
			racks[name] = rack
		}
	}
	for name, rack := range racks {
		if st.sets[name] != nil {
			continue
		}
		cm, sts, err := r.renderRack(st.cluster, rack, st.addresses)
		if err != nil {
			return err
		}
		st.removedRacks[name] = removedRack{configMap: cm, set: sts}
	}
	return nil
}

// orphans are the pods that run with no StatefulSet (a volume growth deleted it, orphaning them).
func (st *clusterState) orphans() []*corev1.Pod {
	var out []*corev1.Pod
	for _, pod := range st.pods {
		if owner := metav1.GetControllerOf(pod); pod.DeletionTimestamp == nil &&
			(owner == nil || owner.Kind == "StatefulSet" && st.existingSets[owner.Name] == nil) {
			out = append(out, pod)
		}
	}
	return out
}

// findOutdated lists the pods whose template or config differs from their rack's desired
// StatefulSet, in restart order: rack by rack, highest ordinal first (as a StatefulSet rolling
// update would), each with how it is brought up to date.
func (st *clusterState) findOutdated() []outdatedPod {
	var out []outdatedPod
	desired := st.cluster.DesiredPodNames()
	for _, pod := range st.pods {
		sts := st.desiredSet(pod)
		if sts == nil || pod.DeletionTimestamp != nil || !slices.Contains(desired, pod.Name) && !st.replaceLeaving(pod) {
			continue // a pod of a rack being removed, or one a scale-down removes, leaves: it is not rolled
		}
		reason, needed := resources.RestartReason(pod, sts)
		if !needed && st.addressMoved(pod) {
			reason, needed = ackov1alpha1.RestartReasonAddressChanged, true
		}
		if !needed && st.grown[pod.Name] {
			reason, needed = ackov1alpha1.RestartReasonVolumeGrown, true
		}
		o := outdatedPod{pod: pod, reason: reason}
		if needed {
			o.method = st.updateMethod(pod, reason)
		}
		if o, needed = st.moveOff(o, needed); needed {
			out = append(out, o)
		}
	}
	slices.SortFunc(out, func(a, b outdatedPod) int { return st.cluster.ComparePods(a.pod.Name, b.pod.Name, true) })
	return out
}

// desiredSet is the desired form of the pod's StatefulSet: its rack's, or a removed rack's (nil when the
// pod has none).
func (st *clusterState) desiredSet(pod *corev1.Pod) *appsv1.StatefulSet {
	name := st.cluster.StatefulSetName(rackOf(pod))
	if sts := st.sets[name]; sts != nil {
		return sts
	}
	return st.removedRacks[name].set
}

// replaceLeaving: a pod that leaves (its rack is removed, or a scale-down removes it) but is not on its
// way out yet is brought up to date only when it is broken by its container state: replacing it takes no
// node down, and while it is down the safety rule counts it and holds the removal of the pods before it
// (a StatefulSet removes the highest ordinals first). A leaving pod that works is not restarted for a
// change: it is about to go.
func (st *clusterState) replaceLeaving(pod *corev1.Pod) bool {
	u := st.cluster.Status.Pods[pod.Name].Update
	return st.broken[pod.Name] != "" && (u == nil || u.Method != ackov1alpha1.UpdateRemove)
}

// runningReplicationFactor is the replication factor every running node has: the smallest over the
// desired config and the factor each pod's node may run (podReplicationFactor). Once every pod runs the
// desired config, the factor is the desired one: the nodes that restarted last then migrate, which holds
// every take-down and the PodDisruptionBudget until the copies are made.
func (st *clusterState) runningReplicationFactor() int {
	rf := config.ReplicationFactor(st.cluster)
	for _, pod := range st.pods {
		rf = min(rf, st.podReplicationFactor(pod))
	}
	return rf
}

// podReplicationFactor is the smallest replication factor the pod's node may run. A pod that runs its
// rack's desired config has the desired factor; another has the one recorded when it was created
// (acko.io/replication-factor, dropped when a restart in place or a live change gives it a new config),
// and without one it is taken at 2, the smallest factor that lets a node go. Either way, a live change of
// the factor that reached the node may not be recorded in its config hash: the factor set before it
// (acko.io/replication-factor-changing, pods.RecordFactorAhead) counts until the pod records its config
// (model seed 40089: a change to 2 applied while the API server was away, the spec back at 3, the
// pods' hash said 3 and a batch of 2 took both copies down).
func (st *clusterState) podReplicationFactor(pod *corev1.Pod) int {
	rf := config.ReplicationFactor(st.cluster)
	if pod.Annotations[ackov1alpha1.AnnotationConfigHash] != st.desiredConfigHash(pod) {
		running, err := strconv.Atoi(pod.Annotations[ackov1alpha1.AnnotationReplicationFactor])
		if err != nil || running < 1 {
			running = 2
		}
		rf = running
	}
	if ahead, err := strconv.Atoi(pod.Annotations[ackov1alpha1.AnnotationFactorChanging]); err == nil && ahead >= 1 {
		rf = min(rf, ahead)
	}
	return rf
}

// runningMaxDown is the safety rule at the running replication factor: how many nodes may be down or
// leaving at once (the batch size and the PodDisruptionBudget follow it).
func (st *clusterState) runningMaxDown() int {
	return min(config.MaxDown(st.cluster), max(1, st.runningReplicationFactor()-1))
}

// updateMethod is how a rolling restart brings an outdated pod up to date: a pod broken by its
// container state is replaced (it serves nothing); a new replication-factor goes to every node at once,
// live (and its other changes with it), before anything else; a new image or pod spec needs a new pod
// (evicted, so that the PodDisruptionBudget arbitrates with drains); a new config is applied to the
// running node, live where the server can take it and else by a restart in place (configMethod).
func (st *clusterState) updateMethod(pod *corev1.Pod, reason ackov1alpha1.RestartReason) ackov1alpha1.PodUpdateMethod {
	switch {
	case st.broken[pod.Name] != "":
		return ackov1alpha1.UpdateReplace
	case reason == ackov1alpha1.RestartReasonVolumeGrown:
		return ackov1alpha1.UpdateInPlace // same pod and claims; asd learns the device's size at start
	}
	plan, known, err := st.livePlan(pod)
	switch {
	case known && err == nil && len(plan.Factors) > 0:
		// Before any restart: a node restarted with a new replication-factor would not rejoin.
		return ackov1alpha1.UpdateLiveTogether
	case reason == ackov1alpha1.RestartReasonConfigChanged:
		return st.configMethod(plan, known, err)
	}
	return ackov1alpha1.UpdateEvict
}

// rackOf reads the rack id label the builders put on pods and StatefulSets.
func rackOf(obj metav1.Object) int32 {
	id, err := strconv.ParseInt(obj.GetLabels()[ackov1alpha1.LabelRack], 10, 32)
	if err != nil {
		return 0
	}
	return int32(id)
}

// ensureProber keeps the prober's targets (the pods that run) and pace in step with the cluster; it
// polls faster while the operator works on the cluster, so that readings are fresh when it acts.
func (r *AerospikeClusterReconciler) ensureProber(st *clusterState) {
	targets := make([]aerospike.Target, 0, len(st.members))
	for _, name := range st.members {
		targets = append(targets, aerospike.Target{PodName: name, Addr: probeAddr(st.pods[name])})
	}
	busy := st.work != nil || st.stuck != "" || st.split
	r.Probers.Ensure(st.key, aerospike.ProbeSpec{Targets: targets, Busy: busy, Advertised: st.cluster.Spec.ExternalAccess != nil})
}
