package localcluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"time"
)

// PrometheusJob is the scrape job of the manager's metrics endpoint.
const PrometheusJob = "acko-manager"

// prometheusConfig scrapes the manager's HTTPS endpoint as a real deployment would: with a
// ServiceAccount token the manager checks through TokenReview and SubjectAccessReview, over TLS
// verified against the cluster CA (the manager serves pki/manager/tls.crt, IP SAN 127.0.0.1).
// Prometheus rereads the token file at every scrape.
const prometheusConfig = `global:
  scrape_interval: 2s
  evaluation_interval: 2s
scrape_configs:
- job_name: %[1]s
  scheme: https
  authorization:
    type: Bearer
    credentials_file: %[2]s
  tls_config:
    ca_file: %[3]s
  static_configs:
  - targets: ['%[4]s']
`

// PrometheusURL is the base URL of the local Prometheus.
func (o Options) PrometheusURL() string { return "http://" + o.addr(o.Ports.Prometheus) }

// startPrometheus runs Debian's prometheus (never the package's own service: this one listens
// on the cluster's port with its own data directory) and waits until it is ready.
func (c *Cluster) startPrometheus(ctx context.Context) error {
	if c.opts.NoPrometheus {
		return nil
	}
	bin, err := exec.LookPath(prometheusName)
	if err != nil {
		if c.opts.RequirePrometheus {
			return errors.New("no prometheus in PATH: apt-get install -y prometheus")
		}
		c.logf("no prometheus in PATH (apt-get install -y prometheus): metrics are not scraped")
		return nil
	}
	dir := c.opts.path(prometheusName)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	token, err := c.opts.createToken(ctx, PrometheusServiceAccount)
	if err != nil {
		return err
	}
	tokenFile, configFile := c.opts.path(prometheusName, "token"), c.opts.path(prometheusName, "prometheus.yml")
	if err := os.WriteFile(tokenFile, []byte(token), 0o600); err != nil {
		return err
	}
	cfg := fmt.Sprintf(prometheusConfig, PrometheusJob, tokenFile, c.opts.CACertPath(), c.opts.addr(c.opts.Ports.Metrics))
	if err := os.WriteFile(configFile, []byte(cfg), 0o600); err != nil {
		return err
	}
	p, err := c.startStep(procSpec{name: prometheusName, path: bin, args: []string{
		"--config.file=" + configFile,
		"--storage.tsdb.path=" + c.opts.path(prometheusName, "data"),
		"--storage.tsdb.retention.time=1d",
		"--web.listen-address=" + c.opts.addr(c.opts.Ports.Prometheus),
	}})
	if err != nil {
		return err
	}
	err = c.await(ctx, prometheusName, httpOK(&http.Client{Timeout: 2 * time.Second}, c.opts.PrometheusURL()+"/-/ready", p))
	if err != nil {
		return fmt.Errorf("%w (port %d taken? Debian's own prometheus service must not run: systemctl stop prometheus)",
			err, c.opts.Ports.Prometheus)
	}
	return nil
}

// PromSample is one series of an instant query's result.
type PromSample struct {
	Metric map[string]string `json:"metric"`
	Value  [2]any            `json:"value"` // [unix time, "value"]
}

// PromQuery runs an instant query over Prometheus's HTTP API.
func (o Options) PromQuery(ctx context.Context, query string) ([]PromSample, error) {
	u := o.PrometheusURL() + "/api/v1/query?query=" + url.QueryEscape(query)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer func() { _ = resp.Body.Close() }()
	var body struct {
		Status string `json:"status"`
		Error  string `json:"error"`
		Data   struct {
			Result []PromSample `json:"result"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		return nil, err
	}
	if body.Status != "success" {
		return nil, fmt.Errorf("prometheus query %q: %s", query, body.Error)
	}
	return body.Data.Result, nil
}
