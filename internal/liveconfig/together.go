package liveconfig

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/acko-io/acko/internal/aerospike"
	"github.com/acko-io/acko/internal/config/live"
)

// Recluster answers: the principal reforms the cluster (a new cluster key, one exchange and rebalance
// with every node's configured values); every other node ignores it.
const (
	cmdRecluster       = "recluster:"
	reclusterOK        = "ok"
	rebalancePoll      = 250 * time.Millisecond
	rebalanceDeadline  = 30 * time.Second
	effectiveRFStat    = "effective_replication_factor"
	namespaceSizeStat  = "ns_cluster_size"
	replicationFactorK = "replication-factor"
)

// ApplyTogether makes every pod's node run the config of its rack's ConfigMap whose identity is
// hashes[pod name] when the change holds a replication-factor (live.Plan.Together): each node gets its own live changes and
// the new factor, and its copy of the config, then the cluster reclusters once, and every node must
// report the new factor in effect (the smaller of it and the namespace's cluster size). A node whose
// config is not projected yet, or any step refused, ends it with an error: it is run again whole (every
// request is idempotent, and a node whose own copy is the new config already gets nothing but the
// recluster). The pods are every node of the cluster; factors are the new replication-factors by
// namespace (live.Plan.Factors of the change).
func (a *Applier) ApplyTogether(ctx context.Context, pods []*corev1.Pod, hashes, factors map[string]string) (string, error) {
	// Every node's plan first, so that the factor then reaches the nodes in quick succession (no other
	// exchange between them), or none of them when a pod is not ready for it.
	plans := make([]live.Plan, len(pods))
	for i, pod := range pods {
		plan, err := a.planFor(ctx, pod, hashes[pod.Name])
		switch {
		case errors.Is(err, errNoPlan):
			return "", fmt.Errorf("%w: %v", ErrRefused, err)
		case err != nil:
			return "", err
		case len(plan.Restart) > 0:
			return "", fmt.Errorf("%w: pod %s: %s", ErrRefused, pod.Name, strings.Join(plan.Restart, "; "))
		}
		plans[i] = plan
	}
	for i, pod := range pods {
		if _, err := a.applyPlan(ctx, pod, plans[i], hashes[pod.Name]); err != nil {
			return "", err
		}
	}
	principal, err := a.recluster(ctx, pods)
	if err != nil {
		return "", err
	}
	if err := a.awaitFactors(ctx, pods, factors); err != nil {
		return "", err
	}
	return fmt.Sprintf("replication-factor %s on %d nodes; reclustered by %s", describe(factors), len(pods), principal), nil
}

func describe(factors map[string]string) string {
	parts := make([]string, 0, len(factors))
	for ns, rf := range factors {
		parts = append(parts, ns+"="+rf)
	}
	return strings.Join(parts, ", ")
}

// recluster asks every node to reform its cluster: each principal does ("ok"), the others ignore it.
// Every node is asked, so that a cluster an earlier exchange split is reformed on each side. It names
// the nodes that took it.
func (a *Applier) recluster(ctx context.Context, pods []*corev1.Pod) (string, error) {
	var took, answers []string
	for _, pod := range pods {
		answer, err := a.one(ctx, nodeAddr(pod), cmdRecluster)
		if err != nil {
			return "", fmt.Errorf("pod %s: %s: %w", pod.Name, cmdRecluster, err)
		}
		if answer == reclusterOK {
			took = append(took, pod.Name)
		}
		answers = append(answers, pod.Name+": "+answer)
	}
	if len(took) == 0 {
		return "", fmt.Errorf("%w: no node reclustered the cluster (%s)", ErrRefused, strings.Join(answers, "; "))
	}
	return strings.Join(took, ", "), nil
}

// awaitFactors waits, to a deadline, until every node reports each namespace's new factor in its config
// and in effect after the rebalance, in one cluster of them all.
func (a *Applier) awaitFactors(ctx context.Context, pods []*corev1.Pod, factors map[string]string) error {
	ctx, cancel := context.WithTimeout(ctx, rebalanceDeadline)
	defer cancel()
	for {
		why, err := a.factorsInEffect(ctx, pods, factors)
		switch {
		case err == nil && why == "":
			return nil
		case err != nil && !errors.Is(ctx.Err(), context.DeadlineExceeded):
			return err
		}
		select {
		case <-ctx.Done():
			if err != nil {
				why = err.Error()
			}
			return fmt.Errorf("%w: after the recluster, %s (waited %s)", ErrRefused, why, rebalanceDeadline)
		case <-time.After(rebalancePoll):
		}
	}
}

// factorsInEffect says which node does not have a namespace's factor in effect yet ("" when all do).
func (a *Applier) factorsInEffect(ctx context.Context, pods []*corev1.Pod, factors map[string]string) (string, error) {
	for _, pod := range pods {
		for ns, rf := range factors {
			stats, err := a.one(ctx, nodeAddr(pod), "namespace/"+ns)
			if err != nil {
				return "", fmt.Errorf("pod %s: namespace/%s: %w", pod.Name, ns, err)
			}
			kv := aerospike.ParseKV(stats)
			want, _ := strconv.Atoi(rf)
			if kv[namespaceSizeStat] != strconv.Itoa(len(pods)) {
				return fmt.Sprintf("%s sees %s=%s nodes for %s, want %d", pod.Name, namespaceSizeStat,
					kv[namespaceSizeStat], ns, len(pods)), nil
			}
			if kv[replicationFactorK] != rf || kv[effectiveRFStat] != strconv.Itoa(min(want, len(pods))) {
				return fmt.Sprintf("%s reports %s=%s, %s=%s for %s, want %s", pod.Name, replicationFactorK,
					kv[replicationFactorK], effectiveRFStat, kv[effectiveRFStat], ns, rf), nil
			}
		}
	}
	return "", nil
}
