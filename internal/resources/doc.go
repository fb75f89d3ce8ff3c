// Package resources builds the Kubernetes children of an AerospikeCluster: a ConfigMap and a StatefulSet
// per rack, a headless and a client Service, and a PodDisruptionBudget. The builders are pure (spec in,
// objects out); the reconciler creates or updates what they return, using NeedsUpdate and ApplyOwnedFields
// to touch only the fields the operator owns, and RestartReason to decide which pods to roll.
package resources

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/acko-io/acko/api/v1alpha1"
)

// Names of the pod volumes the operator adds; storage volumes may not use them.
const (
	// ConfigVolume is the pod's own copy of aerospike.conf, an emptyDir at config.ConfigDir: asd
	// reads it, and it changes only when the pod's turn comes (see ConfigInitContainer).
	ConfigVolume = "aerospike-config"
	// ConfigMapVolume is the rack's ConfigMap, mounted as a directory at config.ConfigMapDir.
	ConfigMapVolume = "aerospike-configmap"
	// SMDVolume is the emptyDir at <work-directory>/smd, where asd keeps its system metadata.
	SMDVolume = "aerospike-smd"
)

// ConfigInitContainer copies the ConfigMap's aerospike.conf into the pod's own copy when the pod
// starts. A running pod keeps its copy when the ConfigMap changes (a crash or a restart of asd loads
// the same config again); the operator copies the new file on the pod's turn in a rolling restart.
const ConfigInitContainer = "copy-config"

// ConfigReportContainer runs after ConfigInitContainer and copies the pod's own aerospike.conf to its
// termination log: the kubelet keeps the last 4 KiB in the pod's status, whose last line names the config
// the pod copied (config.CopiedHash, CopiedConfig). A pod created while its ConfigMap had taken a new
// config and its StatefulSet not yet copied that one under the old one's annotation.
const ConfigReportContainer = "report-config"

// Kind is the kind of the owner of every child.
const Kind = "AerospikeCluster"

// OwnerReference makes the cluster the controller of a child, so that children are deleted with it and a
// child with the expected name that another controller owns is recognisable as not ours.
func OwnerReference(c *v1alpha1.AerospikeCluster) *metav1.OwnerReference {
	return metav1.NewControllerRef(c, v1alpha1.GroupVersion.WithKind(Kind))
}

// objectMeta is the metadata every child shares: the cluster's namespace, the given labels and the
// controller owner reference.
func objectMeta(c *v1alpha1.AerospikeCluster, name string, labels map[string]string) metav1.ObjectMeta {
	return metav1.ObjectMeta{
		Name:            name,
		Namespace:       c.Namespace,
		Labels:          labels,
		OwnerReferences: []metav1.OwnerReference{*OwnerReference(c)},
	}
}
