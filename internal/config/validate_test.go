package config

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/acko-io/acko/api/v1alpha1"
)

// clusterWith builds a cluster named "bad" in namespace "default" from the YAML of its spec (indented by
// two spaces under spec:).
func clusterWith(t *testing.T, spec string) *v1alpha1.AerospikeCluster {
	t.Helper()
	return decodeCluster(t, "metadata: {name: bad, namespace: default}\nspec:\n  image: aerospike:ce-8.1.1.1\n"+spec)
}

// twoVolumes is the storage of the cases about devices and files: a Block and a Filesystem volume.
const twoVolumes = `  storage:
    volumes:
      - {name: ssd, path: /dev/xvdb, size: 10Gi, volumeMode: Block}
      - {name: data, path: /opt/aerospike/data, size: 10Gi}
`

// errorCases are invalid specs; testdata/errors.golden holds the exact messages Validate gives for each.
var errorCases = []struct{ name, spec string }{
	{"no aerospikeConfig", `
  size: 1`},
	{"Enterprise-only settings", `
  size: 1
  aerospikeConfig:
    xdr: {dc: {}}
    security: {}
    service: {feature-key-file: /etc/aerospike/features.conf}
    network: {tls: {}, service: {tls-port: 4333}}
    namespaces:
      - name: test
        strong-consistency: true
        index-type: {type: flash}
        storage-engine: {type: memory, compression: lz4}
      - name: pm
        storage-engine: {type: pmem}`},
	{"unknown and removed stanzas", `
  size: 1
  aerospikeConfig:
    cluster: {}
    network: {info: {port: 3003}, multicast: {}}
    namespaces: [{name: test, storage-engine: {type: memory}}]`},
	{"settings the operator owns", `
  size: 2
  aerospikeConfig:
    network:
      service: {port: 4000, access-addresses: [10.0.0.1]}
      heartbeat: {mode: multicast, mesh-seed-address-port: "10.0.0.1 3002"}
    namespaces:
      - name: test
        rack-id: 1
        storage-engine: {type: memory, file: /data/test.dat}`},
	{"namespace basics", `
  size: 3
  aerospikeConfig:
    namespaces:
      - replication-factor: 2
        storage-engine: {type: memory}
      - name: test
        replication-factor: 0
        storage-engine: memory`},
	{"a namespace twice", `
  size: 3
  aerospikeConfig:
    namespaces:
      - name: test
        storage-engine: {type: memory}
      - name: test
        replication-factor: two`},
	{"namespace names and engines", `
  size: 3
  aerospikeConfig:
    namespaces:
      - name: this-name-is-far-too-long-for-aerospike
        storage-engine: {type: disk}
      - name: notype
        storage-engine: {data-size: 1G}`},
	{"a namespace that is not an object", `
  size: 3
  aerospikeConfig:
    namespaces: [just-a-string]`},
	{"a third namespace (Community Edition has 2)", `
  size: 3
  aerospikeConfig:
    namespaces:
      - {name: a, storage-engine: {type: memory}}
      - {name: b, storage-engine: {type: memory}}
      - {name: c, storage-engine: {type: memory}}`},
	{"memory sizes", `
  size: 1
  aerospikeConfig:
    namespaces:
      - name: small
        storage-engine: {type: memory, data-size: 256M}
      - name: words
        storage-engine: {type: memory, data-size: lots}`},
	{"device and file paths", `
  size: 2` + "\n" + twoVolumes + `  aerospikeConfig:
    namespaces:
      - name: nothing
        storage-engine: {type: device}
      - name: wrong
        storage-engine:
          type: device
          devices: [/opt/aerospike/data, /dev/xvdc, relative/path]
          files: [/opt/aerospike/data, /var/data/x.dat]
          filesize: 64M`},
	{"a device twice, files without a size, devices that are not a list", `
  size: 2` + "\n" + twoVolumes + `  aerospikeConfig:
    namespaces:
      - name: twice
        storage-engine:
          type: device
          devices: [/dev/xvdb, /dev/xvdb]
          files: [/opt/aerospike/data/twice.dat]
      - name: notalist
        storage-engine: {type: device, devices: /dev/xvdb}`},
	{"values aerospike.conf cannot hold", `
  size: 1
  aerospikeConfig:
    service:
      "bad key": 1
      pidfile: "/run/a{b}"
      work-directory: opt/aerospike
      cluster-name: two words
      user: null
      node-id-interface: ""
      batch: [{size: 1}]
    logging: {any: loud, console: {context: any}}
    namespaces: [{name: test, storage-engine: {type: memory}}]`},
	{"blocks that cannot be written: sets without a name, names and keys that are not words", `
  size: 1
  aerospikeConfig:
    service: {unknown-stanza: {"bad key": 1, inner: {x: "{"}}}
    namespaces:
      - name: test
        sets: [{disable-eviction: true}, {name: "#"}, 3]
        storage-engine: {type: memory}`},
	{"a rack override", `
  size: 4
  rackConfig:
    racks:
      - id: 7
      - id: 3
        aerospikeConfig:
          namespaces:
            - name: test
              storage-engine: {data-size: 100M}
            - name: extra
              storage-engine: {type: pmem}
  aerospikeConfig:
    security: {}
    namespaces: [{name: test, storage-engine: {type: memory}}]`},
	{"a rack's storage backing", `
  size: 2
  storage:
    volumes: [{name: data, path: /opt/aerospike/data, size: 10Gi}]
  rackConfig:
    racks:
      - id: 1
        aerospikeConfig:
          namespaces:
            - name: test
              storage-engine: {files: [/opt/aerospike/data/test.dat, /elsewhere/test.dat]}
  aerospikeConfig:
    namespaces: [{name: test, storage-engine: {type: memory, filesize: 1G}}]`},
	{"a rack override that is not a list", `
  size: 2
  rackConfig:
    racks:
      - id: 1
        aerospikeConfig: {namespaces: {name: test}}
  aerospikeConfig:
    namespaces: [{name: test, storage-engine: {type: memory}}]`},
}

