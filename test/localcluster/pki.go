package localcluster

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// Certificate lifetimes. The CA and the service-account key outlive restarts (the user's
// kubeconfig and issued tokens stay valid); leaf certificates are issued anew on every start.
const (
	caValidity   = 10 * 365 * 24 * time.Hour
	leafValidity = 365 * 24 * time.Hour
)

const localhost = "localhost"

var loopback = []net.IP{net.IPv4(127, 0, 0, 1)}

// leaf describes one certificate signed by the cluster CA.
type leaf struct {
	file string // pki/<file>.crt and .key
	cn   string
	orgs []string
	ips  []net.IP
	dns  []string
}

func (o Options) leaves() []leaf {
	return []leaf{
		// Also for the kubernetes Service's IP (10.96.0.1), as in-cluster clients would use it.
		{file: "apiserver", cn: apiServerName, ips: []net.IP{loopback[0], net.IPv4(10, 96, 0, 1)},
			dns: []string{localhost, "kubernetes", "kubernetes.default", "kubernetes.default.svc",
				"kubernetes.default.svc.cluster.local"}},
		// system:masters: the user, kwok and the harness act as cluster admins; the manager does not.
		{file: adminName, cn: "acko-local-admin", orgs: []string{"system:masters"}},
		{file: controllerManagerName, cn: "system:kube-controller-manager"},
		{file: schedulerName, cn: "system:kube-scheduler"},
		// kwok serves exec and logs to the API server, which checks it against the CA.
		{file: kwokName, cn: kwokName, ips: loopback, dns: []string{localhost}},
		// The manager's metrics endpoint: tls.crt and tls.key, as --metrics-cert-path expects.
		{file: filepath.Join(managerName, "tls"), cn: "acko-manager", ips: loopback, dns: []string{localhost}},
	}
}

// ensurePKI creates the CA and service-account key once, then issues every leaf certificate.
func (o Options) ensurePKI() error {
	if err := os.MkdirAll(o.path("pki", managerName), 0o700); err != nil {
		return err
	}
	caCert, caKey, err := o.ensureCA()
	if err != nil {
		return err
	}
	if err := o.ensureKey(o.path("pki", "sa")); err != nil {
		return err
	}
	for _, l := range o.leaves() {
		if err := issue(caCert, caKey, l, o.path("pki", l.file)); err != nil {
			return fmt.Errorf("certificate %s: %w", l.file, err)
		}
	}
	return nil
}

func (o Options) ensureCA() (*x509.Certificate, crypto.Signer, error) {
	base := o.path("pki", "ca")
	if cert, key, err := loadPair(base); err == nil && time.Now().Before(cert.NotAfter) {
		return cert, key, nil
	}
	key, err := newKey()
	if err != nil {
		return nil, nil, err
	}
	tmpl := certTemplate("acko-local-ca", nil, caValidity)
	tmpl.IsCA, tmpl.BasicConstraintsValid = true, true
	tmpl.KeyUsage = x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return nil, nil, err
	}
	if err := writePair(base, der, key); err != nil {
		return nil, nil, err
	}
	cert, err := x509.ParseCertificate(der)
	return cert, key, err
}

// ensureKey writes <base>.key and <base>.pub (the service-account signing pair) unless present.
func (o Options) ensureKey(base string) error {
	if _, err := os.Stat(base + ".key"); err == nil {
		return nil
	}
	key, err := newKey()
	if err != nil {
		return err
	}
	pub, err := x509.MarshalPKIXPublicKey(key.Public())
	if err != nil {
		return err
	}
	if err := writeKey(base+".key", key); err != nil {
		return err
	}
	return writePEM(base+".pub", "PUBLIC KEY", pub, 0o644)
}

func issue(ca *x509.Certificate, caKey crypto.Signer, l leaf, base string) error {
	key, err := newKey()
	if err != nil {
		return err
	}
	tmpl := certTemplate(l.cn, l.orgs, leafValidity)
	tmpl.KeyUsage = x509.KeyUsageDigitalSignature
	if len(l.ips) > 0 || len(l.dns) > 0 {
		tmpl.IPAddresses, tmpl.DNSNames = l.ips, l.dns
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
	} else {
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, key.Public(), caKey)
	if err != nil {
		return err
	}
	return writePair(base, der, key)
}

func certTemplate(cn string, orgs []string, validity time.Duration) *x509.Certificate {
	serial, _ := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	now := time.Now()
	return &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: cn, Organization: orgs},
		NotBefore:    now.Add(-time.Hour), // tolerate small clock differences
		NotAfter:     now.Add(validity),
	}
}

// newKey returns a P-256 key: fast to generate, and accepted by every component here (the API
// server signs service-account tokens with it as ES256).
func newKey() (*ecdsa.PrivateKey, error) { return ecdsa.GenerateKey(elliptic.P256(), rand.Reader) }

func writePair(base string, der []byte, key crypto.Signer) error {
	if err := writePEM(base+".crt", "CERTIFICATE", der, 0o644); err != nil {
		return err
	}
	return writeKey(base+".key", key)
}

func writeKey(path string, key crypto.Signer) error {
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return err
	}
	return writePEM(path, "PRIVATE KEY", der, 0o600)
}

func writePEM(path, typ string, der []byte, mode os.FileMode) error {
	return os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), mode)
}

func loadPair(base string) (*x509.Certificate, crypto.Signer, error) {
	certPEM, err := os.ReadFile(base + ".crt")
	if err != nil {
		return nil, nil, err
	}
	keyPEM, err := os.ReadFile(base + ".key")
	if err != nil {
		return nil, nil, err
	}
	cb, _ := pem.Decode(certPEM)
	kb, _ := pem.Decode(keyPEM)
	if cb == nil || kb == nil {
		return nil, nil, errors.New("not PEM")
	}
	cert, err := x509.ParseCertificate(cb.Bytes)
	if err != nil {
		return nil, nil, err
	}
	key, err := x509.ParsePKCS8PrivateKey(kb.Bytes)
	if err != nil {
		return nil, nil, err
	}
	signer, ok := key.(crypto.Signer)
	if !ok {
		return nil, nil, errors.New("CA key cannot sign")
	}
	return cert, signer, nil
}
