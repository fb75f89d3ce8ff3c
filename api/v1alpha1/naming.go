package v1alpha1

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// Labels and annotations the operator puts on its children.
const (
	// LabelAppName is the standard app name label; its value is always AppName.
	LabelAppName = "app.kubernetes.io/name"
	// AppName is the value of LabelAppName.
	AppName = "aerospike"
	// LabelInstance holds the AerospikeCluster's name.
	LabelInstance = "app.kubernetes.io/instance"
	// LabelManagedBy marks the children of ACKO; the manager's pod cache selects on it.
	LabelManagedBy = "app.kubernetes.io/managed-by"
	// ManagedBy is the value of LabelManagedBy.
	ManagedBy = "acko"
	// LabelRack holds the rack id of a pod or StatefulSet.
	LabelRack = "acko.io/rack"
	// LabelPodService marks the per-pod Service of spec.externalAccess and holds its pod's name.
	LabelPodService = "acko.io/pod-service"
	// AnnotationConfigHash is the hash of the rendered aerospike.conf a pod was created with.
	AnnotationConfigHash = "acko.io/config-hash"
	// AnnotationReplicationFactor is the smallest replication-factor of the config a pod was created
	// with (the safety rule follows the factor the running nodes have).
	AnnotationReplicationFactor = "acko.io/replication-factor"
	// AnnotationFactorChanging is the smallest replication-factor a pod's node may run while a live
	// change of the factor is under way: set before the change, dropped when the pod records the config
	// its node runs (a change never recorded leaves the node on a factor its config hash does not say).
	AnnotationFactorChanging = "acko.io/replication-factor-changing"
	// AnnotationPodSpecHash is the hash of the pod template (without the config) a pod was created with.
	AnnotationPodSpecHash = "acko.io/podspec-hash"
	// AnnotationNodeBlockList on a pod template is spec.nodeBlockList (sorted, comma-separated), whose
	// required node affinity the template carries. It is not part of the pod spec hash: a change of the
	// list updates the StatefulSets without making the pods on other nodes outdated.
	AnnotationNodeBlockList = "acko.io/node-block-list"
	// AnnotationStableMaxUnavailable is the PodDisruptionBudget's maxUnavailable while the cluster is
	// stable (replication-factor − 1 of the spec last applied), which the budget returns to after
	// migrations even while the spec is paused or cannot be applied.
	AnnotationStableMaxUnavailable = "acko.io/stable-max-unavailable"
	// AnnotationVolumePlan on a pod is what its prepare-volumes init container does to each storage
	// volume before asd first runs on it: "name=Method:claimUID" entries, space-separated, written by
	// the operator once it has read the pod's claims. The init container waits for it.
	AnnotationVolumePlan = "acko.io/volume-plan"
	// AnnotationVolumeInitialized on a PersistentVolumeClaim is how its volume was prepared (an init
	// method, or InUse): the record lives and dies with the claim, so a pod recreated on it never
	// prepares it again, a new claim always is, and it outlives the AerospikeCluster (pvcRetention).
	AnnotationVolumeInitialized = "acko.io/volume-initialized"
	// AnnotationVolumeSizes on a pod is the size of each of its storage volumes' claims ("name=size",
	// comma-separated, by name), recorded once its claims hold them and, for a Block volume, once asd
	// started on the device at that size.
	AnnotationVolumeSizes = "acko.io/volume-sizes"
	// AnnotationAcceptDataLoss ("true") on a pod whose Kubernetes node is lost lets the operator give up
	// its local volumes although a node whose volumes it gave up earlier has not been seen refilled: the
	// user accepts losing the copies only this pod may hold (docs/storage.md).
	AnnotationAcceptDataLoss = "acko.io/accept-data-loss"
	// AnnotationOwnedLabels on a child lists the keys of the labels the operator set on it (sorted,
	// comma-separated), so that a label taken out of the spec is taken off the child while labels others
	// added stay. Only the PodMonitor carries it (its labels are monitoring.podMonitor.labels).
	AnnotationOwnedLabels = "acko.io/owned-labels"
)

