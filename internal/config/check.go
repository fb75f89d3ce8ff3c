package config

import (
	"fmt"
	"path"
	"slices"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/acko-io/acko/api/v1alpha1"
)

// Keys the checks and the renderer both look at.
const (
	keyClusterName       = "cluster-name"
	keyWorkDirectory     = "work-directory"
	keyReplicationFactor = "replication-factor"
	keyStorageEngine     = "storage-engine"
	keyType              = "type"
	keyDevices           = "devices"
	keyFiles             = "files"
	keyDataSize          = "data-size"
	keyFileSize          = "filesize"
	keyRackID            = "rack-id"
	keyMeshSeed          = "mesh-seed-address-port"
	keyPort              = "port"
	keyTLS               = "tls"
	keyInfo              = "info"
	contextAny           = "any"
	addressAny           = "any" // listen on every interface
	levelInfo            = "info"
	engineMemory         = "memory"
	engineDevice         = "device"
)

// Aerospike limits on names.
const maxNamespaceNameLength = 31

var (
	supportedStanzas = []string{keyService, keyLogging, keyNetwork, keyModLua, keyNamespaces}
	networkStanzas   = []string{"service", "fabric", "heartbeat", "admin"}
	logLevels        = []string{"critical", "warning", levelInfo, "debug", "detail"}
	storageEngines   = []string{engineMemory, engineDevice}
)

// rules are the keys of one stanza that are rejected: Enterprise-only features (by key or key prefix) and
// settings the operator owns, each with the reason shown to the user.
type rules struct {
	enterprise         map[string]string
	enterprisePrefixes map[string]string
	owned              map[string]string
}

var (
	topLevelRules = rules{enterprise: map[string]string{
		"xdr": "XDR", "security": "security (access control)", keyTLS: "TLS",
	}}
	serviceRules = rules{enterprise: map[string]string{
		"feature-key-file": "a feature key file", "feature-key-files": "a feature key file",
	}}
	networkRules = rules{
		enterprisePrefixes: map[string]string{keyTLS: "TLS"},
		owned: map[string]string{
			keyPort: fmt.Sprintf("the operator fixes the ports (service %d, fabric %d, heartbeat %d, admin %d): "+
				"the Services and the readiness probe use them", ServicePort, FabricPort, HeartbeatPort, AdminPort),
			"address":         "the operator listens on every interface (address any) so the pod IP works",
			"mode":            "the heartbeat is always mesh: Kubernetes pod networks have no multicast",
			"multicast-group": "the heartbeat is always mesh: Kubernetes pod networks have no multicast",
			keyMeshSeed:       "the operator seeds the mesh with every pod's DNS name",
		},
	}
	namespaceRules = rules{
		enterprise: map[string]string{
			"strong-consistency":               "strong consistency",
			"strong-consistency-allow-expunge": "strong consistency",
			"index-type":                       "index-type (primary index on flash or persistent memory)",
			"sindex-type":                      "sindex-type (secondary index on flash or persistent memory)",
			keyRackID:                          "rack-id (rack awareness; racks in ACKO are Kubernetes placement only)",
		},
	}
	storageRules = rules{
		enterprisePrefixes: map[string]string{"compression": "compression", "encryption": "encryption at rest"},
		owned: map[string]string{
			"device": "list devices as devices: [<path>, ...]",
			"file":   "list files as files: [<path>, ...]",
		},
	}
)

func enterpriseOnly(feature string) string {
	return feature + " is Enterprise-only: Aerospike Community Edition does not support it"
}

func (r rules) rejects(key string) (string, bool) {
	if f, ok := r.enterprise[key]; ok {
		return enterpriseOnly(f), true
	}
	for prefix, f := range r.enterprisePrefixes {
		if strings.HasPrefix(key, prefix) {
			return enterpriseOnly(f), true
		}
	}
	reason, ok := r.owned[key]
	return reason, ok
}

// checker collects the issues of one merged config.
type checker struct {
	c      *v1alpha1.AerospikeCluster
	issues []issue
	// used holds the device and file paths seen so far.
	used map[string]bool
}

func check(c *v1alpha1.AerospikeCluster, tree map[string]any) []issue {
	k := &checker{c: c, used: map[string]bool{}}
	for _, key := range sortedKeys(tree) {
		k.checkTopLevel(key, tree[key])
	}
	k.checkNamespaces(tree[keyNamespaces])
	k.checkClusterName(tree)
	return k.issues
}

func (k *checker) add(ns int, rel []any, mk func(*field.Path) *field.Error) {
	k.issues = append(k.issues, issue{ns: ns, rel: rel, mk: mk})
}

func (k *checker) invalid(ns int, rel []any, value any, detail string) {
	k.add(ns, rel, func(p *field.Path) *field.Error { return field.Invalid(p, value, detail) })
}

func (k *checker) forbidden(ns int, rel []any, detail string) {
	k.add(ns, rel, func(p *field.Path) *field.Error { return field.Forbidden(p, detail) })
}

