package cluster

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	ackov1alpha1 "github.com/acko-io/acko/api/v1alpha1"
	"github.com/acko-io/acko/internal/aerospike"
	"github.com/acko-io/acko/internal/liveconfig"
	"github.com/acko-io/acko/internal/operations"
	"github.com/acko-io/acko/internal/status"
	"github.com/acko-io/acko/internal/tasks"
	"github.com/acko-io/acko/test/testenv"
)

var (
	env    *envtest.Environment
	cfg    *rest.Config
	scheme *runtime.Scheme
	// k8s is a plain client that reads the API server directly.
	k8s client.Client
)

func TestController(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Controller suite")
}

var _ = BeforeSuite(func() {
	logf.SetLogger(zap.New(zap.WriteTo(GinkgoWriter), zap.UseDevMode(true)))
	// A wait that names no deadline waits as long as the specs' own: gomega's one second is shorter than
	// the test world takes to recreate a pod on a loaded CI machine.
	SetDefaultEventuallyTimeout(timeout)
	SetDefaultEventuallyPollingInterval(poll)
	var err error
	env, cfg, scheme, k8s, err = testenv.StartWithClient()
	Expect(err).NotTo(HaveOccurred())
})

var _ = AfterSuite(func() {
	if env != nil {
		Expect(env.Stop()).To(Succeed())
	}
})

// writeCounter counts the writes the operator makes and can fail them, by wrapping its client.
type writeCounter struct {
	mu     sync.Mutex
	writes []string
	// fail, when set, decides whether a write fails (before it reaches the API server).
	fail func(verb string, obj client.Object) error
	// after, when set, runs after each successful write with the running count.
	after func(n int)
	// begun counts the writes begun; begins[i] is how many had begun before writes[i] began, so that a
	// write in flight across a mark (begun before it, done after it) is not taken for one after it.
	begun  int
	begins []int
}

func (w *writeCounter) record(verb string, obj client.Object, do func() error) error {
	w.mu.Lock()
	fail, after, begin := w.fail, w.after, w.begun
	w.begun++
	w.mu.Unlock()
	if fail != nil {
		if err := fail(verb, obj); err != nil {
			return err
		}
	}
	if err := do(); err != nil {
		return err
	}
	w.mu.Lock()
	entry := fmt.Sprintf("%s %T %s", verb, obj, obj.GetName())
	if c, ok := obj.(*ackov1alpha1.AerospikeCluster); ok && strings.HasPrefix(verb, "update/status") {
		entry += " phase=" + string(c.Status.Phase)
	}
	w.writes, w.begins = append(w.writes, entry), append(w.begins, begin)
	n := len(w.writes)
	w.mu.Unlock()
	if after != nil {
		after(n)
	}
	return nil
}

func (w *writeCounter) count() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.writes)
}

// mark is a point in the writes: since(mark) lists the ones begun after it.
func (w *writeCounter) mark() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.begun
}

// since lists the successful writes begun after mark.
func (w *writeCounter) since(mark int) []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []string
	for i, b := range w.begins {
		if b >= mark {
			out = append(out, w.writes[i])
		}
	}
	return out
}

func (w *writeCounter) list() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.writes...)
}

func (w *writeCounter) setFail(f func(verb string, obj client.Object) error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.fail = f
}

func (w *writeCounter) funcs() interceptor.Funcs {
	return interceptor.Funcs{
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			return w.record("create", obj, func() error { return c.Create(ctx, obj, opts...) })
		},
		Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
			return w.record("update", obj, func() error { return c.Update(ctx, obj, opts...) })
		},
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, p client.Patch, opts ...client.PatchOption) error {
			return w.record("patch", obj, func() error { return c.Patch(ctx, obj, p, opts...) })
		},
		Delete: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
			return w.record("delete", obj, func() error { return c.Delete(ctx, obj, opts...) })
		},
		SubResourceUpdate: func(ctx context.Context, c client.Client, sub string, obj client.Object, opts ...client.SubResourceUpdateOption) error {
			return w.record("update/"+sub, obj, func() error { return c.SubResource(sub).Update(ctx, obj, opts...) })
		},
		SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, p client.Patch, opts ...client.SubResourcePatchOption) error {
			return w.record("patch/"+sub, obj, func() error { return c.SubResource(sub).Patch(ctx, obj, p, opts...) })
		},
	}
}

// operator is one running manager with the real reconciler, over a world of its own.
type operator struct {
	world      *world
	writes     *writeCounter
	reconciler *AerospikeClusterReconciler
	cancel     context.CancelFunc
	done       chan struct{}
	err        error
	// requests counts every HTTP request the manager sent to the API server.
	requests *atomic.Int64
}

