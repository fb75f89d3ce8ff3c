package operations_test

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	ackov1alpha1 "github.com/acko-io/acko/api/v1alpha1"
	"github.com/acko-io/acko/internal/aerospike"
	"github.com/acko-io/acko/internal/operations"
	"github.com/acko-io/acko/internal/podexec"
	"github.com/acko-io/acko/internal/pods"
	"github.com/acko-io/acko/internal/tasks"
)

// inPlace writes status by mutating the cluster it is given, as the real writer does after a write.
type inPlace struct{}

func (inPlace) WriteStatus(_ context.Context, c *ackov1alpha1.AerospikeCluster, mutate func(*ackov1alpha1.AerospikeClusterStatus)) error {
	mutate(&c.Status)
	return nil
}

// evictionAnswers is a client whose evictions the API server answers with err.
func evictionAnswers(err error) client.Client {
	scheme := runtime.NewScheme()
	Expect(clientgoscheme.AddToScheme(scheme)).To(Succeed())
	return fake.NewClientBuilder().WithScheme(scheme).WithInterceptorFuncs(interceptor.Funcs{
		SubResourceCreate: func(context.Context, client.Client, string, client.Object, client.Object, ...client.SubResourceCreateOption) error {
			return err
		},
	}).Build()
}

// tooManyBudgets is the API server's answer to an eviction of a pod that two budgets select.
var tooManyBudgets = &apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusFailure, Code: http.StatusInternalServerError,
	Message: "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support."}}

// pastThePodTimeout steps the operation once the pod's timeout has passed: it ends in Error, which it
// returns.
func pastThePodTimeout(e *operations.Executor, s *scene) *ackov1alpha1.OperationStatus {
	GinkgoHelper()
	at(cfg.PodTimeout + time.Second)(s)
	_, err := e.Step(context.Background(), s.c, s.obs)
	Expect(err).NotTo(HaveOccurred())
	op := s.c.Status.OperationStatus
	Expect(op.Phase).To(Equal(ackov1alpha1.OperationError))
	return op
}

// warmScene is a WarmRestart of c-1 recorded as begun, not attempted, whose door lets it go.
func warmScene() (*operations.Executor, scene) {
	s := build(current(warm, false), noAttempt)
	s.obs.Actuator = &actuator{}
	s.obs.ConfigHash = func(string) string { return "desired" }
	return &operations.Executor{Tasks: tasks.New(time.Minute), Status: inPlace{}, Config: cfg}, s
}

// Issue 22, point 9: a refused eviction of a PodRestart was a plain wait, and a pod under two budgets
// a reconcile failure: neither had a deadline.
var _ = Describe("A PodRestart whose eviction is refused", func() {
	DescribeTable("waits for the pod timeout, then ends the operation in Error saying why",
		func(answer error, says string) {
			e := &operations.Executor{Tasks: tasks.New(time.Minute), Status: inPlace{}, Config: cfg}
			s := build(current(cold, false))
			s.obs.Actuator = &actuator{client: evictionAnswers(answer)}

			res, err := e.Step(context.Background(), s.c, s.obs)
			Expect(err).NotTo(HaveOccurred(), "a refusal is a wait, not a reconcile failure")
			Expect(res.Waiting).To(ContainSubstring(says))
			Expect(s.c.Status.OperationStatus.Phase).To(Equal(ackov1alpha1.OperationInProgress))

			op := pastThePodTimeout(e, &s)
			Expect(op.FailedPods).To(Equal([]string{"c-1"}))
			Expect(op.Message).To(And(ContainSubstring("pod c-1 failed: could not be restarted within 1m0s: eviction of pod c-1 refused"),
				ContainSubstring(says)))
			Expect(s.c.Status.FinishedOperations).To(ContainElement("op"), "spec.operations is free again")
		},
		Entry("by the budget (429)", apierrors.NewTooManyRequests("Cannot evict pod as it would violate the pod's disruption budget.", 10),
			"would violate the pod's disruption budget"),
		Entry("because two budgets select the pod (500)", tooManyBudgets,
			"more than one PodDisruptionBudget, which the eviction subresource does not support"),
	)

	It("records the first refusal, and names the refusal when its time runs out between two attempts", func() {
		e := &operations.Executor{Tasks: tasks.New(time.Minute), Status: inPlace{}, Config: cfg}
		s := build(current(cold, false))
		door := ""
		s.obs.Actuator = &actuator{why: &door, client: evictionAnswers(tooManyBudgets)}

		_, err := e.Step(context.Background(), s.c, s.obs)
		Expect(err).NotTo(HaveOccurred())
		first := s.obs.Now
		Expect(operations.RefusedSince(s.c.Status.OperationStatus)).To(BeTemporally("==", first))

		at(40 * time.Second)(&s)
		_, err = e.Step(context.Background(), s.c, s.obs)
		Expect(err).NotTo(HaveOccurred())
		Expect(operations.RefusedSince(s.c.Status.OperationStatus)).To(BeTemporally("==", first), "counted from the first refusal")

		door = "waiting for a fresh reading of every node (c-0)"
		op := pastThePodTimeout(e, &s)
		Expect(op.Message).To(ContainSubstring("could not be restarted within 1m0s: eviction of pod c-1 refused"))
		Expect(op.Message).NotTo(ContainSubstring("fresh reading"))
		Expect(operations.RefusedSince(op)).To(BeZero())
	})

	It("forgets the refusal once the eviction goes out", func() {
		e := &operations.Executor{Tasks: tasks.New(time.Minute), Status: inPlace{}, Config: cfg}
		s := build(current(cold, false))
		door := &actuator{client: evictionAnswers(tooManyBudgets)}
		s.obs.Actuator = door
		_, err := e.Step(context.Background(), s.c, s.obs)
		Expect(err).NotTo(HaveOccurred())

		door.client = evictionAnswers(nil)
		_, err = e.Step(context.Background(), s.c, s.obs)
		Expect(err).NotTo(HaveOccurred())
		op := s.c.Status.OperationStatus
		Expect(op.CurrentPodSignalled).To(BeTrue())
		Expect(op.Message).To(BeEmpty())
		Expect(operations.RefusedSince(op)).To(BeZero())
	})

	It("still fails the reconcile on any other error (retried through the breaker)", func() {
		e := &operations.Executor{Tasks: tasks.New(time.Minute), Status: inPlace{}, Config: cfg}
		s := build(current(cold, false))
		s.obs.Actuator = &actuator{client: evictionAnswers(apierrors.NewInternalError(errors.New("etcd timeout")))}
		_, err := e.Step(context.Background(), s.c, s.obs)
		Expect(err).To(MatchError(ContainSubstring("etcd timeout")))
	})
})

