package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	clienttesting "k8s.io/client-go/testing"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	ackov1alpha1 "github.com/acko-io/acko/api/v1alpha1"
	"github.com/acko-io/acko/internal/aerospike"
	"github.com/acko-io/acko/internal/config"
	"github.com/acko-io/acko/internal/liveconfig"
	"github.com/acko-io/acko/internal/podexec"
	"github.com/acko-io/acko/internal/resources"
)

// The model's world: the API server (controller-runtime's fake client), the controllers and kubelet
// that envtest would not run either (a StatefulSet stand-in with OnDelete, a kubelet honouring readiness
// gates, the disruption controller through world.syncBudgets, evictions through the budget), the
// reconciler's lagging cache, and the Aerospike nodes behind a fake prober. Everything runs on the
// model's clock and its seeded RNG, one step at a time, so a seed replays exactly.

// modelNode is one pod instance's asd as the model sees it.
type modelNode struct {
	uid     types.UID
	up      bool      // asd runs (false for the seconds of a crash)
	upAt    time.Time // when a crashed asd comes back
	started time.Time
	// containerAt is when the container started (its status's startedAt): a restart in place restarts
	// asd under tini, not the container.
	containerAt time.Time
	// hasData: the node holds every partition copy the cluster placed on it (false from a restart
	// until the migrations that follow end: in-memory data does not survive asd).
	hasData bool
	// remade: migrations ended while the node was not a member (or it never was one): the others hold
	// every copy, and removing its pod takes none.
	remade    bool
	hung      bool
	releaseAt time.Time
	side      int // 0: the main cluster; 1: the other side of a split
	rf        int
	conf      string // the pod's own copy of aerospike.conf: what asd loads when it restarts
	copied    string // what its init container copied when the pod started (its report container says)
	ip        string
	crashLoop bool // asd refuses its config
	refusedAt time.Time
	k8s       string // the Kubernetes node of its local claim ("" without local volumes)
	lost      bool   // that node is lost: asd is cut off, its data kept on the claim
}

type modelWorld struct {
	ns, name string
	clk      *clocktesting.FakeClock
	rng      *rand.Rand
	scheme   *runtime.Scheme
	api      client.WithWatch
	tracker  clienttesting.ObjectTracker
	cache    *laggingCache

	nodes map[string]*modelNode // by pod name
	// gone are nodes that left (scale down, eviction, deletion) whose copies are not remade yet: they
	// count as without their data until the migrations after them end.
	gone map[string]bool
	// copies is how many copies every partition has now: the running replication factor.
	copies         int
	members        map[int][]string // membership per side
	instances      map[int][]string // the asd instances of each side at the last step
	migratingUntil map[int]time.Time
	splitHealAt    time.Time
	splitSince     time.Time

	// The fake prober.
	probe      *aerospike.ProbeSpec
	readings   aerospike.ClusterHealth
	polled     bool
	lastPoll   time.Time
	pollNow    bool
	probeSplit time.Time
	fresh      bool // poll at every step (stale readings off)

	uidSeq       int
	lbSeq        int // load-balancer ingress IPs given
	apiDownUntil time.Time
	// killAfter, when > 0, kills the operator after that many more API writes of the reconciler.
	killAfter int
	killed    bool
	// signalOut decides whether a signal sent by a killed operator's task still went out.
	signalOut bool
	// refuseUpdate, when set, refuses the operator's updates and patches of the objects it names (an
	// admission policy, a quota): its error is the API server's answer.
	refuseUpdate func(client.Object) error
	// together is the operator's ApplyTogether waiting for the migrations it started (a task that spans
	// steps); parked says that it waits, for the model's step, which waits for the other tasks to end.
	together *togetherWait
	parked   atomic.Bool

	// Local volumes (model_lost_test.go): the Kubernetes nodes lost now, the pods whose claims the
	// operator gave up and whose successors did not refill yet, the partitions with no copy in the cluster.
	// splitOff: the lost nodes whose pod was on the other side of a split when they were lost (its side's
	// writes are on its claim only). lostCopies: the pods whose claims, on a lost node, hold copies the
	// members have not made again (until migrations end without them). unmerged: the pods whose node
	// served on the other side of a split (AP mode: it may have taken writes alone) and whose claim holds
	// them until migrations end with it among the main side's members.
	unmerged   map[string]bool
	k8sSeq     int
	k8sLost    map[string]bool
	splitOff   map[string]bool
	emptied    map[string]bool
	lostCopies map[string]bool
	absent     []*absentSet
	// outOfService: the lost nodes tainted node.kubernetes.io/out-of-service (shut down by their admin);
	// accepted: the pods the user annotated acko.io/accept-data-loss=true, and since when the operator
	// asked for it (acceptAsked).
	outOfService map[string]bool
	accepted     map[string]bool
	acceptAsked  map[string]time.Time

	steps      int
	trace      []string
	violations []string
	stepActs   map[string]int
}

func modelScheme() *runtime.Scheme {
	s, builder := runtime.NewScheme(), runtime.NewSchemeBuilder(clientgoscheme.AddToScheme, ackov1alpha1.AddToScheme)
	utilruntime.Must(builder.AddToScheme(s))
	return s
}

// uidPrecondition refuses a delete whose UID precondition is not the stored object's: 409 Conflict.
func uidPrecondition(ctx context.Context, c client.Client, obj client.Object, opts []client.DeleteOption) error {
	do := &client.DeleteOptions{}
	do.ApplyOptions(opts)
	if do.Preconditions == nil || do.Preconditions.UID == nil {
		return nil
	}
	current, ok := obj.DeepCopyObject().(client.Object)
	if !ok {
		return nil
	}
	if err := c.Get(ctx, client.ObjectKeyFromObject(obj), current); err != nil {
		return err
	}
	if current.GetUID() != *do.Preconditions.UID {
		gvk, _ := apiutil.GVKForObject(obj, c.Scheme())
		return apierrors.NewConflict(schema.GroupResource{Group: gvk.Group, Resource: strings.ToLower(gvk.Kind) + "s"}, obj.GetName(),
			fmt.Errorf("precondition failed: UID in precondition: %s, UID in object meta: %s", *do.Preconditions.UID, current.GetUID()))
	}
	return nil
}

// uidUnchanged refuses, as the API server does (metadata.uid: field is immutable), a patch that sets
// another UID than the stored object's.
func uidUnchanged(ctx context.Context, c client.Client, obj client.Object, p client.Patch) error {
	data, err := p.Data(obj)
	if err != nil {
		return err
	}
	var patch struct {
		Metadata struct {
			UID types.UID `json:"uid"`
		} `json:"metadata"`
	}
	if json.Unmarshal(data, &patch) != nil || patch.Metadata.UID == "" {
		return nil
	}
	current := obj.DeepCopyObject().(client.Object)
	if err := c.Get(ctx, client.ObjectKeyFromObject(obj), current); err != nil {
		return err
	}
	if current.GetUID() != patch.Metadata.UID {
		gvk, _ := apiutil.GVKForObject(obj, c.Scheme())
		return apierrors.NewInvalid(gvk.GroupKind(), obj.GetName(), field.ErrorList{
			field.Invalid(field.NewPath("metadata", "uid"), patch.Metadata.UID, "field is immutable")})
	}
	return nil
}

var modelEpoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func newModelWorld(seed uint64, cluster *ackov1alpha1.AerospikeCluster) *modelWorld {
	s := modelScheme()
	// A plain tracker: the field-managed one rebuilds a REST mapper on every write. The world reads the
	// tracker directly: the fake client's reads round-trip every object through JSON.
	tracker := clienttesting.NewObjectTracker(s, serializer.NewCodecFactory(s).UniversalDecoder())
	store := fake.NewClientBuilder().WithScheme(s).WithObjectTracker(tracker).
		WithStatusSubresource(&ackov1alpha1.AerospikeCluster{}, &corev1.Pod{}, &appsv1.StatefulSet{}, &policyv1.PodDisruptionBudget{}).
		Build()
	var w *modelWorld
	// The API server gives every object a UID (owner references are matched by it), refuses a patch that
	// would change it (metadata.uid is immutable: a patch carrying an older instance's UID never lands on
	// a newer object of the name, where the fake client would rewrite the UID), and gives a budget a new
	// generation when its spec changes: evictions wait until the disruption controller observed it.
	api := interceptor.NewClient(store, interceptor.Funcs{
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, p client.Patch, opts ...client.PatchOption) error {
			if err := uidUnchanged(ctx, c, obj, p); err != nil {
				return err
			}
			return c.Patch(ctx, obj, p, opts...)
		},
		// A delete with a UID precondition deletes only that instance, as the API server's does (the fake
		// client checks only a resourceVersion).
		Delete: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
			if err := uidPrecondition(ctx, c, obj, opts); err != nil {
				return err
			}
			return c.Delete(ctx, obj, opts...)
		},
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			if obj.GetUID() == "" {
				w.uidSeq++
				obj.SetUID(types.UID(fmt.Sprintf("uid-%d", w.uidSeq)))
			}
			if _, ok := obj.(*policyv1.PodDisruptionBudget); ok {
				obj.SetGeneration(1)
			}
			return c.Create(ctx, obj, opts...)
		},
		Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
			if pdb, ok := obj.(*policyv1.PodDisruptionBudget); ok {
				old := &policyv1.PodDisruptionBudget{}
				if err := c.Get(ctx, client.ObjectKeyFromObject(pdb), old); err != nil {
					return err
				}
				pdb.Generation = old.Generation
				if !equality.Semantic.DeepEqual(old.Spec, pdb.Spec) {
					pdb.Generation++
				}
			}
			return c.Update(ctx, obj, opts...)
		},
	})
	w = &modelWorld{
		ns: cluster.Namespace, name: cluster.Name,
		clk: clocktesting.NewFakeClock(modelEpoch), rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)),
		scheme: s, api: api, tracker: tracker, cache: newLaggingCache(s),
		nodes: map[string]*modelNode{}, gone: map[string]bool{}, copies: 2,
		members: map[int][]string{}, instances: map[int][]string{}, migratingUntil: map[int]time.Time{}, stepActs: map[string]int{},
		k8sLost: map[string]bool{}, splitOff: map[string]bool{}, emptied: map[string]bool{},
		lostCopies: map[string]bool{}, unmerged: map[string]bool{},
		outOfService: map[string]bool{}, accepted: map[string]bool{}, acceptAsked: map[string]time.Time{},
	}
	for _, class := range modelStorageClasses() {
		if err := api.Create(context.Background(), class); err != nil {
			panic(err)
		}
	}
	cluster.Generation = 1
	if err := api.Create(context.Background(), cluster); err != nil {
		panic(err)
	}
	return w
}

func (w *modelWorld) now() time.Time { return w.clk.Now() }

func (w *modelWorld) logf(format string, args ...any) {
	w.trace = append(w.trace, fmt.Sprintf("%7.1fs ", w.now().Sub(modelEpoch).Seconds())+fmt.Sprintf(format, args...))
}

func (w *modelWorld) violate(kind, format string, args ...any) {
	if len(w.violations) > 0 {
		return // the first is the finding; what follows from it is noise
	}
	msg := kind + ": " + fmt.Sprintf(format, args...)
	w.violations = append(w.violations, msg)
	w.logf("VIOLATION %s", msg)
}

func (w *modelWorld) cluster() *ackov1alpha1.AerospikeCluster {
	got, err := w.tracker.Get(ackov1alpha1.GroupVersion.WithResource("aerospikeclusters"), w.ns, w.name)
	if err != nil {
		panic(err)
	}
	return got.(*ackov1alpha1.AerospikeCluster)
}

// editSpec is the user's kubectl edit: a new generation.
func (w *modelWorld) editSpec(what string, mutate func(*ackov1alpha1.AerospikeCluster)) {
	c := w.cluster()
	mutate(c)
	c.Generation++
	if err := w.api.Update(context.Background(), c); err != nil {
		panic(err)
	}
	w.logf("user: %s", what)
}

// list reads the API server's objects of a kind in the namespace, straight from the tracker.
func (w *modelWorld) list(list client.ObjectList) {
	gvk, err := apiutil.GVKForObject(list, w.scheme)
	if err != nil {
		panic(err)
	}
	gvk.Kind = strings.TrimSuffix(gvk.Kind, "List")
	gvr, _ := meta.UnsafeGuessKindToResource(gvk)
	got, err := w.tracker.List(gvr, gvk, w.ns)
	if err != nil {
		panic(err)
	}
	reflect.ValueOf(list).Elem().Set(reflect.ValueOf(got).Elem())
}

func (w *modelWorld) pods() map[string]*corev1.Pod {
	list := &corev1.PodList{}
	w.list(list)
	out := map[string]*corev1.Pod{}
	for i := range list.Items {
		out[list.Items[i].Name] = &list.Items[i]
	}
	return out
}

// tick lets dt of model time pass and runs every controller of the world once.
func (w *modelWorld) tick(ctx context.Context, dt time.Duration) {
	w.clk.Step(dt)
	now := w.now()
	for name, n := range w.nodes {
		if !n.up && !n.crashLoop && !n.upAt.IsZero() && !now.Before(n.upAt) {
			n.up, n.started, n.upAt = true, now, time.Time{}
			w.logf("asd of %s is back, empty", name)
		}
		if n.hung && !n.releaseAt.IsZero() && !now.Before(n.releaseAt) {
			n.hung = false
			w.logf("node %s answers again", name)
		}
	}
	if !w.splitHealAt.IsZero() && (!now.Before(w.splitHealAt) || !w.anyOnOtherSide()) {
		w.heal()
	}
	w.syncStatefulSets(ctx, w.pods())
	pods := w.pods()
	w.kubelet(ctx, pods)
	w.resizeClaims(ctx)
	w.disruptionController(ctx, pods)
	w.loadBalancers(ctx)
	w.aerospike()
	w.poll()
}

// anyOnOtherSide: a node of the split's other side still exists (a pod recreated meanwhile joins the
// main cluster, so the split ends with its last node's pod).
func (w *modelWorld) anyOnOtherSide() bool {
	for _, n := range w.nodes {
		if n.side != 0 {
			return true
		}
	}
	return false
}

func (w *modelWorld) heal() {
	for _, n := range w.nodes {
		n.side = 0
	}
	w.splitHealAt, w.splitSince = time.Time{}, time.Time{}
	w.logf("the mesh heals")
}

