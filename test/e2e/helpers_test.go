package e2e

import (
	"context"
	"fmt"
	"net"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/acko-io/acko/internal/aerospike"
	"github.com/acko-io/acko/test/aerosim"
	"github.com/acko-io/acko/test/localcluster/simclient"
)

// kubectlTimeout bounds one kubectl call.
const kubectlTimeout = 2 * time.Minute

// kubectl runs the real kubectl as the cluster admin and returns its stdout; the spec fails if
// it fails.
func kubectl(args ...string) string {
	GinkgoHelper()
	out, err := kubectlErr(args...)
	Expect(err).NotTo(HaveOccurred())
	return out
}

// kubectlErr runs kubectl and returns its stdout and error (with stderr), for calls that may or
// should fail.
func kubectlErr(args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), kubectlTimeout)
	defer cancel()
	_, _ = fmt.Fprintf(GinkgoWriter, "$ kubectl %s\n", strings.Join(args, " "))
	return opts.Kubectl(ctx, args...)
}

// field returns a JSONPath of an object, e.g. field("selftest", "pod/selftest-0", "{.metadata.uid}");
// namespace "" for cluster-scoped objects.
func field(namespace, object, jsonpath string) (string, error) {
	args := []string{"get", object, "-o", "jsonpath=" + jsonpath}
	if namespace != "" {
		args = append(args, "-n", namespace)
	}
	out, err := kubectlErr(args...)
	return strings.TrimSpace(out), err
}

// mustField is field for values that must be there.
func mustField(namespace, object, jsonpath string) string {
	GinkgoHelper()
	out, err := field(namespace, object, jsonpath)
	Expect(err).NotTo(HaveOccurred())
	return out
}

// eventuallyPhase polls an AerospikeCluster's status.phase.
func eventuallyPhase(namespace, name string) AsyncAssertion {
	return Eventually(func() (string, error) {
		ctx, cancel := context.WithTimeout(context.Background(), kubectlTimeout)
		defer cancel()
		return opts.Phase(ctx, namespace, name)
	}).WithTimeout(3 * time.Minute).WithPolling(time.Second)
}

// eventMessages lists the messages of the events of an object with a reason, as
// `kubectl get events --field-selector involvedObject.name=NAME,reason=REASON` shows them.
func eventMessages(namespace, name, reason string) []string {
	GinkgoHelper()
	out := kubectl("get", "events", "-n", namespace,
		"--field-selector", "involvedObject.name="+name+",reason="+reason,
		"-o", `jsonpath={range .items[*]}{.message}{"\n"}{end}`)
	if out = strings.TrimSpace(out); out == "" {
		return nil // no event: no message (Split would give one empty one)
	}
	return strings.Split(out, "\n")
}

// execIn runs a command in a pod's aerospike-server container. Never with stdin: kwok does not
// deliver its EOF. kwok does not pass exit codes through either: a failing command is an error
// saying "exit status N".
func execIn(namespace, pod string, command ...string) (string, error) {
	return kubectlErr(append([]string{"exec", "-n", namespace, pod, "-c", "aerospike-server", "--"}, command...)...)
}

// awaitExec waits until exec into the pod works: the sync loop creates the pod's kwok Exec, and
// kwok needs a moment to see it.
func awaitExec(namespace, pod string) {
	GinkgoHelper()
	Eventually(func() error {
		_, err := execIn(namespace, pod, "true")
		return err
	}).Should(Succeed())
}

// sim is the simulator's control API client.
func sim() *simclient.Client { return simclient.New(opts.AerosimURL()) }

// simNode returns the simulated Aerospike node of a pod.
func simNode(namespace, pod string) (aerosim.NodeState, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return sim().Node(ctx, simclient.NodeName(namespace, pod))
}

// simNodes returns the simulated Aerospike nodes of pods, in their order.
func simNodes(namespace string, pods []string) ([]aerosim.NodeState, error) {
	out := make([]aerosim.NodeState, 0, len(pods))
	for _, p := range pods {
		n, err := simNode(namespace, p)
		if err != nil {
			return nil, err
		}
		out = append(out, n)
	}
	return out, nil
}

// serviceConfig asks a pod's node for its running service config over the info protocol.
func serviceConfig(namespace, pod string) map[string]string {
	GinkgoHelper()
	kv, err := nodeInfo(mustField(namespace, "pod/"+pod, "{.status.podIP}"), "get-config:context=service")
	Expect(err).NotTo(HaveOccurred())
	return kv
}

// nodeInfo asks the node at a pod IP one info command whose answer is a name=value list.
func nodeInfo(podIP, cmd string) (map[string]string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	answers, err := aerospike.NewClient(aerospike.ClientOptions{}).Info(ctx, net.JoinHostPort(podIP, "3000"), cmd)
	if err != nil {
		return nil, err
	}
	return aerospike.ParseKV(answers[cmd]), nil
}

// sampleUntil calls take every interval until stop is closed, keeping what it returns with true, and
// sends what it kept once stopped (the samplers that watch a spec's change from the side).
func sampleUntil[T any](stop <-chan struct{}, every time.Duration, take func() (T, bool)) <-chan []T {
	out := make(chan []T, 1)
	go func() {
		defer GinkgoRecover()
		var kept []T
		defer func() { out <- kept }()
		for {
			select {
			case <-stop:
				return
			case <-time.After(every):
			}
			if sample, keep := take(); keep {
				kept = append(kept, sample)
			}
		}
	}()
	return out
}
