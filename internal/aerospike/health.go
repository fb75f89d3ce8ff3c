package aerospike

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
)

// MaxReadingAge bounds how old a reading may be for a decision that takes a node down: a node can go
// silent between two polls, and a stale "stable" must never let a second node go. The prober polls a
// cluster the operator works on every 2 s, so a fresh reading is never far away.
const MaxReadingAge = 5 * time.Second

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
	// ExpectedSize is the size the reading asked cluster-stable about: the number of running pods.
	ExpectedSize int
	Nodes        map[string]NodeHealth // by pod name
	ReadAt       time.Time             // when the last poll finished
	// SplitSince is when the nodes began to disagree (see Split); zero while they agree.
	SplitSince time.Time
	// SplitSettled: at this reading the disagreement had lasted the prober's grace period, longer
	// than a restart or a join takes: a split brain.
	SplitSettled bool
}

// Gate is the stability gate of every act that takes a node down (rolling restarts, scale-down,
// operations): it trusts no silence. Every member (the pods that run, so whose nodes must be in the
// cluster) must have answered within MaxReadingAge, all with the same cluster_key and
// cluster_size = len(members), cluster_integrity, no partitions left to migrate, and the node's own
// cluster-stable:size=N;ignore-migrations=false must have succeeded (the server can answer
// "unstable cluster" while its statistics look settled: trust the command). why names the first
// node that holds it.
func (h ClusterHealth) Gate(members []string, now time.Time) (ok bool, why string) {
	if len(members) == 0 {
		return false, "no Aerospike node runs"
	}
	if h.ExpectedSize != len(members) {
		return false, fmt.Sprintf("waiting for a reading of the %d running nodes", len(members))
	}
	key, keyFrom := "", ""
	for _, pod := range slices.Sorted(slices.Values(members)) {
		n, ok := h.Nodes[pod]
		if !ok {
			return false, fmt.Sprintf("no reading of %s yet", pod)
		}
		if why := n.unsettled(len(members), now); why != "" {
			return false, pod + ": " + why
		}
		if key != "" && n.Facts.ClusterKey != key {
			return false, fmt.Sprintf("cluster_key differs: %s has %s, %s has %s", keyFrom, key, pod, n.Facts.ClusterKey)
		}
		key, keyFrom = n.Facts.ClusterKey, pod
	}
	return true, ""
}

// Unheard says why the reading does not show the node answering at now ("" when it does): it is
// older than MaxReadingAge, or the node did not answer, or answered with an error.
func (n NodeHealth) Unheard(now time.Time) string {
	switch {
	case now.Sub(n.ReadAt) > MaxReadingAge:
		return fmt.Sprintf("last reading is %s old", now.Sub(n.ReadAt).Round(time.Second))
	case !n.Reachable():
		return "does not answer: " + n.Err.Error()
	case n.Err != nil:
		return n.Err.Error()
	}
	return ""
}

