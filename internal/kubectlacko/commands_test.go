package kubectlacko

import (
	"context"
	"encoding/json"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ackov1alpha1 "github.com/acko-io/acko/api/v1alpha1"
)

// The CRD is deleted by the last spec, so the specs run in order.
var _ = Describe("kubectl acko on a real API server", Ordered, func() {
	It("says so when a cluster does not exist", func() {
		r := acko("status", "nope", "-n", "default")
		Expect(r.code).To(Equal(1))
		Expect(r.stderr).To(Equal(`Error: AerospikeCluster "nope" not found in namespace "default" ` +
			"(kubectl acko list -n default lists them; -A lists every namespace)\n"))
		Expect(acko("pause", "nope", "-n", "default").stderr).To(ContainSubstring(`AerospikeCluster "nope" not found`))
		Expect(acko("restart", "nope", "-n", "default").stderr).To(ContainSubstring(`AerospikeCluster "nope" not found`))
	})

	It("lists and shows clusters, for people and for machines", func(ctx SpecContext) {
		Expect(acko("list", "-n", "empty").stderr).To(Equal("No AerospikeClusters found in namespace empty.\n"))
		c := createCluster(ctx, "show", "demo")

		r := acko("list", "-n", "show")
		Expect(r.code).To(BeZero())
		Expect(r.stdout).To(MatchRegexp(`(?m)^NAME\s+SIZE\s+READY\s+PHASE\s+PAUSED\s+OPERATION\s+OP-PHASE\s+PROGRESS\s+AGE\n` +
			`demo\s+3\s+0\s+-\s+false\s+-\s+-\s+-\s+\d+s\n$`))
		Expect(acko("list", "-A").stdout).To(MatchRegexp(`(?m)^show\s+demo\s+3`))
		var items []listItem
		Expect(json.Unmarshal([]byte(acko("list", "-n", "show", "-o", "json").stdout), &items)).To(Succeed())
		Expect(items).To(HaveLen(1))
		Expect(items[0].Name).To(Equal("demo"))

		r = acko("status", "demo", "-n", "show")
		Expect(r.code).To(BeZero())
		Expect(r.stdout).To(ContainSubstring("Name:         demo\nNamespace:    show\nPhase:        -\n"))
		Expect(r.stdout).To(MatchRegexp(`demo-2\s+0\s+-\s+Missing\s+false`))
		var report clusterReport
		Expect(json.Unmarshal([]byte(acko("status", "demo", "-n", "show", "-o", "json").stdout), &report)).To(Succeed())
		Expect(report.Name).To(Equal("demo"))
		Expect(report.Pods).To(HaveLen(3))
		Expect(acko("status", "demo", "-n", "show", "-o", "yaml").stdout).To(ContainSubstring("name: demo\n"))

		r = acko("status", "demo", "-n", "show", "-o", "wide")
		Expect(r.code).To(Equal(1))
		Expect(r.stderr).To(ContainSubstring(`unknown output format "wide"`))
		Expect(getCluster(ctx, c).Generation).To(Equal(c.Generation))
	})

	It("completes cluster and pod names", func(ctx SpecContext) {
		createCluster(ctx, "complete", "alpha")
		r := acko("__complete", "status", "-n", "complete", "")
		Expect(r.stdout).To(Equal("alpha\n:4\n"))
		r = acko("__complete", "restart", "alpha", "-n", "complete", "--pods", "alpha-0,")
		Expect(r.stdout).To(Equal("alpha-0,alpha-1\nalpha-0,alpha-2\n:6\n"))
	})

	It("pauses and resumes, waiting for the operator's acknowledgement", func(ctx SpecContext) {
		c := createCluster(ctx, "pause", "demo")

		By("without an operator the wait ends at its deadline, and the request stands")
		r := acko("pause", "demo", "-n", "pause", "--timeout=1s")
		Expect(r.code).To(Equal(1))
		Expect(r.stderr).To(ContainSubstring("timed out after 1s (--timeout) waiting for the operator to acknowledge the pause " +
			"of pause/demo at generation 2; the request stands"))
		Expect(getCluster(ctx, c).Spec.Paused).To(BeTrue())

		By("with the operator acknowledging")
		opCtx, stop := context.WithCancel(ctx)
		DeferCleanup(stop)
		go actAsOperator(opCtx, c)
		Eventually(func() bool { return pauseAcknowledged(getCluster(ctx, c), 2) }).Should(BeTrue())
		Expect(acko("pause", "demo", "-n", "pause").stdout).To(Equal("pause/demo is already paused\n"))

		r = acko("resume", "demo", "-n", "pause")
		Expect(r.code).To(BeZero(), r.stderr)
		Expect(r.stdout).To(MatchRegexp(`^Resumed pause/demo: the operator acknowledged it in \d+(\.\d+)?m?s\n$`))
		resumed := getCluster(ctx, c)
		Expect(resumed.Spec.Paused).To(BeFalse())
		Expect(resumed.Status.ObservedGeneration).To(Equal(resumed.Generation))
		Expect(acko("resume", "demo", "-n", "pause").stdout).To(Equal("pause/demo is already not paused\n"))

		r = acko("pause", "demo", "-n", "pause")
		Expect(r.code).To(BeZero(), r.stderr)
		Expect(r.stdout).To(MatchRegexp(`^Paused pause/demo: the operator acknowledged it in \d+(\.\d+)?m?s\n$`))

		stop()
		r = acko("resume", "demo", "-n", "pause", "--wait=false")
		Expect(r.code).To(BeZero())
		Expect(r.stdout).To(ContainSubstring("pause/demo: resume requested at generation"))
		Expect(getCluster(ctx, c).Spec.Paused).To(BeFalse())
	})

	It("writes an operation with a generated id, and shows the server's refusals as it words them", func(ctx SpecContext) {
		c := createCluster(ctx, "restart", "demo")
		r := acko("restart", "demo", "-n", "restart")
		Expect(r.code).To(BeZero(), r.stderr)
		ops := getCluster(ctx, c).Spec.Operations
		Expect(ops).To(HaveLen(1))
		Expect(ops[0].Kind).To(Equal(ackov1alpha1.OperationWarmRestart))
		Expect(ops[0].ID).To(MatchRegexp(`^\d{6}-\d{6}-[0-9a-z]{6}$`))
		Expect(r.stdout).To(Equal("Operation " + ops[0].ID + ": WarmRestart of every pod in restart/demo\n" +
			"It waits: the operation starts when the cluster is Running (phase -)\n" +
			"Follow it with: kubectl acko status demo -n restart\n"))

		By("a second operation while the first has not started: both are sent, the server refuses")
		r = acko("restart", "demo", "-n", "restart", "--cold", "--pods", "demo-1")
		Expect(r.code).To(Equal(1))
		Expect(r.stderr).To(ContainSubstring("only one operation allowed"))
		Expect(r.stderr).To(ContainSubstring("spec.operations already holds operation " + ops[0].ID +
			" (WarmRestart), which has not started yet"))

		By("an id the API does not accept")
		Expect(acko("restart", "demo", "-n", "restart", "--id", "abcdefghijklmnopqrstu").stderr).
			To(ContainSubstring("id must be between 1 and 20 characters"))

		By("an operation in progress")
		writeStatus(ctx, c, func(c *ackov1alpha1.AerospikeCluster) {
			c.Status.OperationStatus = &ackov1alpha1.OperationStatus{ID: ops[0].ID, Kind: ops[0].Kind,
				Phase: ackov1alpha1.OperationInProgress, TargetPods: c.DesiredPodNames(), CurrentPod: "demo-0"}
		})
		r = acko("restart", "demo", "-n", "restart")
		Expect(r.code).To(Equal(1))
		Expect(r.stderr).To(ContainSubstring("cannot modify operations while InProgress"))
		Expect(r.stderr).To(ContainSubstring("operation " + ops[0].ID + " (WarmRestart) is InProgress: " +
			"0/3 pods done, 0 failed, restarting demo-0"))

		By("an id that ran")
		Expect(acko("restart", "demo", "-n", "restart", "--id", ops[0].ID).stderr).
			To(ContainSubstring("operation id \"" + ops[0].ID + "\" was already used on restart/demo"))
		Expect(getCluster(ctx, c).Spec.Operations).To(Equal(ops), "refusals change nothing")
	})

	It("writes an operation only at the resourceVersion it was decided on", func(ctx SpecContext) {
		c := createCluster(ctx, "precondition", "demo")
		stale := c.ResourceVersion
		writeStatus(ctx, c, func(c *ackov1alpha1.AerospikeCluster) { c.Status.Phase = ackov1alpha1.PhaseRunning })
		patch, err := operationPatch(stale, []ackov1alpha1.OperationSpec{{Kind: ackov1alpha1.OperationWarmRestart, ID: "x"}})
		Expect(err).NotTo(HaveOccurred())
		err = k8s.Patch(ctx, getCluster(ctx, c), client.RawPatch(types.MergePatchType, patch))
		Expect(apierrors.IsConflict(err)).To(BeTrue(), "%v", err)
		Expect(getCluster(ctx, c).Spec.Operations).To(BeEmpty())
	})

	It("follows an operation pod by pod until Completed, and fails on Error naming the pods", func(ctx SpecContext) {
		c := createCluster(ctx, "follow", "demo")
		writeStatus(ctx, c, func(c *ackov1alpha1.AerospikeCluster) { c.Status.Phase = ackov1alpha1.PhaseRunning })

		go runOperation(ctx, c, ackov1alpha1.OperationCompleted)
		r := acko("restart", "demo", "-n", "follow", "--pods", "demo-0,demo-2", "--id", "first", "--wait")
		Expect(r.code).To(BeZero(), r.stderr)
		Expect(r.stdout).To(MatchRegexp(`^Operation first: WarmRestart of demo-0, demo-2 in follow/demo\n` +
			`started: WarmRestart of 2 pods: demo-0, demo-2\n` +
			`(  demo-0 restarting\n)?` +
			`  demo-0 restarted \(1/2\)\n` +
			`  demo-2 restarting\n` +
			`  demo-2 restarted \(2/2\)\n` +
			`Completed in [0-9.]+m?s: 2 pods restarted, 0 failed\n$`))

		go runOperation(ctx, c, ackov1alpha1.OperationError)
		r = acko("restart", "demo", "-n", "follow", "--cold", "--pods", "demo-0,demo-2", "--id", "second", "--wait")
		Expect(r.code).To(Equal(1))
		Expect(r.stdout).To(ContainSubstring("  demo-2 FAILED\nError after "))
		Expect(r.stderr).To(Equal("Error: operation second ended in Error; failed pods: demo-2: " +
			"pod demo-2 did not come back\n"))

		By("a wait that outlives its deadline says the operation goes on")
		r = acko("restart", "demo", "-n", "follow", "--wait", "--timeout=1s")
		Expect(r.code).To(Equal(1))
		Expect(r.stderr).To(MatchRegexp(`timed out after 1s \(--timeout\) waiting for operation \S+ to end; it goes on: ` +
			`kubectl acko status demo -n follow`))
	})

	backupSpecs()

	It("says when the server does not serve AerospikeClusters", func(ctx SpecContext) {
		crd := &apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: "aerospikeclusters.acko.io"}}
		Expect(k8s.Delete(ctx, crd)).To(Succeed())
		Eventually(func() bool { return apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKeyFromObject(crd), crd)) }).
			WithTimeout(time.Minute).Should(BeTrue())
		Eventually(func() string { return acko("list", "-A").stderr }).Should(Equal("Error: " + errNoCRD.Error() + "\n"))
		Expect(acko("status", "demo", "-n", "show").stderr).To(ContainSubstring("is ACKO installed?"))
	})
})

