package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/acko-io/acko/test/aerosim"
	"github.com/acko-io/acko/test/localcluster/simclient"
)

// pluginRun is what one `kubectl acko` printed, and its exit code.
type pluginRun struct {
	stdout, stderr string
	code           int
}

// ackoTimeout bounds one plugin run; its own --timeout flags are shorter.
const ackoTimeout = 5 * time.Minute

// kubectlAcko runs `kubectl acko ARGS` through the real kubectl, which finds bin/kubectl-acko (and,
// for completion, bin/kubectl_complete-acko) on the PATH; KUBECONFIG points at the cluster.
func kubectlAcko(args ...string) pluginRun {
	GinkgoHelper()
	ctx, cancel := context.WithTimeout(context.Background(), ackoTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, opts.KubectlPath(), append([]string{"acko"}, args...)...)
	return runPlugin(cmd)
}

// kubectlComplete asks kubectl for the completions of `kubectl acko ARGS`.
func kubectlComplete(args ...string) string {
	GinkgoHelper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, opts.KubectlPath(), append([]string{"__complete", "acko"}, args...)...)
	r := runPlugin(cmd)
	Expect(r.code).To(BeZero(), r.stderr)
	return r.stdout
}

func runPlugin(cmd *exec.Cmd) pluginRun {
	GinkgoHelper()
	cmd.Env = append(os.Environ(), "KUBECONFIG="+opts.KubeconfigPath(),
		"PATH="+filepath.Join(opts.Root, "bin")+string(os.PathListSeparator)+os.Getenv("PATH"))
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	r := pluginRun{stdout: stdout.String(), stderr: stderr.String()}
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		r.code = exit.ExitCode()
	case err != nil:
		Fail(err.Error())
	}
	_, _ = fmt.Fprintf(GinkgoWriter, "$ %s (exit %d)\n%s%s", strings.Join(cmd.Args[1:], " "), r.code, r.stdout, r.stderr)
	return r
}

// pluginStatus is the part of `kubectl acko status -o json` the specs read.
type pluginStatus struct {
	Phase string `json:"phase"`
	Pods  []struct {
		Name              string `json:"name"`
		PodIP             string `json:"podIP"`
		Ready             bool   `json:"ready"`
		LastRestartReason string `json:"lastRestartReason"`
		Created           string `json:"created"`
	} `json:"pods"`
	Operation *struct {
		ID        string `json:"id"`
		Kind      string `json:"kind"`
		Phase     string `json:"phase"`
		Total     int    `json:"total"`
		Completed int    `json:"completed"`
	} `json:"operation"`
}

func statusJSON(namespace, name string) (pluginStatus, error) {
	var s pluginStatus
	r := kubectlAcko("status", name, "-n", namespace, "-o", "json")
	if r.code != 0 {
		return s, errors.New(r.stderr)
	}
	return s, json.Unmarshal([]byte(r.stdout), &s)
}

// podFact is what tells a pod instance and its last restart apart.
type podFact struct{ IP, Created, LastRestartReason string }

func podFacts(s pluginStatus) map[string]podFact {
	facts := map[string]podFact{}
	for _, p := range s.Pods {
		facts[p.Name] = podFact{p.PodIP, p.Created, p.LastRestartReason}
	}
	return facts
}

// operationPhase polls the plugin for the phase of the current or last operation.
func operationPhase(namespace, name string) func() (string, error) {
	return func() (string, error) {
		s, err := statusJSON(namespace, name)
		if err != nil || s.Operation == nil {
			return "", err
		}
		return s.Operation.ID + " " + s.Operation.Phase, nil
	}
}

