package config

import (
	"fmt"
	"os"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/yaml"

	"github.com/acko-io/acko/api/v1alpha1"
	"github.com/acko-io/acko/internal/config/conffile"
	"github.com/acko-io/acko/internal/config/params"
)

// FuzzAcceptedConfigStarts: whatever aerospikeConfig the validator accepts renders into an
// aerospike.conf the server's own check (conffile) accepts for the image's version; a config with no
// structural error renders for every rack; no input panics, and the answers are deterministic.
func FuzzAcceptedConfigStarts(f *testing.F) {
	for _, seed := range []string{
		`{"namespaces":[{"name":"test","replication-factor":2,"storage-engine":{"type":"memory"}}]}`,
		`{"service":{"proto-fd-max":"lots","no-such-param":1},"namespaces":[{"name":"a","bogus":3,` +
			`"storage-engine":{"type":"memory"}},{"name":"b","storage-engine":{"type":"memory"}}]}`,
		`{"logging":{"any":"info","migrate":"DEBUG"},"network":{"heartbeat":{"interval":50},` +
			`"service":{"access-addresses":["10.0.0.1"]}},"namespaces":[{"name":"t","default-ttl":"1d",` +
			`"nsup-period":"1h","sets":[{"name":"s","default-ttl":10}],"storage-engine":{"type":"device",` +
			`"devices":["/dev/xvdb"],"files":["/opt/aerospike/data/t.dat"],"filesize":"1G"}}]}`,
		`{"network":{"info":{},"admin":{"disable-localhost":true}},"namespaces":[{"name":"t",` +
			`"geo2dsphere-within":{"max-cells":24},"storage-engine":{"type":"memory","data-size":"512M"}}]}`,
	} {
		f.Add("aerospike:ce-8.1.1.1", uint8(3), []byte(seed))
		f.Add("aerospike:ce-8.0.0.12", uint8(1), []byte(seed))
	}
	if data, err := os.ReadFile("testdata/every-kind.yaml"); err == nil {
		c := decodeClusterBytes(data)
		if c != nil && c.Spec.AerospikeConfig != nil {
			if cfg, err := c.Spec.AerospikeConfig.MarshalJSON(); err == nil {
				f.Add(c.Spec.Image, uint8(2), cfg)
			}
		}
	}
	f.Fuzz(func(t *testing.T, image string, size uint8, cfg []byte) {
		c := fuzzCluster(image, size, cfg)
		if c == nil {
			return
		}
		errs, violations := Check(c)
		errs2, violations2 := Check(c)
		if fmt.Sprint(errs) != fmt.Sprint(errs2) || fmt.Sprint(violations) != fmt.Sprint(violations2) {
			t.Fatal("Check is not deterministic")
		}
		for _, rack := range c.RackPlan() {
			assertRenderStarts(t, c, rack, len(errs) == 0, len(errs) == 0 && len(violations) == 0)
		}
	})
}

// assertRenderStarts renders one rack: it must render when there is no structural error, be valid
// aerospike.conf whenever it renders, and pass the server's check when the validator accepts it all.
func assertRenderStarts(t *testing.T, c *v1alpha1.AerospikeCluster, rack v1alpha1.RackPlacement, renders, accepted bool) {
	t.Helper()
	conf, err := Render(c, rack, v1alpha1.DefaultClusterDomain)
	switch {
	case err != nil && renders:
		t.Fatalf("no structural error, yet rack %d does not render: %v", rack.ID, err)
	case err != nil:
		return
	}
	file, err := conffile.Parse(firstPodFile(conf, rack))
	if err != nil {
		t.Fatalf("the render is not aerospike.conf: %v\n%s", err, conf)
	}
	table := tableOf(c)
	if problems := conffile.Check(file, table); accepted && len(problems) > 0 {
		t.Fatalf("the validator accepts what the server %s refuses: %v\n%s", table.Version, problems, conf)
	}
}

// fuzzCluster is a cluster of 1 to 8 nodes with two volumes the config may use; nil for a config that
// does not decode.
func fuzzCluster(image string, size uint8, cfg []byte) *v1alpha1.AerospikeCluster {
	config := &v1alpha1.AerospikeConfig{}
	if config.UnmarshalJSON(cfg) != nil || config.Value == nil {
		return nil
	}
	c := &v1alpha1.AerospikeCluster{}
	c.Name, c.Namespace = "fz", "default"
	c.Spec.Size, c.Spec.Image = int32(size%8)+1, image
	c.Spec.AerospikeConfig = config
	c.Spec.Storage = &v1alpha1.StorageSpec{Volumes: []v1alpha1.VolumeSpec{
		{Name: "ssd", Path: "/dev/xvdb", Size: resource.MustParse("10Gi"), VolumeMode: corev1.PersistentVolumeBlock},
		{Name: "data", Path: "/opt/aerospike/data", Size: resource.MustParse("10Gi")},
	}}
	return c
}

func decodeClusterBytes(data []byte) *v1alpha1.AerospikeCluster {
	c := &v1alpha1.AerospikeCluster{}
	if yaml.UnmarshalStrict(data, c) != nil {
		return nil
	}
	return c
}

// FuzzTableValues sets rows of a table, picked by the fuzzer, to values it writes: whatever the
// validator accepts, the server's own check accepts in the render.
func FuzzTableValues(f *testing.F) {
	f.Add(uint8(3), []byte{0, 7, 200}, "15000\ntrue\n1G")
	f.Add(uint8(2), []byte{40, 41, 42, 43}, "50\n2\n1d\n-1")
	f.Add(uint8(0), []byte{90, 91}, "lots\n4G")
	f.Fuzz(func(t *testing.T, version uint8, picks []byte, values string) {
		tables := params.Tables()
		tb := tables[int(version)%len(tables)]
		rows := tb.Params()
		b := newRowBuilder()
		texts := strings.Split(values, "\n")
		for i, pick := range picks {
			p := rows[(int(pick)*7+i*131)%len(rows)]
			if _, owned := ownedRows[p.Name()]; owned {
				continue
			}
			b.set(p, yamlValue(p, texts[i%len(texts)]))
		}
		c := b.cluster(tb)
		if errs, violations := Check(c); len(errs) == 0 && len(violations) == 0 {
			assertRenderStarts(t, c, c.RackPlan()[0], true, true)
		}
	})
}
