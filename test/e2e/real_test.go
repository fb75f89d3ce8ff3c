package e2e

import (
	"context"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/acko-io/acko/internal/aerospike"
	"github.com/acko-io/acko/test/localcluster"
	"github.com/acko-io/acko/test/workload"
)

// realPlacement is the spec.podSpec of a cluster whose pods run real asd (localcluster.RealNode),
// indented for clusterYAML's extra.
var realPlacement = `  podSpec:
    nodeSelector:
      ` + localcluster.LabelTestBackend + `: ` + localcluster.TestBackendReal + `
    tolerations:
    - key: ` + localcluster.LabelTestBackend + `
      operator: Equal
      value: ` + localcluster.TestBackendReal + `
      effect: NoSchedule
`

// The real tier (`make test-real`, Label("real")): clusters on real Aerospike CE 8.1.2.0 nodes, run
// by the sync loop through test/realnode. Selected only by its label, with the suite's real nodes on
// (ACKO_BACKEND=real): without them a spec fails, it never skips.
var _ = Describe("Real nodes", Label("real"), func() {
	BeforeEach(func() {
		Expect(opts.RealNodes).To(BeTrue(), "the real tier needs %s=%s (make test-real)",
			localcluster.EnvBackend, localcluster.TestBackendReal)
	})

	It("form a cluster whose pods run the real tini and asd, and a WarmRestart of every pod loses nothing", func() {
		const ns, name = "real-form", "realform"
		began := time.Now()
		createCluster(ns, name, 3, realPlacement)
		AddReportEntry("real: 3 nodes Running", time.Since(began).Round(time.Second).String())
		w := withWorkload(ns, name)

		By("PID 1 of each pod is the image's tini, in the pod's own PID namespace")
		for _, pod := range []string{name + "-0", name + "-1", name + "-2"} {
			awaitExec(ns, pod)
			out, err := execIn(ns, pod, "cat", "/proc/1/cmdline")
			Expect(err).NotTo(HaveOccurred())
			Expect(strings.ReplaceAll(out, "\x00", " ")).To(Equal(
				"as-tini-static -r SIGUSR1 -t SIGTERM -- asd --foreground --config-file /etc/aerospike/aerospike.conf "))
			host, err := execIn(ns, pod, "hostname")
			Expect(err).NotTo(HaveOccurred())
			Expect(strings.TrimSpace(host)).To(Equal(pod))
		}

		By("a WarmRestart restarts every asd in place")
		warm := time.Now()
		_, err := mergePatch(ns, name, `{"spec":{"operations":[{"kind":"WarmRestart","id":"real-warm"}]}}`)
		Expect(err).NotTo(HaveOccurred())
		Eventually(operationPhase(ns, name)).WithTimeout(5 * time.Minute).WithPolling(500 * time.Millisecond).
			Should(Equal("real-warm Completed"))
		AddReportEntry("real: WarmRestart of 3 pods", time.Since(warm).Round(time.Second).String())
		w.expectNothingLost()
	})

	It("forms exactly one cluster of the expected size after every step of 1 → 2 → 3 → 5 → 3 → 1 → 3, restarting no asd that stays", func() {
		const ns, name = "real-scale", "realscale"
		sequence := []int{1, 2, 3, 5, 3, 1, 3}
		began := time.Now()
		applyYAML(clusterYAML(ns, name, sequence[0], realPlacement))
		DeferCleanup(kubectl, "delete", "namespace", ns, "--wait=false")
		awaitRealCluster(ns, name, sequence[0])
		w := withWorkload(ns, name)
		for _, size := range sequence[1:] {
			By(fmt.Sprintf("scaling to %d", size))
			before := realUptimes(ns, name)
			_, err := mergePatch(ns, name, fmt.Sprintf(`{"spec":{"size":%d}}`, size))
			Expect(err).NotTo(HaveOccurred())
			awaitRealCluster(ns, name, size)
			for pod, up := range realUptimes(ns, name) {
				if was, stayed := before[pod]; stayed {
					Expect(up).To(BeNumerically(">=", was), "asd of %s restarted", pod)
				}
			}
		}
		AddReportEntry("real: scale sequence", time.Since(began).Round(time.Second).String())
		w.expectNothingLost()
	})

	// The client outside Kubernetes on real asd: each node advertises its node's ExternalIP and its own
	// NodePort Service's port as alternate-access-address/-port (CE has both), the kube-proxy stand-in
	// forwards them, and the client told to use the alternate addresses reaches every node only there,
	// also after every pod is recreated.
	It("serves a client through the NodePort alternate addresses while every pod is recreated, and loses nothing", func() {
		const ns, name = "real-nodeport", "realnp"
		pods := []string{name + "-0", name + "-1", name + "-2"}
		began := time.Now()
		createCluster(ns, name, 3, realPlacement+`  externalAccess:
    type: NodePort
    nodeAddress: ExternalIP
`)
		awaitRealCluster(ns, name, 3)
		seeds := expectExternalAddresses(ns, name, pods)
		reportTime("real: 3 nodes with NodePort addresses Running", time.Since(began))
		w := withWorkloadConfig(ns, name, workload.Config{Seeds: seeds, UseServicesAlternate: true, ProbeNodes: true})

		uids := podUIDs(ns, name)
		_, err := mergePatch(ns, name, `{"spec":{"operations":[{"kind":"PodRestart","id":"real-np"}]}}`)
		Expect(err).NotTo(HaveOccurred())
		Eventually(operationPhase(ns, name)).WithTimeout(5 * time.Minute).WithPolling(500 * time.Millisecond).
			Should(Equal("real-np Completed"))
		Expect(restartedPods(ns, name, uids)).To(Equal(3))
		awaitRealCluster(ns, name, 3)
		Expect(expectExternalAddresses(ns, name, pods)).To(ConsistOf(seeds), "the node ports stay with their Services")
		rep := w.expectNothingLost()
		reportFigure("real: NodePort client through a PodRestart", summary(rep)+
			", longest a held node did not answer "+rep.MaxUnreachableNode.String())
	})
})

