// Package simclient talks to the Aerospike simulator's HTTP control API (test/aerosim, served by
// bin/aerosim). The local cluster names the simulated node of a pod NodeName(namespace, pod).
//
// The test bed may run several simulator processes (shards) to serve thousands of nodes: every call
// of the simulator settles its whole simulated world, so one world of 3000 nodes answers too slowly.
// Each namespace's nodes live in one shard (ShardOf), so nodes that may form a cluster together
// always share one; nodes of different shards never hear each other.
package simclient

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/acko-io/acko/test/aerosim"
)

// NodeName is the simulator node of a pod.
func NodeName(namespace, pod string) string { return namespace + "/" + pod }

// ClusterName is the simulated cluster of an AerospikeCluster (its pods' instance label).
func ClusterName(namespace, instance string) string { return namespace + "/" + instance }

// Client calls the control API at a base URL such as http://127.0.0.1:3099, or at one per shard.
type Client struct {
	bases []string
	http  *http.Client
}

// New returns a client for the control API at base, or at several comma-separated bases: one per
// shard, in the order ShardOf counts them.
func New(base string) *Client {
	return &Client{bases: strings.Split(base, ","), http: &http.Client{Timeout: 10 * time.Second}}
}

// ShardOf is which of n shards holds the nodes of a namespace.
func ShardOf(namespace string, n int) int {
	h := fnv.New32a()
	_, _ = h.Write([]byte(namespace))
	return int(h.Sum32() % uint32(n))
}

// at is the base of the shard holding a node: that of its namespace, the part of its name before
// "/" (a name without one is its own namespace).
func (c *Client) at(node string) string {
	if len(c.bases) == 1 {
		return c.bases[0]
	}
	namespace, _, _ := strings.Cut(node, "/")
	return c.bases[ShardOf(namespace, len(c.bases))]
}

// together is the base of the one shard holding every node of nodes: a call about several nodes at
// once cannot span shards.
func (c *Client) together(nodes ...string) (string, error) {
	base := c.bases[0]
	for i, n := range nodes {
		if b := c.at(n); i == 0 {
			base = b
		} else if b != base {
			return "", fmt.Errorf("%w: %s and %s are in different simulator shards", aerosim.ErrInvalid, nodes[0], n)
		}
	}
	return base, nil
}

// everywhere runs call on every shard.
func (c *Client) everywhere(call func(base string) error) error {
	errs := make([]error, 0, len(c.bases))
	for _, base := range c.bases {
		errs = append(errs, call(base))
	}
	return errors.Join(errs...)
}

// Nodes lists every simulated node.
func (c *Client) Nodes(ctx context.Context) ([]aerosim.NodeState, error) {
	var all []aerosim.NodeState
	err := c.everywhere(func(base string) error {
		var out []aerosim.NodeState
		err := c.do(ctx, base, http.MethodGet, "/nodes", nil, &out)
		all = append(all, out...)
		return err
	})
	return all, err
}

// Node returns one node; errors wrap aerosim.ErrNotFound when there is none.
func (c *Client) Node(ctx context.Context, name string) (aerosim.NodeState, error) {
	var out aerosim.NodeState
	return out, c.do(ctx, c.at(name), http.MethodGet, nodePath(name, ""), nil, &out)
}

// AddNode starts a node; errors wrap aerosim.ErrConflict when the name or address is taken.
func (c *Client) AddNode(ctx context.Context, spec aerosim.NodeSpec) (aerosim.NodeState, error) {
	var out aerosim.NodeState
	return out, c.do(ctx, c.at(spec.Name), http.MethodPost, "/nodes", spec, &out)
}

// RemoveNode stops a node for good.
func (c *Client) RemoveNode(ctx context.Context, name string) error {
	return c.do(ctx, c.at(name), http.MethodDelete, nodePath(name, ""), nil, nil)
}

// WarmRestart does to the node what SIGUSR1 to the image's tini does to asd.
func (c *Client) WarmRestart(ctx context.Context, name string) (aerosim.NodeState, error) {
	var out aerosim.NodeState
	return out, c.do(ctx, c.at(name), http.MethodPost, nodePath(name, "/warm-restart"), nil, &out)
}

// WarmRestartNodes warm-restarts the nodes at the same instant (all or none), e.g. two of three
// nodes of a replication-factor-2 memory namespace to lose the records whose copies were both there.
func (c *Client) WarmRestartNodes(ctx context.Context, names ...string) ([]aerosim.NodeState, error) {
	base, err := c.together(names...)
	if err != nil {
		return nil, err
	}
	var out []aerosim.NodeState
	body := map[string][]string{"nodes": names}
	return out, c.do(ctx, base, http.MethodPost, "/nodes/warm-restart", body, &out)
}

// SetLatency delays every answer of the node.
func (c *Client) SetLatency(ctx context.Context, name string, d time.Duration) (aerosim.NodeState, error) {
	var out aerosim.NodeState
	body := map[string]aerosim.Duration{"latency": {Duration: d}}
	return out, c.do(ctx, c.at(name), http.MethodPut, nodePath(name, "/latency"), body, &out)
}

// SetFault makes the node misbehave (aerosim.FaultNone clears it).
func (c *Client) SetFault(ctx context.Context, name string, f aerosim.Fault) (aerosim.NodeState, error) {
	var out aerosim.NodeState
	return out, c.do(ctx, c.at(name), http.MethodPut, nodePath(name, "/fault"), map[string]aerosim.Fault{"fault": f}, &out)
}

