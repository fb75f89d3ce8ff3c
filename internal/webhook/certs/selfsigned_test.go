package certs

import (
	"bytes"
	"context"
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
)

const (
	testHost = "127.0.0.1"
	testName = "test-validating-webhook-configuration"
	day      = 24 * time.Hour
)

var start = time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)

type fixture struct {
	t      *testing.T
	client client.Client
	dir    string
	now    time.Time
}

func newFixture(t *testing.T) *fixture {
	return &fixture{
		t:      t,
		client: fake.NewClientBuilder().WithScheme(clientgoscheme.Scheme).Build(),
		dir:    filepath.Join(t.TempDir(), "certs"),
		now:    start,
	}
}

// selfSigned is a fresh SelfSigned (as after a manager restart) on the fixture's dir and clock.
func (f *fixture) selfSigned() *SelfSigned {
	s, err := New(f.client, Options{
		Hosts: []string{testHost}, URL: URLBase(testHost, 9443), CertDir: f.dir, ConfigurationName: testName,
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{
			Name: "v.example.com",
			ClientConfig: admissionregistrationv1.WebhookClientConfig{Service: &admissionregistrationv1.ServiceReference{
				Name: "svc", Namespace: "ns", Path: ptr.To("/validate"),
			}},
			SideEffects:             ptr.To(admissionregistrationv1.SideEffectClassNone),
			AdmissionReviewVersions: []string{"v1"},
		}},
	})
	if err != nil {
		f.t.Fatal(err)
	}
	s.now = func() time.Time { return f.now }
	return s
}

func (f *fixture) ensure(s *SelfSigned) {
	f.t.Helper()
	if err := s.Ensure(context.Background()); err != nil {
		f.t.Fatal(err)
	}
}

func (f *fixture) file(name string) []byte {
	f.t.Helper()
	data, err := os.ReadFile(filepath.Join(f.dir, name))
	if err != nil {
		f.t.Fatal(err)
	}
	return data
}

func (f *fixture) configuration() *admissionregistrationv1.ValidatingWebhookConfiguration {
	f.t.Helper()
	vwc := &admissionregistrationv1.ValidatingWebhookConfiguration{}
	if err := f.client.Get(context.Background(), client.ObjectKey{Name: testName}, vwc); err != nil {
		f.t.Fatal(err)
	}
	return vwc
}

// bundleCAs lists the certificates of the configuration's CA bundle.
func (f *fixture) bundleCAs() []*x509.Certificate {
	f.t.Helper()
	var cas []*x509.Certificate
	rest := f.configuration().Webhooks[0].ClientConfig.CABundle
	for {
		var block *pem.Block
		if block, rest = pem.Decode(rest); block == nil {
			return cas
		}
		ca, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			f.t.Fatal(err)
		}
		cas = append(cas, ca)
	}
}

// expectTrusted checks that the API server, trusting the bundle, accepts certPEM for the host at now.
func (f *fixture) expectTrusted(certPEM []byte) {
	f.t.Helper()
	block, _ := pem.Decode(certPEM)
	leaf, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		f.t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(f.configuration().Webhooks[0].ClientConfig.CABundle)
	if _, err := leaf.Verify(x509.VerifyOptions{DNSName: testHost, Roots: roots, CurrentTime: f.now}); err != nil {
		f.t.Errorf("the serving certificate is not trusted: %v", err)
	}
}

func TestEnsureCreatesTheCertificateAndTheConfiguration(t *testing.T) {
	f := newFixture(t)
	f.ensure(f.selfSigned())

	info, err := os.Stat(filepath.Join(f.dir, KeyFile))
	if err != nil || info.Mode().Perm() != 0o600 {
		t.Fatalf("key file: %v %v", info, err)
	}
	vwc := f.configuration()
	if vwc.Labels["app.kubernetes.io/managed-by"] != "acko" {
		t.Errorf("labels: %v", vwc.Labels)
	}
	hook := vwc.Webhooks[0]
	if hook.ClientConfig.URL == nil || *hook.ClientConfig.URL != "https://127.0.0.1:9443/validate" || hook.ClientConfig.Service != nil {
		t.Errorf("clientConfig: %+v", hook.ClientConfig)
	}
	if hook.Name != "v.example.com" || *hook.SideEffects != admissionregistrationv1.SideEffectClassNone {
		t.Errorf("webhook not kept: %+v", hook)
	}
	if !bytes.Equal(hook.ClientConfig.CABundle, f.file(CAFile)) {
		t.Errorf("caBundle is not ca.crt")
	}
	f.expectTrusted(f.file(CertFile))
}

func TestEnsureReusesAUsableCertificate(t *testing.T) {
	f := newFixture(t)
	f.ensure(f.selfSigned())
	cert, bundle := f.file(CertFile), f.configuration().Webhooks[0].ClientConfig.CABundle

	f.now = start.Add(59 * day) // more than a third of 90 days left
	f.ensure(f.selfSigned())
	if !bytes.Equal(cert, f.file(CertFile)) || !bytes.Equal(bundle, f.configuration().Webhooks[0].ClientConfig.CABundle) {
		t.Error("a restarted manager replaced a usable certificate")
	}
}

