package aerospike

import (
	"context"
	"maps"
	"net"
	"slices"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/event"
)

// Prober defaults.
const (
	// DefaultInterval paces the polls of a steady cluster. It bounds how long a node that hangs keeps
	// its readiness gate and how late a split brain is seen (interval + SplitGrace).
	DefaultInterval     = 10 * time.Second
	DefaultBusyInterval = 2 * time.Second
	// DefaultSplitGrace is how long the nodes may disagree before it counts as a split brain: a node
	// that (re)starts reports cluster_size 0 for about 2 s, and a new node needs a few seconds to join.
	DefaultSplitGrace = 15 * time.Second
	// DefaultTipInterval spaces two tips to the same node.
	DefaultTipInterval = 30 * time.Second

	// eventBuffer absorbs bursts while the controller is not yet draining the channel.
	eventBuffer = 128
)

// Target is one pod to probe.
type Target struct {
	PodName string
	Addr    string // "podIP:3000"
}

// ProbeSpec is what the reconciler wants probed for one cluster.
type ProbeSpec struct {
	// Targets are the pods that run: each must be a member of the cluster, so the cluster's expected
	// size (asked through cluster-stable) is their number.
	Targets []Target
	// Busy selects BusyInterval, for when the reconciler waits on the cluster (rollout, operation).
	Busy bool
	// Advertised asks each node for the client addresses it advertises (NodeFacts.ServiceStd and
	// ServiceAlt): a cluster with external access checks that they are the pods' own.
	Advertised bool
}

// Tip is one heal attempt: a node outside the cluster was told where a member is.
type Tip struct {
	Cluster  types.NamespacedName
	Pod      string // the node told
	MemberIP string // where it was told to look
	Err      error  // the node's refusal or a transport error
}

// ProberOptions configures a ProberManager; zero fields take the defaults.
type ProberOptions struct {
	Client       InfoClient                 // NewClient(ClientOptions{}) when nil
	Interval     time.Duration              // DefaultInterval
	BusyInterval time.Duration              // DefaultBusyInterval
	SplitGrace   time.Duration              // DefaultSplitGrace
	TipInterval  time.Duration              // DefaultTipInterval
	Clock        clock.WithDelayedExecution // clock.RealClock{}
	// OnTip, when set, hears of every tip sent (for an event); it must not block.
	OnTip func(Tip)
}

// ProberManager probes each cluster on a timer of its own: a cluster has a goroutine only while it
// is polled, so a manager of a thousand idle clusters holds a thousand timers, not a thousand
// sleeping goroutines. Usage from the reconciler:
//
//	probers := NewProberManager(ProberOptions{})
//	mgr.Add(probers) // Start stops every prober when the manager stops
//	builder.WatchesRawSource(source.Channel(probers.Events(), &handler.EnqueueRequestForObject{}))
//	// in Reconcile: probers.Ensure(key, spec) every time; probers.Snapshot(key) to read;
//	// probers.Stop(key) when the cluster is deleted (a paused cluster is still probed: its
//	// readiness gates and budget follow the readings).
//
// Events carry a *metav1.PartialObjectMetadata with only Namespace and Name set (the cluster's
// key): enough for EnqueueRequestForObject, and no dependency on the API types.
type ProberManager struct {
	opts   ProberOptions
	events chan event.GenericEvent
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu      sync.Mutex
	probers map[types.NamespacedName]*prober
}

// NewProberManager returns a manager whose probers run until Stop, Shutdown or Start's context ends.
func NewProberManager(opts ProberOptions) *ProberManager {
	if opts.Client == nil {
		opts.Client = NewClient(ClientOptions{})
	}
	if opts.Interval <= 0 {
		opts.Interval = DefaultInterval
	}
	if opts.BusyInterval <= 0 {
		opts.BusyInterval = DefaultBusyInterval
	}
	if opts.SplitGrace <= 0 {
		opts.SplitGrace = DefaultSplitGrace
	}
	if opts.TipInterval <= 0 {
		opts.TipInterval = DefaultTipInterval
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &ProberManager{
		opts:    opts,
		events:  make(chan event.GenericEvent, eventBuffer),
		ctx:     ctx,
		cancel:  cancel,
		probers: make(map[types.NamespacedName]*prober),
	}
}

// Events yields one event each time a cluster's health changed (see healthChanged).
func (m *ProberManager) Events() <-chan event.GenericEvent {
	return m.events
}

// Ensure starts probing key, or updates what is probed. It never blocks on the network and is
// cheap when spec is unchanged, so Reconcile can call it every time. A changed spec triggers a
// poll right away.
func (m *ProberManager) Ensure(key types.NamespacedName, spec ProbeSpec) {
	spec.Targets = slices.Clone(spec.Targets)
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.ctx.Err() != nil {
		return
	}
	if p, ok := m.probers[key]; ok {
		p.update(spec)
		return
	}
	ctx, cancel := context.WithCancel(m.ctx)
	p := &prober{key: key, opts: &m.opts, events: m.events, ctx: ctx, cancel: cancel, wg: &m.wg, spec: spec}
	m.probers[key] = p
	p.poke()
}

// Stop ends probing key and forgets its health. It does not wait: calls in flight end on their
// own deadline at the latest, and Shutdown waits for them.
func (m *ProberManager) Stop(key types.NamespacedName) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if p, ok := m.probers[key]; ok {
		p.stop()
		delete(m.probers, key)
	}
}