var _ = Describe("kubectl acko drives a cluster through kubectl", Ordered, func() {
	const ns, name = "e2e-plugin", "plug"

	BeforeAll(func() {
		applyYAML(clusterYAML(ns, name, 3, ""))
		DeferCleanup(kubectl, "delete", "namespace", ns, "--wait=false")
		Eventually(func() (string, error) {
			s, err := statusJSON(ns, name)
			return s.Phase, err
		}).WithTimeout(5 * time.Minute).WithPolling(time.Second).Should(Equal("Running"))
	})

	It("lists the cluster, in its namespace and in all", func() {
		r := kubectlAcko("list", "-n", ns)
		Expect(r.code).To(BeZero(), r.stderr)
		Expect(r.stdout).To(MatchRegexp(`(?m)^plug\s+3\s+3\s+Running\s+false\s+-\s+-\s+-\s+\S+$`))
		Expect(kubectlAcko("list", "-A").stdout).To(MatchRegexp(`(?m)^e2e-plugin\s+plug\s+3\s+3\s+Running`))
	})

	It("shows the cluster's status, for people and for machines", func() {
		r := kubectlAcko("status", name, "-n", ns)
		Expect(r.code).To(BeZero(), r.stderr)
		Expect(r.stdout).To(ContainSubstring("Phase:        Running\n"))
		Expect(r.stdout).To(MatchRegexp(`(?m)^  Ready\s+True\s+ClusterReady\s`))
		// The pods' addresses are in this test bed's pod range (127.N.0.0/16).
		podNet := regexp.QuoteMeta(strings.TrimSuffix(opts.PodCIDR, "0.0/16"))
		for _, pod := range []string{"plug-0", "plug-1", "plug-2"} {
			Expect(r.stdout).To(MatchRegexp(`(?m)^  %s\s+0\s+%s\d+\.\d+\s+Running\s+true\s`, pod, podNet))
		}
		s, err := statusJSON(ns, name)
		Expect(err).NotTo(HaveOccurred())
		Expect(s.Pods).To(HaveLen(3))
		Expect(kubectlAcko("status", name, "-n", ns, "-o", "yaml").stdout).To(ContainSubstring("phase: Running\n"))

		r = kubectlAcko("status", "missing", "-n", ns)
		Expect(r.code).To(Equal(1))
		Expect(r.stderr).To(ContainSubstring(`AerospikeCluster "missing" not found in namespace "e2e-plugin"`))
	})

	It("completes cluster and pod names through kubectl_complete-acko", func() {
		Expect(kubectlComplete("status", "-n", ns, "")).To(HavePrefix("plug\n"))
		Expect(kubectlComplete("restart", name, "-n", ns, "--pods", "plug-1,")).
			To(HavePrefix("plug-1,plug-0\nplug-1,plug-2\n"))
	})

	It("pauses and resumes, and says how long the operator took to acknowledge", func() {
		r := kubectlAcko("pause", name, "-n", ns)
		Expect(r.code).To(BeZero(), r.stderr)
		AddReportEntry("pause acknowledged in", acknowledgement(r.stdout, "Paused"))
		Expect(kubectlAcko("status", name, "-n", ns).stdout).To(MatchRegexp(
			`Phase:        Paused\n(.|\n)*  Paused\s+True\s+UserRequested\s`))
		Expect(kubectlAcko("list", "-n", ns).stdout).To(MatchRegexp(`(?m)^plug\s+3\s+\d\s+Paused\s+true`))

		r = kubectlAcko("resume", name, "-n", ns)
		Expect(r.code).To(BeZero(), r.stderr)
		AddReportEntry("resume acknowledged in", acknowledgement(r.stdout, "Resumed"))
		Eventually(func() (string, error) {
			s, err := statusJSON(ns, name)
			return s.Phase, err
		}).WithTimeout(time.Minute).Should(Equal("Running"))
	})

	It("warm-restarts every pod and follows it pod by pod until Completed", func() {
		for _, p := range []string{"plug-0", "plug-1", "plug-2"} {
			awaitExec(ns, p)
		}
		before, err := statusJSON(ns, name)
		Expect(err).NotTo(HaveOccurred())
		r := kubectlAcko("restart", name, "-n", ns, "--warm", "--wait")
		Expect(r.code).To(BeZero(), r.stderr)
		Expect(r.stdout).To(MatchRegexp(`^Operation \S+: WarmRestart of every pod in e2e-plugin/plug\n`))
		Expect(r.stdout).To(ContainSubstring("started: WarmRestart of 3 pods: plug-0, plug-1, plug-2\n"))
		Expect(r.stdout).To(MatchRegexp(`  plug-0 restarted \(1/3\)\n(.|\n)*  plug-1 restarted \(2/3\)\n` +
			`(.|\n)*  plug-2 restarted \(3/3\)\nCompleted in \S+: 3 pods restarted, 0 failed\n$`))
		AddReportEntry("3-pod restart --warm --wait", regexp.MustCompile(`Completed in (\S+):`).FindStringSubmatch(r.stdout)[1])

		after, err := statusJSON(ns, name)
		Expect(err).NotTo(HaveOccurred())
		Expect(after.Operation.Kind).To(Equal("WarmRestart"))
		Expect(after.Operation.Completed).To(Equal(3))
		for pod, fact := range podFacts(before) {
			fact.LastRestartReason = "WarmRestart"
			Expect(podFacts(after)[pod]).To(Equal(fact), "the same pod, restarted warm: %s", pod)
		}
	})

	It("cold-restarts only the pod named, until Completed", func() {
		before, err := statusJSON(ns, name)
		Expect(err).NotTo(HaveOccurred())
		r := kubectlAcko("restart", name, "-n", ns, "--cold", "--pods", "plug-2", "--wait")
		Expect(r.code).To(BeZero(), r.stderr)
		Expect(r.stdout).To(ContainSubstring("started: PodRestart of 1 pods: plug-2\n"))
		Expect(r.stdout).To(MatchRegexp(`  plug-2 restarted \(1/1\)\nCompleted in \S+: 1 pods restarted, 0 failed\n$`))
		after, err := statusJSON(ns, name)
		Expect(err).NotTo(HaveOccurred())
		Expect(podFacts(after)["plug-0"]).To(Equal(podFacts(before)["plug-0"]))
		Expect(podFacts(after)["plug-1"]).To(Equal(podFacts(before)["plug-1"]))
		Expect(podFacts(after)["plug-2"].LastRestartReason).To(Equal("ManualRestart"))
		Expect(podFacts(after)["plug-2"].Created).NotTo(Equal(podFacts(before)["plug-2"].Created), "a new pod")
	})

	It("refuses a second operation while one is InProgress, with the server's message and the running one", func() {
		By("holding an operation InProgress: the node of plug-1 stops answering")
		node := simclient.NodeName(ns, "plug-1")
		_, err := sim().SetFault(context.Background(), node, aerosim.FaultHang)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func() { _, _ = sim().SetFault(context.Background(), node, aerosim.FaultNone) })
		r := kubectlAcko("restart", name, "-n", ns, "--pods", "plug-1", "--id", "held-by-plugin")
		Expect(r.code).To(BeZero(), r.stderr)
		Eventually(operationPhase(ns, name)).WithPolling(time.Second).Should(Equal("held-by-plugin InProgress"))

		r = kubectlAcko("restart", name, "-n", ns)
		Expect(r.code).To(Equal(1))
		Expect(r.stderr).To(ContainSubstring("cannot modify operations while InProgress"))
		Expect(r.stderr).To(ContainSubstring("operation held-by-plugin (WarmRestart) is InProgress: 0/1 pods done"))
		Expect(kubectlAcko("list", "-n", ns).stdout).To(MatchRegexp(`(?m)^plug\s.*held-by-plugin\s+InProgress\s+0/1\s`))

		_, err = sim().SetFault(context.Background(), node, aerosim.FaultNone)
		Expect(err).NotTo(HaveOccurred())
		Eventually(operationPhase(ns, name)).WithTimeout(5 * time.Minute).WithPolling(time.Second).
			Should(Equal("held-by-plugin Completed"))
	})
})

// acknowledgement reads the time in "<verb> ns/name: the operator acknowledged it in 412ms".
func acknowledgement(stdout, verb string) time.Duration {
	GinkgoHelper()
	m := regexp.MustCompile(`^` + verb + ` \S+: the operator acknowledged it in (\S+)\n$`).FindStringSubmatch(stdout)
	Expect(m).NotTo(BeNil(), stdout)
	d, err := time.ParseDuration(m[1])
	Expect(err).NotTo(HaveOccurred())
	_, _ = fmt.Fprintf(GinkgoWriter, "%s acknowledged in %s\n", verb, d)
	return d
}
