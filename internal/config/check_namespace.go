package config

import (
	"fmt"
	"path"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"

	corev1 "k8s.io/api/core/v1"

	"github.com/acko-io/acko/internal/config/conffile"
)

// ctxNamespace is the table's context of a namespace.
const ctxNamespace = "namespaces.[]"

const namespaceExample = "e.g. {name: test, replication-factor: 2, storage-engine: {type: memory}}"

func (k *checker) checkNamespaces(v any) {
	rel := []any{keyNamespaces}
	list, ok := v.([]any)
	switch {
	case v == nil || ok && len(list) == 0:
		k.required(-1, rel, "at least one namespace is required, "+namespaceExample)
		return
	case !ok:
		k.invalid(-1, rel, v, "must be a list of namespaces, "+namespaceExample)
		return
	}
	names := map[string]bool{}
	for i, ns := range list {
		if i >= conffile.MaxNamespaces {
			k.serverForbidden(i, nil, fmt.Sprintf("Aerospike Community Edition allows at most %d namespaces "+
				"(it refuses to start with more)", conffile.MaxNamespaces))
		}
		m, isObject := ns.(map[string]any)
		if !isObject {
			k.invalid(i, nil, ns, "a namespace is an object, "+namespaceExample)
			continue
		}
		k.checkNamespaceName(i, m, names)
		k.checkReplicationFactor(i, m)
		k.checkStorageEngine(i, m)
		k.walk(i, nil, ctxNamespace, m, namespaceRules, keyName, keyReplicationFactor, keyStorageEngine)
		k.checkTTL(i, m)
		k.checkFlushSize(i, m)
	}
}

// checkTTL: asd refuses a namespace whose records expire (default-ttl above 0) while nothing removes
// expired records (nsup-period 0), unless allow-ttl-without-nsup says so.
func (k *checker) checkTTL(i int, m map[string]any) {
	ttl, setTTL := k.intSetting(ctxNamespace, m, keyDefaultTTL, 0)
	nsup, _ := k.intSetting(ctxNamespace, m, keyNsupPeriod, 0)
	allow, _ := m["allow-ttl-without-nsup"].(bool)
	if !setTTL || ttl == 0 || nsup > 0 || allow {
		return
	}
	k.serverInvalid(i, []any{keyDefaultTTL}, m[keyDefaultTTL], "a default-ttl above 0 needs nsup-period above 0 "+
		"(or allow-ttl-without-nsup: true): Aerospike refuses to start otherwise")
}

func (k *checker) checkNamespaceName(i int, m map[string]any, names map[string]bool) {
	rel := []any{keyName}
	name, _ := m[keyName].(string)
	switch {
	case name == "":
		k.required(i, rel, "every namespace needs a name")
	case !validToken(name) || len(name) > maxNamespaceNameLength:
		k.invalid(i, rel, name, fmt.Sprintf("a namespace name is one word of at most %d characters",
			maxNamespaceNameLength))
	case names[name]:
		k.add(i, rel, func(p *field.Path) *field.Error { return field.Duplicate(p, name) })
	}
	names[name] = true
}

func (k *checker) checkReplicationFactor(i int, m map[string]any) {
	v, present := m[keyReplicationFactor]
	n, ok := intValue(v)
	switch {
	case !present:
	case !ok || n < 1:
		k.invalid(i, []any{keyReplicationFactor}, v, "must be a whole number of at least 1")
	default:
		p, _ := k.t.Lookup(ctxNamespace + "." + keyReplicationFactor)
		k.checkText(i, []any{keyReplicationFactor}, p, v, fmt.Sprint(n))
	}
}

func (k *checker) checkStorageEngine(i int, m map[string]any) {
	rel := []any{keyStorageEngine}
	typeRel := at(rel, keyType)
	const need = "storage-engine type is required: memory or device"
	v, present := m[keyStorageEngine]
	if !present {
		k.required(i, typeRel, need)
		return
	}
	se, ok := k.object(i, rel, v)
	if !ok {
		return
	}
	switch se[keyType] {
	case engineMemory:
		k.checkMemory(i, rel, se)
	case engineDevice:
		k.checkDevice(i, rel, se)
	case "pmem":
		k.forbidden(i, typeRel, enterpriseOnly("storage-engine pmem"))
		return
	case nil, "":
		k.required(i, typeRel, need)
		return
	default:
		k.add(i, typeRel, func(p *field.Path) *field.Error { return field.NotSupported(p, se[keyType], storageEngines) })
		return
	}
	k.walk(i, rel, storageContext(se[keyType].(string)), se, storageRules, keyType, keyDevices, keyFiles, keyDataSize,
		keyFileSize)
}

