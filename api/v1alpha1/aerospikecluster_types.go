package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// AerospikeClusterSpec is the desired state of an Aerospike CE cluster.
type AerospikeClusterSpec struct {
	// Size is the total number of Aerospike nodes, spread evenly over the racks
	// (lower rack ids take the remainder). Aerospike CE allows at most 8.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=8
	Size int32 `json:"size"`

	// Image is the Aerospike CE server image, e.g. aerospike:ce-8.1.1.1. Its entrypoint is never overridden.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=512
	Image string `json:"image"`

	// AerospikeConfig is rendered into aerospike.conf: service, network, logging and namespaces
	// (replication-factor, storage-engine memory or device). See docs/cluster.md.
	// +optional
	AerospikeConfig *AerospikeConfig `json:"aerospikeConfig,omitempty"`

	// RackConfig places the nodes in racks. Without it the cluster has one implicit rack and pods are
	// named <cluster>-<ordinal>; with it pods are named <cluster>-<rackID>-<ordinal>.
	// +optional
	RackConfig *RackConfig `json:"rackConfig,omitempty"`

	// Storage lists persistent volumes claimed for every pod. Volume claim templates cannot change
	// once the cluster exists.
	// +optional
	Storage *StorageSpec `json:"storage,omitempty"`

	// PodSpec holds overrides for the Aerospike pods.
	// +optional
	PodSpec *PodOverrides `json:"podSpec,omitempty"`

	// Monitoring adds the Aerospike Prometheus exporter to every pod, a metrics port to the headless
	// Service and, when the Prometheus Operator's CRDs exist, a PodMonitor. Turning it on or off rolls
	// every pod (PodSpecChanged).
	// +optional
	Monitoring *MonitoringSpec `json:"monitoring,omitempty"`

	// DisruptionBudget shapes the cluster's PodDisruptionBudget, which holds voluntary disruptions (node
	// drains) to replication-factor − 1 pods at once, and to none while the cluster migrates. The user may
	// cap it lower, or ask for no budget where a platform forbids them (then nothing holds a drain: see
	// docs/scheduling.md). The operator's own restarts keep the safety rule either way.
	// +optional
	DisruptionBudget *DisruptionBudgetSpec `json:"disruptionBudget,omitempty"`

	// ExternalAccess lets clients outside Kubernetes reach every node: each pod advertises an address
	// that routes to it (a per-pod NodePort or LoadBalancer Service, or a host port on its node), beside
	// its pod IP. Clients inside the cluster keep using pod IPs. Changing it restarts every node under the
	// safety rule (the addresses are static in asd). See docs/clients.md.
	// +optional
	ExternalAccess *ExternalAccess `json:"externalAccess,omitempty"`

	// RollingUpdateBatchSize is how many pods a config, image or pod spec change restarts at once, rack
	// by rack. It is capped to replication-factor − 1 (the smallest over the namespaces, at least 1), so
	// that both copies of a partition are never down together. It does not apply to on-demand operations.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:default=1
	// +optional
	RollingUpdateBatchSize *int32 `json:"rollingUpdateBatchSize,omitempty"`

	// ProgressDeadlineSeconds is how long a restarted pod may take to be running and a member of the
	// cluster again before the rolling restart stops and reports RolloutStuck (default 600). Falling
	// migrations count as progress.
	// +kubebuilder:validation:Minimum=10
	// +kubebuilder:default=600
	// +optional
	ProgressDeadlineSeconds *int32 `json:"progressDeadlineSeconds,omitempty"`

	// NodeBlockList names Kubernetes nodes (kubernetes.io/hostname) to move the Aerospike pods off, for
	// node maintenance: the pods' template gets a required node affinity that keeps them off these nodes,
	// and each pod on one of them is moved, one at a time, under the safety rule: only while every node
	// is up and the cluster is stable with no migrations, and the next one only after the cluster is
	// stable again (its copies refilled). A pod's local volumes (spec.storage.localVolumes, or a
	// persistent volume pinned to the node) are given up with it, once the others hold every copy;
	// the new pod starts elsewhere with empty volumes that migrations refill. Pods on other nodes are
	// not restarted by a change of this list. Removing a node from the list stops the moves not started
	// yet; a move under way (its volumes given up) is finished. status.pods[].nodeBlocked says which pod
	// waits and why. See docs/storage.md.
	// +listType=set
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MinLength=1
	// +kubebuilder:validation:items:MaxLength=253
	// +optional
	NodeBlockList []string `json:"nodeBlockList,omitempty"`

	// Paused stops reconciliation: no child object, pod or operation is touched until it is false again.
	// +optional
	Paused bool `json:"paused,omitempty"`

	// Operations holds at most one on-demand operation (WarmRestart or PodRestart).
	// +kubebuilder:validation:MaxItems=8
	// +kubebuilder:validation:XValidation:rule="self.size() <= 1",message="only one operation allowed"
	// +optional
	Operations []OperationSpec `json:"operations,omitempty"`
}

// AerospikeConfig is free-form Aerospike configuration, rendered into aerospike.conf.
// +kubebuilder:validation:Type=object
// +kubebuilder:pruning:PreserveUnknownFields
// +kubebuilder:object:generate=false
type AerospikeConfig struct {
	// Value is the decoded configuration tree.
	Value map[string]any `json:"-"`
}

// RackConfig lists the racks of a multi-rack cluster.
type RackConfig struct {
	// Racks, each with a unique id.
	// +listType=map
	// +listMapKey=id
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=8
	Racks []Rack `json:"racks"`
}

