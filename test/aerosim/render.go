package aerosim

import (
	"bytes"
	"strconv"
	"strings"
	"time"
)

// Answers asd 8.1 gives that the fixtures show.
const (
	errUnrecognized   = "ERROR:4:unrecognized command"
	errEnterpriseOnly = "ERROR:25:enterprise only"
	errUnstable       = "ERROR:7:unstable cluster"
	errSizeMismatch   = "ERROR:7:cluster not specified size"
	// asd's answer to a tip without a host or a port (info_command_tip).
	errTip = "error"
	// Not in the fixtures: a malformed cluster-stable parameter (code 4 is asd's parameter error).
	errBadParameter = "ERROR:4:bad parameter"
)

// nodeFacts are the only values the simulator changes in the templates.
type nodeFacts struct {
	nodeID      string
	clusterName string // from the node's config; empty for a simple node
	clusterSize int
	clusterKey  string
	integrity   bool
	member      bool
	uptime      int64 // seconds
	migrations  int64
	principal   string // the node id that leads the cluster: its highest ("0" while not a member)
	duplicates  string // node ids heard from two nodes, or its own from another ("null" if none)
	// stuck: the node is in an exchange that cannot commit, so migrations are not allowed.
	stuck bool
	// failedBestPractices: the host failed asd's best-practices checks at start.
	failedBestPractices bool
}

// answer returns what node n answers to cmd at now. Callers hold s.mu.
func (s *Sim) answer(n *node, now time.Time, cmd string) string {
	name, params, _ := strings.Cut(cmd, ":")
	switch name {
	case "tip":
		return s.tip(n, params, now)
	case "recluster":
		return s.recluster(n, now)
	}
	if answer, ok := s.clientAnswer(n, now, name, params, cmd); ok {
		return answer
	}
	if live := n.asd.live; live != nil {
		if answer, ok := s.liveAnswer(n, live, now, name, params); ok {
			return answer
		}
	}
	return s.tmpl.answer(n.spec.Profile, s.facts(n, now), cmd)
}

// liveAnswer answers the commands of a node's running config; ok is false for other commands.
func (s *Sim) liveAnswer(n *node, live *liveConfig, now time.Time, name, params string) (string, bool) {
	server, _ := loadServer() // loaded when asd read its config
	switch {
	case name == "get-config":
		return live.getConfig(params), true
	case name == "set-config":
		answer, renamed, warning := live.setConfig(params)
		if warning != "" {
			n.logf(now, "%s", warning)
		}
		// The configured factors: the partition map takes them at the next exchange.
		n.asd.namespaces = namespacesOf(live)
		if renamed {
			n.logf(now, "INFO (info): cluster-name changed to %s", n.clusterName())
			s.settle(now)
		}
		return answer, true
	case name == "log-set":
		return live.logSet(server.logContexts, params), true
	case name == "logs":
		return live.logs(), true
	case strings.HasPrefix(name, "log/"):
		return live.logLevels(server.logContexts, strings.TrimPrefix(name, "log/")), true
	}
	return "", false
}

// tip is asd's "tip:host=<host>;port=<port>": a new mesh seed, tried at once.
func (s *Sim) tip(n *node, params string, now time.Time) string {
	var addr seedAddr
	var err error
	for item := range strings.SplitSeq(params, ";") {
		k, v, _ := strings.Cut(item, "=")
		switch k {
		case "host":
			addr.host = v
		case "port":
			if addr.port, err = strconv.Atoi(v); err != nil {
				return errTip
			}
		}
	}
	if addr.host == "" || addr.port == 0 {
		return errTip
	}
	n.asd.addSeed(addr)
	s.settle(now)
	return "ok"
}

// answer returns the value a node with facts f and template profile answers to cmd.
func (t templates) answer(profile string, f nodeFacts, cmd string) string {
	name, params, _ := strings.Cut(cmd, ":")
	switch {
	case cmd == "node":
		return f.nodeID
	case cmd == "cluster-name" && f.clusterName != "":
		return f.clusterName
	case name == "cluster-stable":
		return clusterStable(f, params)
	case name == "quiesce" || name == "racks":
		return errEnterpriseOnly
	}
	tmpl, ok := t.lookup(profile, cmd)
	switch {
	case !ok:
		return errUnrecognized
	case cmd == "statistics":
		return substitute(tmpl, map[string]string{
			"cluster_size":                 strconv.Itoa(f.clusterSize),
			"cluster_key":                  f.clusterKey,
			"cluster_integrity":            strconv.FormatBool(f.integrity),
			"cluster_is_member":            strconv.FormatBool(f.member),
			"uptime":                       strconv.FormatInt(f.uptime, 10),
			"migrate_partitions_remaining": strconv.FormatInt(f.migrations, 10),
			"cluster_principal":            f.principal,
			"paxos_principal":              f.principal,
			"cluster_duplicate_nodes":      f.duplicates,
			"failed_best_practices":        strconv.FormatBool(f.failedBestPractices),
		})
	case cmd == "get-config:context=service":
		return substitute(tmpl, map[string]string{"node-id": f.nodeID})
	case strings.HasPrefix(cmd, "namespace/"):
		// The namespace's own view of cluster_size.
		return substitute(tmpl, map[string]string{"ns_cluster_size": strconv.Itoa(f.clusterSize)})
	}
	return tmpl
}

// clusterStable answers "cluster-stable:size=N;ignore-migrations=B" the way asd checks it: size
// first, then migrations; both parameters are optional.
func clusterStable(f nodeFacts, params string) string {
	size, ignoreMigrations, ok := parseStableParams(params)
	switch {
	case f.stuck: // asd's first check: migrations not allowed
		return errUnstable
	case !ok:
		return errBadParameter
	case !f.integrity:
		return errUnstable
	case size != 0 && size != f.clusterSize:
		return errSizeMismatch
	case !ignoreMigrations && f.migrations > 0:
		return errUnstable
	}
	return f.clusterKey
}

func parseStableParams(params string) (size int, ignoreMigrations, ok bool) {
	if params == "" {
		return 0, false, true
	}
	var err error
	for item := range strings.SplitSeq(params, ";") {
		k, v, _ := strings.Cut(item, "=")
		switch k {
		case "size":
			if size, err = strconv.Atoi(v); err != nil || size < 1 {
				return 0, false, false
			}
		case "ignore-migrations":
			if ignoreMigrations, err = strconv.ParseBool(v); err != nil {
				return 0, false, false
			}
		case "namespace":
		default:
			return 0, false, false
		}
	}
	return size, ignoreMigrations, true
}

// substitute replaces the values of the given keys in a "k=v;k=v" list, leaving every other byte
// as it was.
func substitute(list string, values map[string]string) string {
	items := strings.Split(list, ";")
	for i, item := range items {
		k, _, _ := strings.Cut(item, "=")
		if v, ok := values[k]; ok {
			items[i] = k + "=" + v
		}
	}
	return strings.Join(items, ";")
}

// render builds the answer body: "cmd\tvalue\n" for each command, in request order. Callers
// hold s.mu.
func (s *Sim) render(n *node, now time.Time, cmds []string) []byte {
	var b bytes.Buffer
	for _, cmd := range cmds {
		b.WriteString(cmd)
		b.WriteByte('\t')
		b.WriteString(s.answer(n, now, cmd))
		b.WriteByte('\n')
	}
	return b.Bytes()
}
