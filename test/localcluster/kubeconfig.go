package localcluster

import (
	"fmt"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

const contextName = "acko-local"

func (o Options) serverURL() string { return fmt.Sprintf("https://127.0.0.1:%d", o.Ports.APIServer) }

// writeKubeconfig writes a kubeconfig for the API server with either a client certificate
// (pki/<certFile>.crt) or a bearer token.
func (o Options) writeKubeconfig(path, user, certFile, token string) error {
	auth := &clientcmdapi.AuthInfo{Token: token}
	if certFile != "" {
		auth = &clientcmdapi.AuthInfo{
			ClientCertificate: o.path("pki", certFile+".crt"),
			ClientKey:         o.path("pki", certFile+".key"),
		}
	}
	cfg := clientcmdapi.Config{
		Clusters: map[string]*clientcmdapi.Cluster{contextName: {
			Server: o.serverURL(), CertificateAuthority: o.CACertPath(),
		}},
		AuthInfos:      map[string]*clientcmdapi.AuthInfo{user: auth},
		Contexts:       map[string]*clientcmdapi.Context{contextName: {Cluster: contextName, AuthInfo: user}},
		CurrentContext: contextName,
	}
	return clientcmd.WriteToFile(cfg, path)
}

// writeComponentKubeconfigs writes the admin kubeconfig and those of the controller manager and
// the scheduler, each with its own client certificate.
func (o Options) writeComponentKubeconfigs() error {
	for _, kc := range []struct{ path, user, cert string }{
		{o.KubeconfigPath(), adminName, adminName},
		{o.path("kube-controller-manager.kubeconfig"), controllerManagerName, controllerManagerName},
		{o.path("kube-scheduler.kubeconfig"), schedulerName, schedulerName},
	} {
		if err := o.writeKubeconfig(kc.path, kc.user, kc.cert, ""); err != nil {
			return err
		}
	}
	return nil
}

// RESTConfig is the admin client configuration.
func (o Options) RESTConfig() (*rest.Config, error) {
	return clientcmd.BuildConfigFromFlags("", o.KubeconfigPath())
}