// Rack is one Aerospike rack: a StatefulSet of its own, placed by zone or node.
type Rack struct {
	// ID identifies the rack in pod and StatefulSet names. In Community Edition a rack is Kubernetes
	// placement only: Aerospike's rack-id is Enterprise-only and is never rendered.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1000000
	ID int32 `json:"id"`

	// Zone pins the rack's pods to nodes with this topology.kubernetes.io/zone label.
	// +optional
	Zone string `json:"zone,omitempty"`

	// NodeName pins the rack's pods to one node (kubernetes.io/hostname).
	// +optional
	NodeName string `json:"nodeName,omitempty"`

	// AerospikeConfig is merged over the cluster's aerospikeConfig for this rack.
	// +optional
	AerospikeConfig *AerospikeConfig `json:"aerospikeConfig,omitempty"`

	// Affinity of the rack's pods: each of its nodeAffinity, podAffinity and podAntiAffinity that is set
	// replaces the cluster's (spec.podSpec.affinity) for this rack. See docs/scheduling.md.
	// +optional
	Affinity *RackAffinity `json:"affinity,omitempty"`

	// Tolerations of the rack's pods, added to the cluster's.
	// +optional
	Tolerations []corev1.Toleration `json:"tolerations,omitempty"`

	// NodeSelector of the rack's pods, merged over the cluster's (the rack's value wins for a key both
	// set); zone and nodeName win over both.
	// +optional
	NodeSelector map[string]string `json:"nodeSelector,omitempty"`

	// TopologySpreadConstraints of the rack's pods: a constraint replaces the cluster's one with the same
	// topologyKey and whenUnsatisfiable, the others are added.
	// +kubebuilder:validation:MaxItems=8
	// +optional
	TopologySpreadConstraints []corev1.TopologySpreadConstraint `json:"topologySpreadConstraints,omitempty"`
}

// StorageSpec lists the persistent volumes of every pod.
type StorageSpec struct {
	// Volumes become volume claim templates of the StatefulSets.
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=8
	// +optional
	Volumes []VolumeSpec `json:"volumes,omitempty"`

	// PVCRetention says what happens to the pods' PersistentVolumeClaims when the cluster is deleted
	// and when it scales down (or a rack is removed): Retain (the default: the data stays, and a later
	// scale-up onto the same pod name finds it again) or Delete.
	// +optional
	PVCRetention *PVCRetention `json:"pvcRetention,omitempty"`

	// LocalVolumes opts in to giving up the volumes of a pod whose Kubernetes node is lost: local
	// persistent volumes live on one node, so the pod cannot run anywhere else while they exist. Unset,
	// such a pod waits for its node (or for the user) forever.
	// +optional
	LocalVolumes *LocalVolumesSpec `json:"localVolumes,omitempty"`
}

// LocalVolumesSpec says which volumes are local and when their node counts as lost.
type LocalVolumesSpec struct {
	// StorageClasses whose volumes live on one node. A pod's claims of these classes are deleted, and
	// the pod with them, once the node holding them has been lost for NodeLostAfterSeconds: the pod is
	// recreated on another node with empty volumes and refilled by migrations.
	// +listType=set
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=8
	// +kubebuilder:validation:items:MinLength=1
	StorageClasses []string `json:"storageClasses"`

	// NodeLostAfterSeconds is how long a node must be gone (its Node deleted) or not Ready before its
	// pods' local volumes are given up. Default 1800 (30 minutes): longer than a reboot or a kernel
	// upgrade, which bring the volumes back.
	// +kubebuilder:validation:Minimum=1
	// +optional
	NodeLostAfterSeconds *int32 `json:"nodeLostAfterSeconds,omitempty"`
}

// PVCRetentionType is Retain or Delete.
// +kubebuilder:validation:Enum=Retain;Delete
type PVCRetentionType string

const (
	// PVCRetain keeps the claims (and their data).
	PVCRetain PVCRetentionType = "Retain"
	// PVCDelete deletes the claims with their pods.
	PVCDelete PVCRetentionType = "Delete"
)

// PVCRetention maps to the StatefulSets' persistentVolumeClaimRetentionPolicy.
type PVCRetention struct {
	// WhenDeleted applies when the AerospikeCluster is deleted.
	// +kubebuilder:default=Retain
	// +optional
	WhenDeleted PVCRetentionType `json:"whenDeleted,omitempty"`
	// WhenScaled applies to the pods a scale-down or a rack removal takes away.
	// +kubebuilder:default=Retain
	// +optional
	WhenScaled PVCRetentionType `json:"whenScaled,omitempty"`
}

// VolumeSpec is one persistent volume of every pod.
type VolumeSpec struct {
	// Name of the volume claim template.
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	// +kubebuilder:validation:MaxLength=63
	Name string `json:"name"`

	// Path is the mount path (Filesystem) or device path (Block) in the Aerospike container.
	// +kubebuilder:validation:Pattern=`^/`
	Path string `json:"path"`

	// Size requested for the claim.
	Size resource.Quantity `json:"size"`

	// StorageClassName of the claim; empty uses the default class.
	// +optional
	StorageClassName *string `json:"storageClassName,omitempty"`

	// VolumeMode is Filesystem (mounted at path) or Block (a raw device at path, for storage-engine device).
	// +kubebuilder:validation:Enum=Filesystem;Block
	// +kubebuilder:default=Filesystem
	// +optional
	VolumeMode corev1.PersistentVolumeMode `json:"volumeMode,omitempty"`

	// InitMethod prepares the volume once, before asd first runs on a new claim: DeleteFiles
	// (Filesystem: every file in it is deleted; the default), HeaderCleanup (Block: the first 8 MiB,
	// where asd looks for its device header, are zeroed; the default), Zero (Block: the whole device is
	// zeroed, as long as writing it takes) or None. A pod recreated on the same claim never prepares it
	// again. See docs/storage.md.
	// +kubebuilder:validation:Enum=None;DeleteFiles;HeaderCleanup;Zero
	// +optional
	InitMethod VolumeInitMethod `json:"initMethod,omitempty"`
}

