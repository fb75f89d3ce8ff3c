package aerospike

import (
	"fmt"
	"net"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/acko-io/acko/test/aerosim"
)

const testInterval = 30 * time.Second

var testKey = types.NamespacedName{Namespace: "ns", Name: "c1"}

// proberHarness drives a ProberManager with a fake clock.
type proberHarness struct {
	t   *testing.T
	m   *ProberManager
	clk *testingclock.FakeClock
}

func newProberHarness(t *testing.T, client InfoClient) *proberHarness {
	clk := newFakeClock()
	m := NewProberManager(ProberOptions{Client: client, Interval: testInterval, BusyInterval: time.Second, Clock: clk,
		SplitGrace: time.Hour}) // splits are TestProberTipsANodeAlone's
	t.Cleanup(m.Shutdown)
	return &proberHarness{t: t, m: m, clk: clk}
}

// settle waits until the prober sleeps on its timer: its poll, and any event, are done.
func (h *proberHarness) settle() {
	h.t.Helper()
	eventually(h.t, "the prober to wait", h.clk.HasWaiters)
}

// tick lets one interval pass and waits for the resulting poll to finish.
func (h *proberHarness) tick(d time.Duration) {
	h.t.Helper()
	h.settle()
	before, _ := h.m.Snapshot(testKey)
	h.clk.Step(d)
	eventually(h.t, "a poll", func() bool {
		now, _ := h.m.Snapshot(testKey)
		return now.ReadAt.After(before.ReadAt)
	})
	h.settle()
}

func (h *proberHarness) expectEvent(why string) {
	h.t.Helper()
	select {
	case ev := <-h.m.Events():
		if ev.Object.GetNamespace() != testKey.Namespace || ev.Object.GetName() != testKey.Name {
			h.t.Fatalf("%s: event for %s/%s", why, ev.Object.GetNamespace(), ev.Object.GetName())
		}
	case <-time.After(10 * time.Second):
		h.t.Fatalf("%s: no event", why)
	}
}

func (h *proberHarness) expectNoEvent(why string) {
	h.t.Helper()
	select {
	case ev := <-h.m.Events():
		h.t.Fatalf("%s: unexpected event %v", why, ev.Object)
	default:
	}
}

func TestProberWakesOnlyOnChange(t *testing.T) {
	simClock := newFakeClock()
	s := newSim(t, aerosim.Options{Clock: simClock, RestartDowntime: 5 * time.Second})
	targets := addCluster(t, s, "c1", 3)
	h := newProberHarness(t, NewClient(ClientOptions{Timeout: time.Second}))

	h.m.Ensure(testKey, ProbeSpec{Targets: targets})
	h.expectEvent("first reading")
	h.settle()
	health, ok := h.m.Snapshot(testKey)
	if stable, reason := health.Gate(podNames(targets), h.clk.Now()); !ok || !stable {
		t.Fatalf("snapshot %v: stable=%t %s", ok, stable, reason)
	}

	for range 3 {
		simClock.Step(10 * time.Second) // uptimes grow: not a change
		h.tick(testInterval)
		h.expectNoEvent("nothing changed")
	}

	if _, err := s.WarmRestart("c1-1"); err != nil {
		t.Fatal(err)
	}
	h.tick(testInterval)
	h.expectEvent("node went away")
	h.tick(testInterval)
	h.expectNoEvent("still away")

	simClock.Step(5 * time.Second)
	h.tick(testInterval)
	h.expectEvent("node came back")
	health, _ = h.m.Snapshot(testKey)
	if up := health.Nodes["c1-1"].Facts.Uptime; up != 0 {
		t.Errorf("restarted node uptime %v", up)
	}
}

// An act that takes a node down asks for readings newer than its decision: Refresh polls at once, without
// waiting for the interval, and reports the reading even when nothing changed.
func TestProberRefreshReadsNowAndReports(t *testing.T) {
	s := newSim(t, aerosim.Options{})
	targets := addCluster(t, s, "c1", 3)
	h := newProberHarness(t, NewClient(ClientOptions{}))
	h.m.Refresh(testKey) // no prober for the cluster yet: nothing to do
	h.m.Ensure(testKey, ProbeSpec{Targets: targets})
	h.expectEvent("first reading")
	h.settle()
	before, _ := h.m.Snapshot(testKey)

	h.clk.Step(time.Millisecond) // far less than the interval
	h.m.Refresh(testKey)
	h.expectEvent("the reading asked for")
	after, _ := h.m.Snapshot(testKey)
	for _, tg := range targets {
		if !after.Nodes[tg.PodName].ReadAt.After(before.Nodes[tg.PodName].ReadAt) {
			t.Fatalf("%s not read again: %v, before %v", tg.PodName, after.Nodes[tg.PodName].ReadAt, before.Nodes[tg.PodName].ReadAt)
		}
	}
	h.settle()
	h.expectNoEvent("one reading per request")
}