// countingTransport counts the requests that go through it.
type countingTransport struct {
	next http.RoundTripper
	n    *atomic.Int64
}

func (t countingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	t.n.Add(1)
	return t.next.RoundTrip(req)
}

// startOperator runs a manager whose client counts (and may fail) writes, over the world w. It is
// stopped when the spec ends.
func startOperator(w *world, opCfg operations.Config, tune ...func(*ctrl.Options)) *operator {
	op, err := newOperator(w, opCfg, tune...)
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(op.stop)
	return op
}

// newOperator starts a manager with the real reconciler; the caller stops it.
func newOperator(w *world, opCfg operations.Config, tune ...func(*ctrl.Options)) (*operator, error) {
	opts := ctrl.Options{
		Scheme:                 scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		// The world's namespace only: the clusters earlier specs left behind (envtest deletes no namespace)
		// are not reconciled again by every later operator, nor counted in its writes.
		Cache: cacheFor(w.namespace),
		// Every test starts a manager of its own with the same controller name.
		Controller: config.Controller{SkipNameValidation: ptr.To(true)},
	}
	for _, t := range tune {
		t(&opts)
	}
	requests := &atomic.Int64{}
	counted := rest.CopyConfig(cfg)
	counted.Wrap(func(rt http.RoundTripper) http.RoundTripper { return countingTransport{rt, requests} })
	mgr, err := ctrl.NewManager(counted, opts)
	if err != nil {
		return nil, err
	}
	if w.prober != nil {
		if err := mgr.Add(w.prober); err != nil {
			return nil, err
		}
	}
	counter := &writeCounter{}
	c, err := client.NewWithWatch(counted, client.Options{Scheme: scheme, Cache: &client.CacheOptions{Reader: mgr.GetCache()}})
	if err != nil {
		return nil, err
	}
	wrapped := interceptor.NewClient(c, counter.funcs())
	recorder := mgr.GetEventRecorder("acko")
	var probers Prober = w
	if w.prober != nil {
		probers = w.prober
	}
	runner := tasks.New(10 * time.Second)
	if err := mgr.Add(runner); err != nil {
		return nil, err
	}
	statusWriter := status.NewWriter(wrapped, mgr.GetAPIReader())
	r := &AerospikeClusterReconciler{
		Client: wrapped, APIReader: mgr.GetAPIReader(), Scheme: scheme, Recorder: recorder, Probers: probers, Status: statusWriter,
		PollInterval: 500 * time.Millisecond, Tasks: runner, MaxConcurrentReconciles: w.workers, PodMonitors: w.podMonitors,
		Executor: &operations.Executor{Client: wrapped, Signaller: w, Tasks: runner, Status: statusWriter, Recorder: recorder,
			Config: opCfg},
	}
	if w.sim != nil {
		// The real applier, over the world's exec and the simulated nodes' info protocol.
		r.Live = &liveconfig.Applier{Pods: w, Info: aerospike.NewClient(aerospike.ClientOptions{})}
	}
	if err := r.SetupWithManager(mgr, w.healthEvents(), runner.Events()); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	op := &operator{world: w, writes: counter, reconciler: r, cancel: cancel, done: make(chan struct{}), requests: requests}
	go func() {
		defer close(op.done)
		if err := mgr.Start(ctx); err != nil {
			op.err = err
		}
	}()
	return op, nil
}

func (o *operator) stop() {
	o.cancel()
	<-o.done
	if o.err != nil {
		GinkgoWriter.Printf("manager ended with %v\n", o.err)
	}
}

// newNamespace creates a namespace for one test, with a world stepping its pods; tune sets the world
// up before its first step.
func newNamespace(tune ...func(*world)) (string, *world) {
	ns, w, stop, err := startWorld(tune...)
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(stop)
	return ns, w
}

// startWorld creates a namespace and steps a world in it until stop is called.
func startWorld(tune ...func(*world)) (string, *world, func(), error) {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "t-"}}
	if err := k8s.Create(context.Background(), ns); err != nil {
		return "", nil, nil, err
	}
	w := newWorld(k8s, ns.Name)
	for _, t := range tune {
		t(w)
	}
	ctx, cancel := context.WithCancel(context.Background())
	go w.run(ctx, 50*time.Millisecond)
	return ns.Name, w, cancel, nil
}

// cacheFor is the manager's cache (CacheOptions) limited to one test's namespace.
func cacheFor(namespace string) cache.Options {
	o := CacheOptions()
	o.DefaultNamespaces = map[string]cache.Config{namespace: {}}
	return o
}
