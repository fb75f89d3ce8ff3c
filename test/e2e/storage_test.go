package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/acko-io/acko/test/localcluster/simclient"
	"github.com/acko-io/acko/test/workload"
)

// A device-backed cluster (issue 26): each claim is prepared once (HeaderCleanup) before asd first
// runs on it; pods recreated on their claims keep their records (the simulator keeps a persistent
// namespace's records with the claim), and a claim deleted with its pod comes back new, prepared and
// empty, refilled by migrations from the other copies. The official client counts what is lost.
// expandableVolume is the spec part of a Block volume of 1Gi whose class can grow.
const expandableVolume = `  storage:
    volumes:
      - name: data
        path: /dev/xvdb
        size: 1Gi
        volumeMode: Block
        storageClassName: kwok-expandable
`

var _ = Describe("Persistent storage", Label("storage"), func() {
	It("prepares each claim once, keeps the records of pods recreated on their claims, and loses nothing "+
		"when a pod's claim is replaced while the other copies are up", func() {
		const ns, name = "e2e-storage", "stor"
		applyYAML(clusterYAMLEngine(ns, name, 3, "type: device\n          devices: [/dev/xvdb]", expandableVolume))
		DeferCleanup(kubectl, "delete", "namespace", ns, "--wait=false")
		waitRunningObserved(ns, name)
		pods := []string{name + "-0", name + "-1", name + "-2"}
		claims := claimUIDs(ns, pods)
		for _, p := range pods {
			Expect(initializedVolumes(ns, name, p)).To(Equal("data=HeaderCleanup:"+claims[p]), "status of %s", p)
			Expect(mustField(ns, "pvc/data-"+p, "{.metadata.annotations.acko\\.io/volume-initialized}")).To(Equal("HeaderCleanup"))
		}
		Expect(eventMessages(ns, name, "VolumeInitialized")).To(HaveLen(3))
		w := withWorkload(ns, name)

		By("a PodRestart recreates every pod on its claim: nothing is prepared again, nothing lost")
		uids := podUIDs(ns, name)
		_, err := mergePatch(ns, name, `{"spec":{"operations":[{"kind":"PodRestart","id":"stor-recreate"}]}}`)
		Expect(err).NotTo(HaveOccurred())
		Eventually(operationPhase(ns, name)).WithTimeout(5 * time.Minute).WithPolling(500 * time.Millisecond).
			Should(Equal("stor-recreate Completed"))
		waitRunningObserved(ns, name)
		Expect(restartedPods(ns, name, uids)).To(Equal(3))
		for _, p := range pods {
			Expect(mustField(ns, "pod/"+p, "{.metadata.annotations.acko\\.io/volume-plan}")).To(Equal("data=None:" + claims[p]))
		}
		Expect(eventMessages(ns, name, "VolumeInitialized")).To(HaveLen(3))

		By("a claim deleted with its pod comes back new: prepared, empty, refilled from the other copies")
		lost := name + "-1"
		kubectl("delete", "pvc", "data-"+lost, "-n", ns, "--wait=false")
		kubectl("delete", "pod", lost, "-n", ns)
		Eventually(func() string { return claimUIDs(ns, []string{lost})[lost] }).WithTimeout(3 * time.Minute).
			ShouldNot(Or(BeEmpty(), Equal(claims[lost])))
		waitRunningObserved(ns, name)
		fresh := claimUIDs(ns, []string{lost})[lost]
		Eventually(func() string { return initializedVolumes(ns, name, lost) }).WithTimeout(time.Minute).
			Should(Equal("data=HeaderCleanup:" + fresh))
		Expect(eventMessages(ns, name, "VolumeInitialized")).To(HaveLen(4))
		w.expectNothingLost()

		By("the negative control's fault, on devices: two of three nodes restarted at once by the simulator " +
			"lose nothing, their records read back from the device")
		w = withWorkloadConfig(ns, name, workload.Config{Keys: 3000, Rate: 1000})
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_, err = sim().WarmRestartNodes(ctx, simclient.NodeName(ns, name+"-1"), simclient.NodeName(ns, name+"-2"))
		Expect(err).NotTo(HaveOccurred())
		rep := w.expectNothingLost()
		reportFigure("device namespace, two of three nodes restarted at once",
			fmt.Sprintf("lost %d of %d acknowledged keys (memory: about a third)", rep.Lost, rep.Acknowledged))
		waitRunningObserved(ns, name)

		By("a larger volume: the StatefulSet is replaced without its pods, each claim resized, each pod " +
			"restarted in place (asd reads a device's size at start), nothing lost")
		w = withWorkload(ns, name)
		set := mustField(ns, "statefulset/"+name, "{.metadata.uid}")
		uids = podUIDs(ns, name)
		grow := func(size string) (string, error) {
			return mergePatch(ns, name, `{"spec":{"storage":{"volumes":[{"name":"data","path":"/dev/xvdb","size":"`+size+
				`","volumeMode":"Block","storageClassName":"kwok-expandable"}]}}}`)
		}
		_, err = grow("2Gi")
		Expect(err).NotTo(HaveOccurred())
		Eventually(func() string {
			sizes := ""
			for _, p := range pods {
				s, _ := field(ns, "pod/"+p, "{.metadata.annotations.acko\\.io/volume-sizes}")
				sizes += s + " "
			}
			return sizes
		}).WithTimeout(5 * time.Minute).WithPolling(time.Second).Should(Equal("data=2Gi data=2Gi data=2Gi "))
		waitRunningObserved(ns, name)
		Expect(mustField(ns, "statefulset/"+name, "{.metadata.uid}")).NotTo(Equal(set), "the StatefulSet was replaced")
		Expect(mustField(ns, "statefulset/"+name, "{.spec.volumeClaimTemplates[0].spec.resources.requests.storage}")).To(Equal("2Gi"))
		Expect(podUIDs(ns, name)).To(Equal(uids), "no pod recreated")
		for _, p := range pods {
			Expect(mustField(ns, "pvc/data-"+p, "{.status.capacity.storage}")).To(Equal("2Gi"))
			Expect(mustField(ns, "pod/"+p, "{.metadata.ownerReferences[0].name}")).To(Equal(name), "adopted by the new StatefulSet")
		}
		Expect(lastRestartReasons(ns, name)).To(Equal(map[string]string{pods[0]: "VolumeGrown", pods[1]: "VolumeGrown", pods[2]: "VolumeGrown"}))
		w.expectNothingLost()

		By("a smaller volume is refused")
		_, err = grow("1Gi")
		Expect(err).To(MatchError(ContainSubstring(`volume "data" size 2Gi -> 1Gi: a volume cannot shrink`)))
	})

	// Issue 38, sequence 1: growing the volumes deletes the StatefulSet without its pods; created again, it
	// must ask for every pod not yet removed through the door, so the scale-down in the same edit goes one
	// checked step at a time, never by the StatefulSet controller deleting the highest pods at once.
	It("grows the volumes and scales down in one edit, one pod at a time, and loses nothing", func() {
		const ns, name = "e2e-growshrink", "grow"
		applyYAML(clusterYAMLEngine(ns, name, 5, deviceEngine, expandableVolume))
		DeferCleanup(kubectl, "delete", "namespace", ns, "--wait=false")
		waitRunningObserved(ns, name)
		w := withWorkload(ns, name)

		_, err := mergePatch(ns, name, `{"spec":{"size":3,"storage":{"volumes":[{"name":"data","path":"/dev/xvdb","size":"2Gi",`+
			`"volumeMode":"Block","storageClassName":"kwok-expandable"}]}}}`)
		Expect(err).NotTo(HaveOccurred())
		start := time.Now()
		// The StatefulSet is deleted (without its pods) and created again on the way: a NotFound is a wait.
		Eventually(func() (string, error) { return field(ns, "statefulset/"+name, "{.spec.replicas}") }).
			WithTimeout(5 * time.Minute).WithPolling(time.Second).Should(Equal("3"))
		waitRunningObserved(ns, name)
		reportTime("size 5 -> 3 with volumes 1Gi -> 2Gi in one edit, to Running", time.Since(start))
		Expect(mustField(ns, "statefulset/"+name, "{.spec.volumeClaimTemplates[0].spec.resources.requests.storage}")).To(Equal("2Gi"))
		for _, p := range []string{name + "-0", name + "-1", name + "-2"} {
			Expect(mustField(ns, "pvc/data-"+p, "{.status.capacity.storage}")).To(Equal("2Gi"))
		}
		Expect(eventMessages(ns, name, "Scaled")).To(ContainElements(
			HavePrefix("Scaling "+name+" down from 5 to 4 pods: "+name+"-4 leave the cluster"),
			HavePrefix("Scaling "+name+" down from 4 to 3 pods: "+name+"-3 leave the cluster")),
			"one pod a step (replication-factor 2), each through the safety checks")
		w.expectNothingLost()
	})
})

// claimUIDs maps each pod to the UID of its data claim ("" when it has none now).
func claimUIDs(namespace string, pods []string) map[string]string {
	out := map[string]string{}
	for _, p := range pods {
		uid, err := field(namespace, "pvc/data-"+p, "{.metadata.uid}")
		if err == nil {
			out[p] = strings.TrimSpace(uid)
		}
	}
	return out
}

// initializedVolumes is status.pods[pod].initializedVolumes as "name=Method:claimUID" entries.
func initializedVolumes(namespace, name, pod string) string {
	GinkgoHelper()
	out, err := field(namespace, "asc/"+name, "{.status.pods."+pod+".initializedVolumes}")
	if err != nil || out == "" {
		return ""
	}
	var vols []struct{ Name, ClaimUID, Method string }
	Expect(json.Unmarshal([]byte(out), &vols)).To(Succeed())
	entries := make([]string, 0, len(vols))
	for _, v := range vols {
		entries = append(entries, v.Name+"="+v.Method+":"+v.ClaimUID)
	}
	return strings.Join(entries, " ")
}
