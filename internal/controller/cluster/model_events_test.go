package cluster

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	ackov1alpha1 "github.com/acko-io/acko/api/v1alpha1"
	"github.com/acko-io/acko/test/testcluster"
)

// The events of the model's random sequences, and what each avoids while a point of issue 22 is a
// known hole (knownHoles in model_test.go).

// modelFaultGap spaces the faults of the environment: no operator can see a fault before the readings
// and the kubelet do, so two faults closer than this are no test of it.
const modelFaultGap = 15 * time.Second

type modelEvent struct {
	name   string
	weight int
	// run applies the event; false when it does not apply now (nothing happens).
	run func(m *modelRun) bool
}

var modelEvents = []modelEvent{
	{"wait", 12, func(*modelRun) bool { return true }},
	{"crash", 4, (*modelRun).eventCrash},
	{"delete pod", 2, (*modelRun).eventDeletePod},
	{"hang", 2, (*modelRun).eventHang},
	{"drain", 4, (*modelRun).eventDrain},
	{"split", 2, (*modelRun).eventSplit},
	{"restart operator", 2, func(m *modelRun) bool { m.restartOperator("event"); return true }},
	{"kill operator", 3, (*modelRun).eventKill},
	{"api outage", 1, (*modelRun).eventOutage},
	{"edit size", 4, (*modelRun).editSize},
	{"edit image", 3, (*modelRun).editImage},
	{"edit replication factor", 2, (*modelRun).editReplicationFactor},
	{"edit batch size", 1, (*modelRun).editBatch},
	{"edit racks", 1, (*modelRun).editRacks},
	{"add operation", 3, (*modelRun).addOperation},
	{"pause or resume", 2, (*modelRun).editPause},
	{"invalid spec or its fix", 1, (*modelRun).editInvalid},
	{"sidecar that never gets ready", 1, (*modelRun).editSidecar},
	{"config asd refuses", 1, (*modelRun).editRefusedConfig},
	{"second budget", 1, (*modelRun).eventForeignPDB},
	{"volume growth", 2, (*modelRun).eventGrow},
	{"drain racing a resize", 2, (*modelRun).eventDrainRacingResize},
	// Only for a cluster with local volumes (the others draw as before): model_lost_test.go.
	{"lost node", 3, (*modelRun).eventLoseNode},
	{"lost node recovers", 2, (*modelRun).eventNodeRecovers},
	// Only for a cluster with external access: model_external_test.go.
	{"external address moves", 2, (*modelRun).eventLoadBalancerMoves},
}

// drawnFor: the event applies to the cluster (a cluster without local volumes or external access draws
// its events as before they existed).
func drawnFor(e modelEvent, c *ackov1alpha1.AerospikeCluster) bool {
	switch {
	case strings.HasPrefix(e.name, "lost node"):
		return localVolumes(c) != nil
	case strings.HasPrefix(e.name, "external"):
		return c.Spec.ExternalAccess != nil
	}
	return true
}

// eventDrainRacingResize is a drain that races a size change (issue 38): the user raises or lowers the
// size and a drain evicts a pod at once, or one reconcile later, when the budget may have been written
// for the new size while its pods do not run yet (or still do).
func (m *modelRun) eventDrainRacingResize() bool {
	if m.w.apiDown() || !m.mayFault() || !m.editSize() {
		return false
	}
	m.steps(m.w.rng.IntN(2))
	if pod := m.pick(slices.Sorted(maps.Keys(m.w.nodes))); pod != "" && len(m.w.violations) == 0 {
		m.drain(pod)
	}
	return true
}

// eventGrow is the user's volume growth, alone or in the same edit as a size change (issue 38), which the
// operator carries out (growVolumes): on a cluster whose volumes may grow (withGrowableVolume).
func (m *modelRun) eventGrow() bool {
	if m.avoid[15] || !growable(m.w.cluster()) {
		return false
	}
	what, edit := "the volumes grow by 10Gi", growVolume
	if m.w.rng.IntN(2) == 0 {
		if size, resize, ok := m.sizeEdit(); ok {
			what, edit = what+" and "+size, func(c *ackov1alpha1.AerospikeCluster) { growVolume(c); resize(c) }
		}
	}
	return m.edit(what, edit)
}

