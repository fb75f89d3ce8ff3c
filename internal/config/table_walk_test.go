package config

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/acko-io/acko/api/v1alpha1"
	"github.com/acko-io/acko/internal/config/params"
)

// ownedRows are the table rows a user cannot set, because the operator owns them (or ACKO's
// aerospikeConfig has no place for them); the walk below skips them.
var ownedRows = map[string]string{
	"port":                       "the operator fixes every port",
	"addresses":                  "the operator listens on every interface",
	"mode":                       "the heartbeat is always mesh",
	"multicast-groups":           "the heartbeat is always mesh",
	"mesh-seed-address-ports":    "the operator seeds the mesh with every pod",
	"node-id":                    "the operator gives each pod its node id",
	"access-addresses":           "the operator renders each pod's client addresses",
	"access-port":                "the operator renders each pod's client addresses",
	"alternate-access-addresses": "the operator renders each pod's client addresses",
	"alternate-access-port":      "the operator renders each pod's client addresses",
	"node-id-interface":          "the operator gives each pod its node id",
	"name":                       "a namespace's, a set's or a sink's name is the key of its stanza, not a value",
	"type":                       "the storage-engine (or index) type chooses the stanza's variant",
	"facility":                   "ACKO logs to the console only: syslog's settings have no place in logging",
	"path":                       "ACKO logs to the console only: syslog's settings have no place in logging",
	"tag":                        "ACKO logs to the console only: syslog's settings have no place in logging",
}

// ruleRows are the rows a cross-parameter rule refuses in the walk's cluster (one memory namespace
// without storage backing) whatever their value, with the server's log line the refusal quotes.
var ruleRows = map[string]string{
	"namespaces.[].storage-engine(type=memory).flush-size": "can't configure 'flush-size' if not using storage backing",
	"service.advertise-ipv6":                               "'advertise-ipv6' is relevant for enterprise only",
}

// Every row of every table, through the YAML validator at the row's own path: a valid value passes;
// where the row has a type, bounds or allowed values, a value breaking each is refused there; an
// Enterprise-only row, and a row a rule refuses (ruleRows), is refused whatever its value.
func TestEveryTableRow(t *testing.T) {
	rows, enterprise, invalid, skipped := 0, 0, 0, map[string]int{}
	for _, tb := range params.Tables() {
		for _, p := range tb.Params() {
			if reason, owned := ownedRows[p.Name()]; owned {
				skipped[reason]++
				continue
			}
			rows++
			if p.EnterpriseOnly {
				enterprise++
			} else {
				invalid += len(invalidTexts(p))
			}
			t.Run(tb.Version.String()+"/"+p.Path, func(t *testing.T) { checkRow(t, tb, p) })
		}
	}
	t.Logf("%d rows checked over %d tables (%d Enterprise-only refused, %d invalid values refused); skipped: %v",
		rows, len(params.Tables()), enterprise, invalid, skipped)
}

func checkRow(t *testing.T, tb *params.Table, p *params.Param) {
	valid, ok := validText(p)
	if !ok {
		t.Fatalf("no valid value found for %s", p.Path)
	}
	c, path := rowCluster(tb, p, yamlValue(p, valid))
	errs := Validate(c)
	if p.EnterpriseOnly {
		if !refusedAt(errs, path, "Enterprise-only") {
			t.Errorf("Enterprise-only %s not refused at %s: %v", p.Path, path, errs)
		}
		return
	}
	if line, ruled := ruleRows[p.Path]; ruled {
		if !refusedAt(errs, path, line) {
			t.Errorf("%s %q not refused at %s with the server's line %q: %v", p.Path, valid, path, line, errs)
		}
	} else if len(errs) > 0 {
		t.Errorf("valid %s %q refused: %v", p.Path, valid, errs)
	}
	for _, bad := range invalidTexts(p) {
		c, path := rowCluster(tb, p, bad)
		if errs := Validate(c); !refusedAt(errs, path, "") {
			t.Errorf("%s %v accepted (want an error at %s): %v", p.Path, bad, path, errs)
		}
	}
}

// validText is a value the row takes: its default, its minimum or maximum, or a plain word.
func validText(p *params.Param) (string, bool) {
	var candidates []string
	if s, ok := scalarString(p.Default); ok && p.Default != nil {
		candidates = append(candidates, s)
	}
	lo, hi := p.Bounds()
	for _, b := range []*int64{lo, hi} {
		if b != nil {
			candidates = append(candidates, strconv.FormatInt(*b, 10))
		}
	}
	candidates = append(candidates, p.Enum...)
	candidates = append(candidates, "a1")
	for _, c := range candidates {
		if c != "" && !strings.Contains(c, " ") && p.CheckText(c) == nil {
			return c, true
		}
	}
	return "", false
}

// invalidTexts break the row's type, bounds and allowed values, each on its own.
func invalidTexts(p *params.Param) []any {
	var out []any
	switch {
	case p.Type == params.Integer:
		out = append(out, "not-a-number")
		lo, hi := p.Bounds()
		if lo != nil && *lo > math.MinInt64 && (*lo > 0 || *lo < 0) {
			out = append(out, *lo-1)
		}
		if hi != nil && *hi < math.MaxInt64 {
			out = append(out, *hi+1)
		}
	case p.Type == params.Boolean:
		out = append(out, "maybe")
	case len(p.Enum) > 0:
		out = append(out, "not-allowed")
	}
	return out
}

// yamlValue is how a user writes the value in aerospikeConfig: a list for a list, a number or a
// boolean where the text is one.
func yamlValue(p *params.Param, text string) any {
	switch p.Type {
	case params.StringList:
		return []any{text}
	case params.Boolean:
		if b, err := strconv.ParseBool(text); err == nil && (text == "true" || text == "false") {
			return b
		}
	}
	if n, err := strconv.ParseInt(text, 10, 64); err == nil {
		return n
	}
	return text
}

