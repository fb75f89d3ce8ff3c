package localcluster

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	ackowebhook "github.com/acko-io/acko/internal/webhook"
	"github.com/acko-io/acko/internal/webhook/certs"
	webhookv1alpha1 "github.com/acko-io/acko/internal/webhook/v1alpha1"
)

// The manager's identity on the local cluster, as hack/localcluster/rbac installs config/rbac.
const (
	ManagerNamespace      = "acko-system"
	ManagerServiceAccount = "acko-controller-manager"
	// PrometheusServiceAccount is bound to the acko-metrics-reader ClusterRole.
	PrometheusServiceAccount = "acko-prometheus"
	// WebhookCertSecret is where the managers share their webhook CA and certificate.
	WebhookCertSecret = "acko-webhook-server-cert"
	// LeaseName is the managers' leader-election lease in ManagerNamespace.
	LeaseName = "acko-leader.acko.io"
)

// Managers of the cluster: the primary, which Up starts and whose webhook the configuration calls,
// and a standby that tests start beside it (leader election decides which one reconciles).
const (
	PrimaryManager = 0
	StandbyManager = 1
)

// ManagerName is the process name (log and pid file) of manager i.
func ManagerName(i int) string {
	if i == PrimaryManager {
		return managerName
	}
	return managerName + "-" + strconv.Itoa(i+1)
}

// ManagerKubeconfigPath holds the manager's ServiceAccount token: the manager is no cluster admin.
func (o Options) ManagerKubeconfigPath() string { return o.path(managerName, "kubeconfig") }

// managerPort is port shifted for manager i, so that several managers run side by side.
func managerPort(port, i int) int { return port + i }

// MetricsURL is the primary manager's authenticated HTTPS metrics endpoint.
func (o Options) MetricsURL() string { return o.metricsURL(PrimaryManager) }

func (o Options) metricsURL(i int) string {
	return fmt.Sprintf("https://%s/metrics", o.addr(managerPort(o.Ports.Metrics, i)))
}

// HealthURL is the primary manager's readiness endpoint.
func (o Options) HealthURL() string { return o.healthURL(PrimaryManager) }

func (o Options) healthURL(i int) string {
	return fmt.Sprintf("http://%s/readyz", o.addr(managerPort(o.Ports.Health, i)))
}

// managerCertDir holds tls.crt and tls.key, signed by the cluster CA for 127.0.0.1: the metrics
// endpoint serves them, so Prometheus verifies the manager against ca.crt.
func (o Options) managerCertDir() string { return o.path("pki", managerName) }

func (o Options) managerSpec(i int) (procSpec, error) {
	webhook, err := o.webhookFlags(i)
	if err != nil {
		return procSpec{}, err
	}
	args := append([]string{
		"--metrics-bind-address=" + o.addr(managerPort(o.Ports.Metrics, i)),
		"--health-probe-bind-address=" + o.addr(managerPort(o.Ports.Health, i)),
		"--metrics-cert-path=" + o.managerCertDir(),
		"--operator-namespace=" + ManagerNamespace,
	}, webhook...)
	args = append(args, o.ManagerArgs...)
	if o.LeaderElection > 0 {
		lease := o.LeaderElection
		args = append(args, "--leader-elect", "--leader-elect-lease-duration="+lease.String(),
			"--leader-elect-renew-deadline="+(lease*3/4).String(), "--leader-elect-retry-period="+(lease/4).String())
	}
	return procSpec{name: ManagerName(i), path: o.bin(managerName), args: args,
		env: []string{"KUBECONFIG=" + o.ManagerKubeconfigPath()}}, nil
}

// ManagerHelp is the usage bin/manager -h prints (its flags and their defaults).
func (o Options) ManagerHelp() string {
	help, _ := exec.Command(o.bin(managerName), "-h").CombinedOutput() // usage, exit status 0 or 2
	return string(help)
}

