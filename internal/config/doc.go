// Package config turns an AerospikeCluster's free-form aerospikeConfig (merged with a rack's overrides) into
// the text of aerospike.conf, and holds the checks the webhook and the reconciler share on that config.
// Everything here is a pure function of the AerospikeCluster: no client, no network.
package config

// Ports of an Aerospike node. The operator owns them: the Services and the StatefulSet use the same
// constants, so they cannot drift from the rendered network stanza.
const (
	ServicePort   int32 = 3000
	FabricPort    int32 = 3001
	HeartbeatPort int32 = 3002
	AdminPort     int32 = 3003
)

// Rendering defaults and limits.
const (
	// FileName is the file asd reads from ConfigDir, and the key of the rack's template in its
	// ConfigMap (each pod's own file is under PodFileKey).
	FileName = "aerospike.conf"
	// ConfigDir is where asd reads its config: the image's entrypoint starts asd with ConfigDir/FileName.
	// It is a pod-local copy (an emptyDir, which also hides the image's own template so the entrypoint
	// leaves it alone): a pod loads a new config only when the operator copies it there on the pod's turn.
	ConfigDir = "/etc/aerospike"
	// ConfigMapDir is where the rack's ConfigMap is mounted. The kubelet refreshes it in place within
	// about a minute of a change; an init container copies it into ConfigDir when the pod starts.
	ConfigMapDir = "/etc/aerospike-configmap"
	// DefaultWorkDirectory is service.work-directory unless the user sets it; asd keeps SMD under it.
	DefaultWorkDirectory = "/opt/aerospike"
	// DefaultProtoFdMax is service.proto-fd-max unless the user sets it (asd's own default is 1024).
	DefaultProtoFdMax int64 = 15000
	// DefaultDataSize is the data-size of a storage-engine memory namespace without storage backing when
	// the user gives none: Aerospike 8.1 refuses to start without one.
	DefaultDataSize = "1G"
	// MaxClusterNameLength is the longest cluster-name Aerospike accepts.
	MaxClusterNameLength = 63
	// HeartbeatInterval and HeartbeatTimeout are the mesh heartbeat settings of the official image.
	HeartbeatInterval int64 = 150
	HeartbeatTimeout  int64 = 10
)

// SMDDirectory is the folder under the work directory where asd keeps its system metadata; it must exist
// before asd starts, so the StatefulSet mounts a volume there.
const SMDDirectory = "smd"