// VolumeInitMethod is how a persistent volume is prepared before its first use.
type VolumeInitMethod string

const (
	// VolumeInitNone leaves the volume as it is.
	VolumeInitNone VolumeInitMethod = "None"
	// VolumeInitDeleteFiles deletes every file of a Filesystem volume.
	VolumeInitDeleteFiles VolumeInitMethod = "DeleteFiles"
	// VolumeInitHeaderCleanup zeroes the first 8 MiB of a Block volume: asd then finds no device
	// header and formats it, where a device that is neither Aerospike's nor erased stops asd ("not an
	// Aerospike device but not erased").
	VolumeInitHeaderCleanup VolumeInitMethod = "HeaderCleanup"
	// VolumeInitZero zeroes a whole Block volume.
	VolumeInitZero VolumeInitMethod = "Zero"
	// VolumeInUse is recorded, never asked for: the claim was in use by a pod the operator had not
	// prepared it for (created before volumes were prepared), so its data is kept.
	VolumeInUse VolumeInitMethod = "InUse"
)

// PodOverrides are the pod settings users may change. Changing them rolls the pods (PodSpecChanged),
// except serviceLabels and serviceAnnotations, which the Services take in place. See docs/scheduling.md.
type PodOverrides struct {
	// Resources of the aerospike-server container.
	// +optional
	Resources *corev1.ResourceRequirements `json:"resources,omitempty"`

	// ContainerSecurityContext is the security context of the containers the operator adds: the
	// aerospike-server container, the init containers that run its image and the exporter. Sidecars and
	// init containers of the user's carry their own.
	// +optional
	ContainerSecurityContext *corev1.SecurityContext `json:"containerSecurityContext,omitempty"`

	// InitContainers run after the operator's own init containers, before asd starts: standard
	// Kubernetes container objects (schema as for sidecars).
	// +kubebuilder:validation:MaxItems=8
	// +optional
	InitContainers []Sidecar `json:"initContainers,omitempty"`

	// Volumes are extra pod volumes for sidecars and init containers, which mount them by name: a Secret,
	// ConfigMap, emptyDir or projected volume.
	// +kubebuilder:validation:MaxItems=16
	// +optional
	Volumes []PodVolume `json:"volumes,omitempty"`

	// TopologySpreadConstraints of the pods. A constraint without a labelSelector counts the cluster's
	// pods.
	// +kubebuilder:validation:MaxItems=8
	// +optional
	TopologySpreadConstraints []corev1.TopologySpreadConstraint `json:"topologySpreadConstraints,omitempty"`

	// PriorityClassName of the pods.
	// +kubebuilder:validation:MaxLength=253
	// +optional
	PriorityClassName string `json:"priorityClassName,omitempty"`

	// TerminationGracePeriodSeconds is how long asd has to stop after SIGTERM before it is killed
	// (Kubernetes' default 30 when unset).
	// +kubebuilder:validation:Minimum=0
	// +optional
	TerminationGracePeriodSeconds *int64 `json:"terminationGracePeriodSeconds,omitempty"`

	// DNSPolicy of the pods: ClusterFirst (Kubernetes' default), ClusterFirstWithHostNet (the default
	// with hostNetwork, so that the pods still resolve their peers' names), Default or None.
	// +kubebuilder:validation:Enum=ClusterFirst;ClusterFirstWithHostNet;Default;None
	// +optional
	DNSPolicy corev1.DNSPolicy `json:"dnsPolicy,omitempty"`

	// DNSConfig of the pods (required with dnsPolicy None).
	// +optional
	DNSConfig *corev1.PodDNSConfig `json:"dnsConfig,omitempty"`

	// HostNetwork runs the pods in their nodes' network namespace: asd's ports are opened on the node's
	// addresses, so at most one pod of the cluster fits on a node. Not with externalAccess type HostPort.
	// +optional
	HostNetwork bool `json:"hostNetwork,omitempty"`

	// ServiceLabels are added to the cluster's Services (headless, client and per-pod); the operator's
	// own labels win.
	// +optional
	ServiceLabels map[string]string `json:"serviceLabels,omitempty"`

	// ServiceAnnotations are added to the cluster's headless and client Services (per-pod Services take
	// spec.externalAccess.serviceAnnotations).
	// +optional
	ServiceAnnotations map[string]string `json:"serviceAnnotations,omitempty"`

	// Affinity of the pods, merged with the rack placement.
	// +optional
	Affinity *corev1.Affinity `json:"affinity,omitempty"`

	// Tolerations of the pods.
	// +optional
	Tolerations []corev1.Toleration `json:"tolerations,omitempty"`

	// NodeSelector of the pods, merged with the rack placement.
	// +optional
	NodeSelector map[string]string `json:"nodeSelector,omitempty"`

	// SecurityContext of the pods.
	// +optional
	SecurityContext *corev1.PodSecurityContext `json:"securityContext,omitempty"`

	// Sidecars are extra containers: standard Kubernetes container objects.
	// +kubebuilder:validation:MaxItems=8
	// +optional
	Sidecars []Sidecar `json:"sidecars,omitempty"`

	// Labels added to the pods.
	// +optional
	Labels map[string]string `json:"labels,omitempty"`

	// Annotations added to the pods.
	// +optional
	Annotations map[string]string `json:"annotations,omitempty"`

	// ServiceAccountName of the pods.
	// +optional
	ServiceAccountName string `json:"serviceAccountName,omitempty"`

	// ImagePullSecrets of the pods.
	// +optional
	ImagePullSecrets []corev1.LocalObjectReference `json:"imagePullSecrets,omitempty"`
}

