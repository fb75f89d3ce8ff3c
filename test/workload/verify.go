package workload

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	as "github.com/aerospike/aerospike-client-go/v7"
)

// Timing of the verification's passes.
const (
	verifyRetryInterval = time.Second
	// settleTime is how long the verification waits however settled the cluster looks: the
	// server counts a node that just stopped for 2 s, and the client's map lags by a tend (1 s).
	settleTime = 5 * time.Second
)

// verdict is why a key read back is not acceptable ("" when it is): strictly (its newest
// acknowledged write), and by the run's rule (with SplitTolerant, the split window's floor); node is
// the node that answered a failed read (when the client says), so a loss says where it was read.
type verdict struct{ strict, kept, node string }

// verify reads back every acknowledged key with a fresh client and returns the lost ones, each
// with its reason, and (SplitTolerant) how many kept keys lost their newest acknowledged write.
// It reads once the cluster is settled, since until then a migration or a split's merge may
// still change what a key reads back; keys that fail are read again until a whole pass ran on a
// settled cluster.
func (r *Run) verify(ctx context.Context, hosts []*as.Host) (lost map[int]string, overwritten int, err error) {
	ctx, cancel := context.WithTimeout(ctx, r.cfg.VerifyTimeout)
	defer cancel()
	begin := time.Now()
	client, err := connect(ctx, hosts, r.cfg)
	if err != nil {
		return nil, 0, fmt.Errorf("workload: verify: %w", err)
	}
	defer client.Close()
	if !waitSettled(ctx, client, begin) {
		_, _ = fmt.Fprintf(r.cfg.Log, "workload: verify: the cluster did not settle in %s; reading anyway\n",
			time.Since(begin).Round(time.Second))
	}
	pending := map[int]verdict{}
	for k, st := range r.keys {
		if st.acked > 0 {
			pending[k] = verdict{}
		}
	}
	for pass := 1; len(pending) > 0; pass++ {
		settledBefore := migrationsDone(client)
		pending = r.checkKeys(client, slices.Sorted(maps.Keys(pending)))
		settled := settledBefore && migrationsDone(client)
		_, _ = fmt.Fprintf(r.cfg.Log, "workload: verify pass %d: %d keys not read back %s\n",
			pass, len(pending), counts(countBy(pending, func(v verdict) string { return v.strict })))
		if len(pending) > 0 {
			_, _ = fmt.Fprintf(r.cfg.Log, "workload: verify pass %d: failed reads by node: %s; the client's nodes: %s\n",
				pass, counts(countBy(pending, func(v verdict) string { return v.node })), nodeList(client))
		}
		if settled || !sleep(ctx, verifyRetryInterval) {
			break
		}
	}
	lost = map[int]string{}
	for k, v := range pending {
		if v.kept != "" {
			lost[k] = v.kept
		} else {
			overwritten++
		}
	}
	return lost, overwritten, nil
}

// checkKeys reads keys back on Workers goroutines and returns those that do not pass strictly.
func (r *Run) checkKeys(client *as.Client, keys []int) map[int]verdict {
	todo := make(chan int)
	var mu sync.Mutex
	bad := map[int]verdict{}
	var wg sync.WaitGroup
	for range r.cfg.Workers {
		wg.Go(func() {
			for k := range todo {
				if v := r.check(client, k); v.strict != "" {
					mu.Lock()
					bad[k] = v
					mu.Unlock()
				}
			}
		})
	}
	for _, k := range keys {
		todo <- k
	}
	close(todo)
	wg.Wait()
	return bad
}

func (r *Run) check(client *as.Client, k int) verdict {
	st := r.keys[k]
	v, err := r.get(client, k)
	if err != nil {
		code := resultCode(err)
		return verdict{strict: code, kept: code, node: nodeOf(err)}
	}
	return verdict{strict: judge(v, r.id, k, verifyFloor(st, false), st.sent),
		kept: judge(v, r.id, k, verifyFloor(st, r.cfg.SplitTolerant), st.sent)}
}

// nodeOf names the node an error came from ("?" when the client does not say).
func nodeOf(err error) string {
	ae := (*as.AerospikeError)(nil)
	if errors.As(err, &ae) && ae.Node != nil {
		return ae.Node.String()
	}
	return "?"
}

// nodeList names the nodes the client knows.
func nodeList(client *as.Client) string {
	nodes := client.GetNodes()
	names := make([]string, 0, len(nodes))
	for _, n := range nodes {
		names = append(names, n.String())
	}
	return strings.Join(names, ", ")
}

// waitSettled waits until settleTime has passed since begin and no node has partitions left to
// migrate; false when ctx ended first.
func waitSettled(ctx context.Context, client *as.Client, begin time.Time) bool {
	for time.Since(begin) < settleTime || !migrationsDone(client) {
		if !sleep(ctx, verifyRetryInterval) {
			return false
		}
	}
	return true
}

// migrationsDone says whether every node the client knows reports no partition left to migrate.
func migrationsDone(client *as.Client) bool {
	nodes := client.GetNodes()
	for _, n := range nodes {
		stats, err := n.RequestInfo(as.NewInfoPolicy(), "statistics")
		if err != nil {
			return false
		}
		if remaining, ok := statistic(stats["statistics"], "migrate_partitions_remaining"); !ok || remaining != 0 {
			return false
		}
	}
	return len(nodes) > 0
}

// statistic is the integer value of name in an info answer of name=value pairs separated by ';'.
func statistic(answer, name string) (int64, bool) {
	for pair := range strings.SplitSeq(answer, ";") {
		if k, v, ok := strings.Cut(pair, "="); ok && k == name {
			n, err := strconv.ParseInt(v, 10, 64)
			return n, err == nil
		}
	}
	return 0, false
}

// countBy counts the keys of m by the reason of their value.
func countBy[V any](m map[int]V, reason func(V) string) map[string]int {
	c := map[string]int{}
	for _, v := range m {
		c[reason(v)]++
	}
	return c
}

// sleep waits for d, or says false when ctx ends first.
func sleep(ctx context.Context, d time.Duration) bool {
	select {
	case <-ctx.Done():
		return false
	case <-time.After(d):
		return true
	}
}
