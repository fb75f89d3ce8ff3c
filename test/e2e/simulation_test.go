package e2e

import (
	"context"
	"crypto/sha256"
	"fmt"
	"os"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/acko-io/acko/internal/config"
	"github.com/acko-io/acko/test/aerosim"
	"github.com/acko-io/acko/test/localcluster/simclient"
)

// The harness proves the simulation of pods that run on a config, as ACKO's do
// (testdata/selftest-config.yaml): 2 pods whose nodes find each other through their seeds.
var _ = Describe("Simulated pods that run on a config", Ordered, func() {
	const ns, gate = confNamespace, "localcluster.acko.io/test-gate"
	pods := []string{"conf-0", "conf-1"}
	var conf string

	BeforeAll(func() {
		kubectl("apply", "-f", "testdata/selftest-config.yaml")
		DeferCleanup(kubectl, "delete", "namespace", ns, "--wait=false")
		conf = mustField(ns, "configmap/conf", `{.data.aerospike\.conf}`) + "\n"
	})

	It("form one cluster from their config, reaching each other through the pods' DNS names", func() {
		Eventually(func() ([]aerosim.NodeState, error) { return simNodes(ns, pods) }).
			WithTimeout(2 * time.Minute).Should(And(HaveLen(2), HaveEach(And(
			HaveField("ClusterName", "conf"), HaveField("ClusterSize", 2), HaveField("Phase", aerosim.PhaseMember),
			HaveField("ConfigHash", config.Hash(conf))))))
		nodes, err := simNodes(ns, pods)
		Expect(err).NotTo(HaveOccurred())
		Expect(nodes[0].ClusterKey).To(Equal(nodes[1].ClusterKey))
	})

	It("are Ready only while their readiness gate is True", func() {
		ready := func() (string, error) {
			return field(ns, "pod/conf-0", `{.status.conditions[?(@.type=="Ready")].status}`)
		}
		Expect(ready()).To(Equal("False"))
		Expect(mustField(ns, "pod/conf-0", `{.status.conditions[?(@.type=="Ready")].reason}`)).
			To(Equal("ReadinessGatesNotReady"))
		setGate(ns, "conf-0", gate, "True")
		Eventually(ready).Should(Equal("True"))
		setGate(ns, "conf-0", gate, "False")
		Eventually(ready).Should(Equal("False"))
		Expect(mustField(ns, "pod/conf-0", `{.status.conditions[?(@.type=="Ready")].message}`)).
			To(Equal(`the status of pod readiness gate "` + gate + `" is not "True", but False`))
	})

	It("serve the pod's files to an exec'd cat and cp, never this machine's, and load a new config on a warm restart", func() {
		awaitExec(ns, "conf-0")
		machine := machineFiles()
		Expect(execIn(ns, "conf-0", "cat", "/etc/aerospike-configmap/aerospike.conf")).To(Equal(conf))
		Expect(execIn(ns, "conf-0", "cat", "/etc/aerospike/aerospike.conf")).To(Equal(conf))

		By("changing the ConfigMap: the kubelet projects it after a delay; asd's own copy stays")
		changed := conf + "# changed\n"
		setConfigMap(ns, "conf", changed)
		changedAt := time.Now()
		Eventually(func() (string, error) {
			return execIn(ns, "conf-0", "cat", "/etc/aerospike-configmap/aerospike.conf")
		}).Should(Equal(changed))
		Expect(time.Since(changedAt)).To(BeNumerically(">=", opts.ProjectionDelay*9/10))
		Expect(execIn(ns, "conf-0", "cat", "/etc/aerospike/aerospike.conf")).To(Equal(conf))
		Expect(simNode(ns, "conf-0")).To(HaveField("ConfigHash", config.Hash(conf)))

		By("copying it into place and warm-restarting asd, as the operator does on the pod's turn")
		_, err := execIn(ns, "conf-0", "cp", "/etc/aerospike-configmap/aerospike.conf", "/etc/aerospike/aerospike.conf")
		Expect(err).NotTo(HaveOccurred())
		Expect(execIn(ns, "conf-0", "cat", "/etc/aerospike/aerospike.conf")).To(Equal(changed))
		Expect(simNode(ns, "conf-0")).To(HaveField("ConfigHash", config.Hash(conf)), "a running asd keeps its config")
		_, err = execIn(ns, "conf-0", "kill", "-USR1", "1")
		Expect(err).NotTo(HaveOccurred())
		Eventually(func() (aerosim.NodeState, error) { return simNode(ns, "conf-0") }).
			Should(And(HaveField("ConfigHash", config.Hash(changed)), HaveField("ClusterSize", 2)))
		_, err = execIn(ns, "conf-0", "cat", "/etc/aerospike/nope")
		Expect(err).To(MatchError(ContainSubstring("exit status 1")))
		Expect(machineFiles()).To(Equal(machine), "this machine's files are untouched")
	})

	It("split when the mesh is cut, and merge when it heals; the history shows it", func() {
		start := time.Now()
		nodes := []string{simclient.NodeName(ns, "conf-0"), simclient.NodeName(ns, "conf-1")}
		Expect(sim().CutMesh(context.Background(), nodes[:1], nodes[1:])).To(Succeed())
		DeferCleanup(func() { _ = sim().HealMesh(context.Background()) })
		Eventually(func() ([]aerosim.NodeState, error) { return simNodes(ns, pods) }).
			Should(HaveEach(HaveField("ClusterSize", 1)))
		split, err := simNodes(ns, pods)
		Expect(err).NotTo(HaveOccurred())
		Expect(split[0].ClusterKey).NotTo(Equal(split[1].ClusterKey))
		Expect(sim().HealMesh(context.Background())).To(Succeed())
		Eventually(func() ([]aerosim.NodeState, error) { return simNodes(ns, pods) }).
			Should(HaveEach(HaveField("ClusterSize", 2)))
		h, err := sim().History(context.Background(), start)
		Expect(err).NotTo(HaveOccurred())
		var sizes []int
		for _, tr := range h.Transitions {
			if tr.Node == nodes[0] {
				sizes = append(sizes, tr.ClusterSize)
			}
		}
		Expect(sizes).To(Equal([]int{1, 2}))
	})

	It("crash-loop on a config asd refuses, with its error as the container's last termination message", func() {
		setConfigMap(ns, "conf", "service {\n}\n")
		kubectl("delete", "pod", "conf-1", "-n", ns, "--wait", "--timeout=60s")
		Eventually(func() (string, error) {
			return field(ns, "pod/conf-1", `{.status.containerStatuses[0].state.waiting.reason}`)
		}).Should(Equal("CrashLoopBackOff"))
		Expect(mustField(ns, "pod/conf-1", `{.status.containerStatuses[0].lastState.terminated.message}`)).
			To(Equal("CRITICAL (config): must configure 'cluster-name'"))
		Expect(mustField(ns, "pod/conf-1", `{.status.conditions[?(@.type=="ContainersReady")].status}`)).To(Equal("False"))
		log, err := sim().Log(context.Background(), simclient.NodeName(ns, "conf-1"))
		Expect(err).NotTo(HaveOccurred())
		Expect(log).To(ContainElement(HaveSuffix("CRITICAL (config): must configure 'cluster-name'")))
	})

	It("never start a container whose image tag says broken", func() {
		kubectl("patch", "statefulset", "conf", "-n", ns, "--type", "json", "-p",
			`[{"op":"replace","path":"/spec/template/spec/containers/0/image","value":"aerospike:ce-8.1.1.1-broken"}]`)
		kubectl("delete", "pod", "conf-1", "-n", ns, "--wait", "--timeout=60s")
		Eventually(func() (string, error) {
			return field(ns, "pod/conf-1", `{.status.phase} {.status.containerStatuses[0].state.waiting.reason}`)
		}).Should(Equal("Pending ImagePullBackOff"))
		Expect(mustField(ns, "pod/conf-1", `{.status.containerStatuses[0].state.waiting.message}`)).
			To(Equal(`Back-off pulling image "aerospike:ce-8.1.1.1-broken"`))
		Consistently(func() error {
			_, err := simNode(ns, "conf-1")
			return err
		}).WithTimeout(2 * time.Second).Should(MatchError(aerosim.ErrNotFound))
	})
})

// confNamespace holds testdata/selftest-config.yaml.
const confNamespace = "selftest-config"

// setGate sets a pod's readiness gate condition, as the operator does.
func setGate(namespace, pod, gate, status string) {
	GinkgoHelper()
	kubectl("patch", "pod", pod, "-n", namespace, "--subresource=status", "--type=strategic", "-p",
		fmt.Sprintf(`{"status":{"conditions":[{"type":%q,"status":%q}]}}`, gate, status))
}

func setConfigMap(namespace, name, conf string) {
	GinkgoHelper()
	applyYAML(fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s\n  namespace: %s\ndata:\n  aerospike.conf: %q\n",
		name, namespace, conf))
}

// machineFiles digests this machine's files where the pods' volumes are mounted.
func machineFiles() map[string]string {
	out := map[string]string{}
	for _, p := range []string{"/etc/aerospike/aerospike.conf", "/etc/aerospike-configmap/aerospike.conf",
		"/etc/aerospike/nope"} {
		b, err := os.ReadFile(p)
		if err != nil {
			out[p] = strings.SplitN(err.Error(), ": ", 2)[1]
			continue
		}
		out[p] = fmt.Sprintf("%x", sha256.Sum256(b))
	}
	return out
}