// PodVolume is an extra volume of the pods: a standard Kubernetes volume with a Secret, ConfigMap, emptyDir
// or projected source. Its schema is left out of the CRD, as a sidecar's; the webhook checks it.
// +kubebuilder:validation:Type=object
// +kubebuilder:pruning:PreserveUnknownFields
type PodVolume struct {
	// Volume is the volume.
	Volume corev1.Volume `json:"-"`
}

// RackAffinity is a rack's affinity: a standard Kubernetes affinity. Its schema is left out of the CRD (the
// cluster's podSpec.affinity carries it once; twice would push the CRD past what kubectl apply can store);
// the webhook checks it.
// +kubebuilder:validation:Type=object
// +kubebuilder:pruning:PreserveUnknownFields
type RackAffinity struct {
	// Affinity is the affinity.
	Affinity corev1.Affinity `json:"-"`
}

// ExternalAccessType is how a node is reached from outside Kubernetes.
// +kubebuilder:validation:Enum=NodePort;LoadBalancer;HostPort
type ExternalAccessType string

const (
	// ExternalNodePort gives each pod a NodePort Service (externalTrafficPolicy Local); the pod advertises
	// its Kubernetes node's address and the Service's node port.
	ExternalNodePort ExternalAccessType = "NodePort"
	// ExternalLoadBalancer gives each pod a LoadBalancer Service; the pod advertises the load balancer's
	// ingress (IP or host name) and port 3000.
	ExternalLoadBalancer ExternalAccessType = "LoadBalancer"
	// ExternalHostPort opens the service port on the pod's Kubernetes node (a host port); the pod
	// advertises its node's address and that port. At most one pod of the cluster per node.
	ExternalHostPort ExternalAccessType = "HostPort"
)

// AdvertiseAs is which of asd's client address lists carries the external address.
// +kubebuilder:validation:Enum=AlternateAccess;Access
type AdvertiseAs string

const (
	// AdvertiseAlternate puts it in alternate-access-address/-port (peers-clear-alt): clients that set
	// UseServicesAlternate use it, the others keep using pod IPs.
	AdvertiseAlternate AdvertiseAs = "AlternateAccess"
	// AdvertiseAccess puts it in access-address/-port (peers-clear-std): every client uses it, also the
	// ones inside the cluster.
	AdvertiseAccess AdvertiseAs = "Access"
)

// ExternalAccess is how clients outside Kubernetes reach each node.
// +kubebuilder:validation:XValidation:rule="!has(self.nodeAddress) || self.type != 'LoadBalancer'",message="nodeAddress applies to the NodePort and HostPort types"
// +kubebuilder:validation:XValidation:rule="!has(self.hostPort) || self.type == 'HostPort'",message="hostPort applies to the HostPort type"
// +kubebuilder:validation:XValidation:rule="!has(self.loadBalancerClass) || self.type == 'LoadBalancer'",message="loadBalancerClass applies to the LoadBalancer type"
// +kubebuilder:validation:XValidation:rule="!has(self.serviceAnnotations) || self.type != 'HostPort'",message="serviceAnnotations apply to the NodePort and LoadBalancer types"
// +kubebuilder:validation:XValidation:rule="self.type != 'LoadBalancer' || oldSelf.type != 'LoadBalancer' || (has(self.loadBalancerClass) == has(oldSelf.loadBalancerClass) && (!has(self.loadBalancerClass) || self.loadBalancerClass == oldSelf.loadBalancerClass))",message="loadBalancerClass cannot change while the type stays LoadBalancer: Kubernetes does not let a Service's class change"
type ExternalAccess struct {
	// Type is NodePort, LoadBalancer or HostPort.
	Type ExternalAccessType `json:"type"`

	// AdvertiseAs is AlternateAccess (the default: clients outside set UseServicesAlternate, clients
	// inside keep pod IPs) or Access (every client uses the external address).
	// +kubebuilder:default=AlternateAccess
	// +optional
	AdvertiseAs AdvertiseAs `json:"advertiseAs,omitempty"`

	// NodeAddress is which address of the pod's Kubernetes node is advertised (NodePort, HostPort):
	// InternalIP (the default) or ExternalIP. A pod whose node has none waits, and its status says so.
	// +kubebuilder:validation:Enum=InternalIP;ExternalIP
	// +optional
	NodeAddress corev1.NodeAddressType `json:"nodeAddress,omitempty"`

	// HostPort is the node's port that reaches the pod's service port (HostPort; default 3000).
	// +kubebuilder:validation:Minimum=1024
	// +kubebuilder:validation:Maximum=65535
	// +optional
	HostPort *int32 `json:"hostPort,omitempty"`

	// LoadBalancerClass of the per-pod Services (LoadBalancer): the load balancer implementation that
	// serves them; unset, the cluster's default one.
	// +kubebuilder:validation:MaxLength=253
	// +optional
	LoadBalancerClass *string `json:"loadBalancerClass,omitempty"`

	// ServiceAnnotations are added to the per-pod Services (e.g. a cloud load balancer's settings).
	// +optional
	ServiceAnnotations map[string]string `json:"serviceAnnotations,omitempty"`
}

