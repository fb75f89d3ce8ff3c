package config

import (
	"slices"

	"github.com/acko-io/acko/api/v1alpha1"
)

// DefaultReplicationFactor is asd's replication-factor when a namespace sets none.
const DefaultReplicationFactor = 2

// ReplicationFactor is the smallest replication-factor over every namespace of every rack: the
// number of copies the least protected partition has.
func ReplicationFactor(c *v1alpha1.AerospikeCluster) int {
	smallest := 0
	for _, factors := range NamespaceReplicationFactors(c) {
		for _, rf := range factors {
			if smallest == 0 || rf < smallest {
				smallest = rf
			}
		}
	}
	return max(smallest, 1)
}

// NamespaceReplicationFactors is each namespace's replication-factor in every rack, by namespace
// name: one value per rack, in rack order (a rack may override it).
func NamespaceReplicationFactors(c *v1alpha1.AerospikeCluster) map[string][]int {
	out := map[string][]int{}
	for _, rack := range c.RackPlan() {
		namespaces, _ := mergeRack(c, rack).tree[keyNamespaces].([]any)
		for _, ns := range namespaces {
			m, _ := ns.(map[string]any)
			name, _ := m[keyName].(string)
			rf := int64(DefaultReplicationFactor)
			if v, ok := intValue(m[keyReplicationFactor]); ok {
				rf = v
			}
			out[name] = append(out[name], int(rf))
		}
	}
	return out
}

// MaxDown is the safety rule of every act that takes Aerospike nodes down (rolling restarts,
// scale-down, rack removal, operations, the PodDisruptionBudget): at most replication-factor − 1 nodes
// (the smallest factor, and no more copies than nodes) may be down or leaving at once, whatever the
// racks, because in Community Edition the copies of a partition can sit on any nodes. With
// replication-factor 1 (or one node) nothing is safe: one node at a time.
func MaxDown(c *v1alpha1.AerospikeCluster) int {
	return max(1, min(ReplicationFactor(c), int(c.Spec.Size))-1)
}

// HasPersistentNamespace reports whether a namespace of any rack keeps its records on storage
// (storage-engine device, or memory backed by devices or files): asd reads them back at every start.
func HasPersistentNamespace(c *v1alpha1.AerospikeCluster) bool {
	for _, rack := range c.RackPlan() {
		namespaces, _ := mergeRack(c, rack).tree[keyNamespaces].([]any)
		for _, ns := range namespaces {
			m, _ := ns.(map[string]any)
			se, _ := m[keyStorageEngine].(map[string]any)
			if se[keyType] == engineDevice || se[keyDevices] != nil || se[keyFiles] != nil {
				return true
			}
		}
	}
	return false
}

// NamespaceNames are the names of the cluster's namespaces, in config order, over every rack.
func NamespaceNames(c *v1alpha1.AerospikeCluster) []string {
	var out []string
	for _, rack := range c.RackPlan() {
		namespaces, _ := mergeRack(c, rack).tree[keyNamespaces].([]any)
		for _, ns := range namespaces {
			m, _ := ns.(map[string]any)
			if name, ok := m["name"].(string); ok && !slices.Contains(out, name) {
				out = append(out, name)
			}
		}
	}
	return out
}
