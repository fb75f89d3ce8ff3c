package aerospike

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/acko-io/acko/internal/config"
)

// Info commands read for NodeFacts.
const (
	cmdNode       = "node"
	cmdBuild      = "build"
	cmdStatistics = "statistics"
	cmdServiceStd = "service-clear-std"
	cmdServiceAlt = "service-clear-alt"
)

// NodeFacts is what one node says about itself and the cluster it sees.
type NodeFacts struct {
	NodeID string // "node"
	Build  string // "build", e.g. 8.1.2.0
	// Uptime restarts from 0 whenever asd restarts (also after a warm restart).
	Uptime                     time.Duration
	ClusterSize                int
	ClusterKey                 string // hex, as asd prints it
	ClusterIntegrity           bool
	MigratePartitionsRemaining int64
	// ClusterStableKey is the answer to cluster-stable:size=N;ignore-migrations=false (the cluster key)
	// and ClusterStableErr the node's refusal (ERROR:7:unstable cluster, ...), when it was asked.
	ClusterStableKey string
	ClusterStableErr error
	// ServiceStd and ServiceAlt are the client addresses the node advertises ("service-clear-std",
	// "service-clear-alt": host:port, comma-separated; empty when it has none or was not asked).
	ServiceStd, ServiceAlt string
}

// errNotAsked stands for the cluster-stable answer of a reading that did not ask (no size known).
var errNotAsked = errors.New("not asked")

// ReadNodeFacts asks the node at addr for node, build and statistics, when size > 0 whether it sees a
// stable cluster of that size (cluster-stable, migrations included), and when advertised the client
// addresses it advertises, in one request.
func ReadNodeFacts(ctx context.Context, c InfoClient, addr string, size int, advertised bool) (NodeFacts, error) {
	cmds := []string{cmdNode, cmdBuild, cmdStatistics}
	if advertised {
		cmds = append(cmds, cmdServiceStd, cmdServiceAlt)
	}
	if size > 0 {
		cmds = append(cmds, ClusterStableCommand(size, false))
	}
	answers, err := c.Info(ctx, addr, cmds...)
	if err != nil {
		return NodeFacts{}, err
	}
	f, err := parseNodeFacts(answers)
	if err != nil {
		return f, err
	}
	f.ClusterStableErr = errNotAsked
	if size > 0 {
		f.ClusterStableKey, f.ClusterStableErr = ParseClusterStable(answers[ClusterStableCommand(size, false)])
	}
	return f, nil
}

func parseNodeFacts(answers map[string]string) (NodeFacts, error) {
	var f NodeFacts
	var err error
	if f.NodeID, err = Value(answers, cmdNode); err != nil {
		return f, err
	}
	if f.Build, err = Value(answers, cmdBuild); err != nil {
		return f, err
	}
	stats, err := Value(answers, cmdStatistics)
	if err != nil {
		return f, err
	}
	f.ServiceStd, f.ServiceAlt = answers[cmdServiceStd], answers[cmdServiceAlt]
	return f, parseStatistics(ParseKV(stats), &f)
}

// parseStatistics fills the cluster fields of f; all of them must be present and well formed.
func parseStatistics(kv map[string]string, f *NodeFacts) error {
	uptime, err := statInt(kv, "uptime")
	if err != nil {
		return err
	}
	size, err := statInt(kv, "cluster_size")
	if err != nil {
		return err
	}
	if f.MigratePartitionsRemaining, err = statInt(kv, "migrate_partitions_remaining"); err != nil {
		return err
	}
	integrity, err := strconv.ParseBool(kv["cluster_integrity"])
	if err != nil {
		return badResponse("statistics: cluster_integrity=%q", clip(kv["cluster_integrity"]))
	}
	key := kv["cluster_key"]
	if !isHex(key) {
		return badResponse("statistics: cluster_key=%q", clip(key))
	}
	f.Uptime = time.Duration(uptime) * time.Second
	f.ClusterSize = int(size)
	f.ClusterKey = key
	f.ClusterIntegrity = integrity
	return nil
}

// statInt reads a non-negative counter small enough to be meaningful (< 2^31).
func statInt(kv map[string]string, key string) (int64, error) {
	v, err := strconv.ParseInt(kv[key], 10, 32)
	if err != nil || v < 0 {
		return 0, badResponse("statistics: %s=%q", key, clip(kv[key]))
	}
	return v, nil
}

// ClusterStableCommand renders the cluster-stable info command.
func ClusterStableCommand(size int, ignoreMigrations bool) string {
	return fmt.Sprintf("cluster-stable:size=%d;ignore-migrations=%t", size, ignoreMigrations)
}

// ParseClusterStable reads an answer to ClusterStableCommand: the cluster key when the node
// considers the cluster stable, else the *InfoError it answered (CE 8.1: code 7 with
// "unstable cluster" while migrating, "cluster not specified size" on a size mismatch).
func ParseClusterStable(value string) (clusterKey string, err error) {
	if err := parseInfoError("cluster-stable", value); err != nil {
		return "", err
	}
	if !isHex(value) {
		return "", badResponse("cluster-stable answered %q", clip(value))
	}
	return value, nil
}

// isHex accepts asd's "%lX" rendering of a 64-bit key.
func isHex(s string) bool {
	if s == "" || len(s) > 16 {
		return false
	}
	_, err := strconv.ParseUint(s, 16, 64)
	return err == nil
}

// SendTip tells the node at addr to look for its cluster at memberIP's heartbeat port (asd's tip
// command): a real node alone joined within 5 s that way.
func SendTip(ctx context.Context, c InfoClient, addr, memberIP string) error {
	cmd := fmt.Sprintf("tip:host=%s;port=%d", memberIP, config.HeartbeatPort)
	answers, err := c.Info(ctx, addr, cmd)
	if err != nil {
		return err
	}
	_, err = Value(answers, cmd)
	return err
}