// RackPlacement is one rack of the cluster with the number of pods it gets.
type RackPlacement struct {
	// ID is the rack id (0 for the implicit rack of a single-rack cluster).
	ID int32
	// Size is the number of pods of the rack.
	Size int32
	// Rack is the spec of the rack, nil for the implicit rack.
	Rack *Rack
}

// MultiRack reports whether the cluster uses the multi-rack layout (pod names carry the rack id).
func (c *AerospikeCluster) MultiRack() bool {
	return c.Spec.RackConfig != nil && len(c.Spec.RackConfig.Racks) > 0
}

// RackPlan spreads spec.size over the racks in rack id order; lower ids take the remainder.
func (c *AerospikeCluster) RackPlan() []RackPlacement {
	if !c.MultiRack() {
		return []RackPlacement{{ID: 0, Size: c.Spec.Size}}
	}
	racks := make([]Rack, len(c.Spec.RackConfig.Racks))
	copy(racks, c.Spec.RackConfig.Racks)
	sort.Slice(racks, func(i, j int) bool { return racks[i].ID < racks[j].ID })
	n := int32(len(racks))
	plan := make([]RackPlacement, 0, n)
	for i := range racks {
		size := c.Spec.Size / n
		if int32(i) < c.Spec.Size%n {
			size++
		}
		plan = append(plan, RackPlacement{ID: racks[i].ID, Size: size, Rack: &racks[i]})
	}
	return plan
}

// rackPrefix is the name shared by a rack's StatefulSet and pods.
func (c *AerospikeCluster) rackPrefix(rackID int32) string {
	if !c.MultiRack() {
		return c.Name
	}
	return fmt.Sprintf("%s-%d", c.Name, rackID)
}

// StatefulSetName is <cluster> for a single-rack cluster and <cluster>-<rackID> for multi-rack.
func (c *AerospikeCluster) StatefulSetName(rackID int32) string { return c.rackPrefix(rackID) }

// PodName is <cluster>-<ordinal> for a single-rack cluster and <cluster>-<rackID>-<ordinal> for multi-rack.
func (c *AerospikeCluster) PodName(rackID, ordinal int32) string {
	return StatefulSetPodName(c.rackPrefix(rackID), ordinal)
}

// StatefulSetPodName is the name the StatefulSet controller gives a pod: <StatefulSet>-<ordinal>. The
// operator names a StatefulSet's pods with it when the spec's layout may no longer be the running one.
func StatefulSetPodName(statefulSet string, ordinal int32) string {
	return fmt.Sprintf("%s-%d", statefulSet, ordinal)
}

// ConfigMapName is the name of a rack's ConfigMap holding aerospike.conf.
func (c *AerospikeCluster) ConfigMapName(rackID int32) string {
	return c.rackPrefix(rackID) + "-config"
}

// HeadlessServiceName is the Service that gives pods stable DNS names for the heartbeat mesh.
func (c *AerospikeCluster) HeadlessServiceName() string { return c.Name + "-headless" }

// PodDNSName is a pod's stable DNS name through the headless Service (the StatefulSet sets each pod's
// hostname and subdomain): <pod>.<cluster>-headless.<namespace>.svc.<clusterDomain>.
func (c *AerospikeCluster) PodDNSName(pod, clusterDomain string) string {
	return fmt.Sprintf("%s.%s.%s.svc.%s", pod, c.HeadlessServiceName(), c.Namespace, clusterDomain)
}

// DefaultClusterDomain is the DNS domain of a Kubernetes cluster unless its kubelets are told otherwise.
const DefaultClusterDomain = "cluster.local"

// ClientServiceName is the Service clients connect to.
func (c *AerospikeCluster) ClientServiceName() string { return c.Name }

// PodDisruptionBudgetName is the name of the cluster's PodDisruptionBudget.
func (c *AerospikeCluster) PodDisruptionBudgetName() string { return c.Name }

