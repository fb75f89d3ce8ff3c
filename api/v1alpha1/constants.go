package v1alpha1

// ClusterPhase is the coarse state of an AerospikeCluster, shown in `kubectl get asc`.
// +kubebuilder:validation:Enum=Reconciling;Running;Paused;Error
type ClusterPhase string

const (
	// PhaseReconciling: the operator is bringing the cluster to its spec.
	PhaseReconciling ClusterPhase = "Reconciling"
	// PhaseRunning: every pod runs the current template and config, is Ready, and the Aerospike cluster
	// is stable at the desired size.
	PhaseRunning ClusterPhase = "Running"
	// PhasePaused: spec.paused is true and the operator has stopped managing the cluster.
	PhasePaused ClusterPhase = "Paused"
	// PhaseError: the operator cannot progress without the user (Stalled): the spec cannot be applied,
	// a child conflicts, the circuit breaker is open, or a rolling restart is stuck.
	PhaseError ClusterPhase = "Error"
)

// Condition types.
const (
	// ConditionReady is True when every pod runs the current template and config and is Ready, and the
	// Aerospike cluster is stable: `kubectl wait --for=condition=Ready` returns once a change is applied.
	ConditionReady = "Ready"
	// ConditionReconciling is True while the operator is still changing the cluster toward its spec
	// (kstatus: InProgress). Never True together with Stalled.
	ConditionReconciling = "Reconciling"
	// ConditionStalled is True when the operator cannot progress without the user (kstatus: Failed): an
	// invalid spec, a child conflict, an open circuit breaker, a stuck rollout. It clears itself when
	// the cause goes.
	ConditionStalled = "Stalled"
	// ConditionClusterSplit is True while the Aerospike nodes of the cluster form more than one cluster
	// (split brain) for longer than a short grace period; the message names the groups.
	ConditionClusterSplit = "ClusterSplit"
	// ConditionConfigWarning is True while the applied aerospikeConfig breaks a rule that came after it
	// was accepted (it keeps working; changes to those keys are refused); the message lists them.
	ConditionConfigWarning = "ConfigWarning"
	// ConditionReconcileFailed is True when the last reconcile failed; its message holds the error.
	ConditionReconcileFailed = "ReconcileFailed"
	// ConditionPaused is True while spec.paused is true and acknowledged (ADR-0018).
	ConditionPaused = "Paused"
	// ConditionPendingChanges is True while spec changes made during a pause wait for resume.
	ConditionPendingChanges = "PendingChanges"
	// ConditionNodeLost is True while a pod's local volumes (spec.storage.localVolumes) are on a
	// Kubernetes node that is gone or not Ready; the message names the pod and the node, and when or why
	// not yet its volumes are given up. Absent otherwise.
	ConditionNodeLost = "NodeLost"
	// ConditionCircuitBreakerOpen is True while repeated reconcile failures hold reconciliation back (ADR-0013).
	ConditionCircuitBreakerOpen = "CircuitBreakerOpen"
)

