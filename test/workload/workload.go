package workload

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	as "github.com/aerospike/aerospike-client-go/v7"
	"github.com/aerospike/aerospike-client-go/v7/types"
)

// Config is a run's shape; zero fields take the defaults.
type Config struct {
	Seeds     []string      // "host:port" of one or more nodes
	Namespace string        // default "test"
	Set       string        // default "workload"
	Keys      int           // size of the key space, written round-robin (default 2000)
	Rate      int           // target operations per second in total (default 500), half writes half reads
	Workers   int           // concurrent goroutines (default 8; at most Keys)
	OpTimeout time.Duration // per-operation total timeout (default 1s)
	// VerifyTimeout bounds Stop's verification (default 2 minutes; Stop's context may end it sooner).
	VerifyTimeout time.Duration
	// SplitTolerant accepts, at the verification, any write at or after the newest one
	// acknowledged before the split window (see the package doc).
	SplitTolerant bool
	Log           io.Writer // optional progress lines
	// ClusterName, when set, is the cluster-name every node must answer (the client's
	// ClientPolicy.ClusterName): a seed whose address now belongs to a node of another cluster (a pod
	// IP given to another pod) is refused instead of mixing that cluster's partition map into ours.
	ClusterName string
	// UseServicesAlternate makes the client reach the nodes at the addresses they advertise for
	// clients outside the cluster (alternate-access-address, learnt from peers-clear-alt): the
	// client's ClientPolicy.UseServicesAlternate. The seeds must be such addresses too.
	UseServicesAlternate bool
	// ProbeNodes measures how reachable the client's nodes are: once per tend interval, a TCP dial
	// to every node the client holds; Report.MaxUnreachableNode is the longest one stayed unreachable.
	ProbeNodes bool
	// CurrentSeeds, when set, is asked at Stop for where the nodes are now ("host:port"); the
	// verification tries those first. Pods replaced during the load have new addresses, and the
	// load's client may still hold a node at the address it left: it follows a node by its id, and
	// the other nodes keep naming that id.
	CurrentSeeds func() []string
}

// Defaults of Config.
const (
	DefaultNamespace     = "test"
	DefaultSet           = "workload"
	DefaultKeys          = 2000
	DefaultRate          = 500
	DefaultWorkers       = 8
	DefaultOpTimeout     = time.Second
	DefaultVerifyTimeout = 2 * time.Minute
)

// Timing of the client's connection attempts and of the progress lines.
const (
	connectAttemptTimeout = 5 * time.Second
	connectRetryInterval  = time.Second
	progressInterval      = 10 * time.Second
	maxLag                = 100 * time.Millisecond // how far behind its schedule a worker catches up
	probeTimeout          = 500 * time.Millisecond // a node's TCP dial (ProbeNodes)
)

// Bins of a record.
const (
	binRun = "run"
	binKey = "key"
	binSeq = "seq"
)

func (c Config) withDefaults() Config {
	if c.Namespace == "" {
		c.Namespace = DefaultNamespace
	}
	if c.Set == "" {
		c.Set = DefaultSet
	}
	if c.Keys <= 0 {
		c.Keys = DefaultKeys
	}
	if c.Rate <= 0 {
		c.Rate = DefaultRate
	}
	if c.Workers <= 0 {
		c.Workers = DefaultWorkers
	}
	c.Workers = min(c.Workers, c.Keys)
	if c.OpTimeout <= 0 {
		c.OpTimeout = DefaultOpTimeout
	}
	if c.VerifyTimeout <= 0 {
		c.VerifyTimeout = DefaultVerifyTimeout
	}
	if c.Log == nil {
		c.Log = io.Discard
	}
	return c
}

// Run is a workload running in the background.
type Run struct {
	cfg    Config
	hosts  []*as.Host
	client *as.Client
	id     int64 // the bin run of every record this run writes
	keys   []keyState
	start  time.Time

	cancel  context.CancelFunc
	workers sync.WaitGroup
	stopped atomic.Bool

	windowOpen atomic.Bool // the split window (SplitTolerant)
	mu         sync.Mutex
	tally      *tally
	end        time.Time // when Stop ended the load
}

// Start connects to the cluster, retrying until ctx ends, then runs the load in the background
// until Stop (ctx only bounds the connection).
func Start(ctx context.Context, cfg Config) (*Run, error) {
	cfg = cfg.withDefaults()
	if len(cfg.Seeds) == 0 {
		return nil, errors.New("workload: no seed")
	}
	hosts, herr := as.NewHosts(cfg.Seeds...)
	if herr != nil {
		return nil, fmt.Errorf("workload: seeds: %w", herr)
	}
	client, err := connect(ctx, hosts, cfg)
	if err != nil {
		return nil, err
	}
	loadCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	r := &Run{cfg: cfg, hosts: hosts, client: client, id: rand.Int64(), keys: make([]keyState, cfg.Keys),
		start: time.Now(), cancel: cancel}
	r.tally = newTally(r.start)
	for w := range cfg.Workers {
		r.workers.Go(func() { r.work(loadCtx, w) })
	}
	r.workers.Go(func() { r.progress(loadCtx) })
	if cfg.ProbeNodes {
		r.workers.Go(func() { r.probeNodes(loadCtx) })
	}
	_, _ = fmt.Fprintf(cfg.Log, "workload: %d keys in %s/%s, %d ops/s, %d workers, run %d\n",
		cfg.Keys, cfg.Namespace, cfg.Set, cfg.Rate, cfg.Workers, r.id)
	return r, nil
}

