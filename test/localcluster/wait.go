package localcluster

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"time"
)

const pollInterval = 100 * time.Millisecond

// poll calls check until it returns nil, ctx ends or timeout passes; the error names what was
// awaited and carries check's last error.
func poll(ctx context.Context, what string, timeout time.Duration, check func(context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	t := time.NewTicker(pollInterval)
	defer t.Stop()
	for {
		err := check(ctx)
		if err == nil {
			return nil
		}
		if errors.Is(err, errFatal) {
			return fmt.Errorf("waiting for %s: %w", what, err)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s: %w (last error: %w)", what, ctx.Err(), err)
		case <-t.C:
		}
	}
}

// errFatal marks a check error that no amount of waiting fixes (the process died).
var errFatal = errors.New("gave up")

// httpOK checks that url answers 200, failing fatally once p has exited.
func httpOK(client *http.Client, url string, p *process) func(context.Context) error {
	return func(ctx context.Context) error {
		if p != nil && p.exited() {
			return fmt.Errorf("%w: the process exited, see its log", errFatal)
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return err
		}
		resp, err := client.Do(req)
		if err != nil {
			return err
		}
		defer func() { _ = resp.Body.Close() }()
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("%s: %s: %s", url, resp.Status, body)
		}
		return nil
	}
}

// httpClient trusts the cluster CA and presents pki/<clientCert> when given; with an empty caFile
// it skips verification (for the self-signed health endpoints of the controller manager and the
// scheduler, which serve nothing secret).
func httpClient(caFile, certBase string) (*http.Client, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if caFile == "" {
		cfg.InsecureSkipVerify = true //nolint:gosec // health endpoints only
	} else {
		pem, err := os.ReadFile(caFile)
		if err != nil {
			return nil, err
		}
		cfg.RootCAs = x509.NewCertPool()
		cfg.RootCAs.AppendCertsFromPEM(pem)
	}
	if certBase != "" {
		cert, err := tls.LoadX509KeyPair(certBase+".crt", certBase+".key")
		if err != nil {
			return nil, err
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	return &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: cfg}}, nil
}
