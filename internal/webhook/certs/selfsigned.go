// Package certs lets the manager serve its webhooks without cert-manager. It generates a CA and a
// serving certificate, writes them where the webhook server reads them, registers a
// ValidatingWebhookConfiguration that calls the server by URL with that CA, and rotates both before
// they expire.
//
// It is meant for one manager running outside the cluster next to the API server (`make run`, the
// local cluster), where no Service can route to it: the URL is https://<host>:<port><path>, and the
// certificate carries host as its subject alternative name. In a cluster, cert-manager provides the
// certificate (config/certmanager) and config/webhook the configuration.
package certs

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"sync"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	ackov1alpha1 "github.com/acko-io/acko/api/v1alpha1"
)

// Only self-signed mode needs this; with cert-manager the configuration comes from config/webhook.
// +kubebuilder:rbac:groups=admissionregistration.k8s.io,resources=validatingwebhookconfigurations,verbs=get;create;update

// Defaults of Options.
const (
	DefaultValidity      = 90 * 24 * time.Hour
	DefaultCheckInterval = time.Hour
)

// Options of the self-signed mode.
type Options struct {
	// Host is the address the API server dials, an IP (127.0.0.1) or a DNS name.
	Host string
	// Port is the webhook server's port.
	Port int
	// CertDir is the webhook server's certificate directory.
	CertDir string
	// ConfigurationName is the ValidatingWebhookConfiguration to create or update.
	ConfigurationName string
	// Webhooks of the configuration. As with envtest, a clientConfig.service.path becomes the path of
	// the URL; the rest of each clientConfig is replaced.
	Webhooks []admissionregistrationv1.ValidatingWebhook
	// Validity of a new certificate (DefaultValidity); it is replaced when less than a third is left.
	Validity time.Duration
	// CheckInterval between checks of the certificate and the configuration (DefaultCheckInterval).
	CheckInterval time.Duration
}

// SelfSigned keeps the certificate and the configuration current. Call Ensure before the manager
// starts (the webhook server needs the files), then add it to the manager as a runnable.
type SelfSigned struct {
	client client.Client
	opts   Options
	now    func() time.Time

	mu                sync.Mutex
	current, previous *keyPair
}

// New returns a SelfSigned that writes through c, which must not depend on the manager's cache
// (Ensure runs before the cache starts).
func New(c client.Client, o Options) (*SelfSigned, error) {
	if o.Host == "" || o.Port <= 0 || o.CertDir == "" || o.ConfigurationName == "" {
		return nil, fmt.Errorf("self-signed webhook: host, port, cert dir and configuration name are required")
	}
	if o.Validity <= 0 {
		o.Validity = DefaultValidity
	}
	if o.CheckInterval <= 0 {
		o.CheckInterval = DefaultCheckInterval
	}
	return &SelfSigned{client: c, opts: o, now: time.Now}, nil
}

// Ensure makes the certificate usable for another third of its validity, reusing the one in CertDir
// when it is, and makes the configuration call the server with a CA bundle that trusts it.
func (s *SelfSigned) Ensure(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	if s.current == nil {
		s.current, _ = load(s.opts.CertDir) // a missing or broken pair is replaced below
	}
	if s.current != nil {
		err := s.current.check(s.opts.Host, now, s.opts.Validity)
		if err == nil {
			return s.register(ctx, caBundle(now, s.current, s.previous))
		}
		logf.FromContext(ctx).Info("Replacing the webhook serving certificate", "reason", err.Error())
	}
	return s.rotate(ctx, now)
}

// rotate trusts a new CA before serving with it: the configuration first trusts both, then the files
// change, so the API server accepts the server before, while and after its watcher switches.
func (s *SelfSigned) rotate(ctx context.Context, now time.Time) error {
	next, err := generate(s.opts.Host, now, s.opts.Validity)
	if err != nil {
		return err
	}
	if err := s.register(ctx, caBundle(now, next, s.current)); err != nil {
		return err
	}
	if err := next.write(s.opts.CertDir); err != nil {
		return err
	}
	s.previous, s.current = s.current, next
	logf.FromContext(ctx).Info("Issued the webhook serving certificate", "host", s.opts.Host,
		"notAfter", next.leaf.NotAfter, "certDir", s.opts.CertDir, "configuration", s.opts.ConfigurationName)
	return nil
}

// Start checks every CheckInterval until ctx ends; a failed check is logged and retried at the next.
func (s *SelfSigned) Start(ctx context.Context) error {
	log := logf.FromContext(ctx).WithName("webhook-certs")
	ticker := time.NewTicker(s.opts.CheckInterval)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-ticker.C:
			if err := s.Ensure(ctx); err != nil {
				log.Error(err, "Self-signed webhook check failed; retrying later", "interval", s.opts.CheckInterval)
			}
		}
	}
}

// NeedLeaderElection is false: every manager serves its own webhook server.
func (s *SelfSigned) NeedLeaderElection() bool { return false }

// register creates or updates the configuration so that it calls the server with caBundle.
func (s *SelfSigned) register(ctx context.Context, caBundle []byte) error {
	desired := s.configuration(caBundle)
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		existing := &admissionregistrationv1.ValidatingWebhookConfiguration{}
		err := s.client.Get(ctx, client.ObjectKeyFromObject(desired), existing)
		if apierrors.IsNotFound(err) {
			return s.client.Create(ctx, desired.DeepCopy())
		}
		if err != nil {
			return err
		}
		if existing.Labels == nil {
			existing.Labels = map[string]string{}
		}
		for k, v := range desired.Labels {
			existing.Labels[k] = v
		}
		existing.Webhooks = desired.Webhooks
		return s.client.Update(ctx, existing)
	})
}

func (s *SelfSigned) configuration(caBundle []byte) *admissionregistrationv1.ValidatingWebhookConfiguration {
	base := "https://" + net.JoinHostPort(s.opts.Host, strconv.Itoa(s.opts.Port))
	hooks := make([]admissionregistrationv1.ValidatingWebhook, len(s.opts.Webhooks))
	for i, h := range s.opts.Webhooks {
		h.DeepCopyInto(&hooks[i])
		url := base
		if svc := h.ClientConfig.Service; svc != nil && svc.Path != nil {
			url += *svc.Path
		}
		hooks[i].ClientConfig = admissionregistrationv1.WebhookClientConfig{URL: &url, CABundle: caBundle}
	}
	return &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{
			Name:   s.opts.ConfigurationName,
			Labels: map[string]string{ackov1alpha1.LabelManagedBy: ackov1alpha1.ManagedBy},
		},
		Webhooks: hooks,
	}
}
