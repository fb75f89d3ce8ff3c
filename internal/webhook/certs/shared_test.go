package certs

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
)

var sharedSecret = types.NamespacedName{Namespace: "acko-system", Name: "acko-webhook-server-cert"}

const serviceHost = "acko-webhook-service.acko-system.svc"

// installed is the configuration as the chart creates it in a cluster: a Service reference, no CA.
func installed() *admissionregistrationv1.ValidatingWebhookConfiguration {
	return &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: testName},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{
			Name: "v.example.com",
			ClientConfig: admissionregistrationv1.WebhookClientConfig{Service: &admissionregistrationv1.ServiceReference{
				Name: "acko-webhook-service", Namespace: "acko-system", Path: ptr.To("/validate"),
			}},
			SideEffects:             ptr.To(admissionregistrationv1.SideEffectClassNone),
			AdmissionReviewVersions: []string{"v1"},
		}},
	}
}

// replica is one manager of a Deployment in self-signed service mode, with its own cert dir.
func (f *fixture) replica(name string) *SelfSigned {
	s, err := New(f.client, Options{
		Hosts: []string{serviceHost}, CertDir: filepath.Join(f.dir, name), Secret: &sharedSecret,
		ConfigurationName: testName,
		NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"team": "db"}},
	})
	if err != nil {
		f.t.Fatal(err)
	}
	s.now = func() time.Time { return f.now }
	return s
}

// servedCert is the certificate a replica serves.
func (f *fixture) servedCert(replica string) []byte {
	f.t.Helper()
	return f.file(filepath.Join(replica, CertFile))
}

func (f *fixture) secret() *corev1.Secret {
	f.t.Helper()
	s := &corev1.Secret{}
	if err := f.client.Get(context.Background(), sharedSecret, s); err != nil {
		f.t.Fatal(err)
	}
	return s
}

func sharedFixture(t *testing.T, funcs interceptor.Funcs) *fixture {
	f := newFixture(t)
	f.client = fake.NewClientBuilder().WithScheme(clientgoscheme.Scheme).WithObjects(installed()).
		WithInterceptorFuncs(funcs).Build()
	return f
}

func TestReplicasShareOneCertificateThroughTheSecret(t *testing.T) {
	f := sharedFixture(t, interceptor.Funcs{})
	a, b := f.replica("a"), f.replica("b")
	f.ensure(a)
	f.ensure(b)

	if !bytes.Equal(f.servedCert("a"), f.servedCert("b")) {
		t.Fatal("the replicas serve different certificates")
	}
	secret := f.secret()
	if !bytes.Equal(secret.Data[corev1.TLSCertKey], f.servedCert("a")) {
		t.Error("secret does not hold the served certificate")
	}
	hook := f.configuration().Webhooks[0]
	if hook.ClientConfig.Service == nil || hook.ClientConfig.Service.Name != "acko-webhook-service" || hook.ClientConfig.URL != nil {
		t.Errorf("the installer's clientConfig was changed: %+v", hook.ClientConfig)
	}
	if hook.NamespaceSelector == nil || hook.NamespaceSelector.MatchLabels["team"] != "db" {
		t.Errorf("namespaceSelector not set: %v", hook.NamespaceSelector)
	}
	if !bytes.Equal(hook.ClientConfig.CABundle, secret.Data[CAFile]) {
		t.Error("caBundle is not the shared CA")
	}
}

func TestAReplicaPicksUpTheRotationOfAnother(t *testing.T) {
	f := sharedFixture(t, interceptor.Funcs{})
	a, b := f.replica("a"), f.replica("b")
	f.ensure(a)
	f.ensure(b)
	old := f.servedCert("b")

	f.now = start.Add(61 * day) // a rotates first
	f.ensure(a)
	rotated := f.servedCert("a")
	if bytes.Equal(old, rotated) || len(f.secret().Data[PreviousCAKey]) == 0 {
		t.Fatal("a did not rotate, or the secret forgot the previous CA")
	}
	f.ensure(b) // b's next check: takes a's pair instead of rotating again
	if !bytes.Equal(f.servedCert("b"), rotated) {
		t.Error("b serves another certificate than a")
	}
	if n := len(f.bundleCAs()); n != 2 {
		t.Errorf("bundle holds %d CAs, want the new and the previous", n)
	}
}

// Two replicas start at once: both find no Secret, the second's create fails, and it takes the first's.
func TestAReplicaThatLosesTheCreateRaceTakesTheWinnersCertificate(t *testing.T) {
	var f *fixture
	var winner *SelfSigned
	raced := false
	f = sharedFixture(t, interceptor.Funcs{
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			if _, ok := obj.(*corev1.Secret); ok && !raced {
				raced = true
				f.ensure(winner) // the other replica stores its pair first
			}
			return c.Create(ctx, obj, opts...)
		},
	})
	winner = f.replica("winner")
	f.ensure(f.replica("loser"))
	if !raced {
		t.Fatal("no race happened")
	}
	if !bytes.Equal(f.servedCert("loser"), f.servedCert("winner")) {
		t.Error("the loser serves its own certificate")
	}
	if !bytes.Equal(f.configuration().Webhooks[0].ClientConfig.CABundle, f.secret().Data[CAFile]) {
		t.Error("caBundle is not the winner's CA")
	}
}

func TestServiceModeNeedsTheInstalledConfiguration(t *testing.T) {
	f := newFixture(t)
	err := f.replica("a").Ensure(context.Background())
	if err == nil || !strings.Contains(err.Error(), "ValidatingWebhookConfiguration "+testName+" not found") {
		t.Errorf("got %v", err)
	}
}

// The chart installs the Secret empty (so that uninstall deletes it); the first replica fills it.
func TestTheFirstReplicaFillsTheInstalledEmptySecret(t *testing.T) {
	f := newFixture(t)
	empty := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: sharedSecret.Name, Namespace: sharedSecret.Namespace}}
	f.client = fake.NewClientBuilder().WithScheme(clientgoscheme.Scheme).WithObjects(installed(), empty).Build()
	f.ensure(f.replica("a"))
	if !bytes.Equal(f.secret().Data[corev1.TLSCertKey], f.servedCert("a")) {
		t.Error("the empty Secret was not filled with the served certificate")
	}
}

// The installer's labels stay as they are: a replica writes only the data.
func TestFillingTheSecretKeepsTheInstallersMetadata(t *testing.T) {
	f := newFixture(t)
	empty := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: sharedSecret.Name, Namespace: sharedSecret.Namespace,
		Labels: map[string]string{"app.kubernetes.io/managed-by": "Helm"}}}
	f.client = fake.NewClientBuilder().WithScheme(clientgoscheme.Scheme).WithObjects(installed(), empty).Build()
	f.ensure(f.replica("a"))
	if got := f.secret().Labels; len(got) != 1 || got["app.kubernetes.io/managed-by"] != "Helm" {
		t.Errorf("labels %v", got)
	}
}