func (m *modelRun) randomEvent() {
	c := m.w.cluster()
	events := slices.DeleteFunc(slices.Clone(modelEvents), func(e modelEvent) bool { return !drawnFor(e, c) })
	total := 0
	for _, e := range events {
		total += e.weight
	}
	pick := m.w.rng.IntN(total)
	for _, e := range events {
		if pick -= e.weight; pick < 0 {
			e.run(m)
			return
		}
	}
}

// State the avoidance rules look at.

func (m *modelRun) clusterRunning() bool {
	return m.w.cluster().Status.Phase == ackov1alpha1.PhaseRunning
}

// scaleDownUnderway: more pods than the spec asks for, or a leaving pod recorded.
func (m *modelRun) scaleDownUnderway() bool {
	c := m.w.cluster()
	for name, p := range c.Status.Pods {
		if p.Update != nil && p.Update.Method == ackov1alpha1.UpdateRemove || !slices.Contains(c.DesiredPodNames(), name) && m.w.nodes[name] != nil {
			return true
		}
	}
	return len(m.w.nodes) > int(c.Spec.Size)
}

// frozen: a reconcile ends before the readiness gates (paused, invalid spec, API outage).
func (m *modelRun) frozen() bool {
	c := m.w.cluster()
	return c.Spec.Paused || !strings.HasPrefix(c.Spec.Image, "aerospike:ce-") || m.w.apiDown()
}

func (m *modelRun) operationPending() bool {
	c := m.w.cluster()
	op := c.Status.OperationStatus
	return op != nil && op.Phase == ackov1alpha1.OperationInProgress ||
		len(c.Spec.Operations) > 0 && !slices.Contains(c.Status.FinishedOperations, c.Spec.Operations[0].ID)
}

// mayFault: the environment may strike now.
func (m *modelRun) mayFault() bool {
	switch {
	case m.w.now().Sub(m.lastFault) < modelFaultGap:
		return false
	case m.w.now().Sub(m.w.apiDownUntil) < modelFaultGap:
		// The end of an API outage counts as a fault: a fault during it is one the operator could not
		// act on (lower a gate or the budget) before then (seed 41861: asd crashed during an outage, and
		// a drain came 2 s after it, to an operator restarted with no reading yet).
		return false
	case m.avoid[1] && (m.scaleDownUnderway() || !m.clusterRunning() && m.w.cluster().Spec.Size < int32(len(m.w.nodes))):
		return false
	case m.avoid[4] && m.frozen():
		return false
	case m.avoid[6] && !m.w.splitSince.IsZero():
		return false
	}
	m.lastFault = m.w.now()
	return true
}

// mayEdit: the user may change the spec now.
func (m *modelRun) mayEdit() bool {
	switch {
	case m.avoid[6] && !m.w.splitSince.IsZero():
		return false
	case m.avoid[10] && m.operationPending():
		return false
	}
	return true
}

func (m *modelRun) servingPods() []string {
	var out []string
	for _, name := range slices.Sorted(maps.Keys(m.w.nodes)) {
		if m.w.nodes[name].serving() {
			out = append(out, name)
		}
	}
	return out
}

func (m *modelRun) pick(names []string) string {
	if len(names) == 0 {
		return ""
	}
	return names[m.w.rng.IntN(len(names))]
}

func (m *modelRun) eventCrash() bool {
	pod := m.pick(m.servingPods())
	if pod == "" || !m.mayFault() {
		return false
	}
	m.w.logf("event: asd of %s crashes", pod)
	m.w.crash(pod)
	return true
}

func (m *modelRun) eventDeletePod() bool {
	pod := m.pick(slices.Sorted(maps.Keys(m.w.nodes)))
	if pod == "" || !m.mayFault() {
		return false
	}
	m.deletePod(pod)
	return true
}