// Condition reasons.
const (
	// ReasonUserRequested: the user set spec.paused (Paused condition).
	ReasonUserRequested = "UserRequested"
	// ReasonSpecChangedWhilePaused: the spec differs from the one last applied (PendingChanges condition).
	ReasonSpecChangedWhilePaused = "SpecChangedWhilePaused"
	// ReasonClusterReady: all pods Ready and the Aerospike cluster stable (Ready condition).
	ReasonClusterReady = "ClusterReady"
	// ReasonPodsNotReady: at least one pod is missing or not Ready (Ready condition).
	ReasonPodsNotReady = "PodsNotReady"
	// ReasonAerospikeNotStable: pods are Ready but Aerospike is migrating or not at the desired size.
	ReasonAerospikeNotStable = "AerospikeNotStable"
	// ReasonPaused: the cluster is paused, so readiness is not being managed (Ready/Reconciling conditions).
	ReasonPaused = "Paused"
	// ReasonApplying: child objects are being created or updated (Reconciling condition).
	ReasonApplying = "Applying"
	// ReasonRollingRestart: pods are being restarted to pick up a change (Reconciling condition).
	ReasonRollingRestart = "RollingRestart"
	// ReasonRestartBlocked: a safety check holds the next restart; the message names it (Reconciling condition).
	ReasonRestartBlocked = "RestartBlocked"
	// ReasonScaling: pods are being added or removed (Reconciling and Ready conditions).
	ReasonScaling = "Scaling"
	// ReasonOperationRunning: an on-demand operation is in progress (Reconciling condition).
	ReasonOperationRunning = "OperationRunning"
	// ReasonAwaitingAddress: a pod's external address (spec.externalAccess) is not known yet: its node's
	// address, its Service's node port or its load balancer's ingress; the message says which
	// (Reconciling condition). The pod starts once it is.
	ReasonAwaitingAddress = "AwaitingAddress"
	// ReasonUpToDate: the cluster matches its spec (Reconciling condition False).
	ReasonUpToDate = "UpToDate"
	// ReasonInvalidSpec: the spec cannot be applied; the message says why (ReconcileFailed condition).
	ReasonInvalidSpec = "InvalidSpec"
	// ReasonChildConflict: a child object with the expected name exists but is not owned by this cluster.
	ReasonChildConflict = "ChildConflict"
	// ReasonReconcileError: an API or internal error stopped the reconcile (ReconcileFailed condition).
	ReasonReconcileError = "ReconcileError"
	// ReasonTooManyFailures: the circuit breaker opened after consecutive failures (CircuitBreakerOpen).
	ReasonTooManyFailures = "TooManyFailures"
	// ReasonRolloutStuck: a restarted pod did not come back within the progress deadline, or a pod's
	// eviction (a roll's or a PodRestart's) has been refused for longer than that; the message names it
	// and its container's state or the refusal (Stalled condition).
	ReasonRolloutStuck = "RolloutStuck"
	// ReasonSplitBrain: the nodes form more than one cluster (ClusterSplit, Ready conditions).
	ReasonSplitBrain = "SplitBrain"
	// ReasonOneCluster: the nodes form one cluster (ClusterSplit condition False).
	ReasonOneCluster = "OneCluster"
	// ReasonRulesChanged: the applied config breaks rules added since it was accepted (ConfigWarning).
	ReasonRulesChanged = "RulesChanged"
	// ReasonOutdatedPods: pods still run an older template or config (Ready condition).
	ReasonOutdatedPods = "OutdatedPods"
	// ReasonReplacingBrokenPods: pods broken by their container state are being replaced (Reconciling).
	ReasonReplacingBrokenPods = "ReplacingBrokenPods"
	// ReasonApplyingConfig: a config change is applied to the running nodes (Reconciling condition).
	ReasonApplyingConfig = "ApplyingConfig"
	// ReasonLocalVolumesPinned: a pod is held by local volumes on a lost node (NodeLost condition, and
	// Reconciling while its volumes wait to be given up).
	ReasonLocalVolumesPinned = "LocalVolumesPinned"
	// ReasonReplicationFactorConflict: a node came back with another replication-factor in the middle of
	// a replication-factor change and the nodes' exchange is stuck (asd: "abandoned exchange - fix
	// configuration conflict"; no cluster is stable, the node outside serves nothing); the operator sets
	// the new factor on every node and in its file, restarts the node in no cluster, then waits for the
	// rebalance (Reconciling condition). docs/troubleshooting.md.
	ReasonReplicationFactorConflict = "ReplicationFactorConflict"
	// ReasonProgressing: nothing blocks the operator (Stalled condition False).
	ReasonProgressing = "Progressing"
)

// PodConditionAerospikeReady is the readiness gate of every Aerospike pod: the operator sets it True
// only while the pod's node answers, is a member of the cluster at its full size and has no
// migrations pending. Services, the PodDisruptionBudget and `kubectl drain` then see Aerospike's own
// readiness, not a TCP port.
const PodConditionAerospikeReady = "acko.io/aerospike-ready"

// RestartReason records why a pod was last restarted, in status.pods[].lastRestartReason.
type RestartReason string

