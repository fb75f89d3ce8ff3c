package controller

import (
	"context"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/acko-io/acko/internal/aerospike"
	"github.com/acko-io/acko/internal/resources"
)

// takeDownCheck is a named safety predicate (as ECK's; ADR-0020, docs/adr/0020-restart-safety.md): it
// returns "" when the given pods may go down now, or why they may not. Every act that takes Aerospike nodes
// down runs them right before it acts, on this reconcile's fresh readings: rolling restarts, scale-down,
// rack removal, operations.
type takeDownCheck struct {
	name  string
	check func(st *clusterState, pods []string) string
}

var takeDownChecks = []takeDownCheck{
	{"SafetyRule", func(st *clusterState, pods []string) string {
		var others []string
		for p := range st.held {
			if !slices.Contains(pods, p) {
				others = append(others, p)
			}
		}
		if len(pods)+len(others) > st.maxDown {
			slices.Sort(others)
			return fmt.Sprintf("%d pods would be down at once (%s taken down already), at most %d may be "+
				"(replication-factor − 1)", len(pods)+len(others), strings.Join(others, ", "), st.maxDown)
		}
		return ""
	}},
	{"PodsReady", func(st *clusterState, pods []string) string {
		if notReady := st.notReadyPods(pods); len(notReady) > 0 {
			return "pods not Ready: " + strings.Join(notReady, ", ")
		}
		return ""
	}},
	{"ClusterStable", func(st *clusterState, _ []string) string {
		if stable, why := st.stable(aerospike.MaxReadingAge); !stable {
			return why
		}
		return ""
	}},
	{"NoSplitBrain", func(st *clusterState, pods []string) string {
		// While split, only nodes outside the largest group may go (restarting them can heal it).
		if !st.split {
			return ""
		}
		groups, _ := st.health.Groups(st.members)
		for _, p := range pods {
			if len(groups) > 0 && slices.Contains(groups[0].Pods, p) {
				return fmt.Sprintf("the nodes form more than one cluster and %s is in the largest: %s", p, st.describeGroups())
			}
		}
		return ""
	}},
}

// mayTakeDown runs the safety checks for taking pods down now; it returns the name of the first
// check that holds them and why ("" when they may go). While the nodes are split, nodes outside the
// largest group hold no copy the cluster serves from: restarting them (which can heal the split)
// needs only the safety rule.
func (st *clusterState) mayTakeDown(pods []string) (check, why string) {
	checks := takeDownChecks
	if st.split && len(pods) > 0 && st.outsideLargestGroup(pods) {
		checks = checks[:1]
	}
	for _, c := range checks {
		if why := c.check(st, pods); why != "" {
			return c.name, why
		}
	}
	return "", ""
}

// outsideLargestGroup: none of the pods' nodes is in the largest group of a split cluster.
func (st *clusterState) outsideLargestGroup(pods []string) bool {
	groups, _ := st.health.Groups(st.members)
	for _, p := range pods {
		if len(groups) == 0 || slices.Contains(groups[0].Pods, p) {
			return false
		}
	}
	return true
}

// budgetTaken reports whether the PodDisruptionBudget counts pods as disrupted already, so that a
// drain cannot take another node while the operator takes them down without an eviction (a restart
// in place, a scale-down): their readiness gates are held False, their Ready conditions followed, and
// the disruption controller has counted them.
func (st *clusterState) budgetTaken(pods []string) (bool, string) {
	pdb := st.existingPDB
	if pdb == nil {
		return false, "the PodDisruptionBudget does not exist yet"
	}
	for _, p := range pods {
		if resources.PodReady(st.pods[p]) {
			return false, fmt.Sprintf("waiting for pod %s to report not Ready (its readiness gate is held)", p)
		}
	}
	if pdb.Status.ObservedGeneration < pdb.Generation || pdb.Status.CurrentHealthy > pdb.Status.ExpectedPods-int32(len(pods)) {
		return false, fmt.Sprintf("waiting for PodDisruptionBudget %s to count %s as disrupted", pdb.Name, strings.Join(pods, ", "))
	}
	return true, ""
}

// lookAgain re-reads the cluster's pods from the API server, not the cache, right before an act that
// takes nodes down: a pod the checks saw Ready that went down since (a drain evicted it a moment ago)
// holds the act.
func (r *AerospikeClusterReconciler) lookAgain(ctx context.Context, st *clusterState, pods []string) (string, error) {
	list := &corev1.PodList{}
	if err := r.APIReader.List(ctx, list, client.InNamespace(st.cluster.Namespace),
		client.MatchingLabels(st.cluster.SelectorLabels())); err != nil {
		return "", err
	}
	fresh := map[string]*corev1.Pod{}
	for i := range list.Items {
		fresh[list.Items[i].Name] = &list.Items[i]
	}
	var down []string
	for _, name := range st.cluster.DesiredPodNames() {
		if !slices.Contains(pods, name) && resources.PodReady(st.pods[name]) && !resources.PodReady(fresh[name]) {
			down = append(down, name)
		}
	}
	if len(down) > 0 {
		return "pods went down meanwhile: " + strings.Join(down, ", "), nil
	}
	return "", nil
}

// holdReason formats a held step for the Reconciling condition (reason RestartBlocked).
func holdReason(what, check, why string) string {
	return fmt.Sprintf("%s held by check %s: %s", what, check, why)
}