// rowCluster is a valid cluster of the table's version with the row set to value, and the field path
// the row has in it.
func rowCluster(tb *params.Table, p *params.Param, value any) (*v1alpha1.AerospikeCluster, string) {
	b := newRowBuilder()
	path := b.set(p, value)
	return b.cluster(tb), path
}

// rowBuilder sets table rows in an aerospikeConfig that starts as one memory namespace.
type rowBuilder struct {
	cfg, ns map[string]any
}

func newRowBuilder() *rowBuilder {
	ns := map[string]any{"name": "test", "storage-engine": map[string]any{"type": "memory"}}
	return &rowBuilder{cfg: map[string]any{"namespaces": []any{ns}}, ns: ns}
}

// set puts value at the row's place and returns the row's field path.
func (b *rowBuilder) set(p *params.Param, value any) string {
	root := field.NewPath("spec", "aerospikeConfig")
	steps := strings.Split(p.Path, ".")
	var target map[string]any
	var path *field.Path
	switch steps[0] {
	case "logging": // logging.[].<context>: ACKO's logging maps a context to the console's level
		logging, ok := b.cfg["logging"].(map[string]any)
		if !ok {
			logging = map[string]any{}
			b.cfg["logging"] = logging
		}
		target, path, steps = logging, root.Child("logging"), steps[2:]
	case keyNamespaces:
		target, path, steps = b.ns, root.Child(keyNamespaces).Index(0), steps[2:]
	default:
		target, path = b.cfg, root
	}
	for len(steps) > 1 {
		target, path, steps = descend(b.ns, target, path, steps)
	}
	target[steps[0]] = backing(b.ns, target, steps[0], value)
	return path.Child(steps[0]).String()
}

// cluster is a one-node cluster of the table's version with the config built so far and two volumes
// its devices and files use.
func (b *rowBuilder) cluster(tb *params.Table) *v1alpha1.AerospikeCluster {
	c := &v1alpha1.AerospikeCluster{}
	c.Name, c.Namespace = "walk", "default"
	c.Spec.Size, c.Spec.Image = 1, fmt.Sprintf("aerospike:ce-%s.1", tb.Version)
	c.Spec.AerospikeConfig = &v1alpha1.AerospikeConfig{Value: b.cfg}
	c.Spec.Storage = &v1alpha1.StorageSpec{Volumes: []v1alpha1.VolumeSpec{
		{Name: "ssd", Path: "/dev/xvdb", Size: resource.MustParse("10Gi"), VolumeMode: corev1.PersistentVolumeBlock},
		{Name: "data", Path: "/opt/aerospike/data", Size: resource.MustParse("10Gi")},
	}}
	return c
}

// descend creates the stanza of the next path step: a sub-stanza, an element of a list of stanzas
// (sets.[], tls.[]) or a variant (storage-engine(type=device)).
func descend(ns, target map[string]any, path *field.Path, steps []string) (map[string]any, *field.Path, []string) {
	step := steps[0]
	if base, typ, variant := strings.Cut(strings.TrimSuffix(step, ")"), "(type="); variant {
		if next, ok := target[base].(map[string]any); ok && next["type"] == typ {
			return next, path.Child(base), steps[1:]
		}
		next := map[string]any{"type": typ}
		if base == keyStorageEngine && typ == engineDevice {
			next[keyDevices] = []any{"/dev/xvdb"}
		}
		if base == keyStorageEngine {
			ns[keyStorageEngine] = next
		}
		target[base] = next
		return next, path.Child(base), steps[1:]
	}
	if len(steps) > 2 && steps[1] == "[]" {
		if list, ok := target[step].([]any); ok && len(list) > 0 {
			if next, isMap := list[0].(map[string]any); isMap {
				return next, path.Child(step).Index(0), steps[2:]
			}
		}
		next := map[string]any{"name": "element"}
		target[step] = []any{next}
		return next, path.Child(step).Index(0), steps[2:]
	}
	next, ok := target[step].(map[string]any)
	if !ok {
		next = map[string]any{}
		target[step] = next
	}
	return next, path.Child(step), steps[1:]
}

// backing gives a storage engine's devices and files the volumes they need, and swaps a device
// engine's default backing for the one the row sets.
func backing(ns, target map[string]any, key string, value any) any {
	se, _ := ns[keyStorageEngine].(map[string]any)
	if fmt.Sprint(target) != fmt.Sprint(se) {
		return value
	}
	switch key {
	case keyDevices:
		if _, isList := value.([]any); isList {
			return []any{"/dev/xvdb"}
		}
	case keyFiles:
		delete(target, keyDevices)
		target[keyFileSize] = "1G"
		if _, isList := value.([]any); isList {
			return []any{"/opt/aerospike/data/walk.dat"}
		}
	}
	return value
}

// refusedAt reports an error at path (or at the stanza holding it) whose message has want.
func refusedAt(errs field.ErrorList, path, want string) bool {
	for _, e := range errs {
		if (e.Field == path || strings.HasPrefix(path, e.Field+".") || strings.HasPrefix(path, e.Field+"[") ||
			siblingType(e.Field, path)) && strings.Contains(e.Error(), want) {
			return true
		}
	}
	return false
}

// siblingType: an Enterprise-only variant is refused at its type, beside the row.
func siblingType(errField, path string) bool {
	stanza, isType := strings.CutSuffix(errField, ".type")
	return isType && strings.HasPrefix(path, stanza+".")
}