// signalledScene is a WarmRestart signalled on c-1 whose copy was "copied", c-1 recording "before", in a
// fake API server.
func signalledScene() (scene, *corev1.Pod, client.Client, *operations.Executor) {
	GinkgoHelper()
	s := build(current(warm, true))
	s.c.Status.OperationStatus.CurrentPodConfigHash = "copied"
	pod := s.obs.Pods["c-1"]
	pod.Namespace, pod.Annotations = "ns", map[string]string{ackov1alpha1.AnnotationConfigHash: "before"}
	scheme := runtime.NewScheme()
	Expect(clientgoscheme.AddToScheme(scheme)).To(Succeed())
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(pod.DeepCopy()).Build()
	return s, pod, c, &operations.Executor{Client: c, Tasks: tasks.New(time.Minute), Status: inPlace{}, Config: cfg}
}

// Issue 22, point 8 through an operation: a WarmRestart copied a config asd refuses into the pod, which
// then crash-loops; the pod did not record it (only once back), so a spec reverted to its old config found
// the pod up to date and never replaced it (model seed 1634).
var _ = Describe("A signalled WarmRestart", func() {
	It("records the config copied into the pod at once, on that pod instance only", func() {
		s, pod, c, e := signalledScene()

		_, err := e.Step(context.Background(), s.c, s.obs) // asd has not restarted yet: the pod is not back
		Expect(err).NotTo(HaveOccurred())
		Expect(c.Get(context.Background(), client.ObjectKeyFromObject(pod), pod)).To(Succeed())
		Expect(pod.Annotations).To(HaveKeyWithValue(ackov1alpha1.AnnotationConfigHash, "copied"))

		recreated := pod.DeepCopy()
		recreated.UID, recreated.Annotations[ackov1alpha1.AnnotationConfigHash] = "c-1-new", "template"
		Expect(c.Update(context.Background(), recreated)).To(Succeed())
		s.obs.Pods["c-1"] = recreated
		_, err = e.Step(context.Background(), s.c, s.obs)
		Expect(err).NotTo(HaveOccurred())
		Expect(c.Get(context.Background(), client.ObjectKeyFromObject(pod), pod)).To(Succeed())
		Expect(pod.Annotations).To(HaveKeyWithValue(ackov1alpha1.AnnotationConfigHash, "template"),
			"a recreated pod's copy came from the ConfigMap")
	})

	// Model seed 69975: a replication-factor change set live after the restart recorded its config on the
	// pod (and copied its file); the operation recorded the restart's config over it, and the pod read as
	// running the spec's factor while its node ran the live one.
	It("records it once: a config the pod records later stands", func() {
		s, pod, c, e := signalledScene()
		_, err := e.Step(context.Background(), s.c, s.obs)
		Expect(err).NotTo(HaveOccurred())
		Expect(s.c.Status.OperationStatus.CurrentPodConfigHash).To(BeEmpty(), "the status forgets what was recorded")

		Expect(c.Get(context.Background(), client.ObjectKeyFromObject(pod), pod)).To(Succeed())
		pod.Annotations[ackov1alpha1.AnnotationConfigHash] = "live"
		Expect(c.Update(context.Background(), pod)).To(Succeed())
		s.obs.Pods["c-1"] = pod.DeepCopy()
		for range 3 {
			_, err = e.Step(context.Background(), s.c, s.obs)
			Expect(err).NotTo(HaveOccurred())
		}
		Expect(c.Get(context.Background(), client.ObjectKeyFromObject(pod), pod)).To(Succeed())
		Expect(pod.Annotations).To(HaveKeyWithValue(ackov1alpha1.AnnotationConfigHash, "live"))
	})
})