// runOperation plays the operator's executor for the next operation of the spec: it restarts the
// pods one at a time and ends with phase, failing the last pod for Error.
func runOperation(ctx context.Context, c *ackov1alpha1.AerospikeCluster, phase ackov1alpha1.OperationPhase) {
	defer GinkgoRecover()
	var op ackov1alpha1.OperationSpec
	Eventually(func() *ackov1alpha1.OperationSpec {
		p := pendingOperation(getCluster(ctx, c))
		if p != nil {
			op = *p
		}
		return p
	}).WithContext(ctx).ShouldNot(BeNil())
	step := func(change func(st *ackov1alpha1.OperationStatus)) {
		time.Sleep(100 * time.Millisecond) // one watch event per step
		writeStatus(ctx, c, func(c *ackov1alpha1.AerospikeCluster) { change(c.Status.OperationStatus) })
	}
	writeStatus(ctx, c, func(c *ackov1alpha1.AerospikeCluster) {
		c.Status.OperationStatus = &ackov1alpha1.OperationStatus{ID: op.ID, Kind: op.Kind,
			Phase: ackov1alpha1.OperationInProgress, TargetPods: op.PodList}
	})
	for i, pod := range op.PodList {
		step(func(st *ackov1alpha1.OperationStatus) { st.CurrentPod = pod })
		last := i == len(op.PodList)-1
		step(func(st *ackov1alpha1.OperationStatus) {
			st.CurrentPod = ""
			switch {
			case last && phase == ackov1alpha1.OperationError:
				st.FailedPods = append(st.FailedPods, pod)
				st.Message = "pod " + pod + " did not come back"
			default:
				st.CompletedPods = append(st.CompletedPods, pod)
			}
			if last {
				st.Phase = phase
			}
		})
	}
	writeStatus(ctx, c, func(c *ackov1alpha1.AerospikeCluster) {
		c.Status.FinishedOperations = append(c.Status.FinishedOperations, op.ID)
	})
}