// realFormedAs is how the real nodes and the operator's status see a cluster, in one line: each pod's
// node id and cluster size, the cluster keys, and the status' Ready pods and observed generation.
func realFormedAs(namespace, name string) (string, error) {
	ips, err := realPodIPs(namespace, name)
	if err != nil {
		return "", err
	}
	keys, parts := map[string]bool{}, []string{}
	for pod, ip := range ips {
		stats, err := realInfo(ip, "statistics")
		if err != nil {
			parts = append(parts, pod+":"+err.Error())
			continue
		}
		kv := aerospike.ParseKV(stats)
		keys[kv["cluster_key"]] = true
		parts = append(parts, fmt.Sprintf("%s:%s", pod, kv["cluster_size"]))
	}
	slices.Sort(parts)
	asc, err := readCluster(namespace, name)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("nodes=[%s] keys=%d ready=%d observed=%v", strings.Join(parts, " "), len(keys),
		asc.Status.ReadyPods, asc.Status.ObservedGeneration == asc.Generation), nil
}

func awaitRealCluster(namespace, name string, size int) {
	GinkgoHelper()
	parts := make([]string, 0, size)
	for i := range size {
		parts = append(parts, fmt.Sprintf("%s-%d:%d", name, i, size))
	}
	slices.Sort(parts)
	want := fmt.Sprintf("nodes=[%s] keys=1 ready=%d observed=true", strings.Join(parts, " "), size)
	Eventually(func() (string, error) { return realFormedAs(namespace, name) }).
		WithTimeout(4 * time.Minute).WithPolling(time.Second).Should(Equal(want))
}

// realUptimes are the asd uptimes (seconds) of the cluster's pods.
func realUptimes(namespace, name string) map[string]int {
	GinkgoHelper()
	ips, err := realPodIPs(namespace, name)
	Expect(err).NotTo(HaveOccurred())
	out := map[string]int{}
	for pod, ip := range ips {
		stats, err := realInfo(ip, "statistics")
		Expect(err).NotTo(HaveOccurred())
		out[pod], err = strconv.Atoi(aerospike.ParseKV(stats)["uptime"])
		Expect(err).NotTo(HaveOccurred())
	}
	return out
}

func realPodIPs(namespace, name string) (map[string]string, error) {
	out, err := kubectlErr("get", "pods", "-n", namespace, "-l", "app.kubernetes.io/instance="+name,
		"-o", `jsonpath={range .items[*]}{.metadata.name}={.status.podIP}{"\n"}{end}`)
	if err != nil {
		return nil, err
	}
	ips := map[string]string{}
	for _, line := range strings.Fields(out) {
		if pod, ip, _ := strings.Cut(line, "="); ip != "" {
			ips[pod] = ip
		}
	}
	return ips, nil
}

func realInfo(ip, command string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	answers, err := aerospike.NewClient(aerospike.ClientOptions{}).Info(ctx, net.JoinHostPort(ip, "3000"), command)
	return answers[command], err
}
