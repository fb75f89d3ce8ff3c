package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"sigs.k8s.io/yaml"

	"github.com/acko-io/acko/test/localcluster"
)

// helm runs the real helm (bin/assets) as the cluster admin.
func helm(args ...string) string {
	GinkgoHelper()
	ctx, cancel := context.WithTimeout(context.Background(), kubectlTimeout)
	defer cancel()
	_, _ = fmt.Fprintf(GinkgoWriter, "$ helm %s\n", strings.Join(args, " "))
	cmd := exec.CommandContext(ctx, opts.HelmPath(), append([]string{"--kubeconfig", opts.KubeconfigPath()}, args...)...)
	out, err := cmd.CombinedOutput()
	Expect(err).NotTo(HaveOccurred(), string(out))
	return string(out)
}

// chartManagerArgs are the manager's flags from the Deployment the release rendered, with the
// addresses of a process on this machine instead of a pod's: the manager runs as the chart says.
func chartManagerArgs(release, namespace string, local map[string]string) []string {
	GinkgoHelper()
	manifest := helm("get", "manifest", release, "-n", namespace)
	var args []string
	for _, doc := range strings.Split(manifest, "\n---") {
		if !strings.Contains(doc, "\nkind: Deployment\n") {
			continue
		}
		var dep struct {
			Spec struct {
				Template struct {
					Spec struct {
						Containers []struct {
							Args []string `json:"args"`
						} `json:"containers"`
					} `json:"spec"`
				} `json:"template"`
			} `json:"spec"`
		}
		Expect(yaml.Unmarshal([]byte(doc), &dep)).To(Succeed())
		args = dep.Spec.Template.Spec.Containers[0].Args
	}
	Expect(args).NotTo(BeEmpty())
	out := []string{}
	for _, a := range args {
		flagName, _, _ := strings.Cut(a, "=")
		if _, ok := local[flagName]; !ok {
			out = append(out, a)
		}
	}
	for flagName, value := range local {
		if value != "" {
			out = append(out, flagName+"="+value)
		}
	}
	return out
}

// leftovers lists what of a release is left: its objects in its namespaces, and its
// cluster-scoped objects (named with its prefix).
func leftovers(prefix string, namespaces ...string) []string {
	GinkgoHelper()
	var left []string
	for _, ns := range namespaces {
		out := kubectl("get", "deployments,services,serviceaccounts,secrets,configmaps,roles,rolebindings,leases,"+
			"statefulsets,poddisruptionbudgets,pods,aerospikeclusters", "-n", ns, "-o", "name")
		for _, o := range strings.Fields(out) {
			if o != "serviceaccount/default" && o != "configmap/kube-root-ca.crt" {
				left = append(left, ns+"/"+o)
			}
		}
	}
	out := kubectl("get", "clusterroles,clusterrolebindings,validatingwebhookconfigurations", "-o", "name")
	for _, o := range strings.Fields(out) {
		if strings.Contains(o, "/"+prefix+"-") {
			left = append(left, o)
		}
	}
	return left
}