// webhookFlags put manager i's validating webhook on its port. A Service reference cannot reach
// a process on this machine (Services have no endpoints here), so the manager runs in its
// self-signed URL mode: it serves a certificate for 127.0.0.1, shared by the managers through a
// Secret, and keeps the caBundle of the configuration installWebhookConfiguration created, which
// calls the primary. A manager built without the webhook gets no webhook flags.
func (o Options) webhookFlags(i int) ([]string, error) {
	if !strings.Contains(o.ManagerHelp(), "-webhook-self-signed-url-host") {
		return nil, nil
	}
	dir := o.path(ManagerName(i), "webhook-certs") // the manager writes tls.crt and tls.key here
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	return []string{
		"--webhook-port=" + strconv.Itoa(managerPort(o.Ports.Webhook, i)),
		"--webhook-cert-dir=" + dir,
		"--webhook-self-signed-url-host=127.0.0.1",
		"--webhook-cert-secret=" + WebhookCertSecret,
	}, nil
}

// installRBAC applies hack/localcluster/rbac: config/rbac and config/webhook-certs in acko-system
// with the acko- prefix, as an installation would, plus the ServiceAccount Prometheus scrapes with.
func (o Options) installRBAC(ctx context.Context) error {
	_, err := o.Kubectl(ctx, "apply", "-k", filepath.Join(o.Root, "hack", "localcluster", "rbac"))
	return err
}

// installWebhookConfiguration creates (as admin, like an installer) the configuration that calls
// the primary manager's webhook by URL; the manager may only update it, for its caBundle.
func (o Options) installWebhookConfiguration(ctx context.Context) error {
	kube, err := o.kubeClient()
	if err != nil {
		return err
	}
	hooks := webhookv1alpha1.ValidatingWebhooks()
	for i := range hooks {
		url := certs.URLBase("127.0.0.1", o.Ports.Webhook) + *hooks[i].ClientConfig.Service.Path
		hooks[i].ClientConfig = admissionregistrationv1.WebhookClientConfig{URL: &url}
	}
	api := kube.AdmissionregistrationV1().ValidatingWebhookConfigurations()
	existing, err := api.Get(ctx, ackowebhook.ConfigurationName, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		_, err = api.Create(ctx, &admissionregistrationv1.ValidatingWebhookConfiguration{
			ObjectMeta: metav1.ObjectMeta{Name: ackowebhook.ConfigurationName},
			Webhooks:   hooks,
		}, metav1.CreateOptions{})
		return err
	}
	if err != nil {
		return err
	}
	if len(existing.Webhooks) > 0 {
		for i := range hooks { // the manager's CA bundle, kept
			hooks[i].ClientConfig.CABundle = existing.Webhooks[0].ClientConfig.CABundle
		}
	}
	existing.Webhooks = hooks
	_, err = api.Update(ctx, existing, metav1.UpdateOptions{})
	return err
}

// StartManager runs manager i (bin/manager) with a token of its ServiceAccount and waits until it
// is ready. Up starts the primary; tests start the standby, or the primary again after killing it.
func (c *Cluster) StartManager(ctx context.Context, i int) error {
	token, err := c.opts.createToken(ctx, ManagerServiceAccount)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(c.opts.path(managerName), 0o700); err != nil {
		return err
	}
	if err := c.opts.writeKubeconfig(c.opts.ManagerKubeconfigPath(), ManagerServiceAccount, "", token); err != nil {
		return err
	}
	if err := c.opts.installWebhookConfiguration(ctx); err != nil {
		return err
	}
	spec, err := c.opts.managerSpec(i)
	if err != nil {
		return err
	}
	p, err := c.startStep(spec)
	if err != nil {
		return err
	}
	return c.await(ctx, spec.name, httpOK(&http.Client{Timeout: 2 * time.Second}, c.opts.healthURL(i), p))
}