// syncStatefulSets is the StatefulSet controller with OnDelete: pods up to replicas, created from the
// current template with new UIDs; pods beyond replicas deleted, highest first.
func (w *modelWorld) syncStatefulSets(ctx context.Context, pods map[string]*corev1.Pod) {
	sets := &appsv1.StatefulSetList{}
	w.list(sets)
	for i := range sets.Items {
		sts := &sets.Items[i]
		replicas := int(ptr.Deref(sts.Spec.Replicas, 1))
		w.adoptOrphans(ctx, sts, pods)
		for name, pod := range pods {
			if !metav1.IsControlledBy(pod, sts) {
				continue
			}
			if o, _ := strconv.Atoi(name[strings.LastIndex(name, "-")+1:]); o >= replicas && pod.DeletionTimestamp == nil {
				// Judged when the operator lowered the replicas (judgeLowered).
				w.takeDown(name, "StatefulSet controller (replicas "+strconv.Itoa(replicas)+")")
				w.removePod(ctx, pod)
			}
		}
		for o := range replicas {
			name := fmt.Sprintf("%s-%d", sts.Name, o)
			if pods[name] == nil {
				w.createPod(ctx, sts, name)
			}
		}
	}
	// Pods whose StatefulSet is gone are deleted by the garbage collector.
	for name, pod := range pods {
		if ref := metav1.GetControllerOf(pod); ref != nil && !slices.ContainsFunc(sets.Items, func(s appsv1.StatefulSet) bool {
			return s.UID == ref.UID
		}) && pod.DeletionTimestamp == nil {
			w.takeDown(name, "garbage collector")
			w.removePod(ctx, pod)
		}
	}
}

// adoptOrphans gives the StatefulSet the pods of its name that have no controller (it was deleted
// with orphan propagation and created again), as the StatefulSet controller adopts them.
func (w *modelWorld) adoptOrphans(ctx context.Context, sts *appsv1.StatefulSet, pods map[string]*corev1.Pod) {
	for name, pod := range pods {
		if _, err := strconv.Atoi(strings.TrimPrefix(name, sts.Name+"-")); err != nil ||
			!strings.HasPrefix(name, sts.Name+"-") || metav1.GetControllerOf(pod) != nil {
			continue
		}
		pod.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(sts, appsv1.SchemeGroupVersion.WithKind("StatefulSet"))}
		if err := w.api.Update(ctx, pod); err != nil {
			panic(err)
		}
	}
}

// judgeCreated judges a StatefulSet created with fewer replicas than the pods of its name that run:
// the StatefulSet controller adopts and deletes them at once, the operator's act.
func (w *modelWorld) judgeCreated(obj client.Object) {
	sts, isSet := obj.(*appsv1.StatefulSet)
	if !isSet {
		return
	}
	for name, pod := range w.pods() {
		o, err := strconv.Atoi(strings.TrimPrefix(name, sts.Name+"-"))
		if err == nil && strings.HasPrefix(name, sts.Name+"-") && o >= int(ptr.Deref(sts.Spec.Replicas, 1)) &&
			pod.DeletionTimestamp == nil {
			w.takeDown(name, fmt.Sprintf("operator (StatefulSet %s created with %d replicas)", sts.Name, ptr.Deref(sts.Spec.Replicas, 1)))
		}
	}
}

func (w *modelWorld) createPod(ctx context.Context, sts *appsv1.StatefulSet, name string) {
	t := sts.Spec.Template
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: w.ns,
			Labels: maps.Clone(t.Labels), Annotations: maps.Clone(t.Annotations),
			CreationTimestamp: metav1.NewTime(w.now()),
			OwnerReferences:   []metav1.OwnerReference{*metav1.NewControllerRef(sts, appsv1.SchemeGroupVersion.WithKind("StatefulSet"))},
		},
		Spec: *t.Spec.DeepCopy(),
	}
	k8s, lost := w.mountClaims(ctx, sts, pod)
	if err := w.api.Create(ctx, pod); err != nil {
		panic(err)
	}
	// Without its file the init container's cp fails: the pod crash-loops like on a refused config.
	conf := w.configOf(ctx, pod)
	refused := conf == "" || refusedConfig(conf)
	w.nodes[name] = &modelNode{uid: pod.UID, up: !refused, started: w.now(), containerAt: w.now(), rf: replicationOf(conf), conf: conf, copied: conf,
		crashLoop: refused, refusedAt: w.now(), remade: true, k8s: k8s, lost: lost, ip: fmt.Sprintf("10.0.%d.%d", w.uidSeq/250, w.uidSeq%250+1)}
	w.logf("pod %s created (%s)", name, pod.UID)
}

// configOf is what the init container copies: the pod's own file of the ConfigMap its pod spec mounts
// (not the one the spec names now: a layout change past the webhook names another), as it is now.
func (w *modelWorld) configOf(ctx context.Context, pod *corev1.Pod) string {
	cm := &corev1.ConfigMap{}
	if err := w.api.Get(ctx, client.ObjectKey{Namespace: w.ns, Name: configMapNameOf(pod)}, cm); err != nil {
		return ""
	}
	return cm.Data[config.PodFileKey(pod.Name, "")]
}

var replicationFactorLine = regexp.MustCompile(`replication-factor\s+(\d+)`)

// replicationOf is the smallest replication-factor of a rendered aerospike.conf (2 by default).
func replicationOf(conf string) int {
	rf := 0
	for _, m := range replicationFactorLine.FindAllStringSubmatch(conf, -1) {
		if v, _ := strconv.Atoi(m[1]); rf == 0 || v < rf {
			rf = v
		}
	}
	if rf == 0 {
		return 2
	}
	return rf
}

// modelRefusedSetting stands for a config the validator cannot foresee asd refusing (say a path that
// does not exist in the image): the model's asd exits on it.
const modelRefusedSetting = "proto-fd-max 77777"

func refusedConfig(conf string) bool { return strings.Contains(conf, modelRefusedSetting) }

func (w *modelWorld) removePod(ctx context.Context, pod *corev1.Pod) {
	if w.onLostNode(pod) {
		w.deleteOnLostNode(ctx, pod)
	} else if err := client.IgnoreNotFound(w.api.Delete(ctx, pod)); err != nil {
		panic(err)
	}
	w.forget(pod.Name)
}

// forget is the pod's asd gone with its pod.
func (w *modelWorld) forget(name string) {
	if n := w.nodes[name]; n == nil || !n.holdsNothing() && (n.serving() || !n.remade) {
		w.gone[name] = true
	}
	delete(w.nodes, name)
}

// kubelet runs the pods: the Aerospike container runs (crash-looping on a refused config), ready while
// asd listens (a TCP probe: a hung asd still accepts), sidecars named never-ready never ready, and the
// pod Ready when its containers are and every readiness gate is True.
func (w *modelWorld) kubelet(ctx context.Context, pods map[string]*corev1.Pod) {
	for name, pod := range pods {
		n := w.nodes[name]
		if n == nil || n.uid != pod.UID {
			continue
		}
		if n.lost {
			w.lostKubelet(ctx, pod)
			continue
		}
		if n.conf == "" {
			w.copyFileAgain(ctx, pod, n)
		}
		want := pod.Status.DeepCopy()
		want.Phase, want.PodIP = corev1.PodRunning, n.ip
		aero := w.aerospikeContainer(pod, n)
		want.InitContainerStatuses = []corev1.ContainerStatus{{Name: resources.ConfigInitContainer, Ready: true,
			State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 0, Reason: "Completed"}}},
			{Name: resources.ConfigReportContainer, Ready: true, State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
				ExitCode: 0, Reason: "Completed", Message: terminationLog(n.copied)}}}}
		want.ContainerStatuses = []corev1.ContainerStatus{aero}
		ready := aero.Ready
		for _, c := range pod.Spec.Containers {
			if c.Name != ackov1alpha1.AerospikeContainerName {
				sidecarReady := c.Name != modelNeverReadySidecar
				ready = ready && sidecarReady
				want.ContainerStatuses = append(want.ContainerStatuses, corev1.ContainerStatus{Name: c.Name, Ready: sidecarReady,
					State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}})
			}
		}
		setPodCondition(want, corev1.ContainersReady, ready, metav1.NewTime(w.now()))
		setPodCondition(want, corev1.PodReady, ready && gatesTrue(pod), metav1.NewTime(w.now()))
		if podStatusEqual(&pod.Status, want) {
			continue
		}
		pod.Status = *want
		if err := w.api.Status().Update(ctx, pod); err != nil {
			panic(err)
		}
	}
}