// connect returns a client connected to the cluster of hosts (of cfg's cluster-name when it is
// set, at the nodes' alternate addresses when cfg says so), retrying until ctx ends.
func connect(ctx context.Context, hosts []*as.Host, cfg Config) (*as.Client, error) {
	log := cfg.Log
	for {
		policy := as.NewClientPolicy()
		policy.ClusterName = cfg.ClusterName
		policy.UseServicesAlternate = cfg.UseServicesAlternate
		policy.Timeout = connectAttemptTimeout
		if deadline, ok := ctx.Deadline(); ok {
			policy.Timeout = min(policy.Timeout, max(time.Until(deadline), time.Millisecond))
		}
		client, err := as.NewClientWithPolicyAndHost(policy, hosts...)
		if err == nil {
			return client, nil
		}
		_, _ = fmt.Fprintf(log, "workload: connect %v: %v\n", hosts, err)
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("workload: connect %v: %w (last error: %w)", hosts, ctx.Err(), err)
		case <-time.After(connectRetryInterval):
		}
	}
}

// MarkSplit opens the split window now, if the first failed operation has not opened it
// already: call it when the test cuts the cluster in two. Only Config.SplitTolerant uses it.
func (r *Run) MarkSplit() {
	if r.windowOpen.CompareAndSwap(false, true) {
		_, _ = fmt.Fprintf(r.cfg.Log, "workload: split window opened at +%s\n", time.Since(r.start).Round(time.Millisecond))
	}
}

// Snapshot is the figures so far (up to Stop once it was called), without verification.
func (r *Run) Snapshot() Report {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.end.IsZero() {
		return r.tally.report(r.end)
	}
	return r.tally.report(time.Now())
}

// Stop ends the load, then reads back every key whose write was acknowledged (see the package
// doc) and returns the report. The error says why the verification could not run; the report
// then has Verified false.
func (r *Run) Stop(ctx context.Context) (Report, error) {
	if !r.stopped.CompareAndSwap(false, true) {
		return Report{}, errors.New("workload: stopped already")
	}
	r.cancel()
	r.workers.Wait()
	hosts := r.seedsAndNodes()
	var held []string
	for _, n := range r.client.GetNodes() {
		held = append(held, n.GetName()+"@"+n.GetHost().String())
	}
	_, _ = fmt.Fprintf(r.cfg.Log, "workload: the load's client ends with nodes %v; the verification connects to %v\n", held, hosts)
	r.client.Close()
	r.mu.Lock()
	r.end = time.Now()
	end, rep := r.end, r.tally.report(r.end)
	r.mu.Unlock()
	lost, overwritten, err := r.verify(ctx, hosts)
	if err != nil {
		return rep, err
	}
	rep.setLost(lost, overwritten, time.Since(end))
	_, _ = fmt.Fprintf(r.cfg.Log, "workload: verified %d acknowledged keys in %s: %d lost\n",
		rep.Acknowledged, rep.VerifyDuration.Round(time.Millisecond), rep.Lost)
	return rep, nil
}

// seedsAndNodes is where the verification's client connects: the current seeds, the seeds, and
// the nodes the load's client knows now (a seed's pod may have moved to another address meanwhile).
func (r *Run) seedsAndNodes() []*as.Host {
	var hosts []*as.Host
	add := func(h *as.Host) {
		if !slices.ContainsFunc(hosts, func(o *as.Host) bool { return o.Name == h.Name && o.Port == h.Port }) {
			hosts = append(hosts, h)
		}
	}
	if r.cfg.CurrentSeeds != nil {
		current, err := as.NewHosts(r.cfg.CurrentSeeds()...)
		if err != nil {
			_, _ = fmt.Fprintf(r.cfg.Log, "workload: current seeds: %v\n", err)
		}
		for _, h := range current {
			add(h)
		}
	}
	for _, h := range r.hosts {
		add(h)
	}
	for _, n := range r.client.GetNodes() {
		add(n.GetHost())
	}
	return hosts
}

// work is worker w's loop: a write, then a read, at its share of the rate.
func (r *Run) work(ctx context.Context, w int) {
	interval := time.Duration(r.cfg.Workers) * time.Second / time.Duration(r.cfg.Rate)
	next := time.Now().Add(interval * time.Duration(w) / time.Duration(r.cfg.Workers))
	owned := (r.cfg.Keys - w + r.cfg.Workers - 1) / r.cfg.Workers
	rng := rand.New(rand.NewPCG(uint64(r.id), uint64(w)))
	timer := time.NewTimer(time.Until(next))
	defer timer.Stop()
	for op := 0; ; op++ {
		select {
		case <-ctx.Done():
			return
		case <-timer.C:
		}
		var o outcome
		if op%2 == 0 {
			o = r.write(w + (op/2%owned)*r.cfg.Workers)
		} else {
			written := min(op/2+1, owned)
			o = r.read(w + rng.IntN(written)*r.cfg.Workers)
		}
		r.record(o)
		// A worker a little late catches up (timers and the scheduler are late by a little every
		// time); after a stall (an operation that waited for its timeout) the schedule restarts
		// from now rather than bursting.
		if next = next.Add(interval); time.Since(next) > maxLag {
			next = time.Now()
		}
		timer.Reset(time.Until(next))
	}
}