// Refresh asks key's prober for a poll now whose reading is reported (an event) even when nothing
// changed: the reconciler waits for readings newer than its decision before it takes a node down. It
// never blocks.
func (m *ProberManager) Refresh(key types.NamespacedName) {
	m.mu.Lock()
	p, ok := m.probers[key]
	m.mu.Unlock()
	if !ok {
		return
	}
	p.mu.Lock()
	p.wanted = true
	p.mu.Unlock()
	p.poke()
}

// Snapshot returns the latest health of key; false until its first poll has finished.
func (m *ProberManager) Snapshot(key types.NamespacedName) (ClusterHealth, bool) {
	m.mu.Lock()
	p, ok := m.probers[key]
	m.mu.Unlock()
	if !ok {
		return ClusterHealth{}, false
	}
	return p.snapshot()
}

// Start implements manager.Runnable: it blocks until ctx ends, then shuts every prober down.
func (m *ProberManager) Start(ctx context.Context) error {
	<-ctx.Done()
	m.Shutdown()
	return nil
}

// Shutdown stops all probers and waits until their goroutines have returned.
func (m *ProberManager) Shutdown() {
	m.mu.Lock()
	for _, p := range m.probers {
		p.stop()
	}
	m.cancel()
	clear(m.probers)
	m.mu.Unlock()
	m.wg.Wait()
}

// prober polls one cluster: a poll on a goroutine of its own, then a timer for the next.
type prober struct {
	key    types.NamespacedName
	opts   *ProberOptions
	events chan<- event.GenericEvent
	ctx    context.Context
	cancel context.CancelFunc
	wg     *sync.WaitGroup // the manager's: Shutdown waits for the polls in flight

	mu     sync.Mutex
	spec   ProbeSpec
	health ClusterHealth
	polled bool
	// wanted: a reading was asked for (Refresh); the next poll reports it whatever it says.
	wanted bool
	// polling: a poll runs; again: a poke came meanwhile, so another follows at once.
	polling, again bool
	next           clock.Timer // the next poll's, while none runs
	// tipped is when each node was last told where the cluster is (touched by the poll only).
	tipped map[string]time.Time
}

// poke makes the prober poll now, or right after the poll that runs.
func (p *prober) poke() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.polling {
		p.again = true
		return
	}
	if p.next != nil && !p.next.Stop() {
		return // the timer fired: its poll is starting
	}
	p.startLocked()
}

// startLocked starts a poll unless one runs or the prober is stopped. Callers hold p.mu, which
// orders the WaitGroup's Add before Shutdown's Wait (stop takes p.mu after the context ends).
func (p *prober) startLocked() {
	if p.polling || p.ctx.Err() != nil {
		return
	}
	p.polling, p.next = true, nil
	p.wg.Go(p.cycle)
}

// cycle polls, then sets the timer of the next poll: one interval away, or none if a poke came
// during the poll (another poll starts at once).
func (p *prober) cycle() {
	p.poll(p.ctx)
	p.mu.Lock()
	defer p.mu.Unlock()
	p.polling = false
	if p.again {
		p.again = false
		p.startLocked()
		return
	}
	if p.ctx.Err() != nil {
		return
	}
	interval := p.opts.Interval
	if p.spec.Busy {
		interval = p.opts.BusyInterval
	}
	p.next = p.opts.Clock.AfterFunc(interval, p.fire)
}

// fire is the timer's callback. A fake clock runs it under its own lock, which cycle and stop may
// wait for while they hold p.mu: so it takes p.mu on a goroutine of its own.
func (p *prober) fire() {
	go func() {
		p.mu.Lock()
		defer p.mu.Unlock()
		p.startLocked()
	}()
}

// stop ends the prober: no poll starts after it returns, and one in flight is cancelled.
func (p *prober) stop() {
	p.cancel()
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.next != nil {
		p.next.Stop()
	}
}

func (p *prober) poll(ctx context.Context) {
	p.mu.Lock()
	spec, wanted := p.spec, p.wanted
	p.wanted = false
	p.mu.Unlock()
	nodes := probeAll(ctx, p.opts.Client, p.opts.Clock, spec)
	if ctx.Err() != nil {
		return // stopped mid-poll: the answers are cancellations, not news
	}
	health, changed := p.store(spec.Targets, nodes)
	if changed || wanted {
		p.notify(ctx)
	}
	p.heal(ctx, health, spec.Targets)
}

