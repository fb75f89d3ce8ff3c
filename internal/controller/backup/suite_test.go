package backup_test

import (
	"context"
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	clustercontroller "github.com/acko-io/acko/internal/controller/cluster"
	"github.com/acko-io/acko/test/testenv"
)

// The backup and restore reconcilers' envtest suite: a real API server, the two reconcilers on the
// manager's own cache, and the test standing in for the Job controller, the kubelet and the cluster's
// reconciler (no pod runs, no tool prints but what a spec says it printed).
var (
	env    *envtest.Environment
	cfg    *rest.Config
	scheme *runtime.Scheme
	// k8s is a plain client that reads the API server directly.
	k8s client.Client
)

func TestToolRuns(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Backup and restore suite")
}

var _ = BeforeSuite(func() {
	logf.SetLogger(zap.New(zap.WriteTo(GinkgoWriter), zap.UseDevMode(true)))
	var err error
	env, cfg, scheme, k8s, err = testenv.StartWithClient()
	Expect(err).NotTo(HaveOccurred())
})

var _ = AfterSuite(func() {
	if env != nil {
		Expect(env.Stop()).To(Succeed())
	}
})

// newNamespace creates a namespace for one spec.
func newNamespace() string {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "t-"}}
	Expect(k8s.Create(context.Background(), ns)).To(Succeed())
	return ns.Name
}

// eventMessages lists the notes of the events with the given reason about the named object.
func eventMessages(key types.NamespacedName, reason string) []string {
	out, err := testenv.EventMessages(k8s, key, reason)
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	return out
}

// cacheFor is the manager's cache (the operator's own, which sees only the Jobs and pods ACKO labels)
// limited to one spec's namespace.
func cacheFor(namespace string) cache.Options {
	o := clustercontroller.CacheOptions()
	o.DefaultNamespaces = map[string]cache.Config{namespace: {}}
	return o
}