// DisruptionBudgetSpec is spec.disruptionBudget.
type DisruptionBudgetSpec struct {
	// MaxUnavailable caps the budget's maxUnavailable: at most this many Aerospike pods are drained at
	// once. It may not be above what the replication factor allows (replication-factor − 1, at least 1).
	// The operator's rolling restarts take at most this many pods at a time too (its evictions go
	// through the budget).
	// +kubebuilder:validation:Minimum=1
	// +optional
	MaxUnavailable *int32 `json:"maxUnavailable,omitempty"`

	// Disabled creates no PodDisruptionBudget (and removes the one there is), for platforms that forbid
	// budgets which can block a drain. Nothing then stops a drain from taking more nodes than the
	// replication factor allows, or a node while the cluster migrates: a risk of data unavailability or loss.
	// +optional
	Disabled bool `json:"disabled,omitempty"`
}

// MonitoringSpec configures the Aerospike Prometheus exporter sidecar.
type MonitoringSpec struct {
	// Enabled adds the exporter.
	Enabled bool `json:"enabled"`
	// Image of the exporter (default: the release ACKO's dashboard and alerts are written against).
	// +optional
	Image string `json:"image,omitempty"`
	// Port the exporter serves metrics on (default 9145).
	// +kubebuilder:validation:Minimum=1024
	// +kubebuilder:validation:Maximum=65535
	// +optional
	Port int32 `json:"port,omitempty"`
	// Resources of the exporter container.
	// +optional
	Resources *corev1.ResourceRequirements `json:"resources,omitempty"`
	// Env adds variables to the exporter container (e.g. its AS_AUTH_* or METRIC_LABELS settings); the
	// operator's AS_HOST, AS_PORT and AGENT_BIND_PORT win.
	// +kubebuilder:validation:MaxItems=32
	// +optional
	Env []corev1.EnvVar `json:"env,omitempty"`
	// PodMonitor shapes the PodMonitor created when the Prometheus Operator's CRDs exist.
	// +optional
	PodMonitor *PodMonitorSpec `json:"podMonitor,omitempty"`
}

// PodMonitorSpec shapes the cluster's PodMonitor. A Prometheus selects PodMonitors by label: a default
// kube-prometheus-stack only those labelled release=<its Helm release name>. See docs/metrics.md.
type PodMonitorSpec struct {
	// Labels added to the PodMonitor (the operator's own win), e.g. release: kube-prometheus-stack.
	// +optional
	Labels map[string]string `json:"labels,omitempty"`
	// Interval between scrapes, e.g. 30s (the Prometheus' own when unset).
	// +kubebuilder:validation:Pattern=`^(0|(([0-9]+)y)?(([0-9]+)w)?(([0-9]+)d)?(([0-9]+)h)?(([0-9]+)m)?(([0-9]+)s)?(([0-9]+)ms)?)$`
	// +optional
	Interval string `json:"interval,omitempty"`
	// ScrapeTimeout of each scrape, no longer than the interval.
	// +kubebuilder:validation:Pattern=`^(0|(([0-9]+)y)?(([0-9]+)w)?(([0-9]+)d)?(([0-9]+)h)?(([0-9]+)m)?(([0-9]+)s)?(([0-9]+)ms)?)$`
	// +optional
	ScrapeTimeout string `json:"scrapeTimeout,omitempty"`
	// Relabelings applied to the targets before the scrape (the Prometheus Operator's RelabelConfig).
	// +kubebuilder:validation:MaxItems=32
	// +optional
	Relabelings []RelabelConfig `json:"relabelings,omitempty"`
	// MetricRelabelings applied to the scraped samples before they are stored.
	// +kubebuilder:validation:MaxItems=32
	// +optional
	MetricRelabelings []RelabelConfig `json:"metricRelabelings,omitempty"`
}

// RelabelConfig is a Prometheus relabeling rule, as the Prometheus Operator's PodMonitor takes it.
type RelabelConfig struct {
	// SourceLabels whose values are joined with separator.
	// +optional
	SourceLabels []string `json:"sourceLabels,omitempty"`
	// Separator between the source labels' values (default ;).
	// +optional
	Separator *string `json:"separator,omitempty"`
	// TargetLabel written by replace, hashmod, lowercase, uppercase.
	// +optional
	TargetLabel string `json:"targetLabel,omitempty"`
	// Regex matched against the joined value (default (.*)).
	// +optional
	Regex string `json:"regex,omitempty"`
	// Modulus for hashmod.
	// +optional
	Modulus uint64 `json:"modulus,omitempty"`
	// Replacement for replace (default $1).
	// +optional
	Replacement *string `json:"replacement,omitempty"`
	// Action: replace (the default), keep, drop, keepequal, dropequal, hashmod, labelmap, labeldrop,
	// labelkeep, lowercase, uppercase.
	// +kubebuilder:validation:Enum=replace;Replace;keep;Keep;drop;Drop;keepequal;KeepEqual;dropequal;DropEqual;hashmod;HashMod;labelmap;LabelMap;labeldrop;LabelDrop;labelkeep;LabelKeep;lowercase;Lowercase;uppercase;Uppercase
	// +optional
	Action string `json:"action,omitempty"`
}

// Sidecar is a standard Kubernetes container added to the Aerospike pods. Its schema is left out of the
// CRD (the whole Container schema would push the CRD past what `kubectl apply` can store); the API
// server validates it when the pods are created, and the webhook rejects unknown fields.
// +kubebuilder:validation:Type=object
// +kubebuilder:pruning:PreserveUnknownFields
type Sidecar struct {
	// Container is the sidecar.
	Container corev1.Container `json:"-"`
}

