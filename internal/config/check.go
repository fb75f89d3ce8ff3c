package config

import (
	"errors"
	"fmt"
	"path"
	"slices"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/acko-io/acko/api/v1alpha1"
	"github.com/acko-io/acko/internal/config/conffile"
	"github.com/acko-io/acko/internal/config/params"
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
	keyNodeID            = "node-id"
	keyPort              = "port"
	keyTLS               = "tls"
	keyInfo              = "info"
	keyAdmin             = "admin"
	keySets              = "sets"
	keyDefaultTTL        = "default-ttl"
	keyNsupPeriod        = "nsup-period"
	contextAny           = "any"
	addressAny           = "any" // listen on every interface
	levelInfo            = "info"
	engineMemory         = "memory"
	engineDevice         = "device"
)

// Aerospike limits on names.
const maxNamespaceNameLength = conffile.MaxNamespaceNameLength

var (
	supportedStanzas = []string{keyService, keyLogging, keyNetwork, keyModLua, keyNamespaces}
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

const (
	ownedPorts = "the operator fixes the ports (service %d, fabric %d, heartbeat %d, admin %d): " +
		"the Services and the readiness probe use them"
	ownedAddress = "the operator listens on every interface (address any) so the pod IP works"
	ownedMesh    = "the heartbeat is always mesh: Kubernetes pod networks have no multicast"
	ownedSeeds   = "the operator seeds the mesh with every pod's DNS name"
	ownedNodeID  = "the operator gives each pod its node-id, from its rack id and ordinal, so that a recreated pod " +
		"joins as the same node"
	ownedAccess    = "the operator renders each pod's own client addresses from spec.externalAccess (docs/clients.md)"
	noRackAwareCE  = "rack-id (rack awareness; racks in ACKO are Kubernetes placement only)"
	listDevicesMsg = "list devices as devices: [<path>, ...]"
	listFilesMsg   = "list files as files: [<path>, ...]"
)

var (
	topLevelRules = rules{enterprise: map[string]string{
		"xdr": "XDR", "security": "security (access control)", keyTLS: "TLS",
	}}
	serviceRules = rules{
		enterprise: map[string]string{"feature-key-file": "a feature key file", "feature-key-files": "a feature key file"},
		owned:      map[string]string{keyNodeID: ownedNodeID, "node-id-interface": ownedNodeID},
	}
	networkRules = rules{
		enterprisePrefixes: map[string]string{keyTLS: "TLS"},
		owned: map[string]string{
			keyPort:                          fmt.Sprintf(ownedPorts, ServicePort, FabricPort, HeartbeatPort, AdminPort),
			"address":                        ownedAddress,
			"addresses":                      ownedAddress,
			"mode":                           ownedMesh,
			"multicast-group":                ownedMesh,
			"multicast-groups":               ownedMesh,
			keyMeshSeed:                      ownedSeeds,
			"mesh-seed-address-ports":        ownedSeeds,
			keyAccessAddress:                 ownedAccess,
			keyAccessAddress + "es":          ownedAccess,
			keyAccessPort:                    ownedAccess,
			keyAlternateAccessAddress:        ownedAccess,
			keyAlternateAccessAddress + "es": ownedAccess,
			keyAlternateAccessPort:           ownedAccess,
		},
	}
	namespaceRules = rules{
		enterprise: map[string]string{
			"strong-consistency":               "strong consistency",
			"strong-consistency-allow-expunge": "strong consistency",
			"index-type":                       "index-type (primary index on flash or persistent memory)",
			"sindex-type":                      "sindex-type (secondary index on flash or persistent memory)",
			keyRackID:                          noRackAwareCE,
		},
	}
	storageRules = rules{
		enterprisePrefixes: map[string]string{"compression": "compression", "encryption": "encryption at rest"},
		owned:              map[string]string{"device": listDevicesMsg, "file": listFilesMsg},
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
	c *v1alpha1.AerospikeCluster
	// t is the parameter table of the image's server version.
	t      *params.Table
	issues []issue
	// used holds the device and file paths seen so far.
	used map[string]bool
}

func check(c *v1alpha1.AerospikeCluster, t *params.Table, tree map[string]any) []issue {
	k := &checker{c: c, t: t, used: map[string]bool{}}
	for _, key := range sortedKeys(tree) {
		k.checkTopLevel(key, tree[key])
	}
	k.checkNamespaces(tree[keyNamespaces])
	k.checkClusterName(tree)
	k.checkMicrosecondHistograms(tree)
	return k.issues
}

// add records a structural issue: a rule that held before the server's tables were checked.
func (k *checker) add(ns int, rel []any, mk func(*field.Path) *field.Error) {
	k.issues = append(k.issues, issue{ns: ns, rel: rel, mk: mk})
}

// violation records a breach of the server's own rules (its parameter table, Community Edition's
// limits, the checks asd makes when it starts): what the update ratchet treats as new rules.
func (k *checker) violation(ns int, rel []any, mk func(*field.Path) *field.Error) {
	k.issues = append(k.issues, issue{ns: ns, rel: rel, mk: mk, server: true})
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

func (k *checker) serverInvalid(ns int, rel []any, value any, detail string) {
	k.violation(ns, rel, func(p *field.Path) *field.Error { return field.Invalid(p, value, detail) })
}

func (k *checker) serverForbidden(ns int, rel []any, detail string) {
	k.violation(ns, rel, func(p *field.Path) *field.Error { return field.Forbidden(p, detail) })
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
		k.walk(-1, rel, keyModLua, v, rules{})
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

// walk checks the keys of a stanza against the table's context ctx, except those the rules reject and
// those in skip (checked by their own rules).
func (k *checker) walk(ns int, rel []any, ctx string, v any, r rules, skip ...string) {
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
		k.entry(ns, at(rel, key), ctx, key, m[key])
	}
}

// entry checks one key of a stanza: first that it renders into aerospike.conf at all, then that the
// server knows it and takes its value.
func (k *checker) entry(ns int, rel []any, ctx, key string, v any) {
	if !validToken(key) {
		k.invalid(ns, rel, key, "is not a valid configuration name")
		return
	}
	sub := ctx + "." + key
	switch {
	case len(k.t.Children(sub)) > 0 && !k.variants(ctx, key):
		if _, isMap := v.(map[string]any); !isMap {
			k.serverInvalid(ns, rel, v, "must be an object: "+key+" is a stanza of parameters")
			return
		}
		k.walk(ns, rel, sub, v, rules{})
		return
	case k.t.IsContext(sub + ".[]"):
		k.walkList(ns, rel, sub+".[]", v)
		return
	}
	if !k.renders(ns, rel, v) {
		return
	}
	p, found := k.t.Lookup(sub)
	switch {
	case !found:
		k.unknown(ns, rel, ctx, key)
	case p.EnterpriseOnly:
		k.serverForbidden(ns, rel, enterpriseOnly(key))
	case k.checkIgnoredInCE(ns, rel, p.Path, key):
	default:
		k.checkParam(ns, rel, p, v)
	}
}

// variants reports a stanza chosen by its type (storage-engine, index-type): not a plain sub-stanza.
func (k *checker) variants(ctx, key string) bool {
	return slices.ContainsFunc(k.t.Children(ctx), func(c string) bool { return strings.HasPrefix(c, key+"(") })
}

// walkList checks a list of named stanzas, such as a namespace's sets: [{name: users, ...}]. Each
// becomes a block named after its element ("set users {"), so the names must render.
func (k *checker) walkList(ns int, rel []any, ctx string, v any) {
	list, ok := v.([]any)
	if !ok {
		k.invalid(ns, rel, v, "must be a list of objects, each with a name")
		return
	}
	names := map[string]bool{}
	for i, e := range list {
		m, isMap := e.(map[string]any)
		name, _ := m[keyName].(string)
		switch {
		case !isMap:
			k.invalid(ns, at(rel, i), e, "must be an object with a name")
			continue
		case m[keyName] == nil:
			k.required(ns, at(rel, i, keyName), "every element needs a name")
			continue
		case !validToken(name):
			k.invalid(ns, at(rel, i, keyName), m[keyName], "must be one word without braces or '#'")
			continue
		case names[name]:
			k.violation(ns, at(rel, i, keyName), func(p *field.Path) *field.Error { return field.Duplicate(p, name) })
		}
		names[name] = true
		k.walk(ns, at(rel, i), ctx, m, rules{}, keyName)
	}
}

// unknown reports a key the server does not know in ctx, with the parameter it is likely a typo of,
// or the storage-engine it belongs to.
func (k *checker) unknown(ns int, rel []any, ctx, key string) {
	if base, typ, isVariant := strings.Cut(strings.TrimSuffix(ctx, ")"), "(type="); isVariant {
		parent, engine := base[:strings.LastIndex(base, ".")], base[strings.LastIndex(base, ".")+1:]
		for _, other := range k.t.Children(parent) {
			otherBase, otherType, ok := strings.Cut(strings.TrimSuffix(other, ")"), "(type=")
			if ok && otherBase == engine && otherType != typ {
				if _, found := k.t.Lookup(parent + "." + other + "." + key); found {
					k.serverForbidden(ns, rel, fmt.Sprintf("a parameter of %s %s, not of %s %s",
						engine, otherType, engine, typ))
					return
				}
			}
		}
	}
	detail := fmt.Sprintf("unknown parameter: Aerospike %s does not have it and refuses to start with it",
		k.t.Version)
	if s := k.t.Suggest(ctx, key); s != "" {
		detail += fmt.Sprintf(" (did you mean %q?)", s)
	}
	k.serverForbidden(ns, rel, detail)
}

// renders checks that a value renders into valid aerospike.conf syntax: a scalar, a list of scalars
// (one line each), or an object whose keys and values render (a block; the table says whether the
// server has it).
func (k *checker) renders(ns int, rel []any, v any) bool {
	switch t := v.(type) {
	case map[string]any:
		ok := true
		for _, key := range sortedKeys(t) {
			if !validToken(key) {
				k.invalid(ns, at(rel, key), key, "is not a valid configuration name")
				ok = false
				continue
			}
			ok = k.renders(ns, at(rel, key), t[key]) && ok
		}
		return ok
	case []any:
		ok := true
		for i, e := range t {
			ok = k.checkScalar(ns, at(rel, i), e) && ok
		}
		return ok
	}
	return k.checkScalar(ns, rel, v)
}

func (k *checker) checkScalar(ns int, rel []any, v any) bool {
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
	default:
		return true
	}
	return false
}

// checkParam holds a value to the parameter's row: a list for a list, one word of the right type,
// within bounds and among the allowed values otherwise.
func (k *checker) checkParam(ns int, rel []any, p *params.Param, v any) {
	if p.Type == params.StringList {
		if _, isList := v.([]any); !isList {
			k.serverInvalid(ns, rel, v, "must be a list, e.g. ["+fmt.Sprint(v)+"]")
		}
		return
	}
	switch v.(type) {
	case []any, map[string]any:
		k.serverInvalid(ns, rel, v, "must be a single value")
		return
	}
	text, _ := scalarString(v)
	if first, _, spaced := strings.Cut(strings.ReplaceAll(text, "\t", " "), " "); spaced {
		// asd reads the first word of a single-valued line (cfg.c's val_tok_1) and starts with it.
		k.invalid(ns, rel, v, fmt.Sprintf("must be one word: ACKO writes it on one line of aerospike.conf, of "+
			"which the server would read only the first word (%q)", first))
		return
	}
	k.checkText(ns, rel, p, v, text)
}

// checkText reports a value the server refuses, the allowed values as Unsupported, the rest as Invalid.
func (k *checker) checkText(ns int, rel []any, p *params.Param, v any, text string) {
	err := p.CheckText(text)
	var ve *params.ValueError
	switch {
	case err == nil:
	case errors.As(err, &ve) && ve.Kind == params.NotAllowed:
		k.violation(ns, rel, func(fp *field.Path) *field.Error { return field.NotSupported(fp, v, p.Enum) })
	default:
		k.serverInvalid(ns, rel, v, err.Error())
	}
}

// validToken reports whether s can stand as a name in aerospike.conf: one word without braces or comments.
func validToken(s string) bool {
	return s != "" && !strings.ContainsAny(s, " \t\n\r{}#")
}

func (k *checker) checkService(rel []any, v any) {
	k.walk(-1, rel, keyService, v, serviceRules)
	m, _ := v.(map[string]any)
	if wd, ok := m[keyWorkDirectory].(string); ok && !path.IsAbs(wd) {
		k.invalid(-1, at(rel, keyWorkDirectory), wd, fmt.Sprintf("must be an absolute path: ACKO mounts a volume "+
			"at <work-directory>/%s for asd's system metadata, and a Kubernetes volume mount needs an absolute "+
			"path", SMDDirectory))
	}
	k.checkAutoPin(rel, m)
}

// checkLogging: logging maps a log context to the console's level for it.
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
			continue
		}
		if p, found := k.t.Lookup("logging.[]." + context); !found || len(p.Enum) == 0 {
			detail := fmt.Sprintf("unknown log context: Aerospike %s refuses to start with it", k.t.Version)
			if s := k.t.Suggest("logging.[]", context); s != "" {
				detail += fmt.Sprintf(" (did you mean %q?)", s)
			}
			k.serverForbidden(-1, at(rel, context), detail)
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