// tableCases break the server's own rules: its parameter table of the image's version, Community
// Edition's limits and the checks asd makes when it starts. testdata/table-errors.golden holds Validate's
// messages for each.
var tableCases = []struct{ name, image, spec string }{
	{"the config-truth issue's four patches", "aerospike:ce-8.1.2.0", `
  size: 3
  aerospikeConfig:
    service: {proto-fd-max: lots, no-such-param: 1}
    namespaces:
      - {name: a, bogus: 3, storage-engine: {type: memory}}
      - {name: b, storage-engine: {type: memory}}
      - {name: c, storage-engine: {type: memory}}`},
	{"types, bounds and allowed values", "aerospike:ce-8.1.1.1", `
  size: 3
  aerospikeConfig:
    service:
      proto-fd-max: 100
      migrate-threads: 101
      disable-udf-execution: "yes"
      auto-pin: all
      service-threads: 0.5
      proto-fd-idle-ms: [1]
    network:
      heartbeat: {interval: 50}
      fabric: {channel-rw-recv-pools: 3}
    namespaces:
      - name: test
        replication-factor: 9
        default-ttl: 1d
        nsup-hist-period: 1G
        partition-tree-sprigs: 300
        storage-engine: {type: memory, data-size: 512T}`},
	{"Enterprise-only parameters and other engines' parameters", "aerospike:ce-8.1.1.1", `
  size: 1
  aerospikeConfig:
    service: {stay-quiesced: true}
    namespaces:
      - name: test
        disallow-expunge: true
        storage-engine: {type: memory, read-page-cache: true, commit-to-device: true, defrag-lwm-pct: 50}`},
	{"lists, stanzas and log contexts", "aerospike:ce-8.1.1.1", `
  size: 1
  aerospikeConfig:
    logging: {migrat: info, any: info}
    namespaces:
      - name: test
        geo2dsphere-within: 3
        sets: [{name: users, default-ttl: lots}, {name: users}]
        storage-engine: {type: memory}`},
	{"storage backing with a data-size", "aerospike:ce-8.1.1.1", `
  size: 1
  storage:
    volumes: [{name: data, path: /opt/aerospike/data, size: 10Gi}]
  aerospikeConfig:
    namespaces:
      - name: test
        storage-engine: {type: memory, data-size: 1G, files: [/opt/aerospike/data/test.dat], filesize: 1G}`},
	{"8.0 has info where 8.1 has admin", "aerospike:ce-8.0.0.12", `
  size: 1
  aerospikeConfig:
    network: {admin: {disable-localhost: true}}
    namespaces: [{name: test, storage-engine: {type: memory}}]`},
	{"a rack's own cluster-name", "aerospike:ce-8.1.1.1", `
  size: 2
  rackConfig:
    racks:
      - id: 1
      - id: 2
        aerospikeConfig: {service: {cluster-name: other}}
  aerospikeConfig:
    namespaces: [{name: test, storage-engine: {type: memory}}]`},
}

