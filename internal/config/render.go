package config

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"path"
	"strconv"
	"strings"

	"github.com/acko-io/acko/api/v1alpha1"
	"github.com/acko-io/acko/internal/config/conffile"
	"github.com/acko-io/acko/internal/config/params"
)

// Render returns the aerospike.conf of one rack: the cluster's aerospikeConfig with the rack's overrides
// merged over it (maps deep-merged, the rack winning; namespaces merged by name), completed with the
// operator's service defaults, console logging and the network stanza (fixed ports, a mesh heartbeat
// seeded with every pod's DNS name in clusterDomain). Racks are Kubernetes placement only: Aerospike's
// rack-id is Enterprise-only and stops a Community Edition server, so it is never rendered.
//
// The render follows the parameter table of the image's server version (TableFor): 8.0 serves port 3003
// from its info stanza, 8.1 from admin; a list the tables name in the plural (devices, access-addresses)
// is one line per element in aerospike.conf's singular (device, access-address); a namespace's sets
// ([{name: users, ...}]) are set blocks.
//
// The output is deterministic: stanzas in the order service, logging, network, mod-lua, namespaces (in
// spec order); inside a stanza single values first, then sub-stanzas, each sorted by name. Only the seed
// list follows the cluster's size, and Hash leaves it out, so scaling restarts no pod.
// A config with structural errors is an error (the structural errors Check gives for this rack); a
// breach of the server's own rules is rendered as it is, for the server to refuse.
func Render(c *v1alpha1.AerospikeCluster, rack v1alpha1.RackPlacement, clusterDomain string) (string, error) {
	t := tableOf(c)
	m := mergeRack(c, rack)
	if errs := m.resolve(check(c, t, m.tree)); len(errs) > 0 {
		return "", errs.ToAggregate()
	}
	w := &writer{}
	fmt.Fprintf(&w.b, "# aerospike.conf of AerospikeCluster %s/%s, rendered by ACKO: edit the AerospikeCluster, "+
		"not this file.\n", c.Namespace, c.Name)
	w.stanza(keyService, lineNames(t, keyService, serviceBody(c, m.tree)))
	w.stanza(keyLogging, loggingBody(m.tree))
	w.stanza(keyNetwork, lineNames(t, keyNetwork, networkBody(c, t, m.tree, clusterDomain)))
	if lua, ok := m.tree[keyModLua].(map[string]any); ok {
		w.stanza(keyModLua, lineNames(t, keyModLua, lua))
	}
	for _, ns := range m.tree[keyNamespaces].([]any) {
		w.stanza("namespace "+nameOf(ns), namespaceBody(t, ns.(map[string]any)))
	}
	return w.b.String(), nil
}

// lineNames renames the lists of a stanza (and of its sub-stanzas) from the tables' plural to the name
// aerospike.conf repeats on each line: access-addresses: [a, b] is two access-address lines.
func lineNames(t *params.Table, ctx string, body map[string]any) map[string]any {
	out := make(map[string]any, len(body))
	for k, v := range body {
		switch val := v.(type) {
		case map[string]any:
			out[k] = lineNames(t, ctx+"."+k, val)
			continue
		case []any:
			if p, ok := t.Lookup(ctx + "." + k); ok && p.Type == params.StringList {
				out[conffile.LineName(p)] = v
				continue
			}
		}
		out[k] = v
	}
	return out
}