// SelectorLabels select every pod of the cluster.
func (c *AerospikeCluster) SelectorLabels() map[string]string {
	return map[string]string{LabelAppName: AppName, LabelInstance: c.Name, LabelManagedBy: ManagedBy}
}

// RackSelectorLabels select the pods of one rack.
func (c *AerospikeCluster) RackSelectorLabels(rackID int32) map[string]string {
	l := c.SelectorLabels()
	l[LabelRack] = strconv.Itoa(int(rackID))
	return l
}

// DesiredPodNames lists the pods the spec asks for, by rack id then ordinal.
func (c *AerospikeCluster) DesiredPodNames() []string {
	var names []string
	for _, r := range c.RackPlan() {
		for o := int32(0); o < r.Size; o++ {
			names = append(names, c.PodName(r.ID, o))
		}
	}
	return names
}

// ComparePods orders pod names by rack id, then ordinal (names of other layouts last, by name): the
// order operations take pods in, and, with ordinals reversed, rolling restarts.
func (c *AerospikeCluster) ComparePods(a, b string, reverseOrdinals bool) int {
	ra, oa, okA := c.ParsePodName(a)
	rb, ob, okB := c.ParsePodName(b)
	switch {
	case okA != okB:
		if okA {
			return -1
		}
		return 1
	case ra != rb:
		return int(ra) - int(rb)
	case oa != ob && reverseOrdinals:
		return int(ob) - int(oa)
	case oa != ob:
		return int(oa) - int(ob)
	}
	return strings.Compare(a, b)
}

// ParsePodName returns the rack id and ordinal of a pod name of this cluster's layout. ok is false
// when the name cannot be a pod of this cluster's current racks.
func (c *AerospikeCluster) ParsePodName(name string) (rackID, ordinal int32, ok bool) {
	rest, found := strings.CutPrefix(name, c.Name+"-")
	if !found {
		return 0, 0, false
	}
	if c.MultiRack() {
		rackPart, ordPart, cut := strings.Cut(rest, "-")
		if !cut {
			return 0, 0, false
		}
		id, err := parseIndex(rackPart)
		if err != nil || !c.hasRack(id) {
			return 0, 0, false
		}
		rackID, rest = id, ordPart
	}
	o, err := parseIndex(rest)
	if err != nil {
		return 0, 0, false
	}
	return rackID, o, true
}

func (c *AerospikeCluster) hasRack(id int32) bool {
	for _, r := range c.Spec.RackConfig.Racks {
		if r.ID == id {
			return true
		}
	}
	return false
}

// parseIndex accepts only canonical decimal numbers ("01" is not a StatefulSet ordinal).
func parseIndex(s string) (int32, error) {
	n, err := strconv.ParseInt(s, 10, 32)
	if err != nil || n < 0 || strconv.FormatInt(n, 10) != s {
		return 0, fmt.Errorf("%q is not an index", s)
	}
	return int32(n), nil
}

// DefaultProgressDeadline is spec.progressDeadlineSeconds unless set.
const DefaultProgressDeadline = 10 * time.Minute

// ProgressDeadline is spec.progressDeadlineSeconds with its default.
func (c *AerospikeCluster) ProgressDeadline() time.Duration {
	if c.Spec.ProgressDeadlineSeconds == nil || *c.Spec.ProgressDeadlineSeconds <= 0 {
		return DefaultProgressDeadline
	}
	return time.Duration(*c.Spec.ProgressDeadlineSeconds) * time.Second
}

// DefaultNodeLostAfter is spec.storage.localVolumes.nodeLostAfterSeconds unless set.
const DefaultNodeLostAfter = 30 * time.Minute

// NodeLostAfter is how long a node holding local volumes must be gone or not Ready before they are
// given up (spec.storage.localVolumes.nodeLostAfterSeconds with its default).
func (l *LocalVolumesSpec) NodeLostAfter() time.Duration {
	if l.NodeLostAfterSeconds == nil || *l.NodeLostAfterSeconds <= 0 {
		return DefaultNodeLostAfter
	}
	return time.Duration(*l.NodeLostAfterSeconds) * time.Second
}