// aerospikeContainer is the Aerospike container's status: running, ready while asd listens; on a config
// asd refuses, ended (asd exits, and tini with it) and, after modelBackOffAfter, in CrashLoopBackOff.
func (w *modelWorld) aerospikeContainer(pod *corev1.Pod, n *modelNode) corev1.ContainerStatus {
	aero := corev1.ContainerStatus{Name: ackov1alpha1.AerospikeContainerName, Image: resources.AerospikeImage(pod),
		Ready: n.up && !n.crashLoop, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(n.containerAt)}}}
	if !n.crashLoop {
		return aero
	}
	aero.LastTerminationState = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1,
		Reason: "Error", FinishedAt: metav1.NewTime(n.refusedAt)}}
	if w.now().Sub(n.refusedAt) >= modelBackOffAfter {
		aero.State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff",
			Message: "asd refused its config"}}
	}
	return aero
}

// copyFileAgain is the kubelet retrying the init container of a pod that found no file of its own (one
// waits for its external address): once the file is there, asd starts on it.
func (w *modelWorld) copyFileAgain(ctx context.Context, pod *corev1.Pod, n *modelNode) {
	conf := w.configOf(ctx, pod)
	if conf == "" {
		return
	}
	refused := refusedConfig(conf)
	n.conf, n.copied, n.rf, n.crashLoop, n.up, n.started, n.refusedAt = conf, conf, replicationOf(conf), refused, !refused, w.now(), w.now()
	n.containerAt = w.now()
	w.logf("the init container of %s copies its file at last", pod.Name)
}

// disruptionController counts each budget as Kubernetes' disruption controller does: the Ready pods
// are healthy; a budget by minAvailable (an integer) expects the pods there are, one by maxUnavailable the
// replicas of their controllers. A pod with no controller (orphaned, while a volume growth has its
// StatefulSet deleted) counts for nothing there ("UnmanagedPods"), and a pod whose controller cannot be
// found makes the budget fail safe: no disruption allowed (model hole 27).
func (w *modelWorld) disruptionController(ctx context.Context, pods map[string]*corev1.Pod) {
	pdbs := &policyv1.PodDisruptionBudgetList{}
	sets := &appsv1.StatefulSetList{}
	w.list(pdbs)
	w.list(sets)
	for i := range pdbs.Items {
		pdb := &pdbs.Items[i]
		want, ok := budgetStatus(pdb, pods, sets.Items)
		if !ok {
			want = pdb.Status
			want.DisruptionsAllowed = 0 // failSafe: the rest of the status stays as it was
		}
		if fmt.Sprint(pdb.Status) == fmt.Sprint(want) {
			continue
		}
		pdb.Status = want
		if err := w.api.Status().Update(ctx, pdb); err != nil {
			panic(err)
		}
	}
}

// budgetStatus is the budget's status over the pods (false when a pod's controller cannot be found).
func budgetStatus(pdb *policyv1.PodDisruptionBudget, pods map[string]*corev1.Pod, sets []appsv1.StatefulSet) (
	policyv1.PodDisruptionBudgetStatus, bool) {
	sel, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector)
	if err != nil {
		panic(err)
	}
	want := policyv1.PodDisruptionBudgetStatus{ObservedGeneration: pdb.Generation}
	scales := map[types.UID]int32{}
	for _, p := range pods {
		if !sel.Matches(labels.Set(p.Labels)) {
			continue
		}
		want.ExpectedPods++ // minAvailable's count; maxUnavailable's is the controllers' below
		if resources.PodReady(p) {
			want.CurrentHealthy++
		}
		ref := metav1.GetControllerOf(p)
		if ref == nil {
			continue // unmanaged
		}
		i := slices.IndexFunc(sets, func(s appsv1.StatefulSet) bool { return s.UID == ref.UID })
		if i < 0 {
			return want, false // "found no controllers for pod"
		}
		scales[ref.UID] = ptr.Deref(sets[i].Spec.Replicas, 1)
	}
	if pdb.Spec.MaxUnavailable != nil {
		want.ExpectedPods = 0
		for _, n := range scales {
			want.ExpectedPods += n
		}
		v, _ := intstr.GetScaledValueFromIntOrPercent(pdb.Spec.MaxUnavailable, int(want.ExpectedPods), true)
		want.DesiredHealthy = max(want.ExpectedPods-int32(v), 0)
	} else if pdb.Spec.MinAvailable != nil {
		v, _ := intstr.GetScaledValueFromIntOrPercent(pdb.Spec.MinAvailable, int(want.ExpectedPods), true)
		want.DesiredHealthy = int32(v)
	}
	want.DisruptionsAllowed = max(want.CurrentHealthy-want.DesiredHealthy, 0)
	return want, true
}

// modelBackOffAfter is how long a container that keeps exiting runs through restarts before the
// kubelet shows CrashLoopBackOff.
const modelBackOffAfter = 30 * time.Second

// modelNeverReadySidecar is a sidecar whose readiness probe never passes.
const modelNeverReadySidecar = "never-ready"

func podStatusEqual(a, b *corev1.PodStatus) bool {
	return fmt.Sprint(a.Phase, a.PodIP, a.InitContainerStatuses, a.ContainerStatuses, a.Conditions) ==
		fmt.Sprint(b.Phase, b.PodIP, b.InitContainerStatuses, b.ContainerStatuses, b.Conditions)
}

// terminationLog is what the kubelet keeps of a container's termination log: its last 4 KiB.
func terminationLog(file string) string { return file[max(0, len(file)-4096):] }

// holdsNothing: the node never held copies (new, and no migrations ended while it was a member): the
// others hold every copy, and taking it down takes none (a scale-up undone before it finished).
func (n *modelNode) holdsNothing() bool { return n.remade && !n.hasData }

// copiesRemade: the node is out of the cluster and migrations ended without it: the members hold its
// copies, and the copies the cluster has (copies) count among them only (model seed 70318: two lost nodes
// at replication-factor 3, the other two made their 2 copies again; giving both up lost nothing).
func (n *modelNode) copiesRemade() bool { return n.remade && !n.serving() }

// serving: the node answers and is in a cluster.
func (n *modelNode) serving() bool { return n.up && !n.hung && !n.crashLoop && !n.lost }

// aerospike forms the clusters (one per side of a split) and runs the migrations: a membership change
// starts them, and when they end every member holds its copies and the cluster has the copies its
// members' smallest replication-factor asks for.
func (w *modelWorld) aerospike() {
	now := w.now()
	sides, instances := map[int][]string{}, map[int][]string{}
	for _, name := range slices.Sorted(maps.Keys(w.nodes)) {
		if n := w.nodes[name]; n.serving() {
			sides[n.side] = append(sides[n.side], name)
			instances[n.side] = append(instances[n.side], fmt.Sprintf("%s/%s/%d", name, n.uid, n.started.UnixNano()))
		}
	}
	for _, name := range sides[1] {
		w.unmerged[name] = true
	}
	for side := range 2 {
		members := sides[side]
		w.members[side] = members
		if !slices.Equal(instances[side], w.instances[side]) {
			w.instances[side] = instances[side]
			if len(members) > 0 {
				end := now.Add(time.Duration(10+w.rng.IntN(50)) * time.Second)
				w.migratingUntil[side] = maxTime(w.migratingUntil[side], end)
			}
		}
		if until := w.migratingUntil[side]; !until.IsZero() && !now.Before(until) {
			w.migratingUntil[side] = time.Time{}
			w.migrationsEnded(side, members)
		}
	}
	if rf := w.smallestRF(sides[0]); rf > 0 && rf < w.copies {
		w.copies = rf
	}
}

