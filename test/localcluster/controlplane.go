package localcluster

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"time"
)

// ServiceCIDR is the Service IP range: virtual only, no traffic ever goes there.
const ServiceCIDR = "10.96.0.0/16"

// Flags every Kubernetes component gets: nothing listens beyond this machine, nothing profiles.
const (
	bindLoopback = "--bind-address=127.0.0.1"
	noProfiling  = "--profiling=false"
)

func (o Options) addr(port int) string { return "127.0.0.1:" + strconv.Itoa(port) }

func (o Options) etcdSpec() procSpec {
	client := "http://" + o.addr(o.Ports.Etcd)
	peer := "http://" + o.addr(o.Ports.EtcdPeer)
	return procSpec{name: etcdName, path: o.asset(etcdName), args: []string{
		"--name=default", "--data-dir=" + o.path(etcdName),
		"--listen-client-urls=" + client, "--advertise-client-urls=" + client,
		"--listen-peer-urls=" + peer, "--initial-advertise-peer-urls=" + peer,
		"--initial-cluster=default=" + peer,
		// A throwaway cluster: losing the last writes on a machine crash is fine, fsync latency is not.
		"--unsafe-no-fsync", "--log-level=warn",
	}}
}

func (o Options) apiServerSpec() procSpec {
	pki := func(f string) string { return o.path("pki", f) }
	return procSpec{name: apiServerName, path: o.asset(apiServerName), args: []string{
		"--etcd-servers=http://" + o.addr(o.Ports.Etcd),
		bindLoopback, "--secure-port=" + strconv.Itoa(o.Ports.APIServer),
		// 1.37 refuses a loopback advertise address unless nothing reconciles the kubernetes
		// Service's endpoints (which could not hold a loopback address anyway).
		"--advertise-address=127.0.0.1", "--endpoint-reconciler-type=none",
		"--tls-cert-file=" + pki("apiserver.crt"), "--tls-private-key-file=" + pki("apiserver.key"),
		"--client-ca-file=" + pki("ca.crt"),
		"--service-account-issuer=" + o.serverURL(),
		"--service-account-key-file=" + pki("sa.pub"), "--service-account-signing-key-file=" + pki("sa.key"),
		"--service-cluster-ip-range=" + ServiceCIDR,
		"--authorization-mode=Node,RBAC",
		// pods/exec and logs go to kwok's kubelet endpoint: node InternalIP 127.0.0.1, kwok's port,
		// served with a certificate of our CA.
		"--kubelet-preferred-address-types=InternalIP",
		"--kubelet-certificate-authority=" + pki("ca.crt"),
		"--allow-privileged=true", noProfiling,
	}}
}

func (o Options) controllerManagerSpec() procSpec {
	kc := o.path("kube-controller-manager.kubeconfig")
	return procSpec{name: controllerManagerName, path: o.asset(controllerManagerName), args: []string{
		"--kubeconfig=" + kc, "--authentication-kubeconfig=" + kc, "--authorization-kubeconfig=" + kc,
		bindLoopback, "--secure-port=" + strconv.Itoa(o.Ports.ControllerManager),
		// Each controller (StatefulSet, garbage collector, ...) gets its own ServiceAccount token.
		"--use-service-account-credentials=true",
		"--service-account-private-key-file=" + o.path("pki", "sa.key"),
		"--root-ca-file=" + o.CACertPath(),
		"--leader-elect=false", noProfiling,
		// EndpointSlice (and Endpoints) validation rejects loopback addresses, so no Service can
		// have endpoints here; these controllers would only emit a warning event every few seconds.
		"--controllers=*,-endpoints-controller,-endpointslice-controller,-endpointslice-mirroring-controller",
	}}
}

func (o Options) schedulerSpec() procSpec {
	kc := o.path("kube-scheduler.kubeconfig")
	return procSpec{name: schedulerName, path: o.asset(schedulerName), args: []string{
		"--kubeconfig=" + kc, "--authentication-kubeconfig=" + kc, "--authorization-kubeconfig=" + kc,
		bindLoopback, "--secure-port=" + strconv.Itoa(o.Ports.Scheduler),
		"--leader-elect=false", noProfiling,
	}}
}

// startControlPlane starts etcd and the API server, waits for them, then starts the controller
// manager and the scheduler without waiting (startCluster checks them later).
func (c *Cluster) startControlPlane(ctx context.Context) error {
	etcd, err := c.startStep(c.opts.etcdSpec())
	if err != nil {
		return err
	}
	health := fmt.Sprintf("http://%s/health", c.opts.addr(c.opts.Ports.Etcd))
	if err := c.await(ctx, etcdName, httpOK(&http.Client{Timeout: 2 * time.Second}, health, etcd)); err != nil {
		return err
	}
	apiserver, err := c.startStep(c.opts.apiServerSpec())
	if err != nil {
		return err
	}
	admin, err := httpClient(c.opts.CACertPath(), c.opts.path("pki", adminName))
	if err != nil {
		return err
	}
	if err := c.await(ctx, apiServerName, httpOK(admin, c.opts.serverURL()+"/readyz", apiserver)); err != nil {
		return err
	}
	for _, spec := range []procSpec{c.opts.controllerManagerSpec(), c.opts.schedulerSpec()} {
		if c.procs[spec.name], err = c.startStep(spec); err != nil {
			return err
		}
	}
	return nil
}

// awaitControllers waits for the controller manager's and the scheduler's health endpoints.
func (c *Cluster) awaitControllers(ctx context.Context) error {
	insecure, err := httpClient("", "")
	if err != nil {
		return err
	}
	for name, port := range map[string]int{
		controllerManagerName: c.opts.Ports.ControllerManager, schedulerName: c.opts.Ports.Scheduler,
	} {
		url := fmt.Sprintf("https://%s/healthz", c.opts.addr(port))
		if err := c.await(ctx, name, httpOK(insecure, url, c.procs[name])); err != nil {
			return err
		}
	}
	return nil
}