// SetPin makes the node answer the pinned values (an empty Pin simulates every value again).
func (c *Client) SetPin(ctx context.Context, name string, p aerosim.Pin) (aerosim.NodeState, error) {
	var out aerosim.NodeState
	return out, c.do(ctx, c.at(name), http.MethodPut, nodePath(name, "/pin"), p, &out)
}

// Log returns what the node's asd logged.
func (c *Client) Log(ctx context.Context, name string) ([]string, error) {
	var out struct {
		Lines []string `json:"lines"`
	}
	return out.Lines, c.do(ctx, c.at(name), http.MethodGet, nodePath(name, "/log"), nil, &out)
}

// SetDNS replaces the simulator's DNS table (name → addresses), in every shard.
func (c *Client) SetDNS(ctx context.Context, records map[string][]string) error {
	return c.everywhere(func(base string) error { return c.do(ctx, base, http.MethodPut, "/dns", records, nil) })
}

// DNS returns the simulator's DNS table (every shard's is the same).
func (c *Client) DNS(ctx context.Context) (map[string][]string, error) {
	var out map[string][]string
	return out, c.do(ctx, c.bases[0], http.MethodGet, "/dns", nil, &out)
}

// CutMesh cuts the mesh between groups of nodes, all in one shard: each group then hears only itself.
func (c *Client) CutMesh(ctx context.Context, groups ...[]string) error {
	base, err := c.together(slices.Concat(groups...)...)
	if err != nil {
		return err
	}
	return c.do(ctx, base, http.MethodPut, "/partitions", map[string][][]string{"groups": groups}, nil)
}

// HealMesh removes every mesh cut.
func (c *Client) HealMesh(ctx context.Context) error {
	return c.everywhere(func(base string) error { return c.do(ctx, base, http.MethodDelete, "/partitions", nil, nil) })
}

// History returns the nodes' transitions and the clusters formed since the given time (zero: all),
// of a simulator of one shard.
func (c *Client) History(ctx context.Context, since time.Time) (aerosim.History, error) {
	if len(c.bases) > 1 {
		return aerosim.History{}, fmt.Errorf("%w: a history of %d simulator shards", aerosim.ErrInvalid, len(c.bases))
	}
	path := "/history"
	if !since.IsZero() {
		path += "?since=" + url.QueryEscape(since.Format(time.RFC3339Nano))
	}
	var out aerosim.History
	return out, c.do(ctx, c.bases[0], http.MethodGet, path, nil, &out)
}

// ReadFile returns a file of the node; errors wrap aerosim.ErrNotFound when it (or the node) is
// missing.
func (c *Client) ReadFile(ctx context.Context, name, path string) (string, error) {
	var out bytes.Buffer
	err := c.send(ctx, c.at(name), http.MethodGet, filePath(name, "/files", path), nil, &out)
	return out.String(), err
}

// WriteFile creates or replaces a file of the node.
func (c *Client) WriteFile(ctx context.Context, name, path, content string) error {
	return c.send(ctx, c.at(name), http.MethodPut, filePath(name, "/files", path), strings.NewReader(content), nil)
}

// SetDir replaces the files directly in a directory of the node (name → content).
func (c *Client) SetDir(ctx context.Context, name, dir string, files map[string]string) error {
	return c.do(ctx, c.at(name), http.MethodPut, filePath(name, "/dirs", dir), files, nil)
}

func filePath(name, route, path string) string {
	return nodePath(name, route) + "?path=" + url.QueryEscape(path)
}

func nodePath(name, suffix string) string { return "/nodes/" + url.PathEscape(name) + suffix }

// do sends in as JSON (when not nil) and decodes the answer into out (when not nil).
func (c *Client) do(ctx context.Context, base, method, path string, in, out any) error {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return err
		}
		body = bytes.NewReader(b)
	}
	if out == nil {
		return c.send(ctx, base, method, path, body, nil)
	}
	var answer bytes.Buffer
	if err := c.send(ctx, base, method, path, body, &answer); err != nil {
		return err
	}
	return json.Unmarshal(answer.Bytes(), out)
}

// send sends body (when not nil) and copies the answer to out (when not nil). Error answers become
// errors wrapping the matching aerosim error.
func (c *Client) send(ctx context.Context, base, method, path string, body io.Reader, out io.Writer) error {
	req, err := http.NewRequestWithContext(ctx, method, base+path, body)
	if err != nil {
		return err
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return err
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode >= http.StatusBadRequest {
		var e struct {
			Error string `json:"error"`
		}
		_ = json.NewDecoder(io.LimitReader(resp.Body, 1<<16)).Decode(&e)
		if strings.HasPrefix(e.Error, aerosim.ErrNoFile.Error()) {
			return fmt.Errorf("aerosim %s %s: %w", method, path, aerosim.ErrNoFile)
		}
		return fmt.Errorf("aerosim %s %s: %w: %s", method, path, statusError(resp.StatusCode), e.Error)
	}
	if out == nil {
		return nil
	}
	_, err = io.Copy(out, resp.Body)
	return err
}

func statusError(code int) error {
	switch code {
	case http.StatusNotFound:
		return aerosim.ErrNotFound
	case http.StatusConflict:
		return aerosim.ErrConflict
	case http.StatusBadRequest:
		return aerosim.ErrInvalid
	case http.StatusServiceUnavailable:
		return aerosim.ErrClosed
	default:
		return fmt.Errorf("HTTP %d", code)
	}
}