// The chart installed for real on the local cluster's API server, namespace-scoped, with the
// webhook in self-signed URL mode (a Service cannot reach a process here). kwok would only fake the
// Deployment's pods, so the chart runs 0 replicas and the manager runs on this machine with the
// chart's ServiceAccount token and the chart's flags. The suite's own manager watches every
// namespace, so it stops meanwhile, and its webhook configuration goes with it.
var _ = Describe("Helm install, upgrade and uninstall of charts/acko", Ordered, func() {
	const (
		release, system = "acko-e2e", "e2e-helm-system"
		watched, other  = "e2e-helm-a", "e2e-helm-b"
		name            = "helm"
	)
	var values string
	var metricsPort, healthPort, webhookPort int

	BeforeAll(func() {
		// Ports of a third manager, beside the primary's and the standby's.
		metricsPort, healthPort, webhookPort = opts.Ports.Metrics+10, opts.Ports.Health+10, opts.Ports.Webhook+10
		Expect(opts.StopProcess(localcluster.ManagerName(localcluster.PrimaryManager))).To(Succeed())
		kubectl("delete", "validatingwebhookconfiguration", "acko-validating-webhook-configuration", "--ignore-not-found")
		DeferCleanup(func(ctx SpecContext) {
			_ = opts.StopProcess(localcluster.HelmManagerName)
			_, _ = kubectlErr("delete", "namespace", system, watched, other, "--wait=false", "--ignore-not-found")
			Expect(cluster.StartManager(ctx, localcluster.PrimaryManager)).To(Succeed())
		})
		kubectl("create", "namespace", watched)
		kubectl("create", "namespace", other)
		values = filepath.Join(GinkgoT().TempDir(), "values.yaml")
		Expect(os.WriteFile(values, []byte(fmt.Sprintf(`fullnameOverride: %s
replicaCount: 0
watchNamespaces: [%s]
leaderElection:
  leaseDuration: 4s
  renewDeadline: 3s
  retryPeriod: 1s
webhook:
  url: https://127.0.0.1:%d
  port: %d
`, release, watched, webhookPort, webhookPort)), 0o600)).To(Succeed())
	})

	startManager := func(ctx context.Context) {
		GinkgoHelper()
		args := chartManagerArgs(release, system, map[string]string{
			"--metrics-bind-address":         "127.0.0.1:" + strconv.Itoa(metricsPort),
			"--health-probe-bind-address":    "127.0.0.1:" + strconv.Itoa(healthPort),
			"--webhook-cert-dir":             filepath.Join(opts.Dir, localcluster.HelmManagerName, "webhook-certs"),
			"--webhook-self-signed-service":  "",
			"--webhook-self-signed-url-host": "127.0.0.1",
			"--operator-namespace":           system,
		})
		_, _ = fmt.Fprintf(GinkgoWriter, "manager flags: %s\n", strings.Join(args, " "))
		Expect(cluster.StartProcessAs(ctx, localcluster.HelmManagerName, system, release+"-controller-manager",
			fmt.Sprintf("http://127.0.0.1:%d/readyz", healthPort), args...)).To(Succeed())
	}

	It("installs, and the manager runs with the chart's ServiceAccount and flags", func(ctx SpecContext) {
		helm("install", release, filepath.Join(opts.Root, "charts", "acko"), "-n", system, "--create-namespace",
			"-f", values)
		Expect(kubectl("get", "crd", "aerospikeclusters.acko.io", "-o", "name")).NotTo(BeEmpty())
		Expect(kubectlErr("get", "clusterrole", release+"-manager-role")).Error().To(HaveOccurred(),
			"namespace-scoped: no manager ClusterRole")
		kubectl("get", "role", release+"-manager-role", "-n", watched)
		startManager(ctx)
		Expect(mustField(system, "secret/"+release+"-webhook-server-cert", "{.data.tls\\.crt}")).NotTo(BeEmpty(),
			"the manager filled the chart's Secret")
	})

	It("creates, pauses and warm-restarts a cluster in its namespace, and ignores the others", func() {
		applyYAML(clusterYAML(watched, name, 2, ""))
		waitRunningObserved(watched, name)

		By("keeping the caBundle of the chart's webhook configuration, which rejects a bad operation")
		ca := mustField(system, "secret/"+release+"-webhook-server-cert", `{.data.ca\.crt}`)
		Expect(mustField("", "validatingwebhookconfiguration/"+release+"-validating-webhook-configuration",
			"{.webhooks[0].clientConfig.caBundle}")).To(Equal(ca))
		_, err := mergePatch(watched, name, `{"spec":{"operations":[{"kind":"WarmRestart","id":"x","podList":["helm-7"]}]}}`)
		Expect(err).To(MatchError(ContainSubstring("not a pod of this cluster")))

		By("pausing and resuming")
		_, err = mergePatch(watched, name, `{"spec":{"paused":true}}`)
		Expect(err).NotTo(HaveOccurred())
		kubectl("wait", "--for=condition=Paused", "asc/"+name, "-n", watched, "--timeout=30s")
		_, err = mergePatch(watched, name, `{"spec":{"paused":false}}`)
		Expect(err).NotTo(HaveOccurred())
		waitRunningObserved(watched, name)

		By("warm-restarting both pods")
		pods := []string{"helm-0", "helm-1"}
		for _, p := range pods {
			awaitExec(watched, p)
		}
		before := restarts(watched, pods)
		_, err = mergePatch(watched, name, `{"spec":{"operations":[{"kind":"WarmRestart","id":"helm-e2e"}]}}`)
		Expect(err).NotTo(HaveOccurred())
		Eventually(func() (string, error) { return field(watched, "asc/"+name, "{.status.operationStatus.phase}") }).
			WithTimeout(3 * time.Minute).Should(Equal("Completed"))
		after := restarts(watched, pods)
		for _, p := range pods {
			Expect(after[p]).To(Equal(before[p] + 1))
		}

		By("leaving a cluster of an unwatched namespace alone")
		applyYAML(clusterYAML(other, "ignored", 1, ""))
		Consistently(func() (string, error) { return field(other, "asc/ignored", "{.status.phase}") }).
			WithTimeout(5 * time.Second).WithPolling(time.Second).Should(BeEmpty())
		kubectl("delete", "asc", "ignored", "-n", other)

		log, err := os.ReadFile(opts.LogPath(localcluster.HelmManagerName))
		Expect(err).NotTo(HaveOccurred())
		Expect(string(log)).NotTo(ContainSubstring("forbidden"), "the chart's RBAC lacks a right the manager used")
	})

	It("upgrades in place, keeping the webhook certificate", func(ctx SpecContext) {
		cert := mustField(system, "secret/"+release+"-webhook-server-cert", "{.data.tls\\.crt}")
		helm("upgrade", release, filepath.Join(opts.Root, "charts", "acko"), "-n", system, "-f", values,
			"--set", "logging.level=debug")
		Expect(mustField(system, "secret/"+release+"-webhook-server-cert", "{.data.tls\\.crt}")).To(Equal(cert))
		Expect(opts.StopProcess(localcluster.HelmManagerName)).To(Succeed())
		startManager(ctx)
		_, err := mergePatch(watched, name, `{"spec":{"operations":[{"kind":"PodRestart","id":"after-upgrade","podList":["helm-1"]}]}}`)
		Expect(err).NotTo(HaveOccurred())
		Eventually(func() (string, error) { return field(watched, "asc/"+name, "{.status.operationStatus.phase}") }).
			WithTimeout(3 * time.Minute).Should(Equal("Completed"))
	})

	It("uninstalls after the clusters are deleted, leaving nothing but the CRD", func() {
		kubectl("delete", "asc", "--all", "-n", watched, "--timeout=2m")
		Eventually(func() string {
			return kubectl("get", "statefulsets,pods,services,configmaps,poddisruptionbudgets", "-n", watched,
				"-l", "app.kubernetes.io/managed-by=acko", "-o", "name")
		}).WithTimeout(2*time.Minute).Should(BeEmpty(), "the clusters' children go with them")
		Expect(opts.StopProcess(localcluster.HelmManagerName)).To(Succeed())
		helm("uninstall", release, "-n", system, "--wait", "--timeout", "2m")
		Eventually(func() []string { return leftovers(release, system, watched) }).WithTimeout(time.Minute).Should(BeEmpty())
		Expect(kubectl("get", "crd", "aerospikeclusters.acko.io", "-o", "name")).NotTo(BeEmpty(), "Helm keeps crds/")
	})
})