func (k *checker) required(ns int, rel []any, detail string) {
	k.add(ns, rel, func(p *field.Path) *field.Error { return field.Required(p, detail) })
}

func (k *checker) checkTopLevel(key string, v any) {
	rel := []any{key}
	switch key {
	case keyService:
		k.checkService(rel, v)
	case keyLogging:
		k.checkLogging(rel, v)
	case keyNetwork:
		k.checkNetwork(rel, v)
	case keyModLua:
		k.checkStanza(-1, rel, v, rules{})
	case keyNamespaces: // checked on its own, since it is also required
	default:
		if reason, rejected := topLevelRules.rejects(key); rejected {
			k.forbidden(-1, rel, reason)
			return
		}
		k.forbidden(-1, rel, "unknown stanza: supported are "+strings.Join(supportedStanzas, ", "))
	}
}

// object returns v as a map, or reports that it must be one.
func (k *checker) object(ns int, rel []any, v any) (map[string]any, bool) {
	m, ok := v.(map[string]any)
	if !ok {
		k.invalid(ns, rel, v, "must be an object")
	}
	return m, ok
}

// checkStanza checks a stanza whose keys pass through to aerospike.conf, except those the rules reject.
func (k *checker) checkStanza(ns int, rel []any, v any, r rules, skip ...string) {
	m, ok := k.object(ns, rel, v)
	if !ok {
		return
	}
	for _, key := range sortedKeys(m) {
		if slices.Contains(skip, key) {
			continue
		}
		if reason, rejected := r.rejects(key); rejected {
			k.forbidden(ns, at(rel, key), reason)
			continue
		}
		k.checkValue(ns, at(rel, key), key, m[key])
	}
}

// checkValue checks that a pass-through value renders into valid aerospike.conf syntax.
func (k *checker) checkValue(ns int, rel []any, key string, v any) {
	if !validToken(key) {
		k.invalid(ns, rel, key, "is not a valid configuration name")
		return
	}
	switch t := v.(type) {
	case map[string]any:
		k.checkStanza(ns, rel, t, rules{})
	case []any:
		for i, e := range t {
			k.checkScalar(ns, at(rel, i), e)
		}
	default:
		k.checkScalar(ns, rel, v)
	}
}

func (k *checker) checkScalar(ns int, rel []any, v any) {
	s, ok := scalarString(v)
	switch {
	case v == nil:
		k.required(ns, rel, "must have a value")
	case !ok:
		k.invalid(ns, rel, v, "must be a string, number or boolean")
	case strings.TrimSpace(s) == "":
		k.required(ns, rel, "must not be empty")
	case strings.ContainsAny(s, "\n\r{}#"):
		k.invalid(ns, rel, s, "must not contain line breaks, braces or '#'")
	}
}

// validToken reports whether s can stand as a name in aerospike.conf: one word without braces or comments.
func validToken(s string) bool {
	return s != "" && !strings.ContainsAny(s, " \t\n\r{}#")
}

func (k *checker) checkService(rel []any, v any) {
	k.checkStanza(-1, rel, v, serviceRules)
	m, _ := v.(map[string]any)
	if wd, ok := m[keyWorkDirectory].(string); ok && !path.IsAbs(wd) {
		k.invalid(-1, at(rel, keyWorkDirectory), wd, "must be an absolute path")
	}
}

func (k *checker) checkLogging(rel []any, v any) {
	m, ok := k.object(-1, rel, v)
	if !ok {
		return
	}
	for _, context := range sortedKeys(m) {
		level, _ := m[context].(string)
		if !validToken(context) || !slices.Contains(logLevels, strings.ToLower(level)) {
			k.invalid(-1, at(rel, context), m[context], "logging maps a log context to a level ("+
				strings.Join(logLevels, ", ")+"), e.g. any: info")
		}
	}
}

func (k *checker) checkNetwork(rel []any, v any) {
	m, ok := k.object(-1, rel, v)
	if !ok {
		return
	}
	for _, key := range sortedKeys(m) {
		switch {
		case slices.Contains(networkStanzas, key):
			k.checkStanza(-1, at(rel, key), m[key], networkRules)
		case key == keyInfo:
			k.forbidden(-1, at(rel, key), fmt.Sprintf("network.info no longer exists in Aerospike 8.1: "+
				"port %d is the admin stanza, which the operator renders", AdminPort))
		case key == keyTLS:
			k.forbidden(-1, at(rel, key), enterpriseOnly("TLS"))
		default:
			k.forbidden(-1, at(rel, key), "unknown network stanza: supported are "+strings.Join(networkStanzas, ", "))
		}
	}
}

func (k *checker) checkClusterName(tree map[string]any) {
	name := k.c.Name
	svc, _ := tree[keyService].(map[string]any)
	if v, ok := svc[keyClusterName]; ok {
		name, _ = scalarString(v)
	}
	if len(name) > MaxClusterNameLength {
		k.invalid(-1, []any{keyService, keyClusterName}, name, fmt.Sprintf(
			"Aerospike cluster names are at most %d bytes; set service.cluster-name to a shorter name",
			MaxClusterNameLength))
	}
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