func TestProberEnsure(t *testing.T) {
	s := newSim(t, aerosim.Options{})
	targets := addCluster(t, s, "c1", 3)
	h := newProberHarness(t, NewClient(ClientOptions{}))

	if _, ok := h.m.Snapshot(testKey); ok {
		t.Fatal("snapshot before any poll")
	}
	h.m.Ensure(testKey, ProbeSpec{Targets: targets[:2]})
	h.expectEvent("first reading")
	h.settle()

	h.m.Ensure(testKey, ProbeSpec{Targets: targets[:2]})
	h.expectNoEvent("same spec")

	// A new target is polled at once, without waiting for the interval.
	h.m.Ensure(testKey, ProbeSpec{Targets: targets})
	h.expectEvent("target added")
	h.settle()
	if health, _ := h.m.Snapshot(testKey); len(health.Nodes) != 3 {
		t.Fatalf("nodes %v", health.Nodes)
	}

	// Busy: polls every BusyInterval.
	h.m.Ensure(testKey, ProbeSpec{Targets: targets, Busy: true})
	h.tick(time.Second)

	h.m.Stop(testKey)
	if _, ok := h.m.Snapshot(testKey); ok {
		t.Error("snapshot after Stop")
	}
}

func TestProberShutdownLeavesNoGoroutine(t *testing.T) {
	s := newSim(t, aerosim.Options{})
	targets := addCluster(t, s, "c1", 3)
	hanging := addCluster(t, s, "c2", 1)
	if _, err := s.SetFault("c2-0", aerosim.FaultHang); err != nil {
		t.Fatal(err)
	}
	baseline := runtime.NumGoroutine()

	m := NewProberManager(ProberOptions{Client: NewClient(ClientOptions{Timeout: time.Minute})})
	m.Ensure(testKey, ProbeSpec{Targets: targets})
	m.Ensure(types.NamespacedName{Namespace: "ns", Name: "c2"}, ProbeSpec{Targets: hanging})
	eventually(t, "first reading", func() bool { _, ok := m.Snapshot(testKey); return ok })

	start := time.Now()
	m.Shutdown() // the call to the hanging node is in flight: closing its socket ends it
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("Shutdown took %v", d)
	}
	m.Ensure(testKey, ProbeSpec{Targets: targets}) // no-op once shut down
	eventually(t, "goroutines to end", func() bool { return runtime.NumGoroutine() <= baseline })
}

// A node outside the cluster is told where a member is, once the split has lasted the grace period,
// and not again before TipInterval.
func TestProberTipsANodeAlone(t *testing.T) {
	s := newSim(t, aerosim.Options{})
	targets := append(addCluster(t, s, "c1", 2), addCluster(t, s, "alone", 1)...)
	var tips []Tip
	var mu sync.Mutex
	clk := newFakeClock()
	m := NewProberManager(ProberOptions{Client: NewClient(ClientOptions{}), Interval: testInterval,
		SplitGrace: 15 * time.Second, TipInterval: time.Minute, Clock: clk,
		OnTip: func(tip Tip) { mu.Lock(); tips = append(tips, tip); mu.Unlock() }})
	t.Cleanup(m.Shutdown)
	h := &proberHarness{t: t, m: m, clk: clk}
	tipsSoFar := func() []Tip { mu.Lock(); defer mu.Unlock(); return slices.Clone(tips) }

	m.Ensure(testKey, ProbeSpec{Targets: targets})
	h.expectEvent("first reading")
	h.settle()
	health, _ := m.Snapshot(testKey)
	if health.SplitSince.IsZero() || !health.Split(podNames(targets)) {
		t.Fatalf("a node in another cluster is a split: %+v", health)
	}
	if len(tipsSoFar()) != 0 {
		t.Fatal("tipped before the grace period")
	}
	h.tick(testInterval)
	h.expectEvent("the split outlasted its grace period")
	got := tipsSoFar()
	memberIP, _, _ := net.SplitHostPort(targets[0].Addr)
	if len(got) != 1 || got[0].Pod != "alone-0" || got[0].MemberIP != memberIP || got[0].Cluster != testKey {
		t.Fatalf("tips %+v, want one to alone-0 pointing at %s", got, memberIP)
	}
	h.tick(testInterval)
	if len(tipsSoFar()) != 1 {
		t.Fatalf("tipped again within TipInterval: %+v", tipsSoFar())
	}
	h.tick(testInterval)
	if len(tipsSoFar()) != 2 {
		t.Fatalf("no second tip after TipInterval: %+v", tipsSoFar())
	}
}

// An idle cluster costs the manager a timer, not a goroutine: a thousand clusters are not a
// thousand sleeping goroutines.
func TestIdleProbersHoldNoGoroutine(t *testing.T) {
	s := newSim(t, aerosim.Options{})
	targets := addCluster(t, s, "c1", 1)
	m := NewProberManager(ProberOptions{Client: NewClient(ClientOptions{}), Clock: newFakeClock(), Interval: testInterval})
	t.Cleanup(m.Shutdown)
	baseline := runtime.NumGoroutine()
	const clusters = 100
	for i := range clusters {
		m.Ensure(types.NamespacedName{Namespace: "ns", Name: fmt.Sprintf("c%d", i)}, ProbeSpec{Targets: targets})
	}
	eventually(t, "every cluster's first reading", func() bool {
		for i := range clusters {
			if _, ok := m.Snapshot(types.NamespacedName{Namespace: "ns", Name: fmt.Sprintf("c%d", i)}); !ok {
				return false
			}
		}
		return true
	})
	eventually(t, "the polls' goroutines to end", func() bool { return runtime.NumGoroutine() < baseline+clusters/10 })
}