func TestValidateTableGolden(t *testing.T) {
	var b strings.Builder
	for _, tc := range tableCases {
		c := clusterWith(t, tc.spec)
		c.Spec.Image = tc.image
		errs, violations := Check(c)
		if len(errs) > 0 {
			t.Errorf("%s: structural errors %v: the case is about the server's rules only", tc.name, errs)
		}
		if len(violations) == 0 {
			t.Errorf("%s: no violation", tc.name)
		}
		writeCase(&b, tc.name+" ("+tc.image+")", violations)
	}
	assertGolden(t, "table-errors", b.String())
}

// The config-truth issue's example, exactly.
func TestValidateIssueExample(t *testing.T) {
	c := clusterWith(t, "  size: 1\n  aerospikeConfig: {service: {proto-fd-max: lots}, namespaces: [{name: t, storage-engine: {type: memory}}]}")
	c.Spec.Image = "aerospike:ce-8.1.2.0"
	want := `spec.aerospikeConfig.service.proto-fd-max: Invalid value: "lots": must be an integer from 1024 to 2147483647`
	if errs := Validate(c); len(errs) != 1 || errs[0].Error() != want {
		t.Errorf("errors = %v, want %q", errs, want)
	}
}

func errorCase(t *testing.T, name string) string {
	t.Helper()
	for _, tc := range errorCases {
		if tc.name == name {
			return tc.spec
		}
	}
	t.Fatalf("no error case %q", name)
	return ""
}

func TestValidateErrorsGolden(t *testing.T) {
	var b strings.Builder
	for _, tc := range errorCases {
		errs := Validate(clusterWith(t, tc.spec))
		if len(errs) == 0 {
			t.Errorf("%s: no error", tc.name)
		}
		writeCase(&b, tc.name, errs)
	}
	assertGolden(t, "errors", b.String())
}

// writeCase writes a case of a golden file of errors: its title, then one error a line.
func writeCase(b *strings.Builder, title string, errs field.ErrorList) {
	fmt.Fprintf(b, "== %s ==\n", title)
	for _, e := range errs {
		b.WriteString(e.Error() + "\n")
	}
	b.WriteString("\n")
}

func TestValidateLongClusterName(t *testing.T) {
	c := loadCluster(t, "testdata/operations-guide.yaml")
	c.Name = strings.Repeat("a", 64)
	errs := Validate(c)
	want := "spec.aerospikeConfig.service.cluster-name: Invalid value: \"" + c.Name + "\": Aerospike cluster names " +
		"are at most 63 bytes; set service.cluster-name to a shorter name"
	if len(errs) != 1 || errs[0].Error() != want {
		t.Errorf("errors = %v, want %q", errs, want)
	}
	c.Spec.AerospikeConfig.Value["service"] = map[string]any{"cluster-name": "short"}
	if errs := Validate(c); len(errs) != 0 {
		t.Errorf("a short cluster-name should fix it: %v", errs)
	}
}

// An error in the cluster's config is reported once, however many racks render it; an error a rack's
// override causes points into that rack (by its index in the spec, not its rank in the plan).
func TestValidateAttributesErrorsToTheirLayer(t *testing.T) {
	errs := Validate(clusterWith(t, errorCase(t, "a rack override")))
	fields := make([]string, 0, len(errs))
	for _, e := range errs {
		fields = append(fields, e.Field)
	}
	want := []string{
		"spec.aerospikeConfig.security",
		"spec.rackConfig.racks[1].aerospikeConfig.namespaces[0].storage-engine.data-size",
		"spec.rackConfig.racks[1].aerospikeConfig.namespaces[1].storage-engine.type",
	}
	if !slices.Equal(fields, want) {
		t.Errorf("fields = %q, want %q", fields, want)
	}
}

// A namespace type missing in the cluster's config but given by every rack is fine: only merged configs
// are rendered.
func TestValidateChecksMergedConfigs(t *testing.T) {
	c := clusterWith(t, `
  size: 2
  rackConfig:
    racks:
      - {id: 1, aerospikeConfig: {namespaces: [{name: test, storage-engine: {type: memory}}]}}
      - {id: 2, aerospikeConfig: {namespaces: [{name: test, storage-engine: {type: memory, data-size: 2G}}]}}
  aerospikeConfig:
    namespaces: [{name: test, replication-factor: 2}]`)
	if errs := Validate(c); len(errs) != 0 {
		t.Errorf("unexpected errors: %v", errs)
	}
	c.Spec.RackConfig.Racks[1].AerospikeConfig = nil
	errs := Validate(c)
	want := "spec.aerospikeConfig.namespaces[0].storage-engine.type: Required value: " +
		"storage-engine type is required: memory or device"
	if len(errs) != 1 || errs[0].Error() != want {
		t.Errorf("errors = %v, want %q", errs, want)
	}
}

