package liveconfig

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/acko-io/acko/internal/aerospike"
	"github.com/acko-io/acko/internal/config/live"
)

// clusterGonePatience is ClusterGonePatience (a test shortens it).
var clusterGonePatience = ClusterGonePatience

// Recluster answers: the principal reforms the cluster (a new cluster key, one exchange and rebalance
// with every node's configured values); every other node ignores it.
const (
	cmdRecluster      = "recluster:"
	reclusterOK       = "ok"
	rebalancePoll     = 250 * time.Millisecond
	rebalanceDeadline = 30 * time.Second
	// reclusterPatience is how long a recluster refused by every node is asked again: the principal
	// skips it while a node joins or leaves (a moment), and for good while the exchange is stuck.
	reclusterPatience = 10 * time.Second
	// stableDeadline bounds the wait for the migrations after the recluster (a real 3-node cluster of
	// 10 000 keys took 14 s for 2 → 3; a large one takes minutes).
	stableDeadline = 15 * time.Minute
	// TogetherDeadline bounds a whole ApplyTogether: its waits in turn (the per-node requests are
	// bounded by the client's timeout), with a minute to spare. A caller that bounds it more cuts the
	// rebalance short, and the change is run again from the recluster.
	TogetherDeadline = reclusterPatience + rebalanceDeadline + stableDeadline + time.Minute
	// ClusterGonePatience is how long the wait for the migrations goes on while the nodes do not form the
	// cluster it waits for (one does not answer, or is in a cluster of another size or key): longer
	// than an exchange takes, so only a node that left or joined ends it.
	ClusterGonePatience = 30 * time.Second
	effectiveRFStat     = "effective_replication_factor"
	namespaceSizeStat   = "ns_cluster_size"
	replicationFactorK  = "replication-factor"
)

// ApplyTogether makes every pod's node run the config of its rack's ConfigMap that changes[pod name]
// takes it to, when the change holds a replication-factor (live.Plan.Together): each node gets its own
// live changes and the new factor, and its copy of the config, then the cluster reclusters once, and every
// node must report the new factor in effect (the smaller of it and the namespace's cluster size), and then
// the cluster stable with its migrations done (cluster-stable): the change is done only once rebalanced.
// A recluster that the stuck exchange refuses ends it with a *StuckExchangeError. A node whose config is
// not projected yet, or any step refused, ends it with an error: it is run again whole (every request is
// idempotent). The pods are every node of the cluster whose asd runs; the new replication-factors are
// those of their plans (live.Plan.Factors). The stuck exchange is looked for on every pod of the cluster
// (cluster, pods included): a node whose asd was down when the change began comes back with the old
// factor outside it, in no cluster beside the change's.
func (a *Applier) ApplyTogether(ctx context.Context, pods, cluster []*corev1.Pod, changes map[string]Change) (string, error) {
	// Every node's plan first, so that the factor then reaches the nodes in quick succession (no other
	// exchange between them), or none of them when a pod is not ready for it.
	plans := make([]live.Plan, len(pods))
	factors := map[string]string{}
	for i, pod := range pods {
		plan, err := a.togetherPlan(ctx, pod, changes[pod.Name])
		switch {
		case errors.Is(err, errNoPlan):
			return "", fmt.Errorf("%w: %v", ErrRefused, err)
		case err != nil:
			return "", err
		case len(plan.Restart) > 0:
			return "", fmt.Errorf("%w: pod %s: %s", ErrRefused, pod.Name, strings.Join(plan.Restart, "; "))
		}
		plans[i] = plan
		maps.Copy(factors, plan.Factors)
	}
	for i, pod := range pods {
		if _, err := a.applyPlan(ctx, pod, plans[i], changes[pod.Name].To); err != nil {
			return "", err
		}
	}
	// A factor already in effect in one cluster of every node (a run again after the recluster) needs no
	// other recluster: that would start the migrations over.
	principal, watch := "none (in effect already)", &stuckWatch{answers: "not asked, the factor was in effect", cluster: cluster}
	if why, err := a.factorsInEffect(ctx, pods, factors); err != nil || why != "" {
		if principal, watch.answers, err = a.recluster(ctx, pods, cluster); err != nil {
			return "", err
		}
		if err := a.awaitFactors(ctx, pods, factors, watch); err != nil {
			return "", err
		}
	}
	took, err := a.awaitStable(ctx, pods, watch)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("replication-factor %s on %d nodes; reclustered by %s; stable (migrations done) after %s",
		describe(factors), len(pods), principal, took.Round(time.Second)), nil
}