// Model seed 189: a WarmRestart signalled a pod whose asd crash-looped (no reading, so no start time).
// Its restart could never be confirmed, and its readiness gate stayed held until the pod's timeout.
var _ = Describe("A WarmRestart of a pod whose node does not answer", func() {
	It("sends nothing until the node answers, and ends at the pod timeout if it never does", func() {
		e, s := warmScene()
		s.obs.Health.Nodes["c-1"] = aerospike.NodeHealth{ReadAt: s.obs.Now, Err: aerospike.ErrUnreachable}

		res, err := e.Step(context.Background(), s.c, s.obs)
		Expect(err).NotTo(HaveOccurred())
		Expect(res.Waiting).To(Equal("pod c-1's Aerospike node does not answer"))
		Expect(s.c.Status.OperationStatus.CurrentPodAttempted).To(BeNil(), "no attempt is recorded")

		op := pastThePodTimeout(e, &s)
		Expect(op.Message).To(ContainSubstring("could not be restarted within 1m0s: pod c-1's Aerospike node does not answer"))
	})

	It("signals once it answers, recording when its asd had started", func() {
		e, s := warmScene()

		res, err := e.Step(context.Background(), s.c, s.obs)
		Expect(err).NotTo(HaveOccurred())
		Expect(res.Waiting).To(Equal("preparing the restart of pod c-1 in place"))
		op := s.c.Status.OperationStatus
		Expect(op.CurrentPodAttempted).NotTo(BeNil())
		Expect(op.CurrentPodNodeStartedBefore.Time).To(BeTemporally("==", s.obs.Health.NodeStarted("c-1")))
	})
})

// actuator stands in for the cluster reconciler's: its door says why (nil: it lets every pod go), and it
// then evicts through client, or signals through sig on runner, as the real one does.
type actuator struct {
	why    *string
	client client.Client
	runner *tasks.Runner
	sig    podexec.Signaller
}

func (a *actuator) MayTakeDown(context.Context, string, bool) (string, error) {
	if a.why == nil {
		return "", nil
	}
	return *a.why, nil
}

func (a *actuator) Evict(ctx context.Context, pod *corev1.Pod, uid types.UID) (string, string, error) {
	if why, _ := a.MayTakeDown(ctx, pod.Name, false); why != "" {
		return why, "", nil
	}
	refused, err := pods.Remove(ctx, a.client, pod, uid, true)
	return "", refused, err
}

func (a *actuator) Signal(ctx context.Context, pod *corev1.Pod, task tasks.Key) (string, error) {
	if why, _ := a.MayTakeDown(ctx, pod.Name, true); why != "" {
		return why, nil
	}
	a.runner.Run(task, func(ctx context.Context) (string, error) { return "", a.sig.SignalRestart(ctx, pod) })
	return "", nil
}

// signals records what a WarmRestart does to the pods: preparations, then signals.
type signals struct {
	podexec.Signaller
	mu                  sync.Mutex
	prepared, signalled []string
}

func (f *signals) PrepareRestart(_ context.Context, pod *corev1.Pod, _ string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.prepared = append(f.prepared, pod.Name)
	return nil
}

func (f *signals) SignalRestart(_ context.Context, pod *corev1.Pod) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.signalled = append(f.signalled, pod.Name)
	return nil
}

func (f *signals) seen() (prepared, signalled []string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.prepared), slices.Clone(f.signalled)
}

