package cluster

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ackov1alpha1 "github.com/acko-io/acko/api/v1alpha1"
	"github.com/acko-io/acko/internal/operations"
)

// setNodeReady sets a node's Ready condition, as its kubelet (True) or the node lifecycle controller
// (Unknown, once the kubelet stopped posting) would.
func setNodeReady(name string, status corev1.ConditionStatus) {
	node := &corev1.Node{}
	ExpectWithOffset(1, k8s.Get(context.Background(), types.NamespacedName{Name: name}, node)).To(Succeed())
	node.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: status,
		LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now()}}
	ExpectWithOffset(1, k8s.Status().Update(context.Background(), node)).To(Succeed())
}

// localAndNetworkStorage gives every pod a claim of a local class (data, listed in localVolumes) and one
// of a network class (work).
func localAndNetworkStorage() *ackov1alpha1.StorageSpec {
	return &ackov1alpha1.StorageSpec{
		Volumes: []ackov1alpha1.VolumeSpec{
			{Name: "data", Path: "/opt/aerospike/data", Size: resource.MustParse("10Gi"), StorageClassName: ptr.To("local-ssd")},
			{Name: "work", Path: "/opt/aerospike/work", Size: resource.MustParse("1Gi"), StorageClassName: ptr.To("network")},
		},
		LocalVolumes: &ackov1alpha1.LocalVolumesSpec{StorageClasses: []string{"local-ssd"}},
	}
}

// claimUIDIn reads the UID of a claim of the namespace by name ("" when it is gone or being deleted).
func claimUIDIn(ns string) func(name string) types.UID {
	return func(name string) types.UID {
		pvc := &corev1.PersistentVolumeClaim{}
		if err := k8s.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: name}, pvc); err != nil ||
			pvc.DeletionTimestamp != nil {
			return ""
		}
		return pvc.UID
	}
}