// OperationSpec is an on-demand restart of the cluster's pods (seed 001).
type OperationSpec struct {
	// Kind is WarmRestart (SIGUSR1, pod kept) or PodRestart (pod deleted and recreated).
	Kind OperationKind `json:"kind"`

	// ID names the operation; it must be unique: an id that finished never runs again.
	// +kubebuilder:validation:MaxLength=256
	// +kubebuilder:validation:XValidation:rule="size(self) >= 1 && size(self) <= 20",message="id must be between 1 and 20 characters"
	ID string `json:"id"`

	// PodList names the target pods; empty means every pod of the cluster.
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MaxLength=253
	// +listType=set
	// +optional
	PodList []string `json:"podList,omitempty"`
}

// AerospikeClusterStatus is the observed state of an AerospikeCluster. Only the operator writes it.
type AerospikeClusterStatus struct {
	// Phase summarises the cluster: Reconciling, Running, Paused or Error.
	// +optional
	Phase ClusterPhase `json:"phase,omitempty"`

	// Conditions: Ready, Reconciling, Stalled, ReconcileFailed, Paused, PendingChanges,
	// CircuitBreakerOpen, ClusterSplit, ConfigWarning.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// ObservedGeneration is the generation of the spec last applied.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// AppliedSpecHash is the hash of the last applied spec without `paused`; a different hash while
	// paused means changes are pending.
	// +optional
	AppliedSpecHash string `json:"appliedSpecHash,omitempty"`

	// Size is the number of pods that exist (scale subresource).
	// +optional
	Size int32 `json:"size,omitempty"`

	// ReadyPods is the number of Ready pods.
	// +optional
	ReadyPods int32 `json:"readyPods,omitempty"`

	// Selector is the pods' label selector (scale subresource).
	// +optional
	Selector string `json:"selector,omitempty"`

	// Pods, keyed by pod name.
	// +optional
	Pods map[string]PodStatus `json:"pods,omitempty"`

	// StableReplicationFactor is the replication factor the nodes ran at the last reading that showed
	// every desired node in one cluster with no migrations: every partition had that many copies then. A
	// raised factor counts only once its migrations end; a lowered one at once. What lost nodes may hold
	// alone is judged by it (pods[*].lostNode.factor).
	// +optional
	StableReplicationFactor int32 `json:"stableReplicationFactor,omitempty"`

	// OperationStatus tracks the current or last on-demand operation.
	// +optional
	OperationStatus *OperationStatus `json:"operationStatus,omitempty"`

	// FinishedOperations are the ids of recent operations that ended (newest last, bounded);
	// an id listed here never runs again.
	// +kubebuilder:validation:MaxItems=64
	// +optional
	FinishedOperations []string `json:"finishedOperations,omitempty"`

	// CircuitBreaker counts consecutive reconcile failures (ADR-0013).
	// +optional
	CircuitBreaker *CircuitBreakerStatus `json:"circuitBreaker,omitempty"`
}

// PodStatus is what the operator knows of one pod.
type PodStatus struct {
	// PodIP of the pod.
	// +optional
	PodIP string `json:"podIP,omitempty"`
	// Rack id of the pod (0 for a single-rack cluster).
	Rack int32 `json:"rack"`
	// Image the pod runs.
	// +optional
	Image string `json:"image,omitempty"`
	// LastRestartReason: WarmRestart, ManualRestart, ConfigChanged, ImageChanged, PodSpecChanged,
	// AddressChanged, VolumeGrown or NodeBlocked.
	// +optional
	LastRestartReason RestartReason `json:"lastRestartReason,omitempty"`
	// LastRestartTime is when the operator last restarted the pod.
	// +optional
	LastRestartTime *metav1.Time `json:"lastRestartTime,omitempty"`
	// ConfigHash is the identity of the config the pod's Aerospike node runs (its
	// acko.io/config-hash annotation).
	// +optional
	ConfigHash string `json:"configHash,omitempty"`
	// NodeID is the node id the pod's Aerospike node reported last. The operator gives each pod its
	// own, from its rack id and ordinal (A, the rack id in hex, the ordinal in 4 hex digits: pod 2 of
	// rack 1 is A10002), so that a recreated pod joins as the same node.
	// +optional
	NodeID string `json:"nodeID,omitempty"`

	// ExternalAddress is the address (host:port) the pod's own file advertises to clients outside
	// Kubernetes (spec.externalAccess).
	// +optional
	ExternalAddress string `json:"externalAddress,omitempty"`

	// AwaitingAddress says what the pod's external address waits for (its node's address, the node port,
	// the load balancer's ingress): until it is known the pod has no file, and its init container waits.
	// +optional
	AwaitingAddress string `json:"awaitingAddress,omitempty"`
	// InitializedVolumes are the pod's storage volumes whose claims are prepared (spec.storage.volumes
	// initMethod), each with the claim's UID: a new claim is prepared before asd runs on it.
	// +listType=map
	// +listMapKey=name
	// +optional
	InitializedVolumes []InitializedVolume `json:"initializedVolumes,omitempty"`
	// DataLoading is the progress of the pod's asd reading its persistent namespaces back at start
	// (Community Edition always cold starts; asd answers nothing until it is done), as its log tells
	// it; once its node answers, "data loaded; rejoining the cluster" until the pod is Ready.
	// +optional
	DataLoading *DataLoading `json:"dataLoading,omitempty"`
	// Update is the change of this pod under way (a rolling-restart step or its removal), recorded
	// before the pod is touched, so that an operator restarted at any point finishes it without doing
	// it twice.
	// +optional
	Update *PodUpdate `json:"update,omitempty"`
	// NodeBlocked says, while the pod runs on a node of spec.nodeBlockList, where its move off that node
	// stands: what it waits for, or that it is being moved.
	// +optional
	NodeBlocked string `json:"nodeBlocked,omitempty"`
	// VolumesGivenUp is set when the operator gave up the pod's local volumes (its Kubernetes node was
	// lost, or it was moved off a node of spec.nodeBlockList), before it deleted them, and kept until a reading shows every desired node in one stable
	// cluster with no migrations: until then the recreated node counts as not holding its copies, so a
	// second lost node's volumes, which may hold the last copy, are not given up (docs/storage.md).
	// +optional
	VolumesGivenUp *VolumesGivenUp `json:"volumesGivenUp,omitempty"`
	// SplitOff is set when the pod's Aerospike node last answered from outside the largest cluster (the
	// nodes split, AP mode): it may have taken writes no other node has. Cleared once it answers from
	// inside and the cluster's migrations ended with it (which merged them). While set, a lost node's local volumes are not given up unless the user accepts the loss
	// (acko.io/accept-data-loss, docs/storage.md).
	// +optional
	SplitOff *metav1.Time `json:"splitOff,omitempty"`
	// LostNode is set while the pod's local volumes are on a lost Kubernetes node: what the operator saw
	// since decides how many such nodes' volumes may be given up together (docs/storage.md).
	// +optional
	LostNode *LostNode `json:"lostNode,omitempty"`
}

