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
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	_ "k8s.io/client-go/plugin/pkg/client/auth"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/metrics/filters"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	ackov1alpha1 "github.com/acko-io/acko/api/v1alpha1"
	"github.com/acko-io/acko/internal/aerospike"
	backupcontroller "github.com/acko-io/acko/internal/controller/backup"
	clustercontroller "github.com/acko-io/acko/internal/controller/cluster"
	restorecontroller "github.com/acko-io/acko/internal/controller/restore"
	"github.com/acko-io/acko/internal/liveconfig"
	"github.com/acko-io/acko/internal/metrics"
	"github.com/acko-io/acko/internal/operations"
	"github.com/acko-io/acko/internal/podexec"
	"github.com/acko-io/acko/internal/pods"
	"github.com/acko-io/acko/internal/resources"
	"github.com/acko-io/acko/internal/status"
	"github.com/acko-io/acko/internal/tasks"
	"github.com/acko-io/acko/internal/version"
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
	maxConcurrent          int
	apiQPS                 float64
	apiBurst               int
	infoTimeout            time.Duration
	infoConnections        int
	metricsAddr, probeAddr string
	pprofAddr              string
	secureMetrics          bool
	enableHTTP2            bool
	metricsCertDir         string
	clusterDomain          string
	webhook                ackowebhook.Options
	deployment             deploymentOptions
}

func parseFlags() (options, zap.Options) {
	var o options
	flag.StringVar(&o.metricsAddr, "metrics-bind-address", ":8443",
		"The address the metrics endpoint binds to (:8443 for HTTPS, :8080 for HTTP, 0 to disable).")
	flag.StringVar(&o.probeAddr, "health-probe-bind-address", ":8081", "The address the probe endpoint binds to.")
	flag.StringVar(&o.pprofAddr, "pprof-bind-address", "",
		"The address Go's pprof handlers (heap, goroutines, CPU profiles) bind to, e.g. 127.0.0.1:6060; empty serves none.")
	flag.BoolVar(&o.secureMetrics, "metrics-secure", true,
		"Serve metrics over HTTPS with authentication and authorization.")
	flag.StringVar(&o.metricsCertDir, "metrics-cert-path", "",
		"Directory with tls.crt and tls.key for the metrics server; empty generates a self-signed certificate.")
	flag.BoolVar(&o.enableHTTP2, "enable-http2", false,
		"Enable HTTP/2 for the metrics and webhook servers (off: HTTP/2 Stream Cancellation and Rapid Reset CVEs).")
	flag.DurationVar(&o.operationPodTimeout, "operation-pod-timeout", operations.DefaultConfig.PodTimeout,
		"How long an operation waits for one restarted pod to come back before it fails.")
	flag.IntVar(&o.maxConcurrent, "max-concurrent-reconciles", clustercontroller.DefaultMaxConcurrentReconciles,
		"How many AerospikeClusters are reconciled at once (one cluster never by two workers).")
	flag.Float64Var(&o.apiQPS, "kube-api-qps", 100, "Requests per second the manager may send to the API server.")
	flag.IntVar(&o.apiBurst, "kube-api-burst", 200, "Burst of requests above --kube-api-qps.")
	flag.StringVar(&o.clusterDomain, "cluster-domain", ackov1alpha1.DefaultClusterDomain,
		"DNS domain of the Kubernetes cluster (the kubelets' --cluster-domain), for the pods' DNS names in the "+
			"Aerospike mesh seeds.")
	flag.DurationVar(&o.infoTimeout, "aerospike-info-timeout", aerospike.DefaultTimeout,
		"Timeout of one Aerospike info call.")
	flag.IntVar(&o.infoConnections, "aerospike-max-connections", aerospike.DefaultMaxConnections,
		"Aerospike info calls in flight at once, each on its own connection; more wait for a turn "+
			"(the wait is not part of --aerospike-info-timeout).")
	o.webhook.BindFlags(flag.CommandLine)
	o.deployment.bindFlags(flag.CommandLine)
	// Production logging (JSON, info) unless --zap-devel asks for the development console format.
	zapOpts := zap.Options{}
	zapOpts.BindFlags(flag.CommandLine)
	flag.Parse()
	o.webhook.ClusterDomain = o.clusterDomain
	return o, zapOpts
}