const (
	// RestartReasonWarmRestart: an on-demand WarmRestart operation (SIGUSR1 to tini).
	RestartReasonWarmRestart RestartReason = "WarmRestart"
	// RestartReasonManualRestart: an on-demand PodRestart operation (pod deleted).
	RestartReasonManualRestart RestartReason = "ManualRestart"
	// RestartReasonConfigChanged: the rendered aerospike.conf changed.
	RestartReasonConfigChanged RestartReason = "ConfigChanged"
	// RestartReasonImageChanged: spec.image changed.
	RestartReasonImageChanged RestartReason = "ImageChanged"
	// RestartReasonPodSpecChanged: another part of the pod template changed.
	RestartReasonPodSpecChanged RestartReason = "PodSpecChanged"
	// RestartReasonAddressChanged: the pod's external address changed while its node ran (its Kubernetes
	// node's address, its Service's node port or its load balancer's ingress): asd reads it at start.
	RestartReasonAddressChanged RestartReason = "AddressChanged"
	// RestartReasonVolumeGrown: a Block volume's claim grew (spec.storage.volumes size): asd reads a
	// device's size at start.
	RestartReasonVolumeGrown RestartReason = "VolumeGrown"
	// RestartReasonNodeBlocked: the pod was moved off a node of spec.nodeBlockList.
	RestartReasonNodeBlocked RestartReason = "NodeBlocked"
)

// OperationKind is the kind of an on-demand operation.
// +kubebuilder:validation:Enum=WarmRestart;PodRestart
type OperationKind string

const (
	// OperationWarmRestart sends SIGUSR1 to the image's tini, which restarts asd in place.
	OperationWarmRestart OperationKind = "WarmRestart"
	// OperationPodRestart deletes the pod and lets its StatefulSet recreate it.
	OperationPodRestart OperationKind = "PodRestart"
)

// OperationPhase is the state of an on-demand operation.
// +kubebuilder:validation:Enum=InProgress;Completed;Error
type OperationPhase string

const (
	// OperationInProgress: the operator is restarting the target pods one at a time.
	OperationInProgress OperationPhase = "InProgress"
	// OperationCompleted: every target pod restarted and came back.
	OperationCompleted OperationPhase = "Completed"
	// OperationError: a pod failed or timed out; see failedPods. No further pod is touched.
	OperationError OperationPhase = "Error"
)