// Hash is the config identity: a short, stable digest of a rendered config without its mesh seed
// lines and the values that differ from pod to pod (perPodKeys). The seed list names every pod, so it
// changes with the cluster's size; a running node needs no new seeds (a new node that reaches any member
// joins, and the members learn of it through the mesh), so a change of the seed list alone must not
// restart pods. A rack's template and each of its pods' files (PodFile) have one identity; a file
// without a node id (an older operator's) or without external addresses has another. Every decision
// about which config a pod runs (the acko.io/config-hash annotation, rolling restarts, readiness) uses
// this identity.
func Hash(conf string) string {
	h := sha256.New()
	for line := range strings.Lines(conf) {
		trimmed := strings.TrimSpace(line)
		key, _, _ := strings.Cut(trimmed, " ")
		switch {
		case key == keyMeshSeed || strings.HasPrefix(line, hashTrailer):
			continue
		case perPodKeys[key]:
			line = key + "\n"
		}
		h.Write([]byte(line))
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}

// NodeID is the node id of the pod of a rack with this ordinal: A, the rack id in hex, the ordinal in
// four hex digits (A10002: rack 1, pod 2; A00000: the first pod of a single-rack cluster). asd's
// default comes from the MAC address of the pod's interface, which a recreated pod does not keep: it
// would join as a stranger and every partition it held would migrate again. Unique in the cluster
// (rack ids are at most 1000000, five hex digits), never 0, at most 16 digits, as asd requires.
func NodeID(rackID, ordinal int32) string {
	return fmt.Sprintf("A%X%04X", rackID, ordinal)
}

// PodNodeID is the node id of the pod with this name (that of the first pod of rack 0 for a name of
// another layout, which only a diff of two files reads).
func PodNodeID(c *v1alpha1.AerospikeCluster, pod string) string {
	rack, ordinal, _ := c.ParsePodName(pod)
	return NodeID(rack, ordinal)
}

// perPodToken stands for a value that differs from pod to pod in a rack's template: each pod's file
// (PodFile) has its own.
const perPodToken = "<per-pod>"

// The external address lines of network.service (spec.externalAccess), as aerospike.conf names them.
const (
	keyAccessAddress          = "access-address"
	keyAccessPort             = "access-port"
	keyAlternateAccessAddress = "alternate-access-address"
	keyAlternateAccessPort    = "alternate-access-port"
)

// perPodKeys are the lines whose value each pod's file fills in.
var perPodKeys = map[string]bool{
	keyNodeID: true, keyAccessAddress: true, keyAccessPort: true, keyAlternateAccessAddress: true, keyAlternateAccessPort: true,
}

// PodValues are what differs from pod to pod in a rack's config.
type PodValues struct {
	// NodeID is the pod's node id (NodeID).
	NodeID string
	// Address and Port are what the pod advertises to clients outside Kubernetes (spec.externalAccess);
	// empty, the template's placeholders stay.
	Address string
	Port    int32
}

// hashTrailer begins the last line of every pod's file: a comment with the identity (Hash) of the
// rack's config it was rendered from. The pod's config-report init container copies the file to its
// termination log, whose last 4 KiB the kubelet keeps in the pod's status: the operator reads there
// which config the pod copied when it started, which is not always the one its template's annotation says
// (the ConfigMap takes a new config before the StatefulSet does).
const hashTrailer = "# acko.io/config-hash "

// CopiedHash is the config identity in the trailer of a pod's file, or of its tail ("" without one).
func CopiedHash(tail string) string {
	i := strings.LastIndex(tail, hashTrailer)
	if i < 0 || (i > 0 && tail[i-1] != '\n') {
		return ""
	}
	hash, _, _ := strings.Cut(tail[i+len(hashTrailer):], "\n")
	return strings.TrimSpace(hash)
}

// PodFile is the pod's aerospike.conf: its rack's template with the pod's values in place of the
// template's placeholders, and the trailer that names the template's identity (hashTrailer).
func PodFile(template string, v PodValues) string {
	var b strings.Builder
	b.Grow(len(template) + 128)
	for line := range strings.Lines(template) {
		trimmed := strings.TrimSpace(line)
		key, value, _ := strings.Cut(trimmed, " ")
		if value != perPodToken || !perPodKeys[key] {
			b.WriteString(line)
			continue
		}
		var own string
		switch key {
		case keyNodeID:
			own = v.NodeID
		case keyAccessAddress, keyAlternateAccessAddress:
			own = v.Address
		default:
			if v.Port != 0 {
				own = strconv.Itoa(int(v.Port))
			}
		}
		if own == "" {
			b.WriteString(line)
			continue
		}
		b.WriteString(line[:strings.Index(line, key)] + key + " " + own + "\n")
	}
	if !strings.HasSuffix(b.String(), "\n") && b.Len() > 0 {
		b.WriteString("\n")
	}
	b.WriteString(hashTrailer + Hash(template) + "\n")
	return b.String()
}

// PodFileKey is the key of the pod's own aerospike.conf in its rack's ConfigMap: <pod>.conf, or
// <pod>_<node>.conf when the pod's file depends on the Kubernetes node it runs on (its external
// address is the node's: a pod recreated on another node must not find the old node's file). The init
// container and the operator copy that file, so each node starts with its own values, also after a
// restart in place; no shell or other image is needed to fill them in.
func PodFileKey(pod, node string) string {
	if node == "" {
		return pod + ".conf"
	}
	return pod + "_" + node + ".conf"
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
	body := mergeMaps(defaults, user)
	body[keyNodeID] = perPodToken
	return body
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

// networkBody is the user's network stanza over the operator's: fixed ports on every interface, a mesh
// heartbeat seeded with every pod, and port 3003 where the server version serves it (admin from 8.1 on,
// info in 8.0).
func networkBody(c *v1alpha1.AerospikeCluster, t *params.Table, tree map[string]any, clusterDomain string) map[string]any {
	port3003 := keyAdmin
	if !t.IsContext(keyNetwork + "." + keyAdmin) {
		port3003 = keyInfo
	}
	defaults := map[string]any{
		keyService: map[string]any{"address": addressAny, keyPort: ServicePort},
		keyFabric:  map[string]any{keyPort: FabricPort},
		keyHeartbeat: map[string]any{
			"mode":      "mesh",
			keyPort:     HeartbeatPort,
			keyMeshSeed: MeshSeeds(c, clusterDomain),
			keyInterval: HeartbeatInterval,
			keyTimeout:  HeartbeatTimeout,
		},
		port3003: map[string]any{keyPort: AdminPort},
	}
	body := mergeMaps(defaults, asMap(tree[keyNetwork]))
	if c.Spec.ExternalAccess != nil {
		address, port := keyAlternateAccessAddress, keyAlternateAccessPort
		if !c.AdvertisesAlternate() {
			address, port = keyAccessAddress, keyAccessPort
		}
		svc := body[keyService].(map[string]any)
		svc[address+"es"], svc[port] = []any{perPodToken}, perPodToken
	}
	return body
}

func namespaceBody(t *params.Table, ns map[string]any) map[string]any {
	body := deepCopyMap(ns)
	delete(body, keyName)
	se := body[keyStorageEngine].(map[string]any)
	delete(body, keyStorageEngine)
	sets, _ := body[keySets].([]any)
	delete(body, keySets)
	body = lineNames(t, ctxNamespace, body)
	body[keyStorageEngine] = storageStanza(t, se)
	if len(sets) > 0 {
		body[keySets] = setStanzas(t, sets)
	}
	return body
}

// storageStanza renders storage-engine <type> { ... }: the YAML's devices/files lists become the repeated
// device and file lines of aerospike.conf, and a memory engine without backing gets a data-size.
func storageStanza(t *params.Table, se map[string]any) stanza {
	body := deepCopyMap(se)
	typ := body[keyType].(string)
	delete(body, keyType)
	_, hasDevices := body[keyDevices]
	_, hasFiles := body[keyFiles]
	_, hasSize := body[keyDataSize]
	if typ == engineMemory && !hasDevices && !hasFiles && !hasSize {
		body[keyDataSize] = DefaultDataSize
	}
	return stanza{header: keyStorageEngine + " " + typ, body: lineNames(t, storageContext(typ), body)}
}

// setStanzas renders a namespace's sets as set <name> { ... } blocks, in the spec's order.
func setStanzas(t *params.Table, sets []any) []stanza {
	out := make([]stanza, 0, len(sets))
	for _, s := range sets {
		body := deepCopyMap(s.(map[string]any))
		name := body[keyName]
		delete(body, keyName)
		out = append(out, stanza{header: fmt.Sprintf("set %v", name), body: lineNames(t, ctxNamespace+".sets.[]", body)})
	}
	return out
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
		case []stanza:
			for _, s := range t {
				w.block(depth+1, s.header, s.body)
			}
		}
	}
	w.line(depth, "}")
}

// values writes "key value" lines: one for a single value, one per element for a list; sub-stanzas are
// left to block.
func (w *writer) values(depth int, key string, v any) {
	switch t := v.(type) {
	case map[string]any, stanza, []stanza:
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