func (w *modelWorld) migrationsEnded(side int, members []string) {
	for _, m := range members {
		w.nodes[m].hasData = true
	}
	if side != 0 {
		return
	}
	// The main side made its copies again among its members, split or not: the nodes that left hold
	// nothing it lacks. The other side's nodes keep what only they hold (what a split costs).
	clear(w.gone)
	if w.splitSince != (time.Time{}) {
		w.logf("migrations ended on the main side of the split")
		return
	}
	for name, n := range w.nodes {
		n.remade = !slices.Contains(members, name)
	}
	for pod := range w.lostCopies {
		delete(w.lostCopies, pod) // the members made its copies again (or it is one of them)
	}
	for _, m := range members {
		delete(w.unmerged, m)
	}
	w.refilled(members)
	if rf := w.smallestRF(members); rf > 0 {
		w.copies = min(rf, len(members))
	}
	w.logf("migrations ended: %d copies of every partition", w.copies)
}

func (w *modelWorld) smallestRF(members []string) int {
	rf := 0
	for _, m := range members {
		if r := w.nodes[m].rf; rf == 0 || r < rf {
			rf = r
		}
	}
	return rf
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

func (w *modelWorld) migrating(side int) bool { return !w.migratingUntil[side].IsZero() }

// withoutData are the nodes that do not hold their copies now: gone, down, hung, crash-looping or
// refilling after a restart.
func (w *modelWorld) withoutData() []string {
	out := slices.Collect(maps.Keys(w.gone))
	for name, n := range w.nodes {
		if !n.serving() || !n.hasData {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// takeDown records an act that takes pod's node (and its copies) away, and checks the safety rule at
// that moment: with the node, at most copies − 1 nodes may be without their data; and no node of a
// split cluster goes (its side may hold writes the other lacks).
func (w *modelWorld) takeDown(pod, by string) {
	n := w.nodes[pod]
	if n == nil || n.crashLoop || n.holdsNothing() || n.copiesRemade() {
		w.logf("%s removes %s, which holds nothing the members lack", by, pod)
		return
	}
	down := slices.DeleteFunc(w.withoutData(), func(p string) bool { return p == pod || w.nodes[p] != nil && w.nodes[p].copiesRemade() })
	w.logf("%s takes %s down (without data already: %v; copies %d)", by, pod, down, w.copies)
	if !strings.HasPrefix(by, "operator") && !strings.HasPrefix(by, "drain") {
		return
	}
	if len(down)+1 > w.copies-1 {
		w.violate("SafetyRule", "%s took %s down while %v were without their data: %d nodes without data, the %d copies allow %d",
			by, pod, down, len(down)+1, w.copies, w.copies-1)
	}
	// While split only an operation the user asked for may take a node down (point 6's decision).
	if !w.splitSince.IsZero() && w.now().Sub(w.splitSince) >= aerospike.DefaultSplitGrace && strings.HasPrefix(by, "operator") &&
		!w.operationRestarts(pod) {
		w.violate("SplitTakeDown", "%s took %s down while the nodes were split for %s", by, pod, w.now().Sub(w.splitSince))
	}
	if strings.HasPrefix(by, "operator") {
		w.countStep(pod)
	}
}

// operationRestarts: the pod is the current pod of the operation in progress.
func (w *modelWorld) operationRestarts(pod string) bool {
	op := w.cluster().Status.OperationStatus
	return op != nil && op.CurrentPod == pod && op.Phase == ackov1alpha1.OperationInProgress
}

// countStep checks that the operator acts once per recorded step: the step is the pod's recorded
// update, or the operation's current pod.
func (w *modelWorld) countStep(pod string) {
	c := w.cluster()
	step := ""
	if u := c.Status.Pods[pod].Update; u != nil {
		step = fmt.Sprintf("%s %s %s", pod, u.Method, u.Started.UTC().Format(time.RFC3339Nano))
	}
	if w.operationRestarts(pod) {
		step = "operation " + c.Status.OperationStatus.ID + " " + pod
	}
	// A give-up of a lost node's volumes is recorded in status.pods[].volumesGivenUp.
	if g := c.Status.Pods[pod].VolumesGivenUp; g != nil && w.nodes[pod] != nil && g.UID == string(w.nodes[pod].uid) {
		step = "volumes of " + pod + " given up " + g.UID
	}
	if step == "" {
		w.violate("UnrecordedTakeDown", "%s was taken down with no step recorded in status", pod)
		return
	}
	w.stepActs[step]++
	if w.stepActs[step] > 1 {
		w.violate("TwiceForOneStep", "step %q carried out %d times", step, w.stepActs[step])
	}
}

// crash makes asd exit; it is back empty a moment later (in-memory data does not survive it).
func (w *modelWorld) crash(pod string) {
	n := w.nodes[pod]
	w.takeDown(pod, "crash of asd")
	n.up, n.hasData, n.upAt = false, false, w.now().Add(time.Duration(1+w.rng.IntN(3))*time.Second)
}

// evict is the API server's eviction: through the one budget over the pod (429 when it allows no
// disruption, 500 when more than one budget selects the pod), with the UID precondition.
func (w *modelWorld) evict(ctx context.Context, name string, uid *types.UID, by string) error {
	pod := &corev1.Pod{}
	if err := w.api.Get(ctx, client.ObjectKey{Namespace: w.ns, Name: name}, pod); err != nil {
		return err
	}
	if uid != nil && *uid != pod.UID {
		return apierrors.NewConflict(schema.GroupResource{Resource: "pods"}, name, errors.New("UID precondition failed"))
	}
	if err := w.budgetAllows(ctx, pod, by); err != nil {
		return err
	}
	w.takeDown(name, by+" (eviction)")
	w.removePod(ctx, pod)
	return nil
}

// budgetAllows is the eviction's look at the budgets over the pod; a Ready pod evicted takes one of the
// disruptions allowed.
func (w *modelWorld) budgetAllows(ctx context.Context, pod *corev1.Pod, by string) error {
	pdbs := &policyv1.PodDisruptionBudgetList{}
	w.list(pdbs)
	var over []*policyv1.PodDisruptionBudget
	for i := range pdbs.Items {
		sel, err := metav1.LabelSelectorAsSelector(pdbs.Items[i].Spec.Selector)
		if err == nil && sel.Matches(labels.Set(pod.Labels)) {
			over = append(over, &pdbs.Items[i])
		}
	}
	switch {
	case len(over) > 1:
		return apierrors.NewInternalError(errors.New("this pod has more than one PodDisruptionBudget, which the eviction subresource does not support"))
	case len(over) == 0:
		return nil
	}
	pdb, ready := over[0], resources.PodReady(pod)
	// An unhealthy pod may go while the budget is healthy (unhealthyPodEvictionPolicy IfHealthyBudget).
	healthyBudget := pdb.Status.CurrentHealthy >= pdb.Status.DesiredHealthy && pdb.Status.ObservedGeneration >= pdb.Generation
	if ready && (pdb.Status.DisruptionsAllowed <= 0 || pdb.Status.ObservedGeneration < pdb.Generation) || !ready && !healthyBudget {
		w.logf("%s: eviction of %s refused by the budget", by, pod.Name)
		return apierrors.NewTooManyRequests("Cannot evict pod as it would violate the pod's disruption budget.", 10)
	}
	if !ready {
		return nil
	}
	pdb.Status.DisruptionsAllowed--
	return w.api.Status().Update(ctx, pdb)
}

// poll is the fake prober: it reads every target at its pace (2 s busy, 10 s steady; at every step
// when readings are fresh), and keeps when the nodes began to disagree, like aerospike.ProberManager.
func (w *modelWorld) poll() {
	if w.probe == nil {
		return
	}
	interval := aerospike.DefaultInterval
	if w.probe.Busy {
		interval = aerospike.DefaultBusyInterval
	}
	now := w.now()
	if !w.fresh && !w.pollNow && w.polled && now.Sub(w.lastPoll) < interval {
		return
	}
	w.pollNow, w.lastPoll = false, now
	h := aerospike.ClusterHealth{ExpectedSize: len(w.probe.Targets), Nodes: map[string]aerospike.NodeHealth{}, ReadAt: now}
	var names []string
	for _, t := range w.probe.Targets {
		names = append(names, t.PodName)
		h.Nodes[t.PodName] = w.read(t, len(w.probe.Targets))
	}
	if h.Split(names) {
		if w.probeSplit.IsZero() {
			w.probeSplit = now
		}
		h.SplitSince = w.probeSplit
		h.SplitSettled = now.Sub(w.probeSplit) >= aerospike.DefaultSplitGrace
	} else {
		w.probeSplit = time.Time{}
	}
	w.readings, w.polled = h, true
}

func (w *modelWorld) read(t aerospike.Target, asked int) aerospike.NodeHealth {
	now := w.now()
	h := aerospike.NodeHealth{Addr: t.Addr, ReadAt: now, Err: aerospike.ErrUnreachable}
	n := w.nodes[t.PodName]
	if n == nil || !n.serving() {
		return h
	}
	members := w.members[n.side]
	key := fmt.Sprintf("K%d-%s", n.side, strings.Join(members, ","))
	f := aerospike.NodeFacts{Uptime: now.Sub(n.started), ClusterSize: len(members), ClusterKey: key, ClusterIntegrity: true,
		NodeID: "BB9" + t.PodName}
	if w.migrating(n.side) {
		f.MigratePartitionsRemaining = 64
	}
	f.ServiceAlt = advertisedAlternate(n.conf)
	switch {
	case len(members) != asked:
		f.ClusterStableErr = &aerospike.InfoError{Command: "cluster-stable", Code: 7, Message: "cluster not specified size"}
	case w.migrating(n.side):
		f.ClusterStableErr = &aerospike.InfoError{Command: "cluster-stable", Code: 7, Message: "unstable cluster"}
	default:
		f.ClusterStableKey = key
	}
	h.Err, h.Facts = nil, f
	return h
}

// Ensure implements Prober: a changed spec polls at the next step.
func (w *modelWorld) Ensure(_ types.NamespacedName, spec aerospike.ProbeSpec) {
	if w.probe == nil || !slices.Equal(w.probe.Targets, spec.Targets) || w.probe.Busy != spec.Busy {
		w.pollNow = true
	}
	w.probe = &spec
}

// Stop implements Prober: the readings are forgotten.
func (w *modelWorld) Stop(types.NamespacedName) {
	w.probe, w.polled, w.readings = nil, false, aerospike.ClusterHealth{}
}

// Snapshot implements Prober.
func (w *modelWorld) Snapshot(types.NamespacedName) (aerospike.ClusterHealth, bool) {
	h := w.readings
	h.Nodes = maps.Clone(h.Nodes)
	return h, w.polled
}

// PrepareRestart implements podexec.Signaller: the rack's ConfigMap as it is now is copied into the
// pod's own file (an exec into a hung node times out).
func (w *modelWorld) PrepareRestart(ctx context.Context, pod *corev1.Pod, configHash string) error {
	n, err := w.execNode(pod, "before the files were copied")
	if err != nil {
		return err
	}
	conf, err := w.projected(ctx, pod, configHash)
	if err != nil {
		return err
	}
	n.conf = conf
	return nil
}

// projected is the pod's own file of the ConfigMap, refused as podexec.Client.CopyConfig refuses it when it
// is not the config the operator asked for (configHash; "" asks for none): the ConfigMap changed since.
func (w *modelWorld) projected(ctx context.Context, pod *corev1.Pod, configHash string) (string, error) {
	conf := w.configOf(ctx, pod)
	switch {
	case conf == "":
		return "", fmt.Errorf("pod %s: cp: no such file", pod.Name)
	case configHash != "" && config.Hash(conf) != configHash:
		return "", fmt.Errorf("pod %s: %w: it shows config %s, want %s", pod.Name, podexec.ErrNotProjected, config.Hash(conf), configHash)
	}
	return conf, nil
}

// SignalRestart implements podexec.Signaller: asd restarts in place and loads its own file.
func (w *modelWorld) SignalRestart(_ context.Context, pod *corev1.Pod) error {
	n, err := w.execNode(pod, "before the signal went out")
	if err != nil {
		return err
	}
	w.takeDown(pod.Name, "operator (SIGUSR1)")
	n.rf, n.crashLoop, n.refusedAt = replicationOf(n.conf), refusedConfig(n.conf), w.now()
	n.up, n.hasData, n.started, n.upAt = !n.crashLoop, false, w.now(), time.Time{}
	return nil
}

// execNode is the node an exec into the pod reaches: none for an operator killed before it went out
// (signalOut decides), a pod gone, or a hung node.
func (w *modelWorld) execNode(pod *corev1.Pod, when string) (*modelNode, error) {
	if w.killed && !w.signalOut {
		return nil, errors.New("the operator was killed " + when)
	}
	n := w.nodes[pod.Name]
	switch {
	case n == nil || n.uid != pod.UID:
		return nil, fmt.Errorf("pod %s not found", pod.Name)
	case n.hung:
		return nil, context.DeadlineExceeded
	}
	return n, nil
}

// ReadConfigs implements podexec.Signaller.
func (w *modelWorld) ReadConfigs(ctx context.Context, pod *corev1.Pod) (string, string, error) {
	if n := w.nodes[pod.Name]; n != nil {
		return n.conf, w.configOf(ctx, pod), nil
	}
	return "", "", errors.New("no such pod")
}

// CopyConfig implements podexec.Signaller.
func (w *modelWorld) CopyConfig(ctx context.Context, pod *corev1.Pod, configHash string) error {
	n := w.nodes[pod.Name]
	if n == nil {
		return nil
	}
	conf, err := w.projected(ctx, pod, configHash)
	if err != nil {
		return err
	}
	n.conf = conf
	return nil
}

var _ podexec.Signaller = (*modelWorld)(nil)

// Apply implements LiveConfigurer: the node takes its rack's config as it is now, with no restart (a
// node that is down or hung does not answer).
func (w *modelWorld) Apply(ctx context.Context, pod *corev1.Pod, change liveconfig.Change) (string, error) {
	n, err := w.liveNode(pod)
	if err != nil {
		return "", err
	}
	conf, err := w.projected(ctx, pod, change.To)
	if err != nil {
		return "", err
	}
	// As the real applier (liveconfig.Change.planOn): the operator's plan stands only while the pod's own
	// copy is the config it starts from or its target; else the node is restarted in place. The plan is
	// what goes out, so a plan the node cannot take alone (a static parameter, a replication-factor) is
	// refused whatever the copy says.
	own := config.Hash(n.conf)
	switch {
	case change.Plan != nil && own != change.From && own != change.To:
		return "", fmt.Errorf("%w: pod %s records config %s, but its own copy is %s", liveconfig.ErrNeedsRestart,
			pod.Name, change.From, own)
	case change.Plan != nil && !change.Plan.Live():
		return "", fmt.Errorf("%w: the plan restarts for %v, goes to every node together for %v", liveconfig.ErrNeedsRestart,
			change.Plan.Restart, change.Plan.Factors)
	}
	// With no plan, the real applier plans from the copy: a replication-factor goes to every node together,
	// never to one.
	if replicationOf(conf) != replicationOf(n.conf) {
		return "", fmt.Errorf("%w: replication-factor %d goes to every node together, then the cluster reclusters",
			liveconfig.ErrNeedsRestart, replicationOf(conf))
	}
	n.conf = conf
	return "applied live", nil
}

// ApplyTogether implements LiveConfigurer: every node takes the new replication-factor live, then the
// cluster reclusters (unless every node had the factor already: a run again after the recluster), and its
// migrations make (or drop) the copies. Nothing is set unless every node answers. As the real applier
// (liveconfig.awaitStable), it returns only once the cluster of exactly these nodes is stable with its
// migrations done, or fails at its deadline: until then the pods do not record the new config, so the
// factor they may run stays the smaller one (model hole 24: a stand-in that returned at the recluster let
// a raise count while its copies were still being made).
func (w *modelWorld) ApplyTogether(ctx context.Context, pods, _ []*corev1.Pod, changes map[string]liveconfig.Change) (string, error) {
	confs := map[string]string{}
	for _, pod := range pods {
		if _, err := w.liveNode(pod); err != nil {
			return "", err
		}
		// As the real applier plans from the file the operator asked for, or from none (ErrNotProjected).
		conf, err := w.projected(ctx, pod, changes[pod.Name].To)
		if err != nil {
			return "", err
		}
		confs[pod.Name] = conf
	}
	changed := false
	for _, pod := range pods {
		n := w.nodes[pod.Name]
		n.conf = confs[pod.Name]
		changed = changed || n.rf != replicationOf(n.conf)
		n.rf = replicationOf(n.conf)
	}
	if changed {
		// The recluster: a new exchange of the main side, whose migrations begin at once.
		w.migratingUntil[0] = maxTime(w.migratingUntil[0], w.now().Add(time.Duration(10+w.rng.IntN(50))*time.Second))
		w.logf("operator sets replication-factor %d on %d nodes live, then reclusters", w.nodes[pods[0].Name].rf, len(pods))
	}
	wait := &togetherWait{pods: pods, deadline: w.now().Add(liveconfig.TogetherDeadline), done: make(chan error, 1)}
	w.together = wait
	w.parked.Store(true)
	select {
	case err := <-wait.done:
		if err != nil {
			return "", err
		}
		return "reclustered; stable (migrations done)", nil
	case <-ctx.Done():
		return "", ctx.Err()
	}
}

// togetherWait is an ApplyTogether waiting for the cluster of its nodes to be stable with its migrations
// done. The model's step lets it go (releaseTogether) when that is so, or at its deadline.
type togetherWait struct {
	pods     []*corev1.Pod
	deadline time.Time
	gone     time.Time // since when its nodes have not formed one cluster of them all
	done     chan error
}

// releaseTogether ends a waiting ApplyTogether when the main cluster is exactly its nodes (the same asd
// pods) with no migrations; with an error when they have not formed that cluster for
// liveconfig.ClusterGonePatience, or at its deadline. It says whether it ended one.
func (w *modelWorld) releaseTogether() bool {
	if !w.parked.Load() {
		return false
	}
	wait := w.together
	var names []string
	for _, pod := range wait.pods {
		if n := w.nodes[pod.Name]; n != nil && n.uid == pod.UID && n.serving() && n.side == 0 {
			names = append(names, pod.Name)
		}
	}
	slices.Sort(names)
	formed := len(names) == len(wait.pods) && slices.Equal(names, w.members[0])
	switch {
	case formed:
		wait.gone = time.Time{}
	case wait.gone.IsZero():
		wait.gone = w.now()
	}
	var err error
	switch {
	case formed && !w.migrating(0):
	case !wait.gone.IsZero() && w.now().Sub(wait.gone) > liveconfig.ClusterGonePatience:
		err = fmt.Errorf("%w: after the recluster, the nodes no longer form one cluster of them all", liveconfig.ErrRefused)
	case w.now().Before(wait.deadline):
		return false
	default:
		err = fmt.Errorf("%w: after the recluster, the cluster is not stable", liveconfig.ErrRefused)
	}
	w.together = nil
	w.parked.Store(false)
	wait.done <- err
	return true
}

// abandonTogether forgets a waiting ApplyTogether whose operator is gone (its context ends it).
func (w *modelWorld) abandonTogether() {
	w.together = nil
	w.parked.Store(false)
}

// liveNode is the pod's node when it answers an info request now.
func (w *modelWorld) liveNode(pod *corev1.Pod) (*modelNode, error) {
	if w.killed && !w.signalOut {
		return nil, errors.New("the operator was killed before the request went out")
	}
	n := w.nodes[pod.Name]
	switch {
	case n == nil || n.uid != pod.UID:
		return nil, fmt.Errorf("pod %s not found", pod.Name)
	case n.hung || !n.serving():
		return nil, context.DeadlineExceeded
	}
	return n, nil
}

// errOperatorKilled fails every call of an operator the model killed mid-reconcile.
var errOperatorKilled = errors.New("the operator process is gone")

func (w *modelWorld) apiDown() bool { return w.now().Before(w.apiDownUntil) }

// callAllowed fails the reconciler's calls during an API outage and after its kill.
func (w *modelWorld) callAllowed() error {
	switch {
	case w.killed:
		return errOperatorKilled
	case w.apiDown():
		return apierrors.NewServiceUnavailable("the API server is unavailable")
	}
	return nil
}

// updateAllowed runs the update unless refuseUpdate refuses it.
func (w *modelWorld) updateAllowed(obj client.Object, update func() error) error {
	if w.refuseUpdate != nil {
		if err := w.refuseUpdate(obj); err != nil {
			return err
		}
	}
	return update()
}

// written counts a write of the reconciler toward its kill.
func (w *modelWorld) written() {
	if w.killAfter > 0 {
		w.killAfter--
		if w.killAfter == 0 {
			w.killed = true
			w.logf("operator killed after this write")
		}
	}
}

// operatorClient is the reconciler's client: reads from the lagging cache, writes to the API server,
// evictions through the world's budget, deletes with the UID precondition.
func (w *modelWorld) operatorClient() client.Client {
	write := func(do func() error) error {
		if err := w.callAllowed(); err != nil {
			return err
		}
		if err := do(); err != nil {
			return err
		}
		w.written()
		return nil
	}
	return interceptor.NewClient(w.api, interceptor.Funcs{
		Get: func(_ context.Context, _ client.WithWatch, key client.ObjectKey, obj client.Object, _ ...client.GetOption) error {
			if err := w.callAllowed(); err != nil {
				return err
			}
			return w.cache.get(key, obj)
		},
		List: func(_ context.Context, _ client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
			if err := w.callAllowed(); err != nil {
				return err
			}
			return w.cache.list(list, opts...)
		},
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			return write(func() error {
				if err := c.Create(ctx, obj, opts...); err != nil {
					return err
				}
				w.judgeCreated(obj)
				return nil
			})
		},
		Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
			return write(func() error {
				return w.judgeLowered(ctx, obj, func() error { return w.updateAllowed(obj, func() error { return c.Update(ctx, obj, opts...) }) })
			})
		},
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, p client.Patch, opts ...client.PatchOption) error {
			return write(func() error {
				return w.judgeLowered(ctx, obj, func() error { return w.updateAllowed(obj, func() error { return c.Patch(ctx, obj, p, opts...) }) })
			})
		},
		Delete: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
			return write(func() error { return w.operatorDelete(ctx, c, obj, opts...) })
		},
		SubResourceCreate: func(ctx context.Context, _ client.Client, sub string, obj, subObj client.Object, _ ...client.SubResourceCreateOption) error {
			return write(func() error {
				ev, ok := subObj.(*policyv1.Eviction)
				if sub != "eviction" || !ok {
					return fmt.Errorf("the model serves no %s subresource", sub)
				}
				var uid *types.UID
				if ev.DeleteOptions != nil && ev.DeleteOptions.Preconditions != nil {
					uid = ev.DeleteOptions.Preconditions.UID
				}
				return w.evict(ctx, obj.GetName(), uid, "operator")
			})
		},
		SubResourceUpdate: func(ctx context.Context, c client.Client, sub string, obj client.Object, opts ...client.SubResourceUpdateOption) error {
			return write(func() error { return c.SubResource(sub).Update(ctx, obj, opts...) })
		},
		SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, p client.Patch, opts ...client.SubResourcePatchOption) error {
			return write(func() error { return c.SubResource(sub).Patch(ctx, obj, p, opts...) })
		},
	})
}

