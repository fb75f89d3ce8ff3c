package certs

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
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

// File names in the cert dir; tls.crt and tls.key are what the webhook server reads.
const (
	CAFile   = "ca.crt"
	CertFile = "tls.crt"
	KeyFile  = "tls.key"
)

// backdate covers a small clock difference between the manager and the API server.
const backdate = time.Hour

// keyPair is a CA and the serving certificate it signed, with the PEM bytes written to disk.
type keyPair struct {
	caPEM, certPEM, keyPEM []byte
	ca, leaf               *x509.Certificate
}

// generate makes a new CA and a serving certificate for hosts, both valid for validity from now.
func generate(hosts []string, now time.Time, validity time.Duration) (*keyPair, error) {
	caKey, ca, err := newCA(now, validity)
	if err != nil {
		return nil, err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	tmpl, err := template(hosts[0], now, validity)
	if err != nil {
		return nil, err
	}
	tmpl.KeyUsage = x509.KeyUsageDigitalSignature
	tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
	for _, host := range hosts {
		if ip := net.ParseIP(host); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, host)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		return nil, err
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, err
	}
	return parseKeyPair(encode("CERTIFICATE", ca.Raw), encode("CERTIFICATE", der), encode("PRIVATE KEY", keyDER))
}

func newCA(now time.Time, validity time.Duration) (*ecdsa.PrivateKey, *x509.Certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	tmpl, err := template("acko-webhook-ca", now, validity)
	if err != nil {
		return nil, nil, err
	}
	tmpl.IsCA = true
	tmpl.BasicConstraintsValid = true
	tmpl.KeyUsage = x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, nil, err
	}
	ca, err := x509.ParseCertificate(der)
	return key, ca, err
}

func template(commonName string, now time.Time, validity time.Duration) (*x509.Certificate, error) {
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 128))
	if err != nil {
		return nil, err
	}
	return &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: commonName, Organization: []string{"acko"}},
		NotBefore:    now.Add(-backdate),
		NotAfter:     now.Add(validity),
	}, nil
}

func encode(typ string, der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der})
}

// parseKeyPair checks that the key matches the certificate and parses both certificates.
func parseKeyPair(caPEM, certPEM, keyPEM []byte) (*keyPair, error) {
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, err
	}
	ca, err := parseCA(caPEM)
	if err != nil {
		return nil, err
	}
	return &keyPair{caPEM: caPEM, certPEM: certPEM, keyPEM: keyPEM, ca: ca, leaf: pair.Leaf}, nil
}

func parseCA(caPEM []byte) (*x509.Certificate, error) {
	block, _ := pem.Decode(caPEM)
	if block == nil {
		return nil, errors.New("no PEM certificate in the CA file")
	}
	return x509.ParseCertificate(block.Bytes)
}

// load reads the key pair a previous run wrote into dir.
func load(dir string) (*keyPair, error) {
	var data [3][]byte
	for i, name := range []string{CAFile, CertFile, KeyFile} {
		var err error
		if data[i], err = os.ReadFile(filepath.Join(dir, name)); err != nil {
			return nil, err
		}
	}
	return parseKeyPair(data[0], data[1], data[2])
}

// check says why the pair cannot serve every host at now for more than a third of validity, or nil.
func (k *keyPair) check(hosts []string, now time.Time, validity time.Duration) error {
	roots := x509.NewCertPool()
	roots.AddCert(k.ca)
	for _, host := range hosts {
		if _, err := k.leaf.Verify(x509.VerifyOptions{DNSName: host, Roots: roots, CurrentTime: now}); err != nil {
			return err
		}
	}
	expiry := k.leaf.NotAfter
	if k.ca.NotAfter.Before(expiry) {
		expiry = k.ca.NotAfter
	}
	if left := expiry.Sub(now); left < validity/3 {
		return fmt.Errorf("expires in %s, less than a third of %s", left.Round(time.Second), validity)
	}
	return nil
}

// write replaces the files in dir, each atomically, the key before the certificate: the webhook
// server's watcher only loads a matching pair, so it switches once both are in place.
func (k *keyPair) write(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	for _, f := range []struct {
		name string
		data []byte
		perm os.FileMode
	}{{CAFile, k.caPEM, 0o644}, {KeyFile, k.keyPEM, 0o600}, {CertFile, k.certPEM, 0o644}} {
		if err := writeAtomic(filepath.Join(dir, f.name), f.data, f.perm); err != nil {
			return err
		}
	}
	return nil
}

func writeAtomic(path string, data []byte, perm os.FileMode) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	defer func() { _ = os.Remove(tmp.Name()) }()
	if _, err := tmp.Write(data); err != nil {
		_ = tmp.Close()
		return err
	}
	if err := tmp.Chmod(perm); err != nil {
		_ = tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// caBundle is the PEM of the CAs to trust: the pair's, and the one before it while it is still
// valid, so that a server still presenting the previous certificate keeps being trusted.
func caBundle(now time.Time, current, previous *keyPair) []byte {
	if previous == nil || now.After(previous.ca.NotAfter) || bytes.Equal(previous.caPEM, current.caPEM) {
		return current.caPEM
	}
	return append(append([]byte{}, current.caPEM...), previous.caPEM...)
}
