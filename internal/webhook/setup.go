// Package webhook wires ACKO's admission webhook into the manager: its flags, the webhook server's
// options and, in self-signed mode, the certificate and configuration the manager keeps itself.
package webhook

import (
	"context"
	"crypto/tls"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crwebhook "sigs.k8s.io/controller-runtime/pkg/webhook"

	"github.com/acko-io/acko/internal/webhook/certs"
	webhookv1alpha1 "github.com/acko-io/acko/internal/webhook/v1alpha1"
)

// ConfigurationName is the ValidatingWebhookConfiguration the manager registers in self-signed mode.
const ConfigurationName = "acko-validating-webhook-configuration"

// setupTimeout bounds the self-signed registration before the manager starts.
const setupTimeout = 30 * time.Second

// Options of the webhook, from the manager's flags.
type Options struct {
	// Enabled serves the webhook.
	Enabled bool
	// Port of the webhook server.
	Port int
	// CertDir holds tls.crt and tls.key; empty is controller-runtime's default.
	CertDir string
	// SelfSignedHost turns on self-signed mode for this host; empty leaves the certificate and the
	// configuration to the deployment (cert-manager and config/webhook).
	SelfSignedHost string
	// ClusterDomain is the Kubernetes cluster's DNS domain (the manager's --cluster-domain), for the
	// validator's limit on the pods' DNS names.
	ClusterDomain string
}

// BindFlags registers the webhook's flags.
func (o *Options) BindFlags(fs *flag.FlagSet) {
	fs.BoolVar(&o.Enabled, "enable-webhook", true, "Serve the validating admission webhook for AerospikeCluster.")
	fs.IntVar(&o.Port, "webhook-port", crwebhook.DefaultPort, "Port of the webhook server.")
	fs.StringVar(&o.CertDir, "webhook-cert-dir", "",
		"Directory of the webhook server's tls.crt and tls.key (default <tmp>/k8s-webhook-server/serving-certs). "+
			"In self-signed mode the manager writes them there.")
	fs.StringVar(&o.SelfSignedHost, "webhook-self-signed-url-host", "",
		"Self-signed mode, for a manager outside the cluster (make run, the local cluster): generate the serving "+
			"certificate for this host (e.g. 127.0.0.1), register ValidatingWebhookConfiguration "+ConfigurationName+
			" with url https://HOST:PORT/..., and rotate the certificate before it expires. "+
			"Empty: cert-manager and config/webhook provide them.")
}

// ServerOptions are the options of the manager's webhook server.
func (o Options) ServerOptions(tlsOpts []func(*tls.Config)) crwebhook.Options {
	return crwebhook.Options{Port: o.Port, CertDir: o.certDir(), TLSOpts: tlsOpts}
}

// certDir resolves controller-runtime's default here, because self-signed mode writes to it.
func (o Options) certDir() string {
	if o.CertDir != "" {
		return o.CertDir
	}
	return filepath.Join(os.TempDir(), "k8s-webhook-server", "serving-certs")
}

// Setup registers the webhook on mgr. In self-signed mode it also writes the certificate and
// registers the configuration before it returns, since the webhook server reads the files as it starts.
func Setup(mgr ctrl.Manager, o Options) error {
	if !o.Enabled {
		return nil
	}
	if err := webhookv1alpha1.SetupAerospikeClusterWebhookWithManager(mgr, o.ClusterDomain); err != nil {
		return err
	}
	if err := mgr.AddReadyzCheck("webhook", mgr.GetWebhookServer().StartedChecker()); err != nil {
		return err
	}
	if o.SelfSignedHost == "" {
		return checkCertificate(o.certDir())
	}
	return setupSelfSigned(mgr, o)
}

// checkCertificate fails at setup, with what to do, rather than when the webhook server starts.
func checkCertificate(dir string) error {
	for _, name := range []string{certs.CertFile, certs.KeyFile} {
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			return fmt.Errorf("webhook: no %s in %s: mount the serving certificate there (cert-manager, "+
				"config/default), or run outside a cluster with --webhook-self-signed-url-host=127.0.0.1, "+
				"or pass --enable-webhook=false", name, dir)
		}
	}
	return nil
}

func setupSelfSigned(mgr ctrl.Manager, o Options) error {
	// The manager's client reads from its cache, which only starts with the manager.
	c, err := client.New(mgr.GetConfig(), client.Options{Scheme: mgr.GetScheme()})
	if err != nil {
		return err
	}
	s, err := certs.New(c, certs.Options{
		Host:              o.SelfSignedHost,
		Port:              o.Port,
		CertDir:           o.certDir(),
		ConfigurationName: ConfigurationName,
		Webhooks:          []admissionregistrationv1.ValidatingWebhook{webhookv1alpha1.ValidatingWebhook()},
	})
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), setupTimeout)
	defer cancel()
	if err := s.Ensure(ctx); err != nil {
		return fmt.Errorf("self-signed webhook: %w", err)
	}
	return mgr.Add(s)
}