// Event reasons on the AerospikeCluster.
const (
	// EventOperation: an operation started, progressed by one pod, or ended.
	EventOperation = "Operation"
	// EventPodWarmRestarted: a pod's tini received SIGUSR1.
	EventPodWarmRestarted = "PodWarmRestarted"
	// EventPodColdRestarted: a pod was deleted to be recreated.
	EventPodColdRestarted = "PodColdRestarted"
	// EventPaused: the operator acknowledged spec.paused=true.
	EventPaused = "Paused"
	// EventResumed: the operator resumed managing the cluster.
	EventResumed = "Resumed"
	// EventStatusWriteFailed: the pause or resume could not be recorded in status; it is retried in 10 seconds.
	EventStatusWriteFailed = "StatusWriteFailed"
	// EventCreated: a child object was created.
	EventCreated = "Created"
	// EventDeleted: a child object no pod needs any more was deleted (a per-pod Service).
	EventDeleted = "Deleted"
	// EventScaled: the cluster size changed.
	EventScaled = "Scaled"
	// EventRollingRestartStarted: pods began restarting to pick up a change.
	EventRollingRestartStarted = "RollingRestartStarted"
	// EventRollingRestartBlocked: a safety check holds the rolling restart.
	EventRollingRestartBlocked = "RollingRestartBlocked"
	// EventRollingRestartFinished: every pod runs the current template.
	EventRollingRestartFinished = "RollingRestartFinished"
	// EventReconcileError: a reconcile failed.
	EventReconcileError = "ReconcileError"
	// EventInvalidSpec: the spec cannot be applied.
	EventInvalidSpec = "InvalidSpec"
	// EventChildConflict: a child with the expected name is owned by someone else.
	EventChildConflict = "ChildConflict"
	// EventCircuitBreakerOpened: repeated failures opened the circuit breaker.
	EventCircuitBreakerOpened = "CircuitBreakerOpened"
	// EventCircuitBreakerClosed: a success closed the circuit breaker.
	EventCircuitBreakerClosed = "CircuitBreakerClosed"
	// EventRolloutStuck: a restarted pod did not come back within the progress deadline, or its
	// eviction has been refused for longer than that.
	EventRolloutStuck = "RolloutStuck"
	// EventPodReplaced: a pod broken by its container state was deleted to be recreated.
	EventPodReplaced = "PodReplaced"
	// EventConfigApplied: a config change was applied to a running node with no restart.
	EventConfigApplied = "ConfigApplied"
	// EventConfigApplyFailed: a node refused a live config change; it is restarted in place instead (a
	// replication-factor change, which no restart may carry, is tried again on every node).
	EventConfigApplyFailed = "ConfigApplyFailed"
	// EventReplicationFactorConflict: a replication-factor change found the nodes' exchange stuck on a
	// node that came back with the old factor, and names the node whose restart ends it.
	EventReplicationFactorConflict = "ReplicationFactorConflict"
	// EventPodRestartedInPlace: a pod's asd was restarted in place to load a new config.
	EventPodRestartedInPlace = "PodRestartedInPlace"
	// EventEvictionRefused: an eviction was refused (the PodDisruptionBudget allows no disruption now).
	EventEvictionRefused = "EvictionRefused"
	// EventClusterSplit: the Aerospike nodes form more than one cluster.
	EventClusterSplit = "ClusterSplit"
	// EventClusterJoined: the Aerospike nodes form one cluster again.
	EventClusterJoined = "ClusterJoined"
	// EventNodeTipped: a node outside the cluster was told where a member is (tip).
	EventNodeTipped = "NodeTipped"
	// EventVolumeInitialized: a pod's init container prepared a new claim (spec.storage.volumes
	// initMethod) before asd first ran on it.
	EventVolumeInitialized = "VolumeInitialized"
	// EventVolumesGrowing: a larger spec.storage.volumes size is being applied: a StatefulSet replaced
	// without its pods, or a claim resized.
	EventVolumesGrowing = "VolumesGrowing"
	// EventNodeLost: a pod's local volumes are on a Kubernetes node that is gone or not Ready.
	EventNodeLost = "NodeLost"
	// EventLocalVolumesDeleted: the claims of a pod whose node was lost for spec.storage.localVolumes
	// nodeLostAfterSeconds were deleted, and the pod, so that it is recreated elsewhere with empty volumes.
	EventLocalVolumesDeleted = "LocalVolumesDeleted"
	// EventPodMovedOffNode: a pod on a node of spec.nodeBlockList was evicted (its local claims deleted
	// first) to be recreated on another node.
	EventPodMovedOffNode = "PodMovedOffNode"
)

// Limits of Aerospike Community Edition and of the API.
const (
	// MaxClusterSize is the largest cluster Aerospike CE allows.
	MaxClusterSize = 8
	// MaxOperationIDLength is the longest operation id (seed 001).
	MaxOperationIDLength = 20
	// FinishedOperationHistory is how many finished operation ids status remembers, so that none runs twice.
	FinishedOperationHistory = 32
	// AerospikeContainerName is the name of the Aerospike container in every pod.
	AerospikeContainerName = "aerospike-server"
	// ExporterContainerName is the Aerospike Prometheus exporter sidecar (spec.monitoring).
	ExporterContainerName = "aerospike-exporter"
	// DefaultExporterImage is the exporter release the dashboard and alert rules are written against
	// (config/prometheus/exporter-metrics.txt lists its metric names).
	DefaultExporterImage = "aerospike/aerospike-prometheus-exporter:1.32.0"
	// DefaultExporterPort is where the exporter serves metrics.
	DefaultExporterPort = 9145
	// DefaultHostPort is the node's port of spec.externalAccess type HostPort: asd's service port.
	DefaultHostPort = 3000
)
