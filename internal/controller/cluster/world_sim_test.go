package cluster

import (
	"context"
	"errors"
	"fmt"
	"net"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ackov1alpha1 "github.com/acko-io/acko/api/v1alpha1"
	"github.com/acko-io/acko/internal/aerospike"
	"github.com/acko-io/acko/internal/config"
	"github.com/acko-io/acko/internal/podexec"
	"github.com/acko-io/acko/internal/resources"
	"github.com/acko-io/acko/test/aerosim"
)

// The pod's files as asd's container sees them: its own copy, which asd reads at every start, and its
// own file of the ConfigMap as projected (one path for every pod: the world reads and writes it).
const (
	ownConfigFile       = config.ConfigDir + "/" + config.FileName
	projectedConfigFile = config.ConfigMapDir + "/" + config.FileName
)

// simNode is the simulated node of one pod instance.
type simNode struct {
	uid types.UID
	ip  string
}

// withSim makes the world run each pod's asd as a simulated node (world.sim), closed when the spec ends.
func withSim(w *world) {
	sim, err := aerosim.New(aerosim.Options{})
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(sim.Close)
	w.sim = sim
}

// readConfigMaps reads every ConfigMap's files, for the kubelet to project (sim only).
func (w *world) readConfigMaps(ctx context.Context) error {
	if w.sim == nil && w.nodeOf == nil {
		return nil
	}
	list := &corev1.ConfigMapList{}
	if err := w.c.List(ctx, list, client.InNamespace(w.namespace)); err != nil {
		return err
	}
	confs := map[string]map[string]string{}
	for _, cm := range list.Items {
		confs[cm.Name] = cm.Data
	}
	w.mu.Lock()
	w.configMaps = confs
	w.mu.Unlock()
	return nil
}

// runNode is the kubelet's part for a simulated pod: a new instance starts its node, after the init
// container copied the ConfigMap's file into the pod's own copy; a running one sees the ConfigMap's
// current file projected. It returns the node's IP ("" without a simulator).
func (w *world) runNode(pod *corev1.Pod) (string, error) {
	if w.sim == nil {
		return "", nil
	}
	w.mu.Lock()
	conf, projected := w.configMaps[configMapNameOf(pod)][config.PodFileKey(pod.Name, "")]
	node, running := w.simNodes[pod.Name]
	w.mu.Unlock()
	if !projected {
		return "", fmt.Errorf("pod %s: its file in ConfigMap %q is not there yet", pod.Name, configMapNameOf(pod))
	}
	if running && node.uid == pod.UID {
		shown, err := w.sim.ReadFile(pod.Name, projectedConfigFile)
		if err == nil && shown != conf {
			err = w.sim.WriteFile(pod.Name, projectedConfigFile, conf)
		}
		return node.ip, err
	}
	// The pod's earlier instance is gone, and its node with it.
	if err := w.sim.RemoveNode(pod.Name); err != nil && !errors.Is(err, aerosim.ErrNotFound) {
		return "", err
	}
	st, err := w.sim.AddNode(aerosim.NodeSpec{Name: pod.Name, Image: resources.AerospikeImage(pod),
		ConfigFile: ownConfigFile, Files: map[string]string{ownConfigFile: conf, projectedConfigFile: conf}})
	if err != nil {
		return "", err
	}
	w.mu.Lock()
	w.simNodes[pod.Name] = simNode{uid: pod.UID, ip: st.IP}
	// The pods' DNS names through the headless Service, the mesh seeds of the rendered config: the
	// nodes find each other and form one cluster (a world holds one cluster per namespace).
	records := map[string][]string{}
	for name, n := range w.simNodes {
		records[fmt.Sprintf("%s.%s-headless.%s.svc.%s", name, pod.Labels[ackov1alpha1.LabelInstance], pod.Namespace,
			ackov1alpha1.DefaultClusterDomain)] = []string{n.ip}
	}
	w.mu.Unlock()
	return st.IP, w.sim.SetDNS(records)
}

// configMapNameOf names the ConfigMap the pod mounts its config from.
func configMapNameOf(pod *corev1.Pod) string {
	for _, v := range pod.Spec.Volumes {
		if v.Name == resources.ConfigMapVolume && v.ConfigMap != nil {
			return v.ConfigMap.Name
		}
	}
	return ""
}

// nodeConfigs are the pod's own copy of aerospike.conf and the ConfigMap's file as projected.
func (w *world) nodeConfigs(pod *corev1.Pod) (own, projected string, err error) {
	if own, err = w.sim.ReadFile(pod.Name, ownConfigFile); err != nil {
		return "", "", err
	}
	projected, err = w.sim.ReadFile(pod.Name, projectedConfigFile)
	return own, projected, err
}

// copyConfig copies the projected file into the pod's own copy, once it is the one whose identity is
// configHash ("": whatever is there), as podexec.Client does.
func (w *world) copyConfig(pod *corev1.Pod, configHash string) error {
	projected, err := w.sim.ReadFile(pod.Name, projectedConfigFile)
	if err != nil {
		return err
	}
	if got := config.Hash(projected); configHash != "" && got != configHash {
		return fmt.Errorf("pod %s: %w: it shows config %s, want %s", pod.Name, podexec.ErrNotProjected, got, configHash)
	}
	return w.sim.WriteFile(pod.Name, ownConfigFile, projected)
}

// nodeValue is the value of name in the pod's node's answer to the info command cmd.
func nodeValue(pod *corev1.Pod, cmd, name string) (string, error) {
	answers, err := aerospike.NewClient(aerospike.ClientOptions{}).Info(context.Background(),
		net.JoinHostPort(pod.Status.PodIP, "3000"), cmd)
	if err != nil {
		return "", err
	}
	return aerospike.ParseKV(answers[cmd])[name], nil
}