// config/default is what `kubectl apply -k` installs; the API server accepts every object of it
// (cert-manager's kinds aside: cert-manager is not installed here).
var _ = Describe("Install with kustomize (config/default)", func() {
	It("renders, and the API server accepts every object in a server-side dry run", func() {
		// Under another prefix and namespace, so that nothing collides with the suite's own objects.
		const ns = "e2e-kustomize"
		kubectl("create", "namespace", ns)
		DeferCleanup(kubectl, "delete", "namespace", ns, "--wait=false")
		overlay := GinkgoT().TempDir()
		base, err := filepath.Rel(overlay, filepath.Join(opts.Root, "config", "default")) // kustomize wants it relative
		Expect(err).NotTo(HaveOccurred())
		Expect(os.WriteFile(filepath.Join(overlay, "kustomization.yaml"), []byte(fmt.Sprintf(
			"namespace: %s\nnamePrefix: dry-\nresources:\n- %s\n", ns, base)), 0o600)).To(Succeed())
		rendered := kubectl("kustomize", overlay)
		var kept []string
		for _, doc := range strings.Split(rendered, "\n---\n") {
			if strings.Contains(doc, "apiVersion: cert-manager.io/") {
				continue
			}
			kept = append(kept, doc)
		}
		Expect(len(kept)).To(BeNumerically(">", 10))
		path := filepath.Join(GinkgoT().TempDir(), "default.yaml")
		Expect(os.WriteFile(path, []byte(strings.Join(kept, "\n---\n")), 0o600)).To(Succeed())
		out := kubectl("apply", "--dry-run=server", "-f", path)
		Expect(out).To(ContainSubstring("deployment.apps/dry-acko-controller-manager created (server dry run)"))
		Expect(out).To(ContainSubstring("validatingwebhookconfiguration.admissionregistration.k8s.io/" +
			"dry-acko-validating-webhook-configuration created (server dry run)"))
	})
})
