package main

import (
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"

	clustercontroller "github.com/acko-io/acko/internal/controller/cluster"
	"github.com/acko-io/acko/internal/version"
)

// serviceAccountNamespaceFile is where a pod reads its own namespace.
const serviceAccountNamespaceFile = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"

// deploymentOptions say how the manager runs as a deployment: which namespaces it manages,
// whether it elects a leader among its replicas, and where it keeps its lease.
type deploymentOptions struct {
	printVersion      bool
	watchNamespaces   string
	operatorNamespace string
	leaderElect       bool
	leaseDuration     time.Duration
	renewDeadline     time.Duration
	retryPeriod       time.Duration
}

func (d *deploymentOptions) bindFlags(fs *flag.FlagSet) {
	fs.BoolVar(&d.printVersion, "version", false, "Print the version and the git revision, and exit.")
	fs.StringVar(&d.watchNamespaces, "watch-namespaces", "",
		"Comma-separated namespaces to manage AerospikeClusters in; the manager caches and acts only there, "+
			"so Roles in those namespaces are enough. Empty: every namespace (needs the ClusterRole).")
	fs.StringVar(&d.operatorNamespace, "operator-namespace", "",
		"The namespace of the operator's own objects: the leader-election lease and the webhook certificate "+
			"Secret. Empty: the pod's own namespace (from its ServiceAccount); required outside a cluster.")
	fs.BoolVar(&d.leaderElect, "leader-elect", false,
		"Enable leader election, so that of several replicas only one reconciles (the chart and config/default "+
			"turn it on).")
	fs.DurationVar(&d.leaseDuration, "leader-elect-lease-duration", 15*time.Second,
		"How long followers wait after the leader's last renewal before taking over.")
	fs.DurationVar(&d.renewDeadline, "leader-elect-renew-deadline", 10*time.Second,
		"How long the leader keeps retrying to renew before it gives up leadership (and exits).")
	fs.DurationVar(&d.retryPeriod, "leader-elect-retry-period", 2*time.Second,
		"How often candidates try to acquire or renew the lease.")
}

// exitIfVersion prints the version and exits when --version was given.
func (d *deploymentOptions) exitIfVersion() {
	if d.printVersion {
		fmt.Println(version.String())
		os.Exit(0)
	}
}

// namespaces lists --watch-namespaces; nil means every namespace.
func (d *deploymentOptions) namespaces() ([]string, error) {
	if strings.TrimSpace(d.watchNamespaces) == "" {
		return nil, nil
	}
	var out []string
	seen := map[string]bool{}
	for _, ns := range strings.Split(d.watchNamespaces, ",") {
		ns = strings.TrimSpace(ns)
		if ns == "" || seen[ns] {
			return nil, fmt.Errorf("--watch-namespaces %q: empty or repeated namespace", d.watchNamespaces)
		}
		seen[ns] = true
		out = append(out, ns)
	}
	return out, nil
}

// namespace resolves --operator-namespace, falling back to the pod's own namespace.
func (d *deploymentOptions) namespace() (string, error) {
	if d.operatorNamespace != "" {
		return d.operatorNamespace, nil
	}
	b, err := os.ReadFile(serviceAccountNamespaceFile)
	if err != nil {
		return "", fmt.Errorf("--operator-namespace is required outside a cluster (%w)", err)
	}
	return strings.TrimSpace(string(b)), nil
}

// cacheOptions limit the cache to the watched namespaces, keeping the label selection of each
// child kind (clustercontroller.CacheByObject) in each of them.
func cacheOptions(watchNamespaces []string) cache.Options {
	o := clustercontroller.CacheOptions()
	if len(watchNamespaces) > 0 {
		o.DefaultNamespaces = map[string]cache.Config{}
		for _, ns := range watchNamespaces {
			o.DefaultNamespaces[ns] = cache.Config{}
		}
	}
	return o
}

// applyLeaderElection sets the manager's leader election: the lease acko-leader.acko.io in the
// operator's namespace, released on a clean stop so that the next leader need not wait it out.
func (d *deploymentOptions) applyLeaderElection(o *ctrl.Options, namespace string) {
	o.LeaderElection = d.leaderElect
	o.LeaderElectionID = "acko-leader.acko.io"
	o.LeaderElectionNamespace = namespace
	o.LeaderElectionReleaseOnCancel = true
	o.LeaseDuration, o.RenewDeadline, o.RetryPeriod = &d.leaseDuration, &d.renewDeadline, &d.retryPeriod
}
