package aerospike

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"
)

// NodeHealth is the latest reading of one node.
type NodeHealth struct {
	Addr   string
	Facts  NodeFacts // valid when Err is nil
	Err    error     // errors.Is(Err, ErrUnreachable) when the node did not answer
	ReadAt time.Time // when the answer (or the failure) came back
}

// Reachable reports whether the node answered at all, even with an error.
func (h NodeHealth) Reachable() bool {
	return !errors.Is(h.Err, ErrUnreachable)
}

// ClusterHealth is the prober's cached view of one cluster.
type ClusterHealth struct {
	ExpectedSize int
	Nodes        map[string]NodeHealth // by pod name
	ReadAt       time.Time             // when the last poll finished
}

// Stable applies ClusterStable to the snapshot.
func (h ClusterHealth) Stable() (bool, string) {
	return ClusterStable(h.Nodes, h.ExpectedSize)
}

// ClusterStable decides whether a cluster of expectedSize nodes is stable: every reachable node
// reports the same cluster_key, cluster_size == expectedSize, cluster_integrity true and no
// partitions left to migrate. Unreachable nodes are skipped: a node that is really gone shows as
// a smaller cluster_size on the others. At least one node must answer. reason says why not.
func ClusterStable(nodes map[string]NodeHealth, expectedSize int) (stable bool, reason string) {
	key, keyFrom := "", ""
	for _, name := range slices.Sorted(maps.Keys(nodes)) {
		h := nodes[name]
		if !h.Reachable() {
			continue
		}
		if h.Err != nil {
			return false, fmt.Sprintf("%s: %v", name, h.Err)
		}
		if r := nodeUnstable(h.Facts, expectedSize); r != "" {
			return false, name + ": " + r
		}
		if key != "" && h.Facts.ClusterKey != key {
			return false, fmt.Sprintf("cluster_key differs: %s has %s, %s has %s", keyFrom, key, name, h.Facts.ClusterKey)
		}
		key, keyFrom = h.Facts.ClusterKey, name
	}
	if key == "" {
		return false, "no node answered"
	}
	return true, ""
}

func nodeUnstable(f NodeFacts, expectedSize int) string {
	switch {
	case f.ClusterSize != expectedSize:
		return fmt.Sprintf("cluster_size=%d, want %d", f.ClusterSize, expectedSize)
	case !f.ClusterIntegrity:
		return "cluster_integrity=false"
	case f.MigratePartitionsRemaining != 0:
		return fmt.Sprintf("migrate_partitions_remaining=%d", f.MigratePartitionsRemaining)
	}
	return ""
}
