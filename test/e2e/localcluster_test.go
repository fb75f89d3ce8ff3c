package e2e

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/acko-io/acko/internal/aerospike"
	"github.com/acko-io/acko/test/aerosim"
	"github.com/acko-io/acko/test/localcluster"
)

var _ = Describe("The local cluster", func() {
	It("serves ACKO's CRD, short name included", func() {
		Expect(mustField("", "crd/aerospikeclusters.acko.io", `{.status.conditions[?(@.type=="Established")].status}`)).
			To(Equal("True"))
		Expect(kubectl("api-resources", "--api-group=acko.io", "--no-headers")).To(ContainSubstring(" asc "))
		kubectl("get", "asc", "-A")
	})

	It("runs the manager healthy, as its ServiceAccount and not as cluster admin", func() {
		resp, err := http.Get(opts.HealthURL())
		Expect(err).NotTo(HaveOccurred())
		_ = resp.Body.Close()
		Expect(resp.StatusCode).To(Equal(http.StatusOK))

		asManager := func(args ...string) (string, error) {
			return opts.KubectlAs(context.Background(), opts.ManagerKubeconfigPath(), args...)
		}
		Expect(asManager("auth", "whoami", "-o", "jsonpath={.status.userInfo.username}")).To(Equal(
			"system:serviceaccount:" + localcluster.ManagerNamespace + ":" + localcluster.ManagerServiceAccount))
		out, _ := asManager("auth", "can-i", "*", "*", "--all-namespaces") // "no" exits 1
		Expect(strings.TrimSpace(out)).To(Equal("no"))
	})

	It("has Prometheus scraping the manager's authenticated metrics endpoint", func() {
		Eventually(func() (string, error) {
			samples, err := opts.PromQuery(context.Background(), fmt.Sprintf(`up{job=%q}`, localcluster.PrometheusJob))
			if err != nil || len(samples) == 0 {
				return "", err
			}
			return fmt.Sprint(samples[0].Value[1]), nil
		}).Should(Equal("1"))
	})
})

var _ = Describe("The 3-node sample", func() {
	It("is accepted and reaches Running", func(ctx SpecContext) {
		Expect(opts.ApplySample(ctx)).To(Succeed())
		name, err := opts.SampleName()
		Expect(err).NotTo(HaveOccurred())
		eventuallyPhase(localcluster.SampleNamespace, name).Should(Equal("Running"))
	})
})