// togetherPlan is the node's plan in a change every node takes together. Such a change never falls back to
// a restart (a node restarted with another factor would not rejoin), so where the pod's files no longer
// stand for the operator's plan (errPlanStale: most often a change applied live whose record was lost,
// when the operator stopped between the change and its record), the node's own copy, the config it
// loaded or was given live, is planned from.
func (a *Applier) togetherPlan(ctx context.Context, pod *corev1.Pod, change Change) (live.Plan, error) {
	own, projected, err := a.readFiles(ctx, pod, change.To)
	if err != nil {
		return live.Plan{}, err
	}
	plan, err := change.planOn(pod, own, projected)
	if errors.Is(err, errPlanStale) {
		return planFiles(pod, own, projected)
	}
	return plan, err
}

// StuckExchangeError: every node runs the new factor, but the recluster is refused for good because the
// exchange of the nodes' membership was abandoned (a node came back with another factor: asd logged
// "has unmatched replication factors" and "abandoned exchange - fix configuration conflict") and
// changing a factor does not start another. Outside are the nodes in no cluster (cluster_size 0: they
// committed no exchange since they started, so they took no write); the others keep the cluster they
// had. Only a new membership ends it: restarting the nodes outside.
type StuckExchangeError struct {
	Outside []string // pod names
	Answers string   // what the nodes answered to recluster:
}

func (e *StuckExchangeError) Error() string {
	return fmt.Sprintf("the cluster's exchange is stuck (answers to recluster: %s); %s in no cluster",
		e.Answers, strings.Join(e.Outside, ", "))
}

// Unwrap: the change was refused.
func (e *StuckExchangeError) Unwrap() error { return ErrRefused }

func describe(factors map[string]string) string {
	parts := make([]string, 0, len(factors))
	for ns, rf := range factors {
		parts = append(parts, ns+"="+rf)
	}
	return strings.Join(parts, ", ")
}

// recluster asks every node to reform its cluster: each principal does ("ok"), the others ignore it.
// Every node is asked, so that a cluster an earlier exchange split is reformed on each side. It names
// the nodes that took it, and says what they all answered. Refused by all, it asks again for
// reclusterPatience; still refused, with nodes in no cluster beside one cluster of the others, the
// exchange is stuck (*StuckExchangeError).
// cluster are every pod of the cluster, where the nodes outside are looked for.
func (a *Applier) recluster(ctx context.Context, pods, cluster []*corev1.Pod) (principal, answers string, err error) {
	deadline := time.Now().Add(reclusterPatience)
	for {
		took, answers, err := a.reclusterOnce(ctx, pods)
		if err != nil || len(took) > 0 {
			return strings.Join(took, ", "), answers, err
		}
		if time.Now().After(deadline) {
			if outside := a.outsideOneCluster(ctx, cluster); len(outside) > 0 {
				return "", answers, &StuckExchangeError{Outside: outside, Answers: answers}
			}
			return "", answers, fmt.Errorf("%w: no node reclustered the cluster (%s)", ErrRefused, answers)
		}
		select {
		case <-ctx.Done():
			return "", answers, ctx.Err()
		case <-time.After(time.Second):
		}
	}
}

// stuckWatch tells a stuck exchange from a node on its way into the cluster by how long the nodes show
// it, in the waits after the recluster: the real principal may answer recluster: with ok in the moment
// before the exchange sticks (the node that came back with the old factor not exchanged yet), so the
// answer alone does not tell. Nodes in no cluster beside one cluster of the others for
// reclusterPatience in a row are outside a stuck exchange (a joining node takes a few seconds).
type stuckWatch struct {
	answers string        // what the nodes answered to recluster:
	cluster []*corev1.Pod // every pod of the cluster: the nodes read
	since   time.Time     // when the nodes began to show it; zero while they do not
}

// check reads the nodes: a *StuckExchangeError once they have shown the stuck exchange for
// reclusterPatience.
func (w *stuckWatch) check(ctx context.Context, a *Applier) error {
	outside := a.outsideOneCluster(ctx, w.cluster)
	switch {
	case len(outside) == 0:
		w.since = time.Time{}
	case w.since.IsZero():
		w.since = time.Now()
	case time.Since(w.since) >= reclusterPatience:
		return &StuckExchangeError{Outside: outside, Answers: w.answers}
	}
	return nil
}

func (a *Applier) reclusterOnce(ctx context.Context, pods []*corev1.Pod) (took []string, answers string, err error) {
	var all []string
	for _, pod := range pods {
		answer, err := a.one(ctx, nodeAddr(pod), cmdRecluster)
		if err != nil {
			return nil, "", fmt.Errorf("pod %s: %s: %w", pod.Name, cmdRecluster, err)
		}
		if answer == reclusterOK {
			took = append(took, pod.Name)
		}
		all = append(all, pod.Name+": "+answer)
	}
	return took, strings.Join(all, "; "), nil
}