// judgeLowered judges a StatefulSet write that lowers its replicas as the take-down of the pods beyond
// them, at the moment of the write: the operator's act. The StatefulSet controller deletes them a step
// later; a fault in between is as much beyond the operator's reach as one right after an eviction.
func (w *modelWorld) judgeLowered(ctx context.Context, obj client.Object, do func() error) error {
	sts, isSet := obj.(*appsv1.StatefulSet)
	before := &appsv1.StatefulSet{}
	if !isSet || w.api.Get(ctx, client.ObjectKeyFromObject(sts), before) != nil {
		return do()
	}
	if err := do(); err != nil {
		return err
	}
	from, to := int(ptr.Deref(before.Spec.Replicas, 1)), int(ptr.Deref(sts.Spec.Replicas, 1))
	for o := to; o < from; o++ {
		if name := fmt.Sprintf("%s-%d", sts.Name, o); w.nodes[name] != nil {
			w.takeDown(name, "operator (StatefulSet "+sts.Name+" lowered to "+strconv.Itoa(to)+")")
		}
	}
	return nil
}

func (w *modelWorld) operatorDelete(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
	if pvc, isClaim := obj.(*corev1.PersistentVolumeClaim); isClaim {
		if err := uidPrecondition(ctx, w.api, obj, opts); err != nil {
			return err
		}
		current := &corev1.PersistentVolumeClaim{}
		if err := w.api.Get(ctx, client.ObjectKeyFromObject(pvc), current); err == nil {
			w.claimDeleted(ctx, current)
		}
	}
	do := &client.DeleteOptions{}
	do.ApplyOptions(opts)
	if sts, isSet := obj.(*appsv1.StatefulSet); isSet && ptr.Deref(do.PropagationPolicy, "") == metav1.DeletePropagationOrphan {
		if err := c.Delete(ctx, obj, opts...); err != nil {
			return err
		}
		w.orphanDependents(ctx, sts)
		return nil
	}
	pod, isPod := obj.(*corev1.Pod)
	if !isPod {
		return c.Delete(ctx, obj, opts...)
	}
	current := &corev1.Pod{}
	if err := w.api.Get(ctx, client.ObjectKeyFromObject(pod), current); err != nil {
		return err
	}
	if do.Preconditions != nil && do.Preconditions.UID != nil && *do.Preconditions.UID != current.UID {
		return apierrors.NewConflict(schema.GroupResource{Resource: "pods"}, pod.Name, errors.New("UID precondition failed"))
	}
	w.takeDown(pod.Name, "operator (delete)")
	if do.GracePeriodSeconds != nil && *do.GracePeriodSeconds == 0 {
		w.forceDelete(ctx, current)
		w.forget(current.Name)
		return nil
	}
	w.removePod(ctx, current)
	return nil
}