func TestEnsureRestoresAnEditedConfiguration(t *testing.T) {
	f := newFixture(t)
	s := f.selfSigned()
	f.ensure(s)
	vwc := f.configuration()
	vwc.Labels["team"] = "db"
	vwc.Webhooks[0].ClientConfig.URL = ptr.To("https://elsewhere/validate")
	vwc.Webhooks[0].ClientConfig.CABundle = nil
	if err := f.client.Update(context.Background(), vwc); err != nil {
		t.Fatal(err)
	}

	f.ensure(s)
	vwc = f.configuration()
	if *vwc.Webhooks[0].ClientConfig.URL != "https://127.0.0.1:9443/validate" || vwc.Labels["team"] != "db" {
		t.Errorf("not restored, or labels lost: %+v %v", vwc.Webhooks[0].ClientConfig, vwc.Labels)
	}
	f.expectTrusted(f.file(CertFile))
}

func TestRotationTrustsTheOldAndTheNewCAUntilTheOldExpires(t *testing.T) {
	f := newFixture(t)
	s := f.selfSigned()
	f.ensure(s)
	oldCert, oldCA := f.file(CertFile), f.file(CAFile)

	f.now = start.Add(61 * day) // less than a third of 90 days left: rotate
	f.ensure(s)
	newCert := f.file(CertFile)
	if bytes.Equal(oldCert, newCert) || bytes.Equal(oldCA, f.file(CAFile)) {
		t.Fatal("not rotated")
	}
	if n := len(f.bundleCAs()); n != 2 {
		t.Fatalf("bundle holds %d CAs, want the new and the old", n)
	}
	f.expectTrusted(oldCert) // the server may still present it until its watcher reloads
	f.expectTrusted(newCert)

	f.now = start.Add(62 * day)
	f.ensure(s)
	if !bytes.Equal(newCert, f.file(CertFile)) || len(f.bundleCAs()) != 2 {
		t.Error("the next check changed the certificate or dropped the old CA early")
	}

	f.now = start.Add(91 * day) // the old CA expired
	f.ensure(s)
	if cas := f.bundleCAs(); len(cas) != 1 || !bytes.Equal(pemOf(cas[0]), f.file(CAFile)) {
		t.Errorf("bundle should hold only the current CA, holds %d", len(cas))
	}
	f.expectTrusted(newCert)
}

func pemOf(c *x509.Certificate) []byte { return encode("CERTIFICATE", c.Raw) }

func TestEnsureReplacesAnUnusablePair(t *testing.T) {
	tests := map[string]func(f *fixture){
		"a corrupt certificate": func(f *fixture) {
			if err := os.WriteFile(filepath.Join(f.dir, CertFile), []byte("garbage"), 0o600); err != nil {
				f.t.Fatal(err)
			}
		},
		"a key of another pair": func(f *fixture) {
			other, err := generate([]string{testHost}, f.now, DefaultValidity)
			if err != nil {
				f.t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(f.dir, KeyFile), other.keyPEM, 0o600); err != nil {
				f.t.Fatal(err)
			}
		},
		"a certificate for another host": func(f *fixture) {
			other, err := generate([]string{"10.0.0.1"}, f.now, DefaultValidity)
			if err != nil {
				f.t.Fatal(err)
			}
			if err := other.write(f.dir); err != nil {
				f.t.Fatal(err)
			}
		},
	}
	for name, spoil := range tests {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t)
			f.ensure(f.selfSigned())
			spoil(f)
			f.ensure(f.selfSigned())
			f.expectTrusted(f.file(CertFile))
			if _, err := load(f.dir); err != nil {
				t.Errorf("pair on disk: %v", err)
			}
		})
	}
}

func TestStartRecreatesADeletedConfiguration(t *testing.T) {
	f := newFixture(t)
	s := f.selfSigned()
	s.opts.CheckInterval = 10 * time.Millisecond
	f.ensure(s)
	if err := f.client.Delete(context.Background(), f.configuration()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- s.Start(ctx) }()
	deadline := time.Now().Add(10 * time.Second)
	for {
		err := f.client.Get(ctx, client.ObjectKey{Name: testName}, &admissionregistrationv1.ValidatingWebhookConfiguration{})
		if err == nil {
			break
		}
		if !apierrors.IsNotFound(err) || time.Now().After(deadline) {
			t.Fatalf("configuration not recreated: %v", err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Start: %v", err)
	}
}

func TestNewRequiresTheOptions(t *testing.T) {
	if _, err := New(nil, Options{Hosts: []string{testHost}, CertDir: "/tmp/x"}); err == nil {
		t.Error("no configuration name accepted")
	}
}

// Outside a cluster the manager points an installed configuration (the Helm e2e's) at its URL, and
// leaves the installer's labels as they were.
func TestEnsureKeepsAnInstalledConfigurationsLabels(t *testing.T) {
	f := newFixture(t)
	vwc := &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: testName, Labels: map[string]string{"app.kubernetes.io/managed-by": "Helm"}},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{
			Name:                    "v.example.com",
			ClientConfig:            admissionregistrationv1.WebhookClientConfig{URL: ptr.To("https://127.0.0.1:1/validate")},
			SideEffects:             ptr.To(admissionregistrationv1.SideEffectClassNone),
			AdmissionReviewVersions: []string{"v1"},
		}},
	}
	if err := f.client.Create(context.Background(), vwc); err != nil {
		t.Fatal(err)
	}
	f.ensure(f.selfSigned())
	got := f.configuration()
	if got.Labels["app.kubernetes.io/managed-by"] != "Helm" || len(got.Webhooks) != 1 ||
		*got.Webhooks[0].ClientConfig.URL != "https://127.0.0.1:9443/validate" {
		t.Errorf("labels %v, webhooks %+v", got.Labels, got.Webhooks)
	}
	f.expectTrusted(f.file(CertFile))
}
