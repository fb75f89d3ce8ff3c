package config

import (
	"fmt"
	"testing"
)

// The safety rule over sizes × replication factors × racks: racks never change it (CE has no rack
// awareness).
func TestMaxDown(t *testing.T) {
	for _, racks := range []string{"", "rackConfig: {racks: [{id: 1}, {id: 2}]}"} {
		for _, tt := range []struct{ size, rf, want int }{
			{1, 2, 1}, {2, 2, 1}, {3, 2, 1}, {5, 2, 1}, {8, 2, 1},
			{3, 1, 1}, {8, 1, 1},
			{3, 3, 2}, {5, 3, 2}, {2, 3, 1}, {8, 4, 3}, {3, 8, 2},
		} {
			c := decodeCluster(t, fmt.Sprintf(`
metadata: {name: c, namespace: ns}
spec:
  size: %d
  image: aerospike:ce-8.1.1.1
  %s
  aerospikeConfig:
    namespaces:
      - {name: a, replication-factor: %d, storage-engine: {type: memory}}
      - {name: b, replication-factor: %d, storage-engine: {type: memory}}
`, tt.size, racks, tt.rf, tt.rf+1))
			if got := MaxDown(c); got != tt.want {
				t.Errorf("size %d rf %d %q: MaxDown = %d, want %d", tt.size, tt.rf, racks, got, tt.want)
			}
		}
	}
	c := decodeCluster(t, `
metadata: {name: c, namespace: ns}
spec: {size: 3, image: x, aerospikeConfig: {namespaces: [{name: a, storage-engine: {type: memory}}]}}`)
	if got := ReplicationFactor(c); got != DefaultReplicationFactor {
		t.Errorf("a namespace without replication-factor has asd's default 2, got %d", got)
	}
}

// Which namespaces asd reads back at start: a device, or memory backed by files, in any rack.
func TestHasPersistentNamespace(t *testing.T) {
	for _, tt := range []struct {
		engine, rack string
		want         bool
	}{
		{engine: "{type: memory, data-size: 1G}"},
		{engine: "{type: device, devices: [/dev/xvdb]}", want: true},
		{engine: "{type: device, files: [/opt/aerospike/data/a.dat], filesize: 1G}", want: true},
		{engine: "{type: memory, files: [/opt/aerospike/data/a.dat], filesize: 1G}", want: true},
		{engine: "{type: memory, data-size: 1G}", want: true, rack: `rackConfig: {racks: [{id: 1}, {id: 2, aerospikeConfig:
      {namespaces: [{name: a, storage-engine: {type: device, devices: [/dev/xvdb]}}]}}]}`},
	} {
		c := decodeCluster(t, fmt.Sprintf(`
metadata: {name: c, namespace: ns}
spec:
  size: 3
  image: aerospike:ce-8.1.1.1
  %s
  aerospikeConfig:
    namespaces: [{name: a, storage-engine: %s}]
`, tt.rack, tt.engine))
		if got := HasPersistentNamespace(c); got != tt.want {
			t.Errorf("%s %s: %v, want %v", tt.engine, tt.rack, got, tt.want)
		}
	}
}
