package kubectlacko

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	ackov1alpha1 "github.com/acko-io/acko/api/v1alpha1"
	"github.com/acko-io/acko/test/testcluster"
	"github.com/acko-io/acko/test/testenv"
)

// The commands against a real kube-apiserver with ACKO's CRD (its CEL rules included) and no
// operator: the tests play the operator's part where a command waits for it.
var (
	env *envtest.Environment
	k8s client.Client
)

func TestCommands(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "kubectl acko suite")
}

var _ = BeforeSuite(func() {
	// Gomega's one-second default is shorter than a loaded CI machine can take to answer.
	SetDefaultEventuallyTimeout(30 * time.Second)
	var err error
	env, _, _, k8s, err = testenv.StartWithClient()
	Expect(err).NotTo(HaveOccurred())
	// The plugin finds the server as kubectl would: through $KUBECONFIG.
	kubeconfig := filepath.Join(GinkgoT().TempDir(), "kubeconfig")
	Expect(os.WriteFile(kubeconfig, env.KubeConfig, 0o600)).To(Succeed())
	GinkgoT().Setenv("KUBECONFIG", kubeconfig)
})

var _ = AfterSuite(func() {
	if env != nil {
		Expect(env.Stop()).To(Succeed())
	}
})

// result is what one run of the plugin printed and its exit code.
type result struct {
	stdout, stderr string
	code           int
}

// acko runs the plugin as `kubectl acko ARGS` would.
func acko(args ...string) result {
	GinkgoHelper()
	var out, errOut bytes.Buffer
	streams := genericiooptions.IOStreams{In: &bytes.Buffer{}, Out: &out, ErrOut: &errOut}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	code := Run(ctx, args, streams)
	GinkgoWriter.Printf("$ kubectl acko %v (exit %d)\n%s%s", args, code, out.String(), errOut.String())
	return result{stdout: out.String(), stderr: errOut.String(), code: code}
}

// createCluster creates a namespace and a 3-node cluster in it.
func createCluster(ctx context.Context, namespace, name string) *ackov1alpha1.AerospikeCluster {
	GinkgoHelper()
	Expect(k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}})).To(Succeed())
	c := testcluster.New(namespace, name, 3)
	Expect(k8s.Create(ctx, c)).To(Succeed())
	return c
}

func getCluster(ctx context.Context, c *ackov1alpha1.AerospikeCluster) *ackov1alpha1.AerospikeCluster {
	GinkgoHelper()
	cur := &ackov1alpha1.AerospikeCluster{}
	Expect(k8s.Get(ctx, client.ObjectKeyFromObject(c), cur)).To(Succeed())
	return cur
}

// writeStatus changes the status as the operator would, on a fresh read.
func writeStatus(ctx context.Context, c *ackov1alpha1.AerospikeCluster, change func(*ackov1alpha1.AerospikeCluster)) {
	GinkgoHelper()
	Expect(retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur := &ackov1alpha1.AerospikeCluster{}
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(c), cur); err != nil {
			return err
		}
		change(cur)
		return k8s.Status().Update(ctx, cur)
	})).To(Succeed())
}

// actAsOperator acknowledges pauses and resumes of the cluster until ctx ends, like the operator's
// pause handler: phase and Paused condition at the generation seen.
func actAsOperator(ctx context.Context, c *ackov1alpha1.AerospikeCluster) {
	defer GinkgoRecover()
	for ctx.Err() == nil {
		cur := &ackov1alpha1.AerospikeCluster{}
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(c), cur); err == nil {
			if change := acknowledgement(cur); change != nil {
				change(cur)
				if err := k8s.Status().Update(ctx, cur); err != nil && !apierrors.IsConflict(err) && ctx.Err() == nil {
					Fail(err.Error())
				}
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// acknowledgement is the status change the operator would make, or nil.
func acknowledgement(c *ackov1alpha1.AerospikeCluster) func(*ackov1alpha1.AerospikeCluster) {
	gen := c.Generation
	switch {
	case c.Spec.Paused && !pauseAcknowledged(c, gen):
		return func(c *ackov1alpha1.AerospikeCluster) {
			c.Status.Phase = ackov1alpha1.PhasePaused
			meta.SetStatusCondition(&c.Status.Conditions, metav1.Condition{Type: ackov1alpha1.ConditionPaused,
				Status: metav1.ConditionTrue, Reason: ackov1alpha1.ReasonUserRequested, Message: "Cluster paused by user",
				ObservedGeneration: gen})
		}
	case !c.Spec.Paused && !resumeAcknowledged(c, gen):
		return func(c *ackov1alpha1.AerospikeCluster) {
			c.Status.Phase = ackov1alpha1.PhaseRunning
			meta.RemoveStatusCondition(&c.Status.Conditions, ackov1alpha1.ConditionPaused)
			c.Status.ObservedGeneration = gen
		}
	}
	return nil
}