// heal tells each node outside the largest group where a member of it is (tip), once the split has
// lasted SplitGrace and at most every TipInterval per node: asd drops a seed that resolved to itself
// for good, and a node alone may never find the others by itself. It needs a largest group that is
// whole (every node that answers agrees on the others), so a tip never steers a node the wrong way.
func (p *prober) heal(ctx context.Context, h ClusterHealth, targets []Target) {
	if !h.SplitSettled {
		return
	}
	now := p.opts.Clock.Now()
	members := podNames(targets)
	groups, _ := h.Groups(members)
	if len(groups) < 2 || len(groups[0].Pods) == len(groups[1].Pods) {
		return
	}
	memberIP, _, err := net.SplitHostPort(h.Nodes[groups[0].Pods[0]].Addr)
	if err != nil {
		return
	}
	if p.tipped == nil {
		p.tipped = map[string]time.Time{}
	}
	for _, g := range groups[1:] {
		for _, pod := range g.Pods {
			if last, ok := p.tipped[pod]; ok && now.Sub(last) < p.opts.TipInterval {
				continue
			}
			p.tipped[pod] = now
			err := SendTip(ctx, p.opts.Client, h.Nodes[pod].Addr, memberIP)
			if p.opts.OnTip != nil {
				p.opts.OnTip(Tip{Cluster: p.key, Pod: pod, MemberIP: memberIP, Err: err})
			}
		}
	}
}

func podNames(targets []Target) []string {
	names := make([]string, len(targets))
	for i, t := range targets {
		names[i] = t.PodName
	}
	return names
}

// probeAll reads every target concurrently; each call is bounded by the client's timeout.
func probeAll(ctx context.Context, c InfoClient, clk clock.PassiveClock, spec ProbeSpec) map[string]NodeHealth {
	targets := spec.Targets
	nodes := make(map[string]NodeHealth, len(targets))
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, t := range targets {
		wg.Go(func() {
			facts, err := ReadNodeFacts(ctx, c, t.Addr, len(targets), spec.Advertised)
			h := NodeHealth{Addr: t.Addr, Facts: facts, Err: err, ReadAt: clk.Now()}
			mu.Lock()
			nodes[t.PodName] = h
			mu.Unlock()
		})
	}
	wg.Wait()
	return nodes
}

// store caches a poll's result and reports whether it differs from the previous one. It keeps when
// the current split began, so that the reconciler can wait a restart's short disagreement out.
func (p *prober) store(targets []Target, nodes map[string]NodeHealth) (ClusterHealth, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.opts.Clock.Now()
	h := ClusterHealth{ExpectedSize: len(targets), Nodes: nodes, ReadAt: now}
	if h.Split(podNames(targets)) {
		h.SplitSince = now
		if !p.health.SplitSince.IsZero() {
			h.SplitSince = p.health.SplitSince
		}
	}
	// A split that outlasts its grace period is news too: the reconciler reports it from then on.
	h.SplitSettled = !h.SplitSince.IsZero() && now.Sub(h.SplitSince) >= p.opts.SplitGrace
	changed := !p.polled || healthChanged(p.health.Nodes, nodes) || p.health.ExpectedSize != h.ExpectedSize ||
		h.SplitSettled != p.health.SplitSettled
	p.health, p.polled = h, true
	return h, changed
}

func (p *prober) notify(ctx context.Context) {
	obj := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: p.key.Namespace, Name: p.key.Name}}
	select {
	case p.events <- event.GenericEvent{Object: obj}:
	case <-ctx.Done():
	}
}

func (p *prober) update(spec ProbeSpec) {
	p.mu.Lock()
	same := spec.Busy == p.spec.Busy && spec.Advertised == p.spec.Advertised && slices.Equal(spec.Targets, p.spec.Targets)
	p.spec = spec
	p.mu.Unlock()
	if !same {
		p.poke()
	}
}

func (p *prober) snapshot() (ClusterHealth, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	h := p.health
	h.Nodes = maps.Clone(h.Nodes)
	return h, p.polled
}

// healthChanged reports a change worth a reconcile. Growing uptimes, counters and a migration
// count that is still counting down are not news; a node appearing or disappearing, answering or
// not, a new cluster key or size, lost integrity, migrations starting or finishing, and an uptime
// that went back (asd restarted) are.
func healthChanged(before, after map[string]NodeHealth) bool {
	if len(before) != len(after) {
		return true
	}
	for name, a := range after {
		b, ok := before[name]
		if !ok || nodeChanged(b, a) {
			return true
		}
	}
	return false
}

func nodeChanged(b, a NodeHealth) bool {
	if (b.Err == nil) != (a.Err == nil) || b.Reachable() != a.Reachable() {
		return true
	}
	if a.Err != nil {
		return false
	}
	bf, af := b.Facts, a.Facts
	return bf.ClusterKey != af.ClusterKey || (bf.ClusterStableErr == nil) != (af.ClusterStableErr == nil) ||
		bf.ClusterSize != af.ClusterSize ||
		bf.ClusterIntegrity != af.ClusterIntegrity ||
		(bf.MigratePartitionsRemaining == 0) != (af.MigratePartitionsRemaining == 0) ||
		af.Uptime < bf.Uptime
}
