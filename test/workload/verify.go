package workload

import (
	"context"
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
	// settleTime is how long the verification keeps retrying however settled the cluster looks:
	// the server counts a node that just stopped for 2 s, and the client's map lags by a tend (1 s).
	settleTime = 5 * time.Second
)

// verify reads back every acknowledged key with a fresh client and returns the lost ones, each
// with its reason.
func (r *Run) verify(ctx context.Context) (map[int]string, error) {
	ctx, cancel := context.WithTimeout(ctx, r.cfg.VerifyTimeout)
	defer cancel()
	begin := time.Now()
	client, err := connect(ctx, r.hosts, r.cfg.Log)
	if err != nil {
		return nil, fmt.Errorf("workload: verify: %w", err)
	}
	defer client.Close()
	pending := map[int]string{}
	for k, st := range r.keys {
		if st.acked > 0 {
			pending[k] = ""
		}
	}
	for pass := 1; len(pending) > 0; pass++ {
		settledBefore := migrationsDone(client)
		pending = r.checkKeys(client, slices.Sorted(maps.Keys(pending)))
		settled := settledBefore && migrationsDone(client) && time.Since(begin) >= settleTime
		_, _ = fmt.Fprintf(r.cfg.Log, "workload: verify pass %d: %d keys not read back yet %s\n",
			pass, len(pending), counts(reasonCounts(pending)))
		if len(pending) == 0 || settled {
			break
		}
		select {
		case <-ctx.Done():
			return pending, nil
		case <-time.After(verifyRetryInterval):
		}
	}
	return pending, nil
}

// checkKeys reads keys back on Workers goroutines and returns those not acceptable, with why.
func (r *Run) checkKeys(client *as.Client, keys []int) map[int]string {
	todo := make(chan int)
	var mu sync.Mutex
	bad := map[int]string{}
	var wg sync.WaitGroup
	for range r.cfg.Workers {
		wg.Go(func() {
			for k := range todo {
				reason := r.check(client, k)
				if reason != "" {
					mu.Lock()
					bad[k] = reason
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

func (r *Run) check(client *as.Client, k int) string {
	st := r.keys[k]
	v, err := r.get(client, k)
	if err != nil {
		return resultCode(err)
	}
	return judge(v, r.id, k, verifyFloor(st, r.cfg.SplitTolerant), st.sent)
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

func reasonCounts(m map[int]string) map[string]int {
	c := map[string]int{}
	for _, reason := range m {
		c[reason]++
	}
	return c
}