func (m *modelRun) eventHang() bool {
	pod := m.pick(m.servingPods())
	if pod == "" || !m.mayFault() {
		return false
	}
	n := m.w.nodes[pod]
	n.hung, n.releaseAt = true, m.w.now().Add(time.Duration(20+m.w.rng.IntN(100))*time.Second)
	m.w.logf("event: node %s hangs until %s", pod, n.releaseAt.Sub(modelEpoch))
	return true
}

// eventDrain is kubectl drain of the Kubernetes node of one pod: an eviction through the budget.
// No drain while the operator cannot reach the API server: it can then neither lower a gate nor the
// budget, which say what they said before the outage (docs/failure-modes.md tells users not to drain
// then); no operator could keep the rule through that.
func (m *modelRun) eventDrain() bool {
	pod := m.pick(slices.Sorted(maps.Keys(m.w.nodes)))
	if pod == "" || m.w.apiDown() || !m.mayFault() {
		return false
	}
	m.drain(pod)
	return true
}

func (m *modelRun) drain(pod string) {
	m.w.logf("event: drain evicts %s", pod)
	if err := m.w.evict(context.Background(), pod, nil, "drain"); err != nil {
		m.w.logf("drain of %s: %v", pod, err)
	}
}

// eventSplit cuts one node off the others' mesh; it heals by itself.
func (m *modelRun) eventSplit() bool {
	pods := m.servingPods()
	if len(pods) < 3 || !m.w.splitSince.IsZero() || m.avoid[6] && !m.clusterRunning() || !m.mayFault() {
		return false
	}
	m.split(m.pick(pods), time.Duration(30+m.w.rng.IntN(150))*time.Second)
	return true
}

func (m *modelRun) split(pod string, lasting time.Duration) {
	m.w.nodes[pod].side = 1
	m.w.splitSince, m.w.splitHealAt = m.w.now(), m.w.now().Add(lasting)
	m.w.logf("event: the mesh splits: %s alone until %s", pod, m.w.splitHealAt.Sub(modelEpoch))
}

func (m *modelRun) eventKill() bool {
	m.w.killAfter, m.w.signalOut = 1+m.w.rng.IntN(4), m.w.rng.IntN(2) == 0
	m.w.logf("event: the operator will be killed after %d more writes", m.w.killAfter)
	return true
}

// eventOutage cuts the operator off the API server (the rest of the world still reaches it). It is a
// fault like the others, spaced from them: an operator cut off right after a node failed never had the
// chance to see it.
func (m *modelRun) eventOutage() bool {
	if m.avoid[4] || !m.mayFault() {
		return false
	}
	m.w.apiDownUntil = m.w.now().Add(time.Duration(20+m.w.rng.IntN(70)) * time.Second)
	m.w.logf("event: the operator cannot reach the API server until %s", m.w.apiDownUntil.Sub(modelEpoch))
	return true
}

func (m *modelRun) edit(what string, mutate func(*ackov1alpha1.AerospikeCluster)) bool {
	if !m.mayEdit() {
		return false
	}
	m.w.editSpec(what, mutate)
	return true
}

// mayRoll: an edit that rolls pods may come now; with point 2 a known hole it waits until no scale-down
// is under way (and a scale-down waits until the cluster is Running: editSize).
func (m *modelRun) mayRoll() bool { return !m.avoid[2] || !m.scaleDownUnderway() }

func (m *modelRun) editSize() bool {
	what, resize, ok := m.sizeEdit()
	return ok && m.edit(what, resize)
}

// sizeEdit draws a new size: what it is, the edit, and whether it may come now.
func (m *modelRun) sizeEdit() (string, func(*ackov1alpha1.AerospikeCluster), bool) {
	c := m.w.cluster()
	size := max(3, min(6, c.Spec.Size+int32(m.w.rng.IntN(5))-2))
	if size == c.Spec.Size || size < c.Spec.Size && (m.avoid[2] && !m.clusterRunning() || m.avoid[1] && !m.wholeWorld()) {
		return "", nil, false
	}
	return fmt.Sprintf("size %d -> %d", c.Spec.Size, size), func(c *ackov1alpha1.AerospikeCluster) { c.Spec.Size = size }, true
}

