// Package certs lets the manager serve its webhooks without cert-manager. It generates a CA and a
// serving certificate, writes them where the webhook server reads them, puts the CA into the
// ValidatingWebhookConfiguration's caBundle, and rotates both before they expire.
//
// Two ways to reach the server:
//   - in a cluster (the chart's and config/default's self-managed mode), a Service: the certificate
//     names the Service's DNS names, and the chart or kustomize creates the configuration; the
//     manager only reads and updates it by name. Replicas share one CA and certificate through one
//     Secret (created by the first), so every replica serves a certificate the caBundle trusts;
//   - outside a cluster (`make run`, the local cluster), a URL such as https://127.0.0.1:9443/...:
//     the manager also writes the URL into its webhooks, and creates the configuration when it is
//     absent and its credentials allow it (a developer's admin kubeconfig).
package certs

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"sync"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	ackov1alpha1 "github.com/acko-io/acko/api/v1alpha1"
)

// Defaults of Options.
const (
	DefaultValidity      = 90 * 24 * time.Hour
	DefaultCheckInterval = time.Hour
)

// Options of the self-signed mode.
type Options struct {
	// Hosts the certificate is for: IPs (127.0.0.1) or DNS names (the Service's); at least one.
	Hosts []string
	// URL, when set, is the base (https://host:port) the configuration calls the server at, outside
	// a cluster; empty leaves each webhook's clientConfig to whoever created the configuration.
	URL string
	// CertDir is the webhook server's certificate directory.
	CertDir string
	// Secret, when set, holds the CA and the certificate that every replica serves.
	Secret *types.NamespacedName
	// ConfigurationName is the ValidatingWebhookConfiguration whose caBundle the manager keeps.
	ConfigurationName string
	// Webhooks of the configuration, to create it in URL mode. As with envtest, a
	// clientConfig.service.path becomes the path of the URL; the rest of each clientConfig is replaced.
	Webhooks []admissionregistrationv1.ValidatingWebhook
	// NamespaceSelector, when set, limits every webhook of the configuration to the namespaces the
	// manager watches.
	NamespaceSelector *metav1.LabelSelector
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
	written           *keyPair       // the pair in CertDir
	secret            *corev1.Secret // the shared Secret as read last; nil: absent
}

// New returns a SelfSigned that reads and writes through c, which must not depend on the manager's
// cache (Ensure runs before the cache starts).
func New(c client.Client, o Options) (*SelfSigned, error) {
	if len(o.Hosts) == 0 || o.CertDir == "" || o.ConfigurationName == "" {
		return nil, errors.New("self-signed webhook: hosts, cert dir and configuration name are required")
	}
	if o.Validity <= 0 {
		o.Validity = DefaultValidity
	}
	if o.CheckInterval <= 0 {
		o.CheckInterval = DefaultCheckInterval
	}
	return &SelfSigned{client: c, opts: o, now: time.Now}, nil
}

// URLBase is the base URL of a webhook server on host:port.
func URLBase(host string, port int) string {
	return "https://" + net.JoinHostPort(host, strconv.Itoa(port))
}

// Ensure makes the certificate usable for another third of its validity, reusing the shared or
// written one when it is, makes the configuration trust it, and then serves it.
func (s *SelfSigned) Ensure(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	// A replica that loses a race to create or rotate the shared pair takes the winner's: one retry.
	err := s.ensureOnce(ctx)
	if errors.Is(err, errLostRace) {
		logf.FromContext(ctx).Info("Another replica stored the webhook certificate first; using it")
		err = s.ensureOnce(ctx)
	}
	return err
}

func (s *SelfSigned) ensureOnce(ctx context.Context) error {
	now := s.now()
	if err := s.loadCurrent(ctx); err != nil {
		return err
	}
	if s.current != nil {
		err := s.current.check(s.opts.Hosts, now, s.opts.Validity)
		if err == nil {
			return s.serve(ctx, now)
		}
		logf.FromContext(ctx).Info("Replacing the webhook serving certificate", "reason", err.Error())
	}
	next, err := generate(s.opts.Hosts, now, s.opts.Validity)
	if err != nil {
		return err
	}
	if err := s.store(ctx, next, s.current); err != nil {
		return err
	}
	s.previous, s.current = s.current, next
	if err := s.serve(ctx, now); err != nil {
		return err
	}
	logf.FromContext(ctx).Info("Issued the webhook serving certificate", "hosts", s.opts.Hosts,
		"notAfter", next.leaf.NotAfter, "certDir", s.opts.CertDir, "configuration", s.opts.ConfigurationName)
	return nil
}

