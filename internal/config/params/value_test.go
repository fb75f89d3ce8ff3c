package params

import (
	"errors"
	"testing"
)

func lookup(t *testing.T, tb *Table, path string) *Param {
	t.Helper()
	p, ok := tb.Lookup(path)
	if !ok {
		t.Fatalf("no %s in %s", path, tb.Version)
	}
	return p
}

// Values as asd's config parser reads them, in the server's units.
func TestServerValue(t *testing.T) {
	tb := Newest()
	for _, tc := range []struct{ path, text, want string }{
		{"service.proto-fd-max", "15000", "15000"},
		{"service.proto-fd-max", "15k", "15360"},
		{"namespaces.[].storage-engine(type=memory).data-size", "1G", "1073741824"},
		{"namespaces.[].storage-engine(type=memory).data-size", "1t", "1099511627776"},
		{"namespaces.[].storage-engine(type=device).filesize", "2199023255552", "2199023255552"},
		{"namespaces.[].default-ttl", "1d", "86400"},
		{"namespaces.[].default-ttl", "90M", "5400"},
		{"namespaces.[].default-ttl", "30s", "30"},
		{"namespaces.[].sets.[].default-read-touch-ttl-pct", "-1", "-1"},
		{"namespaces.[].index-stage-size", "256M", "268435456"},
		{"service.disable-udf-execution", "TRUE", "true"},
		{"service.auto-pin", "numa", "numa"},
		{"service.work-directory", "/opt/aerospike", "/opt/aerospike"},
		{"logging.[].any", "info", "info"},
		{"service.node-id", "A1", "A1"},
	} {
		got, err := lookup(t, tb, tc.path).ServerValue(tc.text)
		if err != nil || got != tc.want {
			t.Errorf("%s %q = %q, %v; want %q", tc.path, tc.text, got, err, tc.want)
		}
	}
}

func TestCheckTextRefuses(t *testing.T) {
	tb := Newest()
	for _, tc := range []struct {
		path, text     string
		kind           ValueErrorKind
		reason, server string
	}{
		{"service.proto-fd-max", "lots", NotAnInteger, "must be an integer from 1024 to 2147483647",
			"proto-fd-max must be an unsigned number, not lots"},
		{"service.proto-fd-max", "100", OutOfRange, "must be an integer from 1024 to 2147483647",
			"proto-fd-max must be >= 1024 and <= 2147483647, not 100"},
		{"service.proto-fd-max", "-5", NotAnInteger, "must be an integer from 1024 to 2147483647",
			"proto-fd-max must be an unsigned number, not -5"},
		{"service.proto-fd-max", "1.5", NotAnInteger, "must be an integer from 1024 to 2147483647",
			"proto-fd-max must be an unsigned number, not 1.5"},
		{"service.proto-fd-max", "K", NotAnInteger, "must be an integer from 1024 to 2147483647",
			"proto-fd-max must be an unsigned number, not K"},
		{"service.proto-fd-max", "99999999999999999999", NotAnInteger, "must be an integer from 1024 to 2147483647",
			"proto-fd-max must be an unsigned number, not 99999999999999999999"},
		{"service.migrate-threads", "101", OutOfRange, "must be an integer from 0 to 100",
			"migrate-threads must be <= 100, not 101"},
		{"namespaces.[].storage-engine(type=memory).data-size", "256M", OutOfRange,
			"must be an integer from 536870912 (512M) to 281474976710656 (256T)",
			"data-size must be >= 536870912 and <= 281474976710656, not 268435456"},
		{"namespaces.[].storage-engine(type=memory).max-write-cache", "1M", OutOfRange,
			"must be an integer of at least 67108864 (64M)", "max-write-cache must be >= 67108864 and <= 18446744073709551615, not 1048576"},
		{"namespaces.[].default-ttl", "1G", NotAnInteger,
			"must be a number of seconds from 0 to 315360000 (a unit s, m, h or d may follow)",
			"default-ttl must be a small enough unsigned number with time unit (s, m, h, or d), not 1G"},
		{"namespaces.[].default-ttl", "3651d", OutOfRange,
			"must be a number of seconds from 0 to 315360000 (a unit s, m, h or d may follow)",
			"default-ttl must be <= 315360000 seconds, not 315446400 seconds"},
		{"namespaces.[].sets.[].default-read-touch-ttl-pct", "-2", OutOfRange, "must be an integer from -1 to 100",
			"default-read-touch-ttl-pct must be >= -1 and <= 100, not -2"},
		{"namespaces.[].sets.[].default-read-touch-ttl-pct", "1K", NotAnInteger, "must be an integer from -1 to 100",
			"default-read-touch-ttl-pct must be a number, not 1K"},
		{"namespaces.[].partition-tree-sprigs", "300", OutOfRange, "must be a power of 2 from 256 to 268435456 (256M)",
			"partition-tree-sprigs must be an exact power of 2, not 300"},
		{"namespaces.[].replication-factor", "9", OutOfRange, "must be an integer from 1 to 8",
			"replication-factor must be >= 1 and <= 8, not 9"},
		{"namespaces.[].index-stage-size", "2G", OutOfRange, "must be a power of 2 from 134217728 (128M) to 1073741824 (1G)",
			"index-stage-size must be >= 134217728 and <= 1073741824, not 2147483648"},
		{"service.disable-udf-execution", "yes", NotABoolean, "must be true or false",
			"disable-udf-execution must be true or false or yes or no, not yes"},
		{"service.auto-pin", "NUMA", NotAllowed, "must be one of none, cpu, numa, adq", "auto-pin has unknown value 'NUMA'"},
		{"service.cluster-name", "", NoValue, "must have a value", "cluster-name must have a value specified"},
		{"service.node-id", "a1g", NotAnInteger, "must be a hexadecimal number from 1 to ffffffffffffffff",
			"node-id must be a 64-bit hex number, not a1g"},
		{"service.node-id", "0", OutOfRange, "must be a hexadecimal number from 1 to ffffffffffffffff",
			"node-id must be >= 1 and <= ffffffffffffffff, not 0"},
	} {
		p := lookup(t, tb, tc.path)
		err := p.CheckText(tc.text)
		var ve *ValueError
		if !errors.As(err, &ve) {
			t.Errorf("%s %q: %v, want a ValueError", tc.path, tc.text, err)
			continue
		}
		if ve.Kind != tc.kind || ve.Error() != tc.reason || ve.ServerMessage() != tc.server {
			t.Errorf("%s %q:\n got  %d %q %q\n want %d %q %q", tc.path, tc.text, ve.Kind, ve.Error(), ve.ServerMessage(),
				tc.kind, tc.reason, tc.server)
		}
	}
}

// 8.1.1 took proto-fd-max 0 and up; 8.1.2 raised the minimum to 1024.
func TestBoundsFollowTheVersion(t *testing.T) {
	old := lookup(t, Tables()[2], "service.proto-fd-max")
	if err := old.CheckText("100"); err != nil {
		t.Errorf("8.1.1 refuses proto-fd-max 100: %v", err)
	}
	if err := lookup(t, Newest(), "service.proto-fd-max").CheckText("100"); err == nil {
		t.Error("8.1.2 takes proto-fd-max 100")
	}
}