func TestRenderErrorMatchesValidate(t *testing.T) {
	c := clusterWith(t, errorCase(t, "a rack override"))
	for _, rack := range c.RackPlan() {
		_, err := Render(c, rack, v1alpha1.DefaultClusterDomain)
		if want := rackErrors(c, rack).ToAggregate(); err == nil || err.Error() != want.Error() {
			t.Errorf("rack %d: Render error %v, want %v", rack.ID, err, want)
		}
	}
}

const singleCopy = `namespace "test": replication-factor 1 keeps a single copy of each record: each restart ` +
	`loses that node's in-memory data (storage-engine memory) and takes its records offline until the node is ` +
	`back; a rolling restart, a scale-down or a PodRestart costs that much for every pod, one pod at a time`

func TestWarnings(t *testing.T) {
	for _, tc := range []struct {
		name string
		spec string
		want []string
	}{
		{"replication-factor within size", `
  size: 3
  aerospikeConfig: {namespaces: [{name: test, replication-factor: 2, storage-engine: {type: memory}}]}`, nil},
		{"replication-factor above size", `
  size: 2
  aerospikeConfig: {namespaces: [{name: test, replication-factor: 3, storage-engine: {type: memory}}]}`,
			[]string{`namespace "test": replication-factor 3 is greater than the cluster size 2: ` +
				`Aerospike keeps only 2 copies until the cluster grows`}},
		{"single copy", `
  size: 3
  aerospikeConfig: {namespaces: [{name: test, replication-factor: 1, storage-engine: {type: memory}}]}`,
			[]string{singleCopy}},
		{"single node, single copy: a restart costs the same", `
  size: 1
  aerospikeConfig: {namespaces: [{name: test, replication-factor: 1, storage-engine: {type: memory}}]}`,
			[]string{singleCopy}},
		{"enforce-best-practices: asd checks the host at start", `
  size: 3
  aerospikeConfig:
    service: {enforce-best-practices: true}
    namespaces: [{name: test, replication-factor: 2, storage-engine: {type: memory}}]`,
			[]string{"service.enforce-best-practices: true makes asd check its host (kernel and memory settings) " +
				"when it starts and stop if a check fails, which cannot be checked before the pods run: a failed " +
				"check leaves the pod restarting, with asd's reason in its log; set it only for hosts you have " +
				"prepared"}},
		{"enforce-best-practices: false", `
  size: 3
  aerospikeConfig:
    service: {enforce-best-practices: false}
    namespaces: [{name: test, replication-factor: 2, storage-engine: {type: memory}}]`, nil},
		{"once for every rack", `
  size: 2
  rackConfig: {racks: [{id: 1}, {id: 2}]}
  aerospikeConfig: {namespaces: [{name: test, replication-factor: 4, storage-engine: {type: memory}}]}`,
			[]string{`namespace "test": replication-factor 4 is greater than the cluster size 2: ` +
				`Aerospike keeps only 2 copies until the cluster grows`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Warnings(clusterWith(t, tc.spec)); !slices.Equal(got, tc.want) {
				t.Errorf("Warnings = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestMergeRack(t *testing.T) {
	c := loadCluster(t, "testdata/two-racks.yaml")
	plan := c.RackPlan()
	m := mergeRack(c, plan[1]) // rack 2, the one with overrides
	namespaces := m.tree[keyNamespaces].([]any)
	if got := []string{nameOf(namespaces[0]), nameOf(namespaces[1])}; !slices.Equal(got, []string{"test", "cache"}) {
		t.Fatalf("namespaces = %q, want test then cache", got)
	}
	test := namespaces[0].(map[string]any)
	se := test[keyStorageEngine].(map[string]any)
	if se["data-size"] != "2G" || se["type"] != "memory" || se["evict-used-pct"] != int64(70) ||
		test[keyReplicationFactor] != int64(2) {
		t.Errorf("test namespace not deep-merged: %v", test)
	}
	if got := m.tree[keyService].(map[string]any)["proto-fd-max"]; got != int64(20000) {
		t.Errorf("proto-fd-max = %v, want the rack's 20000", got)
	}
	if want := []origin{{base: 0, rack: 0}, {base: -1, rack: 1}}; !slices.Equal(m.origins, want) {
		t.Errorf("origins = %v, want %v", m.origins, want)
	}
	// Lists are values: a rack's list replaces the cluster's rather than merging into it.
	got := mergeMaps(map[string]any{"l": []any{"a", "b"}}, map[string]any{"l": []any{"c"}})
	if fmt.Sprint(got) != "map[l:[c]]" {
		t.Errorf("list merge = %v", got)
	}
}
