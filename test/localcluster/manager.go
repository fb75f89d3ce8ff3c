package localcluster

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"
)

// The manager's identity on the local cluster, as hack/localcluster/rbac installs config/rbac.
const (
	ManagerNamespace      = "acko-system"
	ManagerServiceAccount = "acko-controller-manager"
	// PrometheusServiceAccount is bound to the acko-metrics-reader ClusterRole.
	PrometheusServiceAccount = "acko-prometheus"
)

// ManagerKubeconfigPath holds the manager's ServiceAccount token: the manager is no cluster admin.
func (o Options) ManagerKubeconfigPath() string { return o.path(managerName, "kubeconfig") }

// MetricsURL is the manager's authenticated HTTPS metrics endpoint.
func (o Options) MetricsURL() string {
	return fmt.Sprintf("https://%s/metrics", o.addr(o.Ports.Metrics))
}

// HealthURL is the manager's readiness endpoint.
func (o Options) HealthURL() string { return fmt.Sprintf("http://%s/readyz", o.addr(o.Ports.Health)) }

// managerCertDir holds tls.crt and tls.key, signed by the cluster CA for 127.0.0.1: the metrics
// endpoint serves them, so Prometheus verifies the manager against ca.crt.
func (o Options) managerCertDir() string { return o.path("pki", managerName) }

func (o Options) managerSpec() (procSpec, error) {
	webhook, err := o.webhookFlags()
	if err != nil {
		return procSpec{}, err
	}
	args := append([]string{
		"--metrics-bind-address=" + o.addr(o.Ports.Metrics),
		"--health-probe-bind-address=" + o.addr(o.Ports.Health),
		"--metrics-cert-path=" + o.managerCertDir(),
	}, webhook...)
	return procSpec{name: managerName, path: o.bin(managerName), args: args,
		env: []string{"KUBECONFIG=" + o.ManagerKubeconfigPath()}}, nil
}

// webhookFlags put the manager's validating webhook on this cluster's port. A Service reference
// cannot reach a process on this machine (Services have no endpoints here), so the manager runs
// in its self-signed mode: it issues its serving certificate for 127.0.0.1 and registers the
// ValidatingWebhookConfiguration with url https://127.0.0.1:PORT/..., with its own RBAC. A
// manager built without the webhook gets no webhook flags.
func (o Options) webhookFlags() ([]string, error) {
	help, _ := exec.Command(o.bin(managerName), "-h").CombinedOutput() // usage, exit status 0 or 2
	if !bytes.Contains(help, []byte("-webhook-self-signed-url-host")) {
		return nil, nil
	}
	dir := o.path(managerName, "webhook-certs") // the manager writes tls.crt and tls.key here
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	return []string{
		"--webhook-port=" + strconv.Itoa(o.Ports.Webhook),
		"--webhook-cert-dir=" + dir,
		"--webhook-self-signed-url-host=127.0.0.1",
	}, nil
}

// installRBAC applies hack/localcluster/rbac: config/rbac in acko-system with the acko- prefix,
// as config/default would install it, plus the ServiceAccount Prometheus scrapes with.
func (o Options) installRBAC(ctx context.Context) error {
	_, err := o.Kubectl(ctx, "apply", "-k", filepath.Join(o.Root, "hack", "localcluster", "rbac"))
	return err
}

// startManager runs bin/manager with a token of its ServiceAccount and waits until it is ready.
func (c *Cluster) startManager(ctx context.Context) error {
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
	spec, err := c.opts.managerSpec()
	if err != nil {
		return err
	}
	p, err := c.startStep(spec)
	if err != nil {
		return err
	}
	return c.await(ctx, managerName, httpOK(&http.Client{Timeout: 2 * time.Second}, c.opts.HealthURL(), p))
}