// LostNode records a pod held by local volumes on a lost Kubernetes node. Nodes lost before the others
// made their copies again may together hold every copy of some partitions: a stable cluster without them
// then proves nothing, since those partitions have nothing left to migrate.
type LostNode struct {
	// Factor is the fewest copies every partition was known to have (the replication factor run, or
	// stableReplicationFactor while a raised factor migrates) while the node was lost and its copies not
	// yet made again: of the lost nodes whose copies were not made again, at most Factor − 1 have their
	// volumes given up without the user's word (acko.io/accept-data-loss).
	Factor int32 `json:"factor"`
	// CopiesRemade is set once a reading showed the other nodes in one stable cluster with no migrations
	// while at most Factor − 1 nodes were lost or refilling: they hold every copy the node had.
	// +optional
	CopiesRemade bool `json:"copiesRemade,omitempty"`
}

// VolumesGivenUp records a pod instance whose local volumes the operator deleted.
type VolumesGivenUp struct {
	// UID of the pod instance whose volumes were given up: its successor refills.
	UID string `json:"uid"`
	// At is when the operator decided to give them up.
	At metav1.Time `json:"at"`
}

// DataLoading is the progress of a cold start.
type DataLoading struct {
	// Message says how far it is, e.g. "loading data: test 1200000 records, 45 of 100 % of its
	// devices read".
	Message string `json:"message"`
	// Records read back so far, over every namespace.
	Records int64 `json:"records"`
	// Progressed is when the log last showed progress (or the load began): a restart's progress
	// deadline counts from here, so a slow start that advances is never stuck.
	Progressed metav1.Time `json:"progressed"`
}

// InitializedVolume is a pod's storage volume whose claim is prepared.
type InitializedVolume struct {
	// Name of the volume (spec.storage.volumes).
	Name string `json:"name"`
	// ClaimUID is the UID of the PersistentVolumeClaim that was prepared.
	ClaimUID string `json:"claimUID"`
	// Method is how it was prepared, or InUse.
	Method VolumeInitMethod `json:"method"`
}

// PodUpdateMethod is how the operator changes a pod: a rolling-restart step, or its removal.
// +kubebuilder:validation:Enum=Evict;Replace;InPlace;Live;LiveTogether;Remove
type PodUpdateMethod string

const (
	// UpdateEvict evicts the pod (the PodDisruptionBudget arbitrates) and lets its StatefulSet
	// recreate it with the new template: image and pod spec changes.
	UpdateEvict PodUpdateMethod = "Evict"
	// UpdateReplace deletes a pod that is broken by its container state (never started, crash loop,
	// image pull failing): it serves nothing, and waiting for it could never end.
	UpdateReplace PodUpdateMethod = "Replace"
	// UpdateInPlace copies the new config into the pod and restarts asd in place (SIGUSR1 to tini):
	// same pod and UID, for a config change the server cannot take live.
	UpdateInPlace PodUpdateMethod = "InPlace"
	// UpdateLive applies a config change to the running node (set-config) with no restart; a node that
	// refuses falls back to InPlace.
	UpdateLive PodUpdateMethod = "Live"
	// UpdateLiveTogether applies a replication-factor change to every node's running config
	// (set-config), then has the cluster rebalance once (recluster): a node restarted with another
	// factor would not rejoin the others, and nodes that disagree on it abandon the next exchange.
	UpdateLiveTogether PodUpdateMethod = "LiveTogether"
	// UpdateRemove takes the pod out for good: a scale-down or a rack removal.
	UpdateRemove PodUpdateMethod = "Remove"
)

