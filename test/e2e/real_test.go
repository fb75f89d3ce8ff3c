package e2e

import (
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/acko-io/acko/test/localcluster"
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
})
