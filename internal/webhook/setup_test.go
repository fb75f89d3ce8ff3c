package webhook

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	crwebhook "sigs.k8s.io/controller-runtime/pkg/webhook"

	ackov1alpha1 "github.com/acko-io/acko/api/v1alpha1"
	"github.com/acko-io/acko/internal/webhook/certs"
	webhookv1alpha1 "github.com/acko-io/acko/internal/webhook/v1alpha1"
	"github.com/acko-io/acko/test/testenv"
)

func TestSelfSignedMode(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Webhook self-signed mode suite")
}

// Self-signed mode as `make run` uses it: nothing installed but the CRD; the manager generates its
// certificate, registers the configuration by URL and answers through it.
var _ = Describe("self-signed mode", Ordered, func() {
	var (
		env    *envtest.Environment
		k8s    client.Client
		opts   Options
		ctx    context.Context
		cancel context.CancelFunc
	)

	BeforeAll(func() {
		logf.SetLogger(zap.New(zap.WriteTo(GinkgoWriter), zap.UseDevMode(true)))
		ctx, cancel = context.WithCancel(context.Background())
		var err error
		env, err = testenv.New()
		Expect(err).NotTo(HaveOccurred())
		restCfg, err := env.Start()
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func() {
			cancel()
			Expect(env.Stop()).To(Succeed())
		})

		scheme := runtime.NewScheme()
		Expect(clientgoscheme.AddToScheme(scheme)).To(Succeed())
		Expect(ackov1alpha1.AddToScheme(scheme)).To(Succeed())
		k8s, err = client.New(restCfg, client.Options{Scheme: scheme})
		Expect(err).NotTo(HaveOccurred())

		opts = Options{Enabled: true, Port: freePort(), CertDir: GinkgoT().TempDir(), SelfSignedHost: "127.0.0.1"}
		mgr, err := ctrl.NewManager(restCfg, ctrl.Options{
			Scheme:        scheme,
			WebhookServer: crwebhook.NewServer(opts.ServerOptions(nil)),
			Metrics:       metricsserver.Options{BindAddress: "0"},
		})
		Expect(err).NotTo(HaveOccurred())
		Expect(Setup(mgr, opts)).To(Succeed())
		go func() {
			defer GinkgoRecover()
			Expect(mgr.Start(ctx)).To(Succeed())
		}()
	})

	It("registers the configuration with the URL and the CA bundle of its certificate", func() {
		vwc := &admissionregistrationv1.ValidatingWebhookConfiguration{}
		Expect(k8s.Get(ctx, client.ObjectKey{Name: ConfigurationName}, vwc)).To(Succeed())
		want := webhookv1alpha1.ValidatingWebhooks()
		Expect(vwc.Webhooks).To(HaveLen(len(want)))
		ca, err := os.ReadFile(filepath.Join(opts.CertDir, certs.CAFile))
		Expect(err).NotTo(HaveOccurred())
		for i, hook := range vwc.Webhooks {
			Expect(hook.ClientConfig.URL).To(HaveValue(Equal(
				"https://127.0.0.1:" + strconv.Itoa(opts.Port) + *want[i].ClientConfig.Service.Path)))
			Expect(hook.ClientConfig.CABundle).To(Equal(ca))
			Expect(hook.FailurePolicy).To(HaveValue(Equal(admissionregistrationv1.Fail)))
			rules := want[i].Rules
			rules[0].Scope = ptr.To(admissionregistrationv1.AllScopes) // the API server's default
			Expect(hook.Rules).To(Equal(rules))
		}
		Expect(*want[1].ClientConfig.Service.Path).To(Equal("/validate-acko-io-v1alpha1-aerospikecluster"))
	})

	It("rejects a bad cluster through it", func() {
		bad := &ackov1alpha1.AerospikeCluster{
			ObjectMeta: metav1.ObjectMeta{Name: "selfsigned", Namespace: "default"},
			Spec: ackov1alpha1.AerospikeClusterSpec{Size: 3, Image: "aerospike:ce-8.1.1.1",
				AerospikeConfig: &ackov1alpha1.AerospikeConfig{Value: map[string]any{"namespaces": []any{map[string]any{
					"name": "test", "replication-factor": int64(2), "storage-engine": map[string]any{"type": "memory"}}}}},
				Operations: []ackov1alpha1.OperationSpec{{Kind: ackov1alpha1.OperationWarmRestart, ID: "r",
					PodList: []string{"selfsigned-7"}}}},
		}
		// The server may still be starting: with failurePolicy Fail the API server refuses until it answers.
		Eventually(func() error { return k8s.Create(ctx, bad.DeepCopy()) }).WithTimeout(30 * time.Second).
			Should(MatchError(`admission webhook "vaerospikecluster-v1alpha1.kb.io" denied the request: ` +
				`AerospikeCluster.acko.io "selfsigned" is invalid: spec.operations[0].podList[0]: Invalid value: ` +
				`"selfsigned-7": not a pod of this cluster: pod names follow <cluster>-<ordinal> ` +
				`(selfsigned-0, selfsigned-1, selfsigned-2)`))
		err := k8s.Get(ctx, client.ObjectKeyFromObject(bad), &ackov1alpha1.AerospikeCluster{})
		Expect(apierrors.IsNotFound(err)).To(BeTrue())
	})
})

func freePort() int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	Expect(err).NotTo(HaveOccurred())
	defer func() { _ = l.Close() }()
	return l.Addr().(*net.TCPAddr).Port
}

// Without self-signed mode the certificate must already be in the cert dir; say so at setup.
func TestSetupWithoutACertificateSaysWhatToDo(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := ackov1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	mgr, err := ctrl.NewManager(&rest.Config{Host: "https://127.0.0.1:1"}, ctrl.Options{
		Scheme: scheme, Metrics: metricsserver.Options{BindAddress: "0"},
	})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	err = Setup(mgr, Options{Enabled: true, Port: 9443, CertDir: dir})
	want := "webhook: no tls.crt in " + dir + ": mount the serving certificate there (cert-manager, config/default), " +
		"or run outside a cluster with --webhook-self-signed-url-host=127.0.0.1, or pass --enable-webhook=false"
	if err == nil || err.Error() != want {
		t.Errorf("got %v, want %s", err, want)
	}
}