// storageContext is the table's context of a storage engine type.
func storageContext(typ string) string {
	return ctxNamespace + "." + keyStorageEngine + "(type=" + typ + ")"
}

// checkMemory: without storage backing a memory namespace holds data-size bytes (DefaultDataSize if
// absent), which Aerospike 8.1 wants to be at least 512M.
func (k *checker) checkMemory(i int, rel []any, se map[string]any) {
	v, sized := se[keyDataSize]
	if k.checkBacking(i, rel, se) > 0 {
		if sized {
			k.serverForbidden(i, at(rel, keyDataSize), "storage-engine memory with devices or files (storage "+
				"backing) takes its size from them: Aerospike refuses to start with a data-size as well")
		}
		return
	}
	if sized {
		k.checkSize(i, at(rel, keyDataSize), v)
	}
}

func (k *checker) checkDevice(i int, rel []any, se map[string]any) {
	if k.checkBacking(i, rel, se) == 0 {
		k.required(i, at(rel, keyDevices), "storage-engine device needs devices (paths of Block volumes) "+
			"or files (inside Filesystem volumes) from spec.storage.volumes")
	}
}

// checkSize checks data-size and filesize: a size (a number with an optional K, M, G, T or P suffix) at
// least the minimum of the server version (rules that predate the tables) and at most its maximum.
func (k *checker) checkSize(i int, rel []any, v any) {
	// memory has both parameters, with the bounds every engine has
	p, _ := k.t.Lookup(storageContext(engineMemory) + "." + rel[len(rel)-1].(string))
	n, ok := parseSize(v)
	switch {
	case !ok:
		k.invalid(i, rel, v, "must be a size such as 4G (a number with an optional K, M, G, T or P suffix)")
	case p != nil && p.Min != nil && n < *p.Min:
		k.invalid(i, rel, v, fmt.Sprintf("is below the minimum Aerospike %s accepts: %s", k.t.Version, sizeText(*p.Min)))
	case p != nil:
		k.checkText(i, rel, p, v, fmt.Sprint(n))
	}
}

// checkBacking checks the devices and files of a storage engine and returns how many the user listed.
func (k *checker) checkBacking(i int, rel []any, se map[string]any) int {
	devices := k.eachPath(i, at(rel, keyDevices), se[keyDevices], func(elem []any, dev string) {
		if !k.hasVolume(corev1.PersistentVolumeBlock, func(p string) bool { return p == dev }) {
			k.invalid(i, elem, dev, "is not the path of a Block volume in spec.storage.volumes")
		}
	})
	files := k.eachPath(i, at(rel, keyFiles), se[keyFiles], func(elem []any, file string) {
		inside := func(p string) bool { return strings.HasPrefix(file, strings.TrimSuffix(p, "/")+"/") }
		if !k.hasVolume(corev1.PersistentVolumeFilesystem, inside) {
			k.invalid(i, elem, file, "is not inside a Filesystem volume in spec.storage.volumes")
		}
	})
	v, sized := se[keyFileSize]
	switch {
	case sized:
		k.checkSize(i, at(rel, keyFileSize), v)
	case files > 0:
		k.required(i, at(rel, keyFileSize), "files need a filesize, e.g. filesize: 4G")
	}
	return devices + files
}

// eachPath checks a list of absolute paths, each listed once in the whole config, and calls fn for each
// good one. It returns how many entries the user gave; a value that is not a list is reported and counts
// as one, so that it is not also reported as missing.
func (k *checker) eachPath(i int, rel []any, v any, fn func(elem []any, p string)) int {
	if v == nil {
		return 0
	}
	list, ok := v.([]any)
	if !ok {
		k.invalid(i, rel, v, "must be a list of paths")
		return 1
	}
	for j, e := range list {
		elem := at(rel, j)
		p, isString := e.(string)
		switch {
		case !isString || !path.IsAbs(p) || !validToken(p):
			k.invalid(i, elem, e, "must be an absolute path")
		case k.used[p]:
			k.invalid(i, elem, p, "is listed more than once: a device or file belongs to one namespace")
		default:
			k.used[p] = true
			fn(elem, p)
		}
	}
	return len(list)
}

func (k *checker) hasVolume(mode corev1.PersistentVolumeMode, match func(volumePath string) bool) bool {
	if k.c.Spec.Storage == nil {
		return false
	}
	for _, v := range k.c.Spec.Storage.Volumes {
		vm := v.VolumeMode
		if vm == "" {
			vm = corev1.PersistentVolumeFilesystem
		}
		if vm == mode && match(v.Path) {
			return true
		}
	}
	return false
}
