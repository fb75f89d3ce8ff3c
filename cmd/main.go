// Command manager runs ACKO: the AerospikeCluster reconciler, the operations executor, the validating
// webhook and the metrics endpoint. This file only wires them together.
package main

import (
	"context"
	"crypto/tls"
	"flag"
	"os"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	_ "k8s.io/client-go/plugin/pkg/client/auth"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/controller-runtime/pkg/metrics/filters"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	ackov1alpha1 "github.com/acko-io/acko/api/v1alpha1"
	"github.com/acko-io/acko/internal/aerospike"
	"github.com/acko-io/acko/internal/controller"
	"github.com/acko-io/acko/internal/metrics"
	"github.com/acko-io/acko/internal/operations"
	"github.com/acko-io/acko/internal/podexec"
	ackowebhook "github.com/acko-io/acko/internal/webhook"
)

var (
	scheme   = runtime.NewScheme()
	setupLog = ctrl.Log.WithName("setup")
)

func init() {
	utilruntime.Must(clientgoscheme.AddToScheme(scheme))
	utilruntime.Must(ackov1alpha1.AddToScheme(scheme))
}

type options struct {
	operationPodTimeout    time.Duration
	infoTimeout            time.Duration
	metricsAddr, probeAddr string
	secureMetrics          bool
	enableLeaderElection   bool
	enableHTTP2            bool
	metricsCertDir         string
	clusterDomain          string
	webhook                ackowebhook.Options
}

func parseFlags() (options, zap.Options) {
	var o options
	flag.StringVar(&o.metricsAddr, "metrics-bind-address", ":8443",
		"The address the metrics endpoint binds to (:8443 for HTTPS, :8080 for HTTP, 0 to disable).")
	flag.StringVar(&o.probeAddr, "health-probe-bind-address", ":8081", "The address the probe endpoint binds to.")
	flag.BoolVar(&o.enableLeaderElection, "leader-elect", false,
		"Enable leader election, so that only one manager is active at a time.")
	flag.BoolVar(&o.secureMetrics, "metrics-secure", true,
		"Serve metrics over HTTPS with authentication and authorization.")
	flag.StringVar(&o.metricsCertDir, "metrics-cert-path", "",
		"Directory with tls.crt and tls.key for the metrics server; empty generates a self-signed certificate.")
	flag.BoolVar(&o.enableHTTP2, "enable-http2", false,
		"Enable HTTP/2 for the metrics and webhook servers (off: HTTP/2 Stream Cancellation and Rapid Reset CVEs).")
	flag.DurationVar(&o.operationPodTimeout, "operation-pod-timeout", operations.DefaultConfig.PodTimeout,
		"How long an operation waits for one restarted pod to come back before it fails.")
	flag.StringVar(&o.clusterDomain, "cluster-domain", ackov1alpha1.DefaultClusterDomain,
		"DNS domain of the Kubernetes cluster (the kubelets' --cluster-domain), for the pods' DNS names in the "+
			"Aerospike mesh seeds.")
	flag.DurationVar(&o.infoTimeout, "aerospike-info-timeout", aerospike.DefaultTimeout,
		"Timeout of one Aerospike info call.")
	o.webhook.BindFlags(flag.CommandLine)
	zapOpts := zap.Options{Development: true}
	zapOpts.BindFlags(flag.CommandLine)
	flag.Parse()
	o.webhook.ClusterDomain = o.clusterDomain
	return o, zapOpts
}

// setupController wires the reconciler to the prober, the operations executor and the metrics.
func setupController(mgr ctrl.Manager, o options) error {
	probers := aerospike.NewProberManager(aerospike.ProberOptions{
		Client: aerospike.NewClient(aerospike.ClientOptions{Timeout: o.infoTimeout}),
	})
	if err := mgr.Add(probers); err != nil {
		return err
	}
	signaller, err := podexec.New(mgr.GetConfig(), nil)
	if err != nil {
		return err
	}
	recorder := mgr.GetEventRecorder("acko")
	metrics.Register(func(ctx context.Context) ([]ackov1alpha1.AerospikeCluster, error) {
		list := &ackov1alpha1.AerospikeClusterList{}
		err := mgr.GetCache().List(ctx, list)
		return list.Items, err
	})
	return (&controller.AerospikeClusterReconciler{
		Client:        mgr.GetClient(),
		APIReader:     mgr.GetAPIReader(),
		Scheme:        mgr.GetScheme(),
		Recorder:      recorder,
		Probers:       probers,
		ClusterDomain: o.clusterDomain,
		Executor: &operations.Executor{
			Client:    mgr.GetClient(),
			Signaller: signaller,
			Recorder:  recorder,
			Config:    operations.Config{PodTimeout: o.operationPodTimeout},
		},
	}).SetupWithManager(mgr, probers.Events())
}

func main() {
	o, zapOpts := parseFlags()
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&zapOpts)))

	var tlsOpts []func(*tls.Config)
	if !o.enableHTTP2 {
		tlsOpts = append(tlsOpts, func(c *tls.Config) { c.NextProtos = []string{"http/1.1"} })
	}

	metricsOpts := metricsserver.Options{
		BindAddress:   o.metricsAddr,
		SecureServing: o.secureMetrics,
		CertDir:       o.metricsCertDir,
		TLSOpts:       tlsOpts,
	}
	if o.secureMetrics {
		metricsOpts.FilterProvider = filters.WithAuthenticationAndAuthorization
	}

	mgr, err := ctrl.NewManager(ctrl.GetConfigOrDie(), ctrl.Options{
		Scheme:                 scheme,
		Metrics:                metricsOpts,
		WebhookServer:          webhook.NewServer(o.webhook.ServerOptions(tlsOpts)),
		HealthProbeBindAddress: o.probeAddr,
		LeaderElection:         o.enableLeaderElection,
		LeaderElectionID:       "acko-leader.acko.io",
		Cache:                  cache.Options{ByObject: controller.CacheByObject()},
	})
	if err != nil {
		setupLog.Error(err, "unable to create manager")
		os.Exit(1)
	}

	if err := setupController(mgr, o); err != nil {
		setupLog.Error(err, "unable to create controller", "controller", "AerospikeCluster")
		os.Exit(1)
	}

	// The validating webhook; in self-signed mode this also writes its certificate and registers it.
	if err := ackowebhook.Setup(mgr, o.webhook); err != nil {
		setupLog.Error(err, "unable to set up the webhook", "webhook", "AerospikeCluster")
		os.Exit(1)
	}

	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		setupLog.Error(err, "unable to set up health check")
		os.Exit(1)
	}
	if err := mgr.AddReadyzCheck("readyz", healthz.Ping); err != nil {
		setupLog.Error(err, "unable to set up ready check")
		os.Exit(1)
	}

	setupLog.Info("starting manager")
	if err := mgr.Start(ctrl.SetupSignalHandler()); err != nil {
		setupLog.Error(err, "problem running manager")
		os.Exit(1)
	}
}