// PodUpdate records a change of one pod under way.
type PodUpdate struct {
	// Method is how the pod is brought up to date.
	Method PodUpdateMethod `json:"method"`
	// UID of the pod instance being updated.
	UID string `json:"uid"`
	// Reason is recorded as the pod's lastRestartReason.
	Reason RestartReason `json:"reason"`
	// Started is when the step was recorded; the progress deadline counts from here.
	Started metav1.MicroTime `json:"started"`
	// ConfigHash is the config identity the pod gets (InPlace, Live).
	// +optional
	ConfigHash string `json:"configHash,omitempty"`
	// VolumeSizes are the sizes of the pod's volumes its asd starts with (InPlace for VolumeGrown), as
	// in the pod's acko.io/volume-sizes.
	// +optional
	VolumeSizes string `json:"volumeSizes,omitempty"`
	// NodeStartedBefore is when the pod's asd had started by a reading taken before the restart
	// signal (InPlace): a later start proves the restart.
	// +optional
	NodeStartedBefore *metav1.MicroTime `json:"nodeStartedBefore,omitempty"`
	// Attempted is when the last attempt at a restart in place began; until its outcome is known from
	// the node's uptime, no second signal goes out. For an eviction, when it was first refused: refused
	// for longer than the progress deadline, it is RolloutStuck.
	// +optional
	Attempted *metav1.MicroTime `json:"attempted,omitempty"`
	// Done is true once the pod was evicted, deleted or signalled.
	// +optional
	Done bool `json:"done,omitempty"`
}

// OperationStatus tracks an on-demand operation (seed 001).
type OperationStatus struct {
	// ID of the operation, as in spec.operations[].id.
	ID string `json:"id"`
	// Kind of the operation.
	Kind OperationKind `json:"kind"`
	// Phase: InProgress, Completed or Error.
	Phase OperationPhase `json:"phase"`
	// CompletedPods restarted and came back.
	// +optional
	CompletedPods []string `json:"completedPods"`
	// FailedPods failed or timed out.
	// +optional
	FailedPods []string `json:"failedPods"`
	// TargetPods are the pods of the operation, in order, frozen when it started.
	// +optional
	TargetPods []string `json:"targetPods,omitempty"`
	// CurrentPod is the pod being restarted, recorded before it is touched.
	// +optional
	CurrentPod string `json:"currentPod,omitempty"`
	// CurrentPodUID is the UID of CurrentPod when its restart began.
	// +optional
	CurrentPodUID string `json:"currentPodUID,omitempty"`
	// CurrentPodStartTime is when CurrentPod's restart began; the wait for it times out from here.
	// Microsecond precision: a node's uptime is compared with it to tell whether asd restarted since,
	// and a whole-second time would count an asd start up to a second before the restart began.
	// +optional
	CurrentPodStartTime *metav1.MicroTime `json:"currentPodStartTime,omitempty"`
	// CurrentPodSignalled is true once the restart of CurrentPod was sent (signal or eviction).
	// +optional
	CurrentPodSignalled bool `json:"currentPodSignalled,omitempty"`
	// CurrentPodNodeStartedBefore is when CurrentPod's asd had started by a reading taken before the
	// signal (WarmRestart): a later start proves the restart, whatever the rounding of asd's uptime.
	// +optional
	CurrentPodNodeStartedBefore *metav1.MicroTime `json:"currentPodNodeStartedBefore,omitempty"`
	// CurrentPodAttempted is when the last attempt to restart CurrentPod began; until its outcome is
	// known from the node's uptime, no second attempt is made. For a PodRestart, when the eviction of
	// CurrentPod was first refused: refused for longer than the progress deadline, it is RolloutStuck.
	// +optional
	CurrentPodAttempted *metav1.MicroTime `json:"currentPodAttempted,omitempty"`
	// CurrentPodConfigHash is the config identity a WarmRestart of CurrentPod loads (the rack's config
	// when the attempt began), until the pod records it once the signal went out.
	// +optional
	CurrentPodConfigHash string `json:"currentPodConfigHash,omitempty"`
	// WaitingSince is when the operation began waiting for the cluster to be Running before its next
	// pod; the wait has a deadline.
	// +optional
	WaitingSince *metav1.Time `json:"waitingSince,omitempty"`
	// Message explains the phase, e.g. why a pod failed.
	// +optional
	Message string `json:"message,omitempty"`
}

// CircuitBreakerStatus is the state of the reconcile circuit breaker.
type CircuitBreakerStatus struct {
	// ConsecutiveFailures since the last successful reconcile.
	ConsecutiveFailures int32 `json:"consecutiveFailures"`
	// LastError is the message of the last failure.
	// +optional
	LastError string `json:"lastError,omitempty"`
	// LastFailureTime is when the last failure happened.
	// +optional
	LastFailureTime *metav1.Time `json:"lastFailureTime,omitempty"`
}

// AerospikeCluster is an Aerospike Community Edition cluster managed by ACKO.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:subresource:scale:specpath=.spec.size,statuspath=.status.size,selectorpath=.status.selector
// +kubebuilder:resource:shortName=asc,categories=aerospike
// +kubebuilder:printcolumn:name="Size",type=integer,JSONPath=`.spec.size`
// +kubebuilder:printcolumn:name="Ready",type=integer,JSONPath=`.status.readyPods`
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Paused",type=boolean,JSONPath=`.spec.paused`
// +kubebuilder:printcolumn:name="Operation",type=string,JSONPath=`.status.operationStatus.id`
// +kubebuilder:printcolumn:name="Op-Phase",type=string,JSONPath=`.status.operationStatus.phase`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:validation:XValidation:rule="!has(oldSelf.status) || !has(oldSelf.status.operationStatus) || oldSelf.status.operationStatus.phase != 'InProgress' || (has(self.spec.operations) ? self.spec.operations : []) == (has(oldSelf.spec.operations) ? oldSelf.spec.operations : [])",message="cannot modify operations while InProgress",fieldPath=".spec.operations"
type AerospikeCluster struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +required
	Spec AerospikeClusterSpec `json:"spec"`
	// +optional
	Status AerospikeClusterStatus `json:"status,omitempty"`
}

// AerospikeClusterList contains a list of AerospikeCluster.
// +kubebuilder:object:root=true
type AerospikeClusterList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []AerospikeCluster `json:"items"`
}