var _ = Describe("Local volumes on a lost node", func() {
	It("gives up a lost node's local claims and its pod after the grace time, only while the other nodes "+
		"hold every copy, and keeps the claims of other classes", func() {
		ctx := context.Background()
		suffix := strconv.Itoa(GinkgoParallelProcess()) + "-" + strconv.Itoa(int(GinkgoRandomSeed()%100000))
		nodes := map[string]string{"lv-0": "lv-a-" + suffix, "lv-1": "lv-b-" + suffix, "lv-2": "lv-c-" + suffix}
		spare := "lv-spare-" + suffix
		for _, n := range append([]string{spare}, nodes["lv-0"], nodes["lv-1"], nodes["lv-2"]) {
			createNode(n, nil)
			setNodeReady(n, corev1.ConditionTrue)
		}
		var lostB atomic.Bool
		ns, w := newNamespace(func(w *world) {
			w.lostNodes = map[string]bool{}
			w.placement = func(pod string) string {
				if pod == "lv-1" && lostB.Load() {
					return spare
				}
				return nodes[pod]
			}
		})
		startOperator(w, operations.Config{})
		c := sampleCluster(ns, "lv", 3)
		c.Spec.Storage = localAndNetworkStorage()
		c.Spec.Storage.LocalVolumes.NodeLostAfterSeconds = ptr.To[int32](3)
		key := create(c)
		waitRunning(key)
		claimUID := claimUIDIn(ns)
		pod := &corev1.Pod{}
		Expect(k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: "lv-1"}, pod)).To(Succeed())
		before := map[string]types.UID{}
		for _, n := range []string{"data-lv-0", "data-lv-1", "data-lv-2", "work-lv-1"} {
			before[n] = claimUID(n)
		}

		By("node B stops; another pod is not Ready: the NodeLost condition names the node, nothing is given up")
		w.set(func(w *world) { w.lostNodes[nodes["lv-1"]], w.holdReady["lv-0"] = true, true })
		setNodeReady(nodes["lv-1"], corev1.ConditionUnknown)
		lostB.Store(true)
		Eventually(func() string {
			if c := condition(key, ackov1alpha1.ConditionNodeLost)(); c != nil {
				return c.Message
			}
			return ""
		}, timeout, poll).Should(And(
			ContainSubstring("pod lv-1: its local volumes are on node "+nodes["lv-1"]+", not Ready since"),
			ContainSubstring("giving up the volumes of lv-1 held by check SafetyRule")))
		Expect(eventMessages(key, ackov1alpha1.EventNodeLost)).To(ContainElement(ContainSubstring("node " + nodes["lv-1"])))
		Consistently(func() types.UID { return claimUID("data-lv-1") }, 2*time.Second, poll).Should(Equal(before["data-lv-1"]))

		By("the other nodes hold every copy again: the local claim goes, the pod waits for its node (asd may run there, cut off)")
		w.set(func(w *world) { delete(w.holdReady, "lv-0") })
		Eventually(func() string {
			if c := condition(key, ackov1alpha1.ConditionNodeLost)(); c != nil {
				return c.Message
			}
			return ""
		}, timeout, poll).Should(ContainSubstring("pod lv-1 is Terminating until the kubelet of node " + nodes["lv-1"]))
		Expect(claimUID("data-lv-1")).To(BeEmpty())
		Consistently(func() error {
			return k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: "lv-1"}, pod)
		}, 2*time.Second, poll).Should(Succeed(), "no successor while the lost node may still run asd")

		By("the node is tainted out-of-service: the pod goes at once and comes back elsewhere")
		node := &corev1.Node{}
		Expect(k8s.Get(ctx, types.NamespacedName{Name: nodes["lv-1"]}, node)).To(Succeed())
		node.Spec.Taints = append(node.Spec.Taints, corev1.Taint{Key: corev1.TaintNodeOutOfService, Value: "nodeshutdown",
			Effect: corev1.TaintEffectNoExecute})
		Expect(k8s.Update(ctx, node)).To(Succeed())
		Eventually(func() types.UID { return claimUID("data-lv-1") }, timeout, poll).ShouldNot(Or(BeEmpty(), Equal(before["data-lv-1"])))
		waitRunning(key)
		Expect(k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: "lv-1"}, pod)).To(Succeed())
		Expect(pod.Spec.NodeName).To(Equal(spare))
		Expect(condition(key, ackov1alpha1.ConditionNodeLost)()).To(BeNil(), "no stale NodeLost condition")
		for _, n := range []string{"data-lv-0", "data-lv-2", "work-lv-1"} {
			Expect(claimUID(n)).To(Equal(before[n]), "claim %s is kept", n)
		}
		Expect(eventMessages(key, ackov1alpha1.EventLocalVolumesDeleted)).To(ConsistOf(
			HavePrefix("Node " + nodes["lv-1"] + " not Ready since ")))
		Expect(strings.Join(eventMessages(key, ackov1alpha1.EventLocalVolumesDeleted), "")).To(
			And(ContainSubstring("deleted claims data-lv-1 and pod lv-1;"), ContainSubstring("pod lv-1 is Terminating until")))
		Expect(client.IgnoreNotFound(k8s.Delete(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: nodes["lv-1"]}}))).To(Succeed())
	})
})