// apiReader reads the API server directly (failing like the rest of the operator's calls).
type apiReader struct{ w *modelWorld }

func (r apiReader) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if err := r.w.callAllowed(); err != nil {
		return err
	}
	return r.w.api.Get(ctx, key, obj, opts...)
}

func (r apiReader) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	if err := r.w.callAllowed(); err != nil {
		return err
	}
	return r.w.api.List(ctx, list, opts...)
}

// laggingCache is the informer cache the reconciler reads: a copy of the API server's objects taken
// at the last sync, so it can be a step behind.
type laggingCache struct {
	scheme *runtime.Scheme
	objs   map[schema.GroupVersionKind][]client.Object
}

func newLaggingCache(s *runtime.Scheme) *laggingCache {
	return &laggingCache{scheme: s, objs: map[schema.GroupVersionKind][]client.Object{}}
}

var cachedLists = []func() client.ObjectList{
	func() client.ObjectList { return &ackov1alpha1.AerospikeClusterList{} },
	func() client.ObjectList { return &corev1.PodList{} },
	func() client.ObjectList { return &appsv1.StatefulSetList{} },
	func() client.ObjectList { return &policyv1.PodDisruptionBudgetList{} },
	func() client.ObjectList { return &corev1.ConfigMapList{} },
	func() client.ObjectList { return &corev1.ServiceList{} },
}

