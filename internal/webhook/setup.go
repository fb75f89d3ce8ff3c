// Package webhook wires ACKO's admission webhook into the manager: its flags, the webhook server's
// options and, in self-signed mode, the certificate and configuration the manager keeps itself.
package webhook

import (
	"cmp"
	"context"
	"crypto/tls"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crwebhook "sigs.k8s.io/controller-runtime/pkg/webhook"

	ackov1alpha1 "github.com/acko-io/acko/api/v1alpha1"
	"github.com/acko-io/acko/internal/webhook/certs"
	webhookv1alpha1 "github.com/acko-io/acko/internal/webhook/v1alpha1"
)

// ConfigurationName is the ValidatingWebhookConfiguration the chart and config/default install, whose
// caBundle the manager keeps in self-signed mode.
const ConfigurationName = "acko-validating-webhook-configuration"

// Self-signed mode reads and updates the configuration by name, and shares its certificate through
// one Secret in the operator's namespace. RBAC cannot limit create by name: the first replica
// creates the Secret. These rules are config/webhook-certs (not the manager's ClusterRole): only
// self-signed mode gets them.

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
	// SelfSignedHost turns on self-signed mode outside a cluster: the certificate is for this host,
	// and the configuration calls https://HOST:PORT.
	SelfSignedHost string
	// SelfSignedService turns on self-signed mode in a cluster: the certificate is for this Service
	// of the operator's namespace, which the configuration already calls.
	SelfSignedService string
	// CertSecret, in self-signed mode, is the Secret of the operator's namespace that holds the CA and
	// certificate every replica serves (created if absent); empty keeps them in CertDir only.
	CertSecret string
	// ConfigurationName is the ValidatingWebhookConfiguration whose caBundle self-signed mode keeps.
	ConfigurationName string
	// Namespace is the operator's namespace (set by the manager, not a flag of this package).
	Namespace string
	// WatchNamespaces, when set, limit the webhook to those namespaces (set by the manager).
	WatchNamespaces []string
	// ClusterDomain is the Kubernetes cluster's DNS domain (the manager's --cluster-domain), for the
	// validator's limit on the pods' DNS names, and the Service's name in self-signed mode.
	ClusterDomain string
}

// NeedsNamespace says whether these options keep something in the operator's namespace.
func (o Options) NeedsNamespace() bool {
	return o.Enabled && (o.SelfSignedService != "" || o.CertSecret != "")
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
			"certificate for this host (e.g. 127.0.0.1), point the ValidatingWebhookConfiguration at "+
			"https://HOST:PORT/... (creating it if absent), and rotate the certificate before it expires.")
	fs.StringVar(&o.SelfSignedService, "webhook-self-signed-service", "",
		"Self-signed mode in a cluster: generate the serving certificate for this Service of the operator's "+
			"namespace, put its CA into the ValidatingWebhookConfiguration's caBundle, and rotate it before it "+
			"expires. Empty (and no URL host): cert-manager provides the certificate.")
	fs.StringVar(&o.CertSecret, "webhook-cert-secret", "",
		"Self-signed mode: share the CA and certificate through this Secret of the operator's namespace "+
			"(created if absent), so that every replica serves the same one.")
	fs.StringVar(&o.ConfigurationName, "webhook-configuration-name", ConfigurationName,
		"Self-signed mode: the ValidatingWebhookConfiguration whose caBundle the manager keeps.")
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
	if err := webhookv1alpha1.SetupBackupWebhooksWithManager(mgr); err != nil {
		return err
	}
	if err := mgr.AddReadyzCheck("webhook", mgr.GetWebhookServer().StartedChecker()); err != nil {
		return err
	}
	if o.SelfSignedHost == "" && o.SelfSignedService == "" {
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
	s, err := certs.New(c, o.certsOptions())
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

// certsOptions are the options of self-signed mode.
func (o Options) certsOptions() certs.Options {
	co := certs.Options{
		CertDir:           o.certDir(),
		ConfigurationName: cmp.Or(o.ConfigurationName, ConfigurationName),
		Webhooks:          webhookv1alpha1.ValidatingWebhooks(),
		NamespaceSelector: NamespaceSelector(o.WatchNamespaces),
	}
	if o.SelfSignedHost != "" {
		co.Hosts, co.URL = []string{o.SelfSignedHost}, certs.URLBase(o.SelfSignedHost, o.Port)
	} else {
		svc := o.SelfSignedService + "." + o.Namespace + ".svc"
		co.Hosts = []string{svc, svc + "." + cmp.Or(o.ClusterDomain, ackov1alpha1.DefaultClusterDomain)}
	}
	if o.CertSecret != "" {
		co.Secret = &types.NamespacedName{Namespace: o.Namespace, Name: o.CertSecret}
	}
	return co
}

// NamespaceSelector limits a webhook to the watched namespaces, by the label the API server sets on
// every namespace; nil (every namespace) when none are given.
func NamespaceSelector(namespaces []string) *metav1.LabelSelector {
	if len(namespaces) == 0 {
		return nil
	}
	return &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{
		Key: corev1.LabelMetadataName, Operator: metav1.LabelSelectorOpIn, Values: namespaces,
	}}}
}
