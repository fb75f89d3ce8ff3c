package config

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"path"
	"strings"

	"github.com/acko-io/acko/api/v1alpha1"
)

// Render returns the aerospike.conf of one rack: the cluster's aerospikeConfig with the rack's overrides
// merged over it (maps deep-merged, the rack winning; namespaces merged by name), completed with the
// operator's service defaults, console logging and the network stanza (fixed ports, a mesh heartbeat
// seeded with every pod's DNS name in clusterDomain). Racks are Kubernetes placement only: Aerospike's
// rack-id is Enterprise-only and stops a Community Edition server, so it is never rendered.
//
// The output is deterministic: stanzas in the order service, logging, network, mod-lua, namespaces (in
// spec order); inside a stanza single values first, then sub-stanzas, each sorted by name. Only the seed
// list follows the cluster's size, and Hash leaves it out, so scaling restarts no pod.
// An invalid config is an error (the same errors as Validate gives for this rack).
func Render(c *v1alpha1.AerospikeCluster, rack v1alpha1.RackPlacement, clusterDomain string) (string, error) {
	m := mergeRack(c, rack)
	if errs := m.resolve(check(c, m.tree)); len(errs) > 0 {
		return "", errs.ToAggregate()
	}
	w := &writer{}
	fmt.Fprintf(&w.b, "# aerospike.conf of AerospikeCluster %s/%s, rendered by ACKO: edit the AerospikeCluster, "+
		"not this file.\n", c.Namespace, c.Name)
	w.stanza(keyService, serviceBody(c, m.tree))
	w.stanza(keyLogging, loggingBody(m.tree))
	w.stanza(keyNetwork, networkBody(c, m.tree, clusterDomain))
	if lua, ok := m.tree[keyModLua].(map[string]any); ok {
		w.stanza(keyModLua, lua)
	}
	for _, ns := range m.tree[keyNamespaces].([]any) {
		w.stanza("namespace "+nameOf(ns), namespaceBody(ns.(map[string]any)))
	}
	return w.b.String(), nil
}