// wholeWorld: every node serves with its data.
func (m *modelRun) wholeWorld() bool { return len(m.w.withoutData()) == 0 && m.clusterRunning() }

var modelImages = []string{testcluster.Image, "aerospike:ce-8.1.2.0"}

func (m *modelRun) editImage() bool {
	c := m.w.cluster()
	image := modelImages[0]
	if c.Spec.Image == image {
		image = modelImages[1]
	}
	if !m.mayRoll() {
		return false
	}
	return m.edit("image "+image, func(c *ackov1alpha1.AerospikeCluster) { c.Spec.Image = image })
}

func replicationFactorOf(c *ackov1alpha1.AerospikeCluster) int64 {
	ns := c.Spec.AerospikeConfig.Value["namespaces"].([]any)[0].(map[string]any)
	switch v := ns["replication-factor"].(type) {
	case int64:
		return v
	case float64:
		return int64(v)
	}
	return 2
}

func setReplicationFactor(c *ackov1alpha1.AerospikeCluster, rf int64) {
	c.Spec.AerospikeConfig.Value["namespaces"].([]any)[0].(map[string]any)["replication-factor"] = rf
}

func (m *modelRun) editReplicationFactor() bool {
	c := m.w.cluster()
	rf := 5 - replicationFactorOf(c) // 2 <-> 3
	if rf > replicationFactorOf(c) && m.avoid[3] || !m.mayRoll() {
		return false
	}
	return m.edit(fmt.Sprintf("replication-factor %d", rf), func(c *ackov1alpha1.AerospikeCluster) { setReplicationFactor(c, rf) })
}

func (m *modelRun) editBatch() bool {
	batch := int32(1 + m.w.rng.IntN(2))
	return m.edit(fmt.Sprintf("rollingUpdateBatchSize %d", batch), func(c *ackov1alpha1.AerospikeCluster) {
		c.Spec.RollingUpdateBatchSize = ptr.To(batch)
	})
}

// editRacks adds or removes racks of a multi-rack cluster, or switches between the single-rack and the
// multi-rack layout past the webhook (which refuses it; the operator must too).
func (m *modelRun) editRacks() bool {
	layouts := [][]int32{{1, 2}, {1, 2, 3}, {2, 3}}
	ids := layouts[m.w.rng.IntN(len(layouts))]
	if !m.avoid[0] && m.w.rng.IntN(3) == 0 {
		return m.switchLayout(ids)
	}
	if !m.w.cluster().MultiRack() || !m.mayRoll() || m.avoid[1] && !m.wholeWorld() || m.avoid[2] && !m.clusterRunning() ||
		m.avoid[11] && m.refusedConfigSet() {
		return false
	}
	return m.edit(fmt.Sprintf("racks %v", ids), func(c *ackov1alpha1.AerospikeCluster) {
		c.Spec.RackConfig.Racks = nil
		for _, id := range ids {
			c.Spec.RackConfig.Racks = append(c.Spec.RackConfig.Racks, ackov1alpha1.Rack{ID: id})
		}
	})
}

// switchLayout switches a single-rack cluster to racks ids, or a multi-rack one to the single rack, as
// if the webhook were bypassed.
func (m *modelRun) switchLayout(ids []int32) bool {
	if m.w.cluster().MultiRack() {
		return m.edit("single rack on a multi-rack cluster (past the webhook)", func(c *ackov1alpha1.AerospikeCluster) {
			c.Spec.RackConfig = nil
		})
	}
	return m.edit(fmt.Sprintf("racks %v on a single-rack cluster (past the webhook)", ids), func(c *ackov1alpha1.AerospikeCluster) {
		c.Spec.RackConfig = &ackov1alpha1.RackConfig{}
		for _, id := range ids {
			c.Spec.RackConfig.Racks = append(c.Spec.RackConfig.Racks, ackov1alpha1.Rack{ID: id})
		}
	})
}