func (r *Run) key(k int) *as.Key {
	key, err := as.NewKey(r.cfg.Namespace, r.cfg.Set, k)
	if err != nil {
		panic(err) // an int key always makes a key
	}
	return key
}

func (r *Run) write(k int) outcome {
	st := &r.keys[k]
	st.sent++
	policy := as.NewWritePolicy(0, 0)
	policy.TotalTimeout = r.cfg.OpTimeout
	err := r.client.Put(policy, r.key(k), as.BinMap{binRun: r.id, binKey: k, binSeq: st.sent})
	o := outcome{op: opWrite, key: k, at: time.Now()}
	if err != nil {
		o.code = resultCode(err)
		return o
	}
	o.firstAck = st.acked == 0
	st.acked = st.sent
	if !r.windowOpen.Load() {
		st.ackedBeforeWindow = st.sent
	}
	return o
}

func (r *Run) read(k int) outcome {
	st := &r.keys[k]
	floor := st.acked
	v, err := r.get(r.client, k)
	o := outcome{op: opRead, key: k, at: time.Now()}
	switch {
	case err != nil:
		o.code = resultCode(err)
	default:
		o.code = judge(v, r.id, k, floor, st.sent)
		if o.code == reasonOlder {
			o.code = reasonStale
		}
	}
	return o
}

// get reads key k; not found is a value, not an error.
func (r *Run) get(client *as.Client, k int) (value, error) {
	policy := as.NewPolicy()
	policy.TotalTimeout = r.cfg.OpTimeout
	rec, err := client.Get(policy, r.key(k))
	if err != nil {
		if err.Matches(types.KEY_NOT_FOUND_ERROR) {
			return value{}, nil
		}
		return value{}, err
	}
	return valueOf(rec.Bins), nil
}

func valueOf(bins as.BinMap) value {
	run, okRun := bins[binRun].(int)
	key, okKey := bins[binKey].(int)
	seq, okSeq := bins[binSeq].(int)
	return value{found: true, valid: okRun && okKey && okSeq, run: int64(run), key: key, seq: seq}
}

func (r *Run) record(o outcome) {
	if o.code != "" && r.cfg.SplitTolerant && r.windowOpen.CompareAndSwap(false, true) {
		_, _ = fmt.Fprintf(r.cfg.Log, "workload: split window opened at +%s by a %s %s\n",
			o.at.Sub(r.start).Round(time.Millisecond), o.op, o.code)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.tally.add(o)
}

func (r *Run) progress(ctx context.Context) {
	ticker := time.NewTicker(progressInterval)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
			s := r.Snapshot()
			_, _ = fmt.Fprintf(r.cfg.Log, "workload: +%s %d writes %d reads %.1f ops/s, %.2f%% available, %d acknowledged, errors: %s\n",
				s.Duration.Round(time.Second), s.Writes, s.Reads, s.OpsPerSec, s.Availability, s.Acknowledged, counts(s.ErrorsByCode))
		}
	}
}

// probeNodes dials every node the client holds once per tend interval, all at once, and records
// which answered.
func (r *Run) probeNodes(ctx context.Context) {
	ticker := time.NewTicker(r.client.Cluster().ClientPolicy().TendInterval)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		}
		nodes := r.client.GetNodes()
		reached := make([]bool, len(nodes))
		var dials sync.WaitGroup
		for i, n := range nodes {
			h := n.GetHost()
			dials.Go(func() {
				c, err := net.DialTimeout("tcp", net.JoinHostPort(h.Name, strconv.Itoa(h.Port)), probeTimeout)
				if err == nil {
					reached[i] = true
					_ = c.Close()
				}
			})
		}
		dials.Wait()
		at := time.Now()
		probes := make(map[string]bool, len(nodes))
		for i, n := range nodes {
			probes[n.GetName()] = reached[i]
		}
		r.mu.Lock()
		r.tally.outages.probed(probes, at)
		r.mu.Unlock()
	}
}

// resultCode names an error of the client by its result code. MAX_RETRIES_EXCEEDED says only
// that the client gave up: the last attempt's code (which it wraps) says why.
func resultCode(err error) string {
	ae := (*as.AerospikeError)(nil)
	if !errors.As(err, &ae) {
		return types.COMMON_ERROR.String()
	}
	if inner := (*as.AerospikeError)(nil); ae.ResultCode == types.MAX_RETRIES_EXCEEDED && errors.As(ae.Unwrap(), &inner) {
		return resultCode(inner)
	}
	return ae.ResultCode.String()
}
