package params

import (
	"crypto/sha256"
	"encoding/hex"
	"io/fs"
	"os"
	"regexp"
	"strings"
	"testing"
)

// The embedded tables are byte for byte the ones whose sha256 tables/README.md records.
func TestTablesMatchTheirProvenance(t *testing.T) {
	readme, err := os.ReadFile("tables/README.md")
	if err != nil {
		t.Fatal(err)
	}
	rows := regexp.MustCompile(`\| (server-[0-9.]+\.tsv) \| ([0-9a-f]{64}) \|`).FindAllStringSubmatch(string(readme), -1)
	files, _ := fs.Glob(tableFS, "tables/*.tsv")
	if len(rows) != len(files) || len(rows) == 0 {
		t.Fatalf("README lists %d tables, %d are embedded", len(rows), len(files))
	}
	for _, r := range rows {
		data, err := fs.ReadFile(tableFS, "tables/"+r[1])
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(data)
		if got := hex.EncodeToString(sum[:]); got != r[2] {
			t.Errorf("%s: sha256 %s, README says %s", r[1], got, r[2])
		}
	}
}

func TestTablesLoad(t *testing.T) {
	got := Tables()
	var versions []string
	for _, tb := range got {
		versions = append(versions, tb.Version.String())
	}
	if strings.Join(versions, " ") != "8.0.0 8.1.0 8.1.1 8.1.2" {
		t.Fatalf("versions %v", versions)
	}
	p, ok := Newest().Lookup("service.proto-fd-max")
	if !ok || p.Type != Integer || *p.Min != 1024 || *p.Max != 2147483647 || !p.Dynamic || p.EnterpriseOnly ||
		p.Default != float64(15000) {
		t.Fatalf("8.1.2 service.proto-fd-max = %+v", p)
	}
	old, _ := Tables()[2].Lookup("service.proto-fd-max")
	if *old.Min != 0 {
		t.Errorf("8.1.1 proto-fd-max minimum %d, want 0", *old.Min)
	}
	rack, _ := Newest().Lookup("namespaces.[].rack-id")
	if !rack.EnterpriseOnly {
		t.Error("rack-id must be Enterprise-only")
	}
	dup, _ := Newest().Lookup("network.service.tls-authenticate-client")
	if !dup.EnterpriseOnly || dup.Type != String {
		t.Errorf("a parameter listed twice keeps its first row and is Enterprise-only if any row says so: %+v", dup)
	}
	if _, ok := Tables()[0].Lookup("network.admin.port"); ok {
		t.Error("8.0.0 has no admin stanza")
	}
}

func TestContexts(t *testing.T) {
	tb := Newest()
	for _, ctx := range []string{"service", "network", "network.heartbeat", "namespaces", "namespaces.[]",
		"namespaces.[].storage-engine(type=memory)", "namespaces.[].sets", "namespaces.[].sets.[]", "logging.[]"} {
		if !tb.IsContext(ctx) {
			t.Errorf("%s is a context", ctx)
		}
	}
	for _, notCtx := range []string{"service.proto-fd-max", "nope", "namespaces.[].storage-engine"} {
		if tb.IsContext(notCtx) {
			t.Errorf("%s is not a context", notCtx)
		}
	}
	if c := tb.Children("network"); strings.Join(c, ",") != "admin,fabric,heartbeat,service,tls" {
		t.Errorf("network children %v", c)
	}
}

func TestSuggest(t *testing.T) {
	tb := Newest()
	tests := []struct{ ctx, name, want string }{
		{"service", "proto-fd-mx", "proto-fd-max"},
		{"service", "protofdmax", "proto-fd-max"},
		{"namespaces.[]", "replication-factr", "replication-factor"},
		{"namespaces.[]", "storage-engin", "storage-engine"},
		{"service", "no-such-param", ""},
		{"service", "bogus", ""},
	}
	for _, tt := range tests {
		if got := tb.Suggest(tt.ctx, tt.name); got != tt.want {
			t.Errorf("Suggest(%s, %s) = %q, want %q", tt.ctx, tt.name, got, tt.want)
		}
	}
}

func TestSelect(t *testing.T) {
	tests := []struct {
		version, table string
		newer          bool
		err            string
	}{
		{"8.1.1.1", "8.1.1", false, ""},
		{"8.1.2.0", "8.1.2", false, ""},
		{"8.1.0", "8.1.0", false, ""},
		{"8.0.3.2", "8.0.0", false, ""},
		{"8.1.3.0", "8.1.2", true, ""},
		{"9.0.0", "8.1.2", true, ""},
		{"7.2.0.4", "", false, "server version 7.2.0.4 is not supported: ACKO supports server versions " +
			"8.0.0, 8.1.0, 8.1.1 and 8.1.2 (and newer, checked against 8.1.2)"},
	}
	for _, tt := range tests {
		v, err := ParseVersion(tt.version)
		if err != nil {
			t.Fatal(err)
		}
		tb, newer, err := Select(v)
		if tt.err != "" {
			if err == nil || err.Error() != tt.err {
				t.Errorf("Select(%s) error %v, want %q", tt.version, err, tt.err)
			}
			continue
		}
		if err != nil || tb.Version.String() != tt.table || newer != tt.newer {
			t.Errorf("Select(%s) = %v %v %v, want %s %v", tt.version, tb.Version, newer, err, tt.table, tt.newer)
		}
	}
}

func TestImageVersion(t *testing.T) {
	tests := []struct {
		image, want string
	}{
		{"aerospike:ce-8.1.1.1", "8.1.1.1"},
		{"aerospike/aerospike-server:8.1.2.0", "8.1.2"},
		{"registry.local:5000/aerospike:ce-8.0.0.9", "8.0.0.9"},
		{"aerospike:latest", ""},
		{"aerospike", ""},
		{"registry.local:5000/aerospike", ""},
		{"aerospike:ce-8.1.1.1@sha256:0123", ""},
		{"aerospike:ce-8.1.1.1-custom", ""},
		{"aerospike:ee-8.1.1.1", ""},
	}
	for _, tt := range tests {
		v, ok := ImageVersion(tt.image)
		got := ""
		if ok {
			got = v.String()
		}
		if got != tt.want {
			t.Errorf("ImageVersion(%q) = %q, want %q", tt.image, got, tt.want)
		}
	}
}

// A context is enterprise-only when it holds parameters and every one of them, at any depth, is.
func TestEnterpriseOnlyContext(t *testing.T) {
	for _, tb := range Tables() {
		eeOnly := 0
		for ctx := range tb.children {
			found, all := false, true
			for _, p := range tb.Params() {
				if strings.HasPrefix(p.Path, ctx+".") {
					found, all = true, all && p.EnterpriseOnly
				}
			}
			if got := tb.EnterpriseOnlyContext(ctx); got != (found && all) {
				t.Errorf("%s %s: enterprise-only %t, its parameters say %t", tb.Version, ctx, got, found && all)
			}
			if found && all {
				eeOnly++
			}
		}
		if eeOnly == 0 || tb.EnterpriseOnlyContext("service") || !tb.EnterpriseOnlyContext("xdr") {
			t.Errorf("%s: %d enterprise-only contexts; service %t, xdr %t", tb.Version, eeOnly,
				tb.EnterpriseOnlyContext("service"), tb.EnterpriseOnlyContext("xdr"))
		}
	}
}
