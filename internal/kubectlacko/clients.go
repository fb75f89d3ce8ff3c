package kubectlacko

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ackov1alpha1 "github.com/acko-io/acko/api/v1alpha1"
)

// session is one command's connection: a client for AerospikeClusters, pods and events, and the
// namespace of the kubeconfig or -n.
type session struct {
	client    client.WithWatch
	namespace string
}

var scheme = func() *runtime.Scheme {
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		panic(err)
	}
	if err := ackov1alpha1.AddToScheme(s); err != nil {
		panic(err)
	}
	return s
}()

// connect builds the session from kubectl's flags. Server warnings (the webhook's, e.g. "the cluster
// is paused") are printed as kubectl prints them.
func (o *options) connect() (*session, error) {
	cfg, err := o.flags.ToRESTConfig()
	if err != nil {
		return nil, err
	}
	cfg.WarningHandler = rest.NewWarningWriter(o.streams.ErrOut, rest.WarningWriterOptions{Deduplicate: true})
	ns, _, err := o.flags.ToRawKubeConfigLoader().Namespace()
	if err != nil {
		return nil, err
	}
	c, err := client.NewWithWatch(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return nil, err
	}
	return &session{client: c, namespace: ns}, nil
}

// errNoCRD says that the server does not serve AerospikeClusters at all.
var errNoCRD = errors.New("this server does not serve AerospikeClusters (acko.io/v1alpha1): " +
	"is ACKO installed? (kubectl get crd aerospikeclusters.acko.io; see docs/install.md)")

// getCluster reads one AerospikeCluster, with the errors a user can act on.
func (s *session) getCluster(ctx context.Context, name string) (*ackov1alpha1.AerospikeCluster, error) {
	c := &ackov1alpha1.AerospikeCluster{}
	err := s.client.Get(ctx, client.ObjectKey{Namespace: s.namespace, Name: name}, c)
	return c, explain(err, s.namespace, name)
}

// explain turns the errors of reading a cluster into messages that say what to do.
func explain(err error, namespace, name string) error {
	switch {
	case err == nil:
		return nil
	case meta.IsNoMatchError(err):
		return errNoCRD
	case apierrors.IsNotFound(err):
		return fmt.Errorf("AerospikeCluster %q not found in namespace %q "+
			"(kubectl acko list -n %s lists them; -A lists every namespace)", name, namespace, namespace)
	}
	return err
}

// clusterPods lists the pods of a cluster by its selector labels.
func (s *session) clusterPods(ctx context.Context, c *ackov1alpha1.AerospikeCluster) ([]corev1.Pod, error) {
	pods := &corev1.PodList{}
	err := s.client.List(ctx, pods, client.InNamespace(c.Namespace), client.MatchingLabels(c.SelectorLabels()))
	return pods.Items, err
}

// clusterEvents lists the events of this cluster object (by UID: not those of an earlier cluster of
// the same name).
func (s *session) clusterEvents(ctx context.Context, c *ackov1alpha1.AerospikeCluster) ([]corev1.Event, error) {
	events := &corev1.EventList{}
	err := s.client.List(ctx, events, client.InNamespace(c.Namespace),
		client.MatchingFields{"involvedObject.uid": string(c.UID)})
	return events.Items, err
}