// Issue 38: the door said yes, then a background task ran three execs and the signal with no look again:
// a node that went down meanwhile was not seen. The signal is an act of its own: it goes through the door
// once the pod is prepared, and not while the door holds it.
var _ = Describe("A WarmRestart's signal", func() {
	It("goes through the door again once the pod is prepared, and nothing is signalled while it holds", func() {
		s, sig, door, step := signalScene()

		Expect(step()).To(Equal("preparing the restart of pod c-1 in place"))
		*door = "another node went down meanwhile"
		Expect(step()).To(Equal(*door))
		prepared, signalled := sig.seen()
		Expect(prepared).To(Equal([]string{"c-1"}))
		Expect(signalled).To(BeEmpty(), "no signal while the door holds it")
		Expect(step()).To(Equal(*door), "the prepared attempt waits for the door, not for a settle delay")

		*door = ""
		Expect(step()).To(Equal("restarting pod c-1 in place"))
		Expect(step()).To(BeEmpty())
		prepared, signalled = sig.seen()
		Expect(prepared).To(Equal([]string{"c-1"}), "prepared once")
		Expect(signalled).To(Equal([]string{"c-1"}))
		Expect(s.c.Status.OperationStatus.CurrentPodSignalled).To(BeTrue())
	})

	// A live change recorded on the pod while its prepared signal waited at the door copied its own file
	// over the prepared one: the signal would load it while the operation records the prepared config.
	It("is prepared again when the pod recorded another config since its copy", func() {
		s, sig, door, step := signalScene()
		Expect(step()).To(Equal("preparing the restart of pod c-1 in place"))
		*door = "the replication-factor change reaches every node first"
		Expect(step()).To(Equal(*door))
		s.obs.Pods["c-1"].Annotations = map[string]string{ackov1alpha1.AnnotationConfigHash: "set live"}
		*door = ""

		Expect(step()).To(Equal("preparing the restart of pod c-1 in place"))
		Expect(step()).To(Equal("restarting pod c-1 in place"))
		Expect(step()).To(BeEmpty())
		prepared, signalled := sig.seen()
		Expect(prepared).To(Equal([]string{"c-1", "c-1"}))
		Expect(signalled).To(Equal([]string{"c-1"}))
	})
})

// Model seed 66859: a drain recreated the operation's pod between its choice and the signal; the attempt
// went to the new pod, whose UID the operation did not know, so the config it loaded (one asd refuses)
// was never recorded, and after the user's fix the pod read as running it.
var _ = Describe("A WarmRestart of a pod recreated before its signal", func() {
	It("prepares the new pod and records the attempt on it", func() {
		s, sig, door, step := signalScene()
		Expect(step()).To(Equal("preparing the restart of pod c-1 in place"))
		*door = "the cluster is not stable"
		Expect(step()).To(Equal(*door))
		recreated := s.obs.Pods["c-1"].DeepCopy()
		recreated.UID = "c-1-new"
		s.obs.Pods["c-1"] = recreated
		*door = ""

		Expect(step()).To(Equal("preparing the restart of pod c-1 in place"))
		Expect(s.c.Status.OperationStatus.CurrentPodUID).To(Equal("c-1-new"))
		Expect(step()).To(Equal("restarting pod c-1 in place"))
		Expect(step()).To(BeEmpty())
		prepared, signalled := sig.seen()
		Expect(prepared).To(HaveLen(2))
		Expect(signalled).To(Equal([]string{"c-1"}))
	})
})

// signalScene is a WarmRestart whose tasks run in a real runner: step takes the finished tasks' results
// and steps once, and door is what the door answers.
func signalScene() (s scene, sig *signals, door *string, step func() string) {
	e, s := warmScene()
	runner, sig := tasks.New(time.Minute), &signals{}
	ctx, stop := context.WithCancel(context.Background())
	DeferCleanup(stop)
	go func() { _ = runner.Start(ctx) }()
	probe := tasks.Key{Cluster: types.NamespacedName{Namespace: "t", Name: "probe"}, Name: "probe"}
	Eventually(func() error { // the runner runs tasks once Start has set its context
		runner.Run(probe, func(context.Context) (string, error) { return "", nil })
		Eventually(func() bool { _, busy := runner.Busy(probe.Cluster); return busy }).Should(BeFalse())
		return runner.Take(probe.Cluster)[probe.Name].Err
	}).Should(Succeed())
	e.Tasks, e.Signaller = runner, sig
	door = new(string)
	s.obs.Actuator = &actuator{why: door, runner: runner, sig: sig}
	key := types.NamespacedName{Namespace: "ns", Name: "c"}
	step = func() string {
		GinkgoHelper()
		Eventually(func() bool { _, busy := runner.Busy(key); return busy }).Should(BeFalse())
		s.obs.Results = runner.Take(key)
		res, err := e.Step(context.Background(), s.c, s.obs)
		Expect(err).NotTo(HaveOccurred())
		return res.Waiting
	}
	return s, sig, door, step
}