// The give-up of a lost node's local volumes with a crash after each write of the operator in turn (issue
// 38): at every point a fresh operator finishes it. The pod's node is lost and tainted out-of-service at
// each point (a new node each time: the pod's last one); the claim and the pod are deleted once, the pod
// comes back on the next node with a new claim, and no other pod or claim is touched.
var _ = Describe("A give-up survives an operator crash", Label("crash-pod"), func() {
	It("after any write, a fresh operator finishes the give-up and touches nothing else", func() {
		began := time.Now()
		ctx := context.Background()
		suffix := strconv.Itoa(GinkgoParallelProcess()) + "-" + strconv.Itoa(int(GinkgoRandomSeed()%100000))
		hosts := make([]string, maxCrashPoints+2)
		for i := range hosts {
			hosts[i] = fmt.Sprintf("gu-%d-%s", i, suffix)
			createNode(hosts[i], nil)
			setNodeReady(hosts[i], corev1.ConditionTrue)
		}
		var at atomic.Int32 // the node gu-1 runs on: hosts[at]
		ns, w := newNamespace(func(w *world) {
			w.lostNodes = map[string]bool{}
			w.placement = func(pod string) string {
				if pod == "gu-1" {
					return hosts[at.Load()]
				}
				return pod + "-host-" + suffix
			}
		})
		for _, p := range []string{"gu-0", "gu-2"} {
			createNode(p+"-host-"+suffix, nil)
			setNodeReady(p+"-host-"+suffix, corev1.ConditionTrue)
		}
		setup := startOperator(w, crashConfig)
		c := sampleCluster(ns, "gu", 3)
		c.Spec.Storage = &ackov1alpha1.StorageSpec{
			Volumes: []ackov1alpha1.VolumeSpec{{Name: "data", Path: "/opt/aerospike/data", Size: resource.MustParse("1Gi"),
				StorageClassName: ptr.To("local-ssd")}},
			LocalVolumes: &ackov1alpha1.LocalVolumesSpec{StorageClasses: []string{"local-ssd"}, NodeLostAfterSeconds: ptr.To[int32](1)},
		}
		key := create(c)
		waitRunning(key)
		setup.stop()
		claims := func() map[string]types.UID {
			out := map[string]types.UID{}
			for _, n := range []string{"data-gu-0", "data-gu-1", "data-gu-2"} {
				pvc := &corev1.PersistentVolumeClaim{}
				if err := k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: n}, pvc); err == nil && pvc.DeletionTimestamp == nil {
					out[n] = pvc.UID
				}
			}
			return out
		}

		// giveUp loses gu-1's node (the n-th) with a crash after the crashAfter-th write.
		giveUp := func(n, crashAfter int) ([]string, bool) {
			before, claimsBefore := traces(key, w), claims()
			lost := hosts[n]
			writes, crashed := runWithCrash(w, key, crashAfter, func() {
				w.set(func(w *world) { w.lostNodes[lost] = true })
				setNodeReady(lost, corev1.ConditionUnknown)
				node := &corev1.Node{}
				Expect(k8s.Get(ctx, types.NamespacedName{Name: lost}, node)).To(Succeed())
				node.Spec.Taints = []corev1.Taint{{Key: corev1.TaintNodeOutOfService, Value: "nodeshutdown", Effect: corev1.TaintEffectNoExecute}}
				Expect(k8s.Update(ctx, node)).To(Succeed())
				at.Store(int32(n + 1))
			}, func() bool {
				pod := &corev1.Pod{}
				return k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: "gu-1"}, pod) == nil && pod.Spec.NodeName == hosts[n+1] &&
					fetch(key).Status.Phase == ackov1alpha1.PhaseRunning
			}, func() {
				Eventually(func() string {
					pod := &corev1.Pod{}
					_ = k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: "gu-1"}, pod)
					return pod.Spec.NodeName
				}, timeout, poll).Should(Equal(hosts[n+1]))
				waitRunning(key)
			})
			at := fmt.Sprintf("crash point %d", crashAfter)
			if crashed {
				at += ", after " + writes[crashAfter-1]
			}
			Expect(restartsSince(before, key, w)).To(Equal(map[string]string{"gu-1": "recreated×1"}), at)
			now := claims()
			Expect(now["data-gu-0"]).To(Equal(claimsBefore["data-gu-0"]), at)
			Expect(now["data-gu-2"]).To(Equal(claimsBefore["data-gu-2"]), at)
			Expect(now["data-gu-1"]).NotTo(Or(BeEmpty(), Equal(claimsBefore["data-gu-1"])), "%s: a new claim", at)
			return writes, crashed
		}
		writes, _ := giveUp(0, 0)
		AddReportEntry("writes of the give-up", fmt.Sprintf("%d: %v", len(writes), writes))
		crashes := 0
		for n := 1; n <= min(len(writes)+extraCrashPoints, maxCrashPoints); n++ {
			if _, crashed := giveUp(n, n); crashed {
				crashes++
			}
		}
		AddReportEntry("crash points", crashes)
		AddReportEntry("run time", time.Since(began).Round(time.Second).String())
		Expect(crashes).To(BeNumerically(">=", len(writes)/2), "the crash points were reached")
	})
})