// addOperation asks for a WarmRestart or PodRestart of every pod or one; spec.operations is locked
// while one runs (the webhook's rule), so the user waits for it.
func (m *modelRun) addOperation() bool {
	if m.operationPending() {
		return false
	}
	m.opSeq++
	op := ackov1alpha1.OperationSpec{Kind: ackov1alpha1.OperationWarmRestart, ID: fmt.Sprintf("op-%d", m.opSeq)}
	if m.w.rng.IntN(2) == 0 {
		op.Kind = ackov1alpha1.OperationPodRestart
	}
	if m.w.rng.IntN(2) == 0 {
		op.PodList = []string{m.pick(m.w.cluster().DesiredPodNames())}
	}
	return m.edit(fmt.Sprintf("operation %s %s %v", op.Kind, op.ID, op.PodList), func(c *ackov1alpha1.AerospikeCluster) {
		c.Spec.Operations = []ackov1alpha1.OperationSpec{op}
	})
}

func (m *modelRun) editPause() bool {
	paused := !m.w.cluster().Spec.Paused
	return m.edit(fmt.Sprintf("paused %t", paused), func(c *ackov1alpha1.AerospikeCluster) { c.Spec.Paused = paused })
}

// editInvalid sets an image the validator refuses, or puts a valid one back.
func (m *modelRun) editInvalid() bool {
	image := "aerospike:ee-8.1.1.1"
	if m.w.cluster().Spec.Image == image {
		image = testcluster.Image
	}
	return m.edit("image "+image, func(c *ackov1alpha1.AerospikeCluster) { c.Spec.Image = image })
}

func (m *modelRun) editSidecar() bool {
	if m.avoid[7] || !m.mayRoll() {
		return false
	}
	return m.edit("adds a sidecar whose readiness probe never passes", addNeverReadySidecar)
}

func addNeverReadySidecar(c *ackov1alpha1.AerospikeCluster) {
	if c.Spec.PodSpec == nil {
		c.Spec.PodSpec = &ackov1alpha1.PodOverrides{}
	}
	c.Spec.PodSpec.Sidecars = []ackov1alpha1.Sidecar{{Container: corev1.Container{Name: modelNeverReadySidecar, Image: "busybox:1.36"}}}
}

func (m *modelRun) editRefusedConfig() bool {
	if m.avoid[8] || m.avoid[30] || !m.mayRoll() || m.avoid[11] && m.rackLeaving() {
		return false
	}
	return m.edit("sets a config asd refuses ("+modelRefusedSetting+")", setRefusedConfig)
}

// refusedConfigSet: the spec or a pod's own copy holds the config asd refuses (point 11 avoids a rack
// removal then).
func (m *modelRun) refusedConfigSet() bool {
	if serviceOf(m.w.cluster())["proto-fd-max"] != nil {
		return true
	}
	for _, n := range m.w.nodes {
		if n.crashLoop {
			return true
		}
	}
	return false
}

// rackLeaving: a pod of a rack the spec no longer has still exists.
func (m *modelRun) rackLeaving() bool {
	c := m.w.cluster()
	for _, pod := range m.w.pods() {
		if c.MultiRack() && !slices.ContainsFunc(c.Spec.RackConfig.Racks, func(r ackov1alpha1.Rack) bool { return r.ID == rackOf(pod) }) {
			return true
		}
	}
	return false
}

func setRefusedConfig(c *ackov1alpha1.AerospikeCluster) {
	s := serviceOf(c)
	s["proto-fd-max"] = int64(77777)
	c.Spec.AerospikeConfig.Value["service"] = s
}

func (m *modelRun) eventForeignPDB() bool {
	switch {
	case m.foreignPDB:
		m.removeForeignPDB()
	case m.avoid[9]:
		return false
	default:
		m.addForeignPDB()
	}
	return true
}