// outsideOneCluster names the pods whose node is in no cluster (cluster_size 0) while every other
// node that answers is in one and the same cluster; none when the nodes show anything else. A node that
// does not answer (asd down, a pod not started) is in no exchange: it is left out of the reading.
func (a *Applier) outsideOneCluster(ctx context.Context, pods []*corev1.Pod) []string {
	var outside []string
	keys := map[string]bool{}
	for _, pod := range pods {
		stats, err := a.one(ctx, nodeAddr(pod), "statistics")
		if err != nil {
			continue
		}
		kv := aerospike.ParseKV(stats)
		if kv["cluster_size"] == "0" {
			outside = append(outside, pod.Name)
		} else {
			keys[kv["cluster_key"]] = true
		}
	}
	if len(keys) != 1 {
		return nil
	}
	return outside
}

// awaitStable waits, to stableDeadline, until every node answers cluster-stable for a cluster of them
// all with its migrations done, with one cluster key: only then has the new factor's rebalance ended.
// Nodes that show a stuck exchange end it with a *StuckExchangeError (stuckWatch). Nodes that stop being
// that cluster for ClusterGonePatience (one does not answer, or is in a cluster of another size or key: a
// node left or joined since the recluster) end it at once: the cluster it waits for is gone, and the
// change is run again over the nodes there are (model hole 24's strict applier waited 15 minutes on a
// pod since replaced).
func (a *Applier) awaitStable(ctx context.Context, pods []*corev1.Pod, watch *stuckWatch) (time.Duration, error) {
	start := time.Now()
	ctx, cancel := context.WithTimeout(ctx, stableDeadline)
	defer cancel()
	cmd := aerospike.ClusterStableCommand(len(pods), false)
	var elsewhere time.Time // since when the nodes were last seen not to form the cluster waited for
	for {
		why, migrating := a.stableOnce(ctx, pods, cmd)
		switch {
		case why == "":
			return time.Since(start), nil
		case migrating:
			elsewhere = time.Time{}
		case elsewhere.IsZero():
			elsewhere = time.Now()
		case time.Since(elsewhere) > clusterGonePatience:
			return 0, fmt.Errorf("%w: after the recluster, the nodes no longer form one cluster of them all: %s (for %s)",
				ErrRefused, why, time.Since(elsewhere).Round(time.Second))
		}
		if err := watch.check(ctx, a); err != nil {
			return 0, err
		}
		select {
		case <-ctx.Done():
			return 0, fmt.Errorf("%w: after the recluster, the cluster is not stable: %s (waited %s)", ErrRefused,
				why, time.Since(start).Round(time.Second))
		case <-time.After(rebalancePoll):
		}
	}
}

// stableOnce asks every node cmd (cluster-stable) once; it says why the cluster is not stable yet ("" when
// it is), and whether that is only its migrations (every node in the cluster asked for, none done).
func (a *Applier) stableOnce(ctx context.Context, pods []*corev1.Pod, cmd string) (why string, migrating bool) {
	keys, migrating := map[string]bool{}, false
	for _, pod := range pods {
		answer, err := a.one(ctx, nodeAddr(pod), cmd)
		key, stableErr := aerospike.ParseClusterStable(answer)
		switch {
		case err != nil:
			return fmt.Sprintf("pod %s: %v", pod.Name, err), false
		case errors.Is(stableErr, aerospike.ErrMigrating):
			why, migrating = fmt.Sprintf("pod %s: %s: %v", pod.Name, cmd, stableErr), true
		case stableErr != nil:
			return fmt.Sprintf("pod %s: %s: %v", pod.Name, cmd, stableErr), false
		default:
			keys[key] = true
		}
	}
	switch {
	case migrating:
		return why, true
	case len(keys) != 1:
		return fmt.Sprintf("the nodes answer %d cluster keys", len(keys)), false
	}
	return "", false
}

// awaitFactors waits, to a deadline, until every node reports each namespace's new factor in its config
// and in effect after the rebalance, in one cluster of them all. Nodes that show a stuck exchange end
// it with a *StuckExchangeError (stuckWatch).
func (a *Applier) awaitFactors(ctx context.Context, pods []*corev1.Pod, factors map[string]string, watch *stuckWatch) error {
	start := time.Now()
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
		if err := watch.check(ctx, a); err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			if err != nil {
				why = err.Error()
			}
			return fmt.Errorf("%w: after the recluster, %s (waited %s)", ErrRefused, why, time.Since(start).Round(time.Second))
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