// loadCurrent reads the shared pair (another replica may have rotated it), or, without a Secret,
// the pair a previous run wrote; a missing or broken pair leaves current as it was.
func (s *SelfSigned) loadCurrent(ctx context.Context) error {
	if s.opts.Secret != nil {
		return s.loadShared(ctx)
	}
	if s.current == nil {
		s.current, _ = load(s.opts.CertDir) // a missing or broken pair is replaced
		s.written = s.current
	}
	return nil
}

// serve trusts the current CA (and the previous one while valid) before it serves the pair: the
// configuration first, then the files, so that the API server accepts the server before, while and
// after its watcher switches.
func (s *SelfSigned) serve(ctx context.Context, now time.Time) error {
	if err := s.register(ctx, caBundle(now, s.current, s.previous)); err != nil {
		return err
	}
	if s.written == s.current {
		return nil
	}
	if err := s.current.write(s.opts.CertDir); err != nil {
		return err
	}
	s.written = s.current
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

// NeedLeaderElection is false: every replica serves its own webhook server.
func (s *SelfSigned) NeedLeaderElection() bool { return false }

// register makes the configuration call the server with caBundle. Outside a cluster it also writes
// the URL, and creates the configuration when it is absent.
func (s *SelfSigned) register(ctx context.Context, caBundle []byte) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		existing := &admissionregistrationv1.ValidatingWebhookConfiguration{}
		err := s.client.Get(ctx, client.ObjectKey{Name: s.opts.ConfigurationName}, existing)
		if apierrors.IsNotFound(err) && s.opts.URL != "" {
			return s.client.Create(ctx, s.configuration(caBundle))
		}
		if apierrors.IsNotFound(err) {
			return fmt.Errorf("ValidatingWebhookConfiguration %s not found: the chart or config/default installs it",
				s.opts.ConfigurationName)
		}
		if err != nil {
			return err
		}
		if s.opts.URL != "" {
			existing.Webhooks = s.pointAtURL(existing.Webhooks)
		}
		s.inject(existing.Webhooks, caBundle)
		return s.client.Update(ctx, existing)
	})
}

// inject sets the CA bundle (and the namespace selector) of every webhook, leaving the rest as the
// installer made it.
func (s *SelfSigned) inject(hooks []admissionregistrationv1.ValidatingWebhook, caBundle []byte) {
	for i := range hooks {
		hooks[i].ClientConfig.CABundle = caBundle
		if s.opts.NamespaceSelector != nil {
			hooks[i].NamespaceSelector = s.opts.NamespaceSelector.DeepCopy()
		}
	}
}

// pointAtURL makes each of the manager's webhooks call the server's URL, adding any that is
// missing; the rest of the configuration (labels, other fields) stays the installer's, so that an
// installer applying it again finds nothing of its own taken over.
func (s *SelfSigned) pointAtURL(hooks []admissionregistrationv1.ValidatingWebhook) []admissionregistrationv1.ValidatingWebhook {
	for _, want := range s.configuration(nil).Webhooks {
		i := slices.IndexFunc(hooks, func(h admissionregistrationv1.ValidatingWebhook) bool { return h.Name == want.Name })
		if i < 0 {
			hooks = append(hooks, want)
			continue
		}
		hooks[i].ClientConfig.URL, hooks[i].ClientConfig.Service = want.ClientConfig.URL, nil
	}
	return hooks
}

// configuration is the whole configuration of URL mode.
func (s *SelfSigned) configuration(caBundle []byte) *admissionregistrationv1.ValidatingWebhookConfiguration {
	hooks := make([]admissionregistrationv1.ValidatingWebhook, len(s.opts.Webhooks))
	for i, h := range s.opts.Webhooks {
		h.DeepCopyInto(&hooks[i])
		url := s.opts.URL
		if svc := h.ClientConfig.Service; svc != nil && svc.Path != nil {
			url += *svc.Path
		}
		hooks[i].ClientConfig = admissionregistrationv1.WebhookClientConfig{URL: &url}
	}
	s.inject(hooks, caBundle)
	return &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{
			Name:   s.opts.ConfigurationName,
			Labels: map[string]string{ackov1alpha1.LabelManagedBy: ackov1alpha1.ManagedBy},
		},
		Webhooks: hooks,
	}
}
