package localcluster

import (
	"bytes"
	"crypto/x509"
	"net"
	"os"
	"testing"
)

func TestPKI(t *testing.T) {
	o := Options{Dir: t.TempDir()}
	if err := o.ensurePKI(); err != nil {
		t.Fatal(err)
	}
	ca, _, err := loadPair(o.path("pki", "ca"))
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AddCert(ca)
	for _, l := range o.leaves() {
		cert, _, err := loadPair(o.path("pki", l.file))
		if err != nil {
			t.Fatalf("%s: %v", l.file, err)
		}
		usage := x509.ExtKeyUsageClientAuth
		if len(l.ips) > 0 {
			usage = x509.ExtKeyUsageServerAuth
			if err := cert.VerifyHostname("127.0.0.1"); err != nil {
				t.Errorf("%s: %v", l.file, err)
			}
		}
		opts := x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{usage}}
		if _, err := cert.Verify(opts); err != nil {
			t.Errorf("%s: %v", l.file, err)
		}
	}

	// A second start keeps the CA and the service-account key: kubeconfigs and tokens stay valid.
	caPEM, _ := os.ReadFile(o.CACertPath())
	saKey, _ := os.ReadFile(o.path("pki", "sa.key"))
	if err := o.ensurePKI(); err != nil {
		t.Fatal(err)
	}
	caPEM2, _ := os.ReadFile(o.CACertPath())
	saKey2, _ := os.ReadFile(o.path("pki", "sa.key"))
	if !bytes.Equal(caPEM, caPEM2) || !bytes.Equal(saKey, saKey2) {
		t.Fatal("CA or service-account key replaced")
	}
}

func TestAPIServerCertCoversTheKubernetesService(t *testing.T) {
	o := Options{Dir: t.TempDir()}
	if err := o.ensurePKI(); err != nil {
		t.Fatal(err)
	}
	cert, _, err := loadPair(o.path("pki", "apiserver"))
	if err != nil {
		t.Fatal(err)
	}
	if _, svc, _ := net.ParseCIDR(ServiceCIDR); !svc.Contains(cert.IPAddresses[1]) {
		t.Fatalf("IP SANs %v", cert.IPAddresses)
	}
	if err := cert.VerifyHostname("kubernetes.default.svc"); err != nil {
		t.Fatal(err)
	}
}