// unsettled says why one node's reading does not let the cluster lose a node ("" when it does).
func (n NodeHealth) unsettled(size int, now time.Time) string {
	if why := n.Unheard(now); why != "" {
		return why
	}
	if why := nodeUnstable(n.Facts, size); why != "" {
		return why
	}
	switch f := n.Facts; {
	case f.ClusterStableErr != nil:
		return fmt.Sprintf("cluster-stable: %v", f.ClusterStableErr)
	case f.ClusterStableKey != f.ClusterKey:
		return fmt.Sprintf("cluster-stable answered key %s, statistics say %s", f.ClusterStableKey, f.ClusterKey)
	}
	return ""
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

// Group is the nodes that report one cluster key.
type Group struct {
	Key string
	// Size is the cluster_size the group's nodes report (the largest, should they differ).
	Size int
	Pods []string
}

// Groups sorts the nodes that answered by the cluster key they report, largest group first (ties by
// key), and lists the members that did not answer. A node that has not formed a cluster yet reports
// key 0 and size 0: a group of its own.
func (h ClusterHealth) Groups(members []string) (groups []Group, silent []string) {
	byKey := map[string]*Group{}
	for _, pod := range slices.Sorted(slices.Values(members)) {
		n, ok := h.Nodes[pod]
		if !ok || n.Err != nil {
			silent = append(silent, pod)
			continue
		}
		g := byKey[n.Facts.ClusterKey]
		if g == nil {
			g = &Group{Key: n.Facts.ClusterKey}
			byKey[g.Key] = g
		}
		g.Pods = append(g.Pods, pod)
		g.Size = max(g.Size, n.Facts.ClusterSize)
	}
	for _, k := range slices.Sorted(maps.Keys(byKey)) {
		groups = append(groups, *byKey[k])
	}
	slices.SortStableFunc(groups, func(a, b Group) int { return len(b.Pods) - len(a.Pods) })
	return groups, silent
}

// Split reports a split brain among the members' nodes: the nodes that answer report different
// cluster keys, or a cluster smaller than the number of members (some node that runs is not in it).
// A node that has just (re)started is briefly split too; callers wait SplitSince out first.
func (h ClusterHealth) Split(members []string) bool {
	groups, _ := h.Groups(members)
	return len(groups) > 1 || len(groups) == 1 && groups[0].Size < len(members)
}

// DescribeGroups renders the groups for a condition or an event: each with its key, reported size and
// nodes (pod and node id), then the members that do not answer.
func (h ClusterHealth) DescribeGroups(members []string) string {
	groups, silent := h.Groups(members)
	parts := make([]string, 0, len(groups)+1)
	for _, g := range groups {
		nodes := make([]string, 0, len(g.Pods))
		for _, pod := range g.Pods {
			nodes = append(nodes, fmt.Sprintf("%s (node %s)", pod, h.Nodes[pod].Facts.NodeID))
		}
		parts = append(parts, fmt.Sprintf("cluster_key %s, cluster_size %d: %s", g.Key, g.Size, strings.Join(nodes, ", ")))
	}
	if len(silent) > 0 {
		parts = append(parts, "not answering: "+strings.Join(silent, ", "))
	}
	return strings.Join(parts, "; ")
}

// Reasons of NodeReady, as the readiness-gate condition shows them.
const (
	ReasonNodeReady    = "AerospikeReady"
	ReasonNoReading    = "NoReading"
	ReasonNotAnswering = "NotAnswering"
	ReasonNotAMember   = "NotAMember"
)

// NodeReady is the pod's Aerospike readiness (the readiness gate): whether this node can serve. It
// is ready when it answers and is a member of the cluster: it has formed a cluster (cluster_size > 0,
// cluster_key not 0: a node that has just (re)started reports 0 / 0 until it joins) and reports the
// cluster's key (see Cluster). Migrations and a cluster size that differs from the number of running
// pods do not matter: after any membership change every node migrates and reports the new size for a
// while, and the others still serve; keeping a second node from going down meanwhile is the
// PodDisruptionBudget's job, not readiness. A hung node, a node that has not rejoined yet and a node
// outside the cluster (alone, or on the smaller side of a split) are not ready.
func (h ClusterHealth) NodeReady(pod string, members []string) (ready bool, reason, message string) {
	n, ok := h.Nodes[pod]
	switch {
	case !ok:
		return false, ReasonNoReading, "no Aerospike reading yet"
	case !n.Reachable():
		return false, ReasonNotAnswering, "Aerospike node does not answer"
	case n.Err != nil:
		return false, ReasonNotAnswering, n.Err.Error()
	case !formed(n.Facts):
		return false, ReasonNotAMember, "has not joined a cluster yet (cluster_size 0)"
	}
	if key, found := h.Cluster(members); !found || n.Facts.ClusterKey != key {
		return false, ReasonNotAMember, "not a member of the cluster: " + h.DescribeGroups(members)
	}
	return true, ReasonNodeReady, "member of the cluster"
}

// formed: the node has formed or joined a cluster.
func formed(f NodeFacts) bool {
	return f.ClusterSize > 0 && f.ClusterKey != "0" && f.ClusterKey != ""
}

// Cluster is the key of the members' cluster: the largest group of nodes that have formed one. Two
// groups of the same size (a node recreated alone next to the other node of a 2-node cluster, an even
// split) are told apart by the node that has run longest: its group is the cluster the others left or
// have not joined yet (a node that restarted has the shorter uptime). found is false when no node
// that answers has formed a cluster.
func (h ClusterHealth) Cluster(members []string) (key string, found bool) {
	groups, _ := h.Groups(members)
	best, bestUptime := -1, time.Duration(-1)
	for i, g := range groups {
		if !formed(h.Nodes[g.Pods[0]].Facts) {
			continue
		}
		if best >= 0 && len(g.Pods) < len(groups[best].Pods) {
			break // groups come largest first
		}
		if up := h.longestUptime(g.Pods); up > bestUptime {
			best, bestUptime = i, up
		}
	}
	if best < 0 {
		return "", false
	}
	return groups[best].Key, true
}

func (h ClusterHealth) longestUptime(pods []string) time.Duration {
	longest := time.Duration(0)
	for _, p := range pods {
		longest = max(longest, h.Nodes[p].Facts.Uptime)
	}
	return longest
}

// NodeStarted is when the pod's asd started by its latest reading (zero without a good reading). asd
// reports its uptime in whole seconds and up to a second ahead, so the estimate can be up to a second
// early.
func (h ClusterHealth) NodeStarted(pod string) time.Time {
	n, ok := h.Nodes[pod]
	if !ok || n.Err != nil {
		return time.Time{}
	}
	return n.ReadAt.Add(-n.Facts.Uptime)
}

// RestartedSince reports whether the pod's asd started later than before (a NodeStarted estimate taken
// from a reading before the restart was asked for) by more than the second of rounding: compared
// with an earlier reading, never with the clock, whose difference to asd's uptime can be up to a
// second off either way.
func (h ClusterHealth) RestartedSince(pod string, before time.Time) bool {
	started := h.NodeStarted(pod)
	return !before.IsZero() && !started.IsZero() && started.After(before.Add(time.Second))
}