// sync copies the API server's objects of the kinds given (all when none).
func (c *laggingCache) sync(w *modelWorld, only ...func() client.ObjectList) {
	lists := cachedLists
	if len(only) > 0 {
		lists = only
	}
	for _, newList := range lists {
		list := newList()
		w.list(list)
		items, err := meta.ExtractList(list)
		if err != nil {
			panic(err)
		}
		gvk, err := apiutil.GVKForObject(list, c.scheme)
		if err != nil {
			panic(err)
		}
		gvk.Kind = strings.TrimSuffix(gvk.Kind, "List")
		c.objs[gvk] = nil
		for _, item := range items {
			c.objs[gvk] = append(c.objs[gvk], item.(client.Object))
		}
	}
}

func (c *laggingCache) get(key client.ObjectKey, obj client.Object) error {
	gvk, err := apiutil.GVKForObject(obj, c.scheme)
	if err != nil {
		return err
	}
	for _, o := range c.objs[gvk] {
		if o.GetNamespace() == key.Namespace && o.GetName() == key.Name {
			reflect.ValueOf(obj).Elem().Set(reflect.ValueOf(o.DeepCopyObject()).Elem())
			return nil
		}
	}
	return apierrors.NewNotFound(schema.GroupResource{Group: gvk.Group, Resource: strings.ToLower(gvk.Kind) + "s"}, key.Name)
}

func (c *laggingCache) list(list client.ObjectList, opts ...client.ListOption) error {
	gvk, err := apiutil.GVKForObject(list, c.scheme)
	if err != nil {
		return err
	}
	gvk.Kind = strings.TrimSuffix(gvk.Kind, "List")
	lo := &client.ListOptions{}
	lo.ApplyOptions(opts)
	var items []runtime.Object
	for _, o := range c.objs[gvk] {
		if lo.Namespace != "" && o.GetNamespace() != lo.Namespace ||
			lo.LabelSelector != nil && !lo.LabelSelector.Matches(labels.Set(o.GetLabels())) {
			continue
		}
		items = append(items, o.DeepCopyObject())
	}
	return meta.SetList(list, items)
}

// Refresh implements Prober: the next step polls every node, and reports the reading.
func (w *modelWorld) Refresh(types.NamespacedName) { w.pollNow = true }