// setupController wires the cluster's reconciler to the prober, the background tasks, the operations
// executor and the metrics, and the backup and restore reconcilers beside it.
func setupController(mgr ctrl.Manager, o options) error {
	recorder := mgr.GetEventRecorder("acko")
	info := aerospike.NewClient(aerospike.ClientOptions{Timeout: o.infoTimeout,
		MaxConnections: o.infoConnections})
	probers := aerospike.NewProberManager(aerospike.ProberOptions{
		Client: info,
		OnTip:  func(t aerospike.Tip) { clustercontroller.RecordTip(recorder, t) },
	})
	runner := tasks.New(tasks.DefaultTimeout)
	for _, r := range []manager.Runnable{probers, runner} {
		if err := mgr.Add(r); err != nil {
			return err
		}
	}
	signaller, err := podexec.New(mgr.GetConfig(), nil)
	if err != nil {
		return err
	}
	clientset, err := kubernetes.NewForConfig(mgr.GetConfig())
	if err != nil {
		return err
	}
	registerMetrics(mgr)
	statusWriter := status.NewWriter(mgr.GetClient(), mgr.GetAPIReader())
	logs := pods.LogTail{Client: clientset}
	if err := (&backupcontroller.AerospikeBackupReconciler{Client: mgr.GetClient(), Recorder: recorder, Logs: logs,
		ClusterDomain: o.clusterDomain}).SetupWithManager(mgr); err != nil {
		return err
	}
	if err := (&restorecontroller.AerospikeRestoreReconciler{Client: mgr.GetClient(), Recorder: recorder, Logs: logs,
		ClusterDomain: o.clusterDomain}).SetupWithManager(mgr); err != nil {
		return err
	}
	return (&clustercontroller.AerospikeClusterReconciler{
		Client:                  mgr.GetClient(),
		APIReader:               mgr.GetAPIReader(),
		Scheme:                  mgr.GetScheme(),
		Recorder:                recorder,
		Probers:                 probers,
		Status:                  statusWriter,
		Tasks:                   runner,
		Live:                    &liveconfig.Applier{Pods: signaller, Info: info},
		Limits:                  signaller,
		Logs:                    logs,
		ClusterDomain:           o.clusterDomain,
		MaxConcurrentReconciles: o.maxConcurrent,
		PodMonitors:             podMonitorsServed(mgr),
		Executor: &operations.Executor{
			Client:    mgr.GetClient(),
			Signaller: signaller,
			Tasks:     runner,
			Status:    statusWriter,
			Recorder:  recorder,
			Config:    operations.Config{PodTimeout: o.operationPodTimeout},
		},
	}).SetupWithManager(mgr, probers.Events(), runner.Events())
}

// podMonitorsServed reports whether the Prometheus Operator's PodMonitor CRD exists as the manager
// starts: spec.monitoring then adds a PodMonitor per cluster.
func podMonitorsServed(mgr ctrl.Manager) bool {
	_, err := mgr.GetRESTMapper().RESTMapping(resources.PodMonitorGVK.GroupKind(), resources.PodMonitorGVK.Version)
	if err != nil {
		setupLog.Info("no PodMonitor CRD: spec.monitoring adds the exporter and its port, no PodMonitor", "reason", err.Error())
	}
	return err == nil
}

// registerMetrics serves ACKO's metrics; the per-cluster gauges only while this replica leads.
func registerMetrics(mgr ctrl.Manager) {
	metrics.Register(func(ctx context.Context) ([]ackov1alpha1.AerospikeCluster, error) {
		list := &ackov1alpha1.AerospikeClusterList{}
		err := mgr.GetCache().List(ctx, list)
		return list.Items, err
	}, mgr.Elected())
	metrics.RegisterBackups(func(ctx context.Context) ([]ackov1alpha1.AerospikeBackup, error) {
		list := &ackov1alpha1.AerospikeBackupList{}
		err := mgr.GetCache().List(ctx, list)
		return list.Items, err
	}, mgr.Elected())
}

// applyDeployment sets the namespaces the manager watches, its leader election and the webhook's
// namespace options; the operator's own namespace is only resolved when something lives there.
func applyDeployment(mgrOpts *ctrl.Options, o *options) error {
	watch, err := o.deployment.namespaces()
	if err != nil {
		return err
	}
	mgrOpts.Cache = cacheOptions(watch)
	o.webhook.WatchNamespaces = watch
	var namespace string
	if o.deployment.leaderElect || o.webhook.NeedsNamespace() {
		if namespace, err = o.deployment.namespace(); err != nil {
			return err
		}
	}
	o.webhook.Namespace = namespace
	o.deployment.applyLeaderElection(mgrOpts, namespace)
	return nil
}

func main() {
	o, zapOpts := parseFlags()
	o.deployment.exitIfVersion()
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

	mgrOpts := ctrl.Options{
		Scheme:                 scheme,
		Metrics:                metricsOpts,
		HealthProbeBindAddress: o.probeAddr,
		PprofBindAddress:       o.pprofAddr,
	}
	if err := applyDeployment(&mgrOpts, &o); err != nil {
		setupLog.Error(err, "invalid flags")
		os.Exit(1)
	}
	mgrOpts.WebhookServer = webhook.NewServer(o.webhook.ServerOptions(tlsOpts))
	setupLog.Info("starting", "version", version.Version, "revision", version.Revision,
		"watchNamespaces", o.webhook.WatchNamespaces, "leaderElection", mgrOpts.LeaderElection,
		"goMemoryLimitBytes", setMemoryLimit(cgroupMemoryMax))
	restCfg := ctrl.GetConfigOrDie()
	restCfg.QPS, restCfg.Burst = float32(o.apiQPS), o.apiBurst
	mgr, err := ctrl.NewManager(restCfg, mgrOpts)
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