// The harness proves itself with a StatefulSet of its own (testdata/selftest.yaml): 3 pods on the
// zone nodes, and one on the plain-init node.
var _ = Describe("The simulated world", Ordered, func() {
	const ns = "selftest"
	pods := []string{"selftest-0", "selftest-1", "selftest-2"}

	BeforeAll(func() {
		kubectl("apply", "-f", "testdata/selftest.yaml")
		DeferCleanup(kubectl, "delete", "namespace", ns, "--wait=false")
		kubectl("rollout", "status", "statefulset/selftest", "-n", ns, "--timeout=2m")
		kubectl("rollout", "status", "statefulset/plain", "-n", ns, "--timeout=2m")
	})

	It("runs the pods at loopback IPs, one per zone, with their claims bound", func() {
		_, cidr, err := net.ParseCIDR(opts.PodCIDR)
		Expect(err).NotTo(HaveOccurred())
		zones := make([]string, 0, len(pods))
		for _, pod := range pods {
			Expect(cidr.Contains(net.ParseIP(mustField(ns, "pod/"+pod, "{.status.podIP}")))).To(BeTrue())
			node := mustField(ns, "pod/"+pod, "{.spec.nodeName}")
			zones = append(zones, mustField("", "node/"+node, `{.metadata.labels.topology\.kubernetes\.io/zone}`))
		}
		Expect(zones).To(ConsistOf(opts.Zones))
		Expect(strings.Fields(mustField(ns, "pvc", "{.items[*].status.phase}"))).To(Equal([]string{"Bound", "Bound", "Bound"}))
		Expect(eventMessages(ns, "selftest", "SuccessfulCreate")).To(ContainElement(ContainSubstring("Pod selftest-0")))
	})

	It("answers the Aerospike info protocol at every pod IP, as one cluster", func() {
		client := aerospike.NewClient(aerospike.ClientOptions{})
		for _, pod := range pods {
			addr := net.JoinHostPort(mustField(ns, "pod/"+pod, "{.status.podIP}"), "3000")
			node, err := simNode(ns, pod)
			Expect(err).NotTo(HaveOccurred())
			Eventually(func() (aerospike.NodeFacts, error) {
				return aerospike.ReadNodeFacts(context.Background(), client, addr, len(pods), false) // the client has a timeout
			}).Should(And(HaveField("ClusterSize", 3), HaveField("NodeID", node.NodeID), HaveField("ClusterStableErr", BeNil())))
		}
	})

	It("shows the image's tini as PID 1 of a pod, not the machine's PID 1", func() {
		awaitExec(ns, "selftest-0")
		tini := strings.Join(localcluster.TiniCmdline, "\x00") + "\x00"
		Expect(execIn(ns, "selftest-0", "cat", "/proc/1/cmdline")).To(Equal(tini))
		host, err := os.ReadFile("/proc/1/cmdline")
		Expect(err).NotTo(HaveOccurred())
		Expect(string(host)).NotTo(Equal(tini))
	})

	It("turns `kill -USR1 1` in a pod into a warm restart of that pod's node only", func() {
		awaitExec(ns, "selftest-1")
		uid := mustField(ns, "pod/selftest-1", "{.metadata.uid}")
		before := restarts(ns, pods)
		logSize := initLogSize()

		_, err := execIn(ns, "selftest-1", "kill", "-USR1", "1")
		Expect(err).NotTo(HaveOccurred())

		want := map[string]int{"selftest-0": before["selftest-0"], "selftest-1": before["selftest-1"] + 1,
			"selftest-2": before["selftest-2"]}
		Expect(restarts(ns, pods)).To(Equal(want))
		Expect(initLogSince(logSize)).To(ContainSubstring(strings.Join(localcluster.TiniCmdline, " ") + ": got SIGUSR1"))
		Eventually(func() (aerosim.NodeState, error) { return simNode(ns, "selftest-1") }).
			Should(And(HaveField("Member", true), HaveField("ClusterSize", 3)))
		Expect(mustField(ns, "pod/selftest-1", "{.metadata.uid}")).To(Equal(uid), "a warm restart keeps the pod")
	})

	It("gives the pods of the plain-init node a PID 1 that is not tini, where SIGUSR1 restarts nothing", func() {
		awaitExec(ns, "plain-0")
		Expect(execIn(ns, "plain-0", "cat", "/proc/1/cmdline")).
			To(Equal(strings.Join(localcluster.PlainCmdline, "\x00") + "\x00"))
		logSize := initLogSize()
		_, err := execIn(ns, "plain-0", "kill", "-USR1", "1")
		Expect(err).NotTo(HaveOccurred())
		Expect(initLogSince(logSize)).To(ContainSubstring(strings.Join(localcluster.PlainCmdline, " ") + ": got SIGUSR1"))
		Expect(restarts(ns, []string{"plain-0"})).To(Equal(map[string]int{"plain-0": 0}))
	})

	It("adds and removes simulated nodes as the StatefulSet scales", func() {
		scale := func(n int) {
			kubectl("patch", "statefulset", "selftest", "-n", ns, "--type", "merge",
				"-p", fmt.Sprintf(`{"spec":{"replicas":%d}}`, n))
		}
		clusterSize := func() (int, error) {
			node, err := simNode(ns, "selftest-0")
			return node.ClusterSize, err
		}
		scale(4)
		Eventually(clusterSize).Should(Equal(4))
		scale(3)
		Eventually(func() error {
			_, err := simNode(ns, "selftest-3")
			return err
		}).Should(MatchError(aerosim.ErrNotFound))
		Eventually(clusterSize).Should(Equal(3))
	})

	It("replaces the node of a pod recreated under the same name with a fresh one", func() {
		oldUID := mustField(ns, "pod/selftest-2", "{.metadata.uid}")
		kubectl("delete", "pod", "selftest-2", "-n", ns, "--wait", "--timeout=60s")
		Eventually(func() (string, error) { return field(ns, "pod/selftest-2", "{.metadata.uid}") }).
			ShouldNot(Or(Equal(oldUID), BeEmpty()))
		kubectl("wait", "--for=condition=Ready", "pod/selftest-2", "-n", ns, "--timeout=60s")
		ip := mustField(ns, "pod/selftest-2", "{.status.podIP}")
		Eventually(func() (aerosim.NodeState, error) { return simNode(ns, "selftest-2") }).Should(And(
			HaveField("IP", ip), HaveField("Member", true), HaveField("Restarts", 0),
			HaveField("UptimeSeconds", BeNumerically("<", 30))))
	})
})

// restarts returns the simulator's restart count of each pod's node.
func restarts(namespace string, pods []string) map[string]int {
	GinkgoHelper()
	out := map[string]int{}
	for _, pod := range pods {
		node, err := simNode(namespace, pod)
		Expect(err).NotTo(HaveOccurred())
		out[pod] = node.Restarts
	}
	return out
}

func initLogSize() int64 {
	GinkgoHelper()
	st, err := os.Stat(opts.InitLogPath())
	Expect(err).NotTo(HaveOccurred())
	return st.Size()
}

// initLogSince returns what the stand-in inits and the kill shim logged after offset.
func initLogSince(offset int64) string {
	GinkgoHelper()
	b, err := os.ReadFile(opts.InitLogPath())
	Expect(err).NotTo(HaveOccurred())
	return string(b[offset:])
}