// MonitoringEnabled reports whether spec.monitoring adds the exporter.
func (c *AerospikeCluster) MonitoringEnabled() bool {
	return c.Spec.Monitoring != nil && c.Spec.Monitoring.Enabled
}

// ExporterImage and ExporterPort are spec.monitoring's with their defaults.
func (c *AerospikeCluster) ExporterImage() string {
	if c.Spec.Monitoring == nil || c.Spec.Monitoring.Image == "" {
		return DefaultExporterImage
	}
	return c.Spec.Monitoring.Image
}

// ExporterPort is spec.monitoring.port with its default.
func (c *AerospikeCluster) ExporterPort() int32 {
	if c.Spec.Monitoring == nil || c.Spec.Monitoring.Port == 0 {
		return DefaultExporterPort
	}
	return c.Spec.Monitoring.Port
}

// BatchSize is spec.rollingUpdateBatchSize with its default of 1, capped to the disruption budget's
// cap (spec.disruptionBudget.maxUnavailable): the operator's evictions go through the budget, which
// would refuse the rest of a larger batch.
func (c *AerospikeCluster) BatchSize() int32 {
	n := int32(1)
	if c.Spec.RollingUpdateBatchSize != nil && *c.Spec.RollingUpdateBatchSize > 1 {
		n = *c.Spec.RollingUpdateBatchSize
	}
	if limit := c.BudgetCap(); limit > 0 {
		n = min(n, limit)
	}
	return n
}

// BudgetCap is spec.disruptionBudget.maxUnavailable, 0 when the user set none.
func (c *AerospikeCluster) BudgetCap() int32 {
	if b := c.Spec.DisruptionBudget; b != nil && b.MaxUnavailable != nil {
		return *b.MaxUnavailable
	}
	return 0
}

// BudgetDisabled: the user asked for no PodDisruptionBudget (spec.disruptionBudget.disabled).
func (c *AerospikeCluster) BudgetDisabled() bool {
	return c.Spec.DisruptionBudget != nil && c.Spec.DisruptionBudget.Disabled
}

// PodServiceName is the per-pod Service of spec.externalAccess (NodePort, LoadBalancer): the pod's name.
func (c *AerospikeCluster) PodServiceName(pod string) string { return pod }

// ExternalAccessType is spec.externalAccess's type, "" without external access.
func (c *AerospikeCluster) ExternalAccessType() ExternalAccessType {
	if c.Spec.ExternalAccess == nil {
		return ""
	}
	return c.Spec.ExternalAccess.Type
}

// PodServices reports whether each pod has a Service of its own (NodePort, LoadBalancer).
func (c *AerospikeCluster) PodServices() bool {
	t := c.ExternalAccessType()
	return t == ExternalNodePort || t == ExternalLoadBalancer
}

// AddressFollowsNode reports whether a pod's external address is its Kubernetes node's (NodePort,
// HostPort), so that a pod's file depends on the node it runs on.
func (c *AerospikeCluster) AddressFollowsNode() bool {
	t := c.ExternalAccessType()
	return t == ExternalNodePort || t == ExternalHostPort
}

// ExternalNodeAddress is spec.externalAccess.nodeAddress with its default, InternalIP.
func (c *AerospikeCluster) ExternalNodeAddress() corev1.NodeAddressType {
	if a := c.Spec.ExternalAccess; a != nil && a.NodeAddress != "" {
		return a.NodeAddress
	}
	return corev1.NodeInternalIP
}

// ExternalHostPort is spec.externalAccess.hostPort with its default, the service port.
func (c *AerospikeCluster) ExternalHostPort() int32 {
	if a := c.Spec.ExternalAccess; a != nil && a.HostPort != nil {
		return *a.HostPort
	}
	return DefaultHostPort
}

// AdvertisesAlternate reports whether the external address goes to the alternate-access lists (the
// default) rather than the access ones.
func (c *AerospikeCluster) AdvertisesAlternate() bool {
	return c.Spec.ExternalAccess == nil || c.Spec.ExternalAccess.AdvertiseAs != AdvertiseAccess
}