// StartProcessAs runs bin/manager as process name with a token of a ServiceAccount and the given
// flags, and waits until healthURL answers: the Helm e2e runs the chart's identity this way.
func (c *Cluster) StartProcessAs(ctx context.Context, name, namespace, serviceAccount, healthURL string,
	args ...string) error {
	out, err := c.opts.Kubectl(ctx, "create", "token", serviceAccount, "-n", namespace, "--duration=2h")
	if err != nil {
		return err
	}
	kubeconfig := c.opts.path(name, "kubeconfig")
	if err := os.MkdirAll(filepath.Dir(kubeconfig), 0o700); err != nil {
		return err
	}
	if err := c.opts.writeKubeconfig(kubeconfig, serviceAccount, "", strings.TrimSpace(out)); err != nil {
		return err
	}
	p, err := c.startStep(procSpec{name: name, path: c.opts.bin(managerName), args: args,
		env: []string{"KUBECONFIG=" + kubeconfig}})
	if err != nil {
		return err
	}
	return c.await(ctx, name, httpOK(&http.Client{Timeout: 2 * time.Second}, healthURL, p))
}

// StopProcess stops a process the cluster started, by its recorded PID: SIGTERM, then SIGKILL.
func (o Options) StopProcess(name string) error { return o.stopProcess(name) }

// KillProcess kills a process the cluster started with SIGKILL, as a crash or a lost node would,
// and waits until it is gone.
func (o Options) KillProcess(name string) error {
	rec, ok := o.readPidFile(name)
	if !ok {
		return fmt.Errorf("%s: no pid file", name)
	}
	if err := rec.Signal(syscall.SIGKILL); err != nil {
		return err
	}
	if !rec.WaitGone(10 * time.Second) {
		return fmt.Errorf("%s (pid %d) survived SIGKILL", name, rec.PID)
	}
	return os.Remove(o.pidFile(name))
}

// LeaseHolder is the holder identity of the managers' leader-election lease.
func (o Options) LeaseHolder(ctx context.Context) (string, error) {
	out, err := o.Kubectl(ctx, "get", "lease", LeaseName, "-n", ManagerNamespace,
		"-o", "jsonpath={.spec.holderIdentity}")
	return strings.TrimSpace(out), err
}

// IsLeader says whether manager i leads, from its leader_election_master_status metric.
func (o Options) IsLeader(ctx context.Context, i int) (bool, error) {
	body, err := o.ManagerMetrics(ctx, i)
	if err != nil {
		return false, err
	}
	return bytes.Contains(body, []byte(`leader_election_master_status{name="`+LeaseName+`"} 1`)), nil
}

// ManagerMetrics scrapes manager i's metrics endpoint as Prometheus does, with a token of its
// ServiceAccount (the manager checks it with a TokenReview and a SubjectAccessReview).
func (o Options) ManagerMetrics(ctx context.Context, i int) ([]byte, error) {
	token, err := o.createToken(ctx, PrometheusServiceAccount)
	if err != nil {
		return nil, err
	}
	return o.ManagerMetricsWith(ctx, i, token)
}

// ManagerMetricsWith scrapes manager i's metrics endpoint with a token from ManagerMetricsToken.
func (o Options) ManagerMetricsWith(ctx context.Context, i int, token string) ([]byte, error) {
	client, err := httpClient(o.CACertPath(), "")
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, o.metricsURL(i), nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", o.metricsURL(i), resp.Status)
	}
	return io.ReadAll(resp.Body)
}

// ManagerMetricsToken is a token that may read the managers' metrics.
func (o Options) ManagerMetricsToken(ctx context.Context) (string, error) {
	return o.createToken(ctx, PrometheusServiceAccount)
}

// PIDs are the process IDs of the processes the cluster started that run, by name.
func (o Options) PIDs() map[string]int {
	out := map[string]int{}
	for name, rec := range o.runningRecords() {
		out[name] = rec.PID
	}
	return out
}
