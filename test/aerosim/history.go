package aerosim

import (
	"slices"
	"time"
)

// Reasons of a node's Transition.
const (
	ReasonMember     = "member"     // up: a member of a cluster
	ReasonRemoved    = "removed"    // its pod is gone
	ReasonRestarting = "restarting" // asd restarts (not listening)
	ReasonJoining    = "joining"    // asd runs, not a member yet
	ReasonHung       = "hung"       // asd stopped answering (FaultHang)
	ReasonFailed     = "failed"     // asd refused its config
)

// Transition is a change of a node's state: up or down, and why; and the cluster it is a member
// of (a new key while up is a membership change of its cluster).
type Transition struct {
	At          time.Time `json:"at"`
	Node        string    `json:"node"`
	Up          bool      `json:"up"`
	Reason      string    `json:"reason"`
	ClusterKey  string    `json:"clusterKey,omitempty"`
	ClusterSize int       `json:"clusterSize,omitempty"`
}

// ClusterFormed records a new membership: its key and the nodes in it (the others count a node
// that just stopped until they drop it).
type ClusterFormed struct {
	At      time.Time `json:"at"`
	Key     string    `json:"key"`
	Name    string    `json:"name"`
	Members []string  `json:"members"`
}

// History is what happened to the nodes, oldest first.
type History struct {
	Transitions []Transition    `json:"transitions"`
	Clusters    []ClusterFormed `json:"clusters"`
}

// historyLimit bounds each list; the oldest half goes when it is reached.
const historyLimit = 100_000

type history History

// status is what a Transition records of a node.
type status struct {
	up     bool
	reason string
	key    string
	size   int
}

func (h *history) node(t time.Time, n *node, st status) {
	if st == n.status {
		return
	}
	n.status = st
	h.Transitions = capped(append(h.Transitions, Transition{At: t, Node: n.spec.Name, Up: st.up, Reason: st.reason,
		ClusterKey: st.key, ClusterSize: st.size}))
}

func (h *history) cluster(t time.Time, c *cluster) {
	rec := ClusterFormed{At: t, Key: c.key}
	for _, n := range c.members {
		rec.Members = append(rec.Members, n.spec.Name)
		if !n.removed && n.asd.answering() {
			rec.Name = n.clusterName()
		}
	}
	h.Clusters = capped(append(h.Clusters, rec))
}

func capped[T any](list []T) []T {
	if len(list) > historyLimit {
		return slices.Delete(list, 0, historyLimit/2)
	}
	return list
}

// statusOf is the node's state as the history records it.
func statusOf(n *node) status {
	switch {
	case n.removed:
		return status{reason: ReasonRemoved}
	case n.asd.phase == phaseDown || n.asd.phase == phaseLoading:
		return status{reason: ReasonRestarting}
	case n.asd.phase == phaseFailed:
		return status{reason: ReasonFailed}
	case n.fault == FaultHang:
		return status{reason: ReasonHung}
	case n.cluster == nil:
		return status{reason: ReasonJoining}
	}
	return status{up: true, reason: ReasonMember, key: n.cluster.key, size: len(n.cluster.members)}
}

func (s *Sim) record(t time.Time, nodes []*node) {
	for _, n := range nodes {
		s.history.node(t, n, statusOf(n))
	}
}

// History returns the recorded transitions and clusters since the given time (zero: all).
func (s *Sim) History(since time.Time) History {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.advance()
	from := func(at time.Time) bool { return !at.Before(since) }
	var out History
	for _, tr := range s.history.Transitions {
		if from(tr.At) {
			out.Transitions = append(out.Transitions, tr)
		}
	}
	for _, c := range s.history.Clusters {
		if from(c.At) {
			out.Clusters = append(out.Clusters, c)
		}
	}
	return out
}