// Hash is the config identity: a short, stable digest of a rendered config without its mesh seed
// lines. The seed list names every pod, so it changes with the cluster's size; a running node needs no
// new seeds (a new node that reaches any member joins, and the members learn of it through the mesh),
// so a change of the seed list alone must not restart pods. Every decision about which config a pod
// runs (the acko.io/config-hash annotation, rolling restarts, readiness) uses this identity.
func Hash(conf string) string {
	h := sha256.New()
	for line := range strings.Lines(conf) {
		if strings.HasPrefix(strings.TrimSpace(line), keyMeshSeed+" ") {
			continue
		}
		h.Write([]byte(line))
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}

// SMDPath is the directory where asd keeps its system metadata for this rack: <work-directory>/smd.
// asd does not create it, so the StatefulSet mounts a volume there.
func SMDPath(c *v1alpha1.AerospikeCluster, rack v1alpha1.RackPlacement) string {
	svc, _ := mergeRack(c, rack).tree[keyService].(map[string]any)
	wd, _ := svc[keyWorkDirectory].(string)
	if !path.IsAbs(wd) {
		wd = DefaultWorkDirectory
	}
	return path.Join(wd, SMDDirectory)
}

// MeshSeeds are the heartbeat seeds of every node: each pod of the cluster (all racks) by its stable DNS
// name through the headless Service. asd keys a seed by its host name and drops the one that resolves to
// itself; with one name per pod that leaves every node the others. (A single Service name that resolves
// to every pod is dropped for good by a node that resolves it to itself first: that node stays alone.)
func MeshSeeds(c *v1alpha1.AerospikeCluster, clusterDomain string) []any {
	names := c.DesiredPodNames()
	seeds := make([]any, 0, len(names))
	for _, pod := range names {
		seeds = append(seeds, fmt.Sprintf("%s %d", c.PodDNSName(pod, clusterDomain), HeartbeatPort))
	}
	return seeds
}

func serviceBody(c *v1alpha1.AerospikeCluster, tree map[string]any) map[string]any {
	defaults := map[string]any{
		"proto-fd-max":   DefaultProtoFdMax,
		keyClusterName:   c.Name,
		keyWorkDirectory: DefaultWorkDirectory,
	}
	user, _ := tree[keyService].(map[string]any)
	return mergeMaps(defaults, user)
}

// loggingBody logs to the console, which kubectl logs reads. Context "any" comes first because asd applies
// the lines in order and "any" would otherwise reset the contexts set before it.
func loggingBody(tree map[string]any) map[string]any {
	levels := mergeMaps(map[string]any{contextAny: levelInfo}, asMap(tree[keyLogging]))
	contexts := []any{contextAny + " " + strings.ToLower(levels[contextAny].(string))}
	for _, ctx := range sortedKeys(levels) {
		if ctx != contextAny {
			contexts = append(contexts, ctx+" "+strings.ToLower(levels[ctx].(string)))
		}
	}
	return map[string]any{"console": map[string]any{"context": contexts}}
}

func networkBody(c *v1alpha1.AerospikeCluster, tree map[string]any, clusterDomain string) map[string]any {
	defaults := map[string]any{
		"service": map[string]any{"address": addressAny, keyPort: ServicePort},
		"fabric":  map[string]any{keyPort: FabricPort},
		"heartbeat": map[string]any{
			"mode":      "mesh",
			keyPort:     HeartbeatPort,
			keyMeshSeed: MeshSeeds(c, clusterDomain),
			"interval":  HeartbeatInterval,
			"timeout":   HeartbeatTimeout,
		},
		"admin": map[string]any{keyPort: AdminPort},
	}
	return mergeMaps(defaults, asMap(tree[keyNetwork]))
}

func namespaceBody(ns map[string]any) map[string]any {
	body := deepCopyMap(ns)
	delete(body, keyName)
	body[keyStorageEngine] = storageStanza(body[keyStorageEngine].(map[string]any))
	return body
}

// storageStanza renders storage-engine <type> { ... }: the YAML's plural devices/files lists become the
// repeated device and file lines of aerospike.conf, and a memory engine without backing gets a data-size.
func storageStanza(se map[string]any) stanza {
	body := deepCopyMap(se)
	typ := body[keyType].(string)
	delete(body, keyType)
	for plural, singular := range map[string]string{keyDevices: "device", keyFiles: "file"} {
		if v, ok := body[plural]; ok {
			delete(body, plural)
			body[singular] = v
		}
	}
	_, hasDevice := body["device"]
	_, hasFile := body["file"]
	_, hasSize := body[keyDataSize]
	if typ == engineMemory && !hasDevice && !hasFile && !hasSize {
		body[keyDataSize] = DefaultDataSize
	}
	return stanza{header: keyStorageEngine + " " + typ, body: body}
}

func asMap(v any) map[string]any {
	m, _ := v.(map[string]any)
	return m
}

// stanza is a sub-stanza whose header is more than its key, such as "storage-engine memory".
type stanza struct {
	header string
	body   map[string]any
}

// writer writes aerospike.conf with tab indentation.
type writer struct{ b strings.Builder }

func (w *writer) stanza(header string, body map[string]any) {
	w.b.WriteString("\n")
	w.block(0, header, body)
}

func (w *writer) block(depth int, header string, body map[string]any) {
	w.line(depth, header+" {")
	keys := sortedKeys(body)
	for _, k := range keys {
		w.values(depth+1, k, body[k])
	}
	for _, k := range keys {
		switch t := body[k].(type) {
		case map[string]any:
			w.block(depth+1, k, t)
		case stanza:
			w.block(depth+1, t.header, t.body)
		}
	}
	w.line(depth, "}")
}

// values writes "key value" lines: one for a single value, one per element for a list; sub-stanzas are
// left to block.
func (w *writer) values(depth int, key string, v any) {
	switch t := v.(type) {
	case map[string]any, stanza:
	case []any:
		for _, e := range t {
			s, _ := scalarString(e)
			w.line(depth, key+" "+s)
		}
	default:
		s, _ := scalarString(v)
		w.line(depth, key+" "+s)
	}
}

func (w *writer) line(depth int, s string) {
	w.b.WriteString(strings.Repeat("\t", depth))
	w.b.WriteString(s)
	w.b.WriteString("\n")
}
