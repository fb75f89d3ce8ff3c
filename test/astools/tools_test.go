package astools

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	as "github.com/aerospike/aerospike-client-go/v7"
	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"

	clocktesting "k8s.io/utils/clock/testing"

	"github.com/acko-io/acko/test/aerosim"
)

// cluster starts simulated nodes of one cluster (namespace test) and returns their seed list.
func cluster(t *testing.T, s *aerosim.Sim, name string, ips ...string) string {
	t.Helper()
	for i, ip := range ips {
		if _, err := s.AddNode(aerosim.NodeSpec{Name: fmt.Sprintf("%s-%d", name, i), Cluster: name, IP: ip}); err != nil {
			t.Fatal(err)
		}
	}
	return strings.Join(ips, ",")
}

// newSim is a simulator of Aerospike nodes, closed at the test's end.
func newSim(t *testing.T) *aerosim.Sim {
	t.Helper()
	s, err := aerosim.New(aerosim.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// noEnv is an environment without a variable.
func noEnv(string) string { return "" }

func run(t *testing.T, name string, args ...string) string {
	t.Helper()
	return runWith(t, noEnv, name, args...)
}

func runWith(t *testing.T, env func(string) string, name string, args ...string) string {
	t.Helper()
	var errs bytes.Buffer
	if code := Main(context.Background(), name, args, env, io.Discard, &errs); code != 0 {
		t.Fatalf("%s %v: exit %d: %s", name, args, code, errs.String())
	}
	return errs.String()
}

// A cluster's records backed up with asbackup's flags and restored with asrestore's into another
// cluster read back equal; a second restore writes nothing by default (the generations are not
// higher), nothing with --unique (they exist), and everything with --no-generation.
func TestBackupAndRestoreAnotherCluster(t *testing.T) {
	s := newSim(t)
	source := cluster(t, s, "src", "127.0.91.1", "127.0.91.2")
	target := cluster(t, s, "dst", "127.0.91.3")
	time.Sleep(100 * time.Millisecond)

	want := fill(t, "127.0.91.1")

	dir := t.TempDir()
	if out := run(t, "asbackup", "-h", source, "-n", "test", "-d", dir, "--parallel", "4"); !strings.Contains(out,
		"Backed up 300 record(s), 0 secondary index(es), 0 UDF file(s), ") {
		t.Fatalf("asbackup said %q", out)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*.asb"))
	if len(files) != 4 {
		t.Fatalf("files %v, want one per worker", files)
	}
	if out := run(t, "asrestore", "-h", target, "-d", dir); !strings.Contains(out, " 300 record(s) (") ||
		!strings.Contains(out, "Expired 0 : skipped 0 : err_ignored 0 : inserted 300: failed 0 (existed 0 , fresher 0)\n") {
		t.Fatalf("asrestore said %q", out)
	}
	expectRecords(t, "127.0.91.3", want)

	for flags, summary := range map[string]string{
		"":                "inserted 0: failed 300 (existed 0 , fresher 300)",
		"--unique":        "inserted 0: failed 300 (existed 300 , fresher 0)",
		"--no-generation": "inserted 300: failed 0 (existed 0 , fresher 0)",
	} {
		args := []string{"-h", target, "-d", dir}
		if flags != "" {
			args = append(args, flags)
		}
		if out := run(t, "asrestore", args...); !strings.Contains(out, summary) {
			t.Errorf("asrestore %s said %q, want %q", flags, out, summary)
		}
	}

	if code := Main(context.Background(), "asbackup", []string{"-h", source, "-n", "test", "-d", dir}, noEnv, os.Stdout, os.Stderr); code != 1 {
		t.Fatalf("a directory that holds backup files: exit %d, want 1", code)
	}
}

// fill writes 300 records of every type the stand-in backs up, in two sets, and returns them by key.
func fill(t *testing.T, seed string) map[*as.Key]as.BinMap {
	t.Helper()
	c, err := as.NewClient(seed, 3000)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	want := map[*as.Key]as.BinMap{}
	for i := range 300 {
		bins := as.BinMap{"i": int64(i), "s": fmt.Sprintf("value %d\nwith a line feed", i), "f": float64(i) / 4,
			"b": []byte{byte(i), 0, '\n'}}
		k, _ := as.NewKey("test", []string{"users", "orders"}[i%2], i)
		if err := c.Put(nil, k, bins); err != nil {
			t.Fatal(err)
		}
		want[k] = bins
	}
	return want
}

// expectRecords reads every record back through another client and compares it.
func expectRecords(t *testing.T, seed string, want map[*as.Key]as.BinMap) {
	t.Helper()
	c, err := as.NewClient(seed, 3000)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for k, bins := range want {
		rec, err := c.Get(nil, k)
		if err != nil || !reflect.DeepEqual(normalize(rec.Bins), normalize(bins)) {
			t.Fatalf("key %v restored as %v (%v), want %v", k, rec, err, bins)
		}
	}
}

// normalize compares bins as the client returns them (integers as int, whatever they were written as).
func normalize(bins as.BinMap) as.BinMap {
	out := as.BinMap{}
	for k, v := range bins {
		if i, ok := v.(int64); ok {
			v = int(i)
		}
		out[k] = v
	}
	return out
}

// asbackup --remove-artifacts removes a backup's files and its directory, connects to nothing, and
// leaves a directory that holds other files.
func TestRemoveArtifacts(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run", "test")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"test_00000.asb", "test_00001.asb"} {
		if err := os.WriteFile(filepath.Join(dir, f), []byte("Version 3.1\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	run(t, "asbackup", "--remove-artifacts", "--namespace", "test", "--directory", dir)
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("%s still there after --remove-artifacts: %v", dir, err)
	}
	keep := t.TempDir()
	for _, f := range []string{"test_00000.asb", "notes.txt"} {
		if err := os.WriteFile(filepath.Join(keep, f), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	run(t, "asbackup", "--remove-artifacts", "-n", "test", "-d", keep)
	left, err := os.ReadDir(keep)
	if err != nil || len(left) != 1 || left[0].Name() != "notes.txt" {
		t.Fatalf("left in %s: %v %v, want notes.txt alone", keep, left, err)
	}
}

// An s3:// directory, as the tools' own S3 support takes it: the files are objects under the prefix of
// an S3-compatible store (here gofakes3), with the credentials of the environment; a restore reads them
// back, --remove-artifacts removes them, and without credentials nothing runs.
func TestBackupToS3(t *testing.T) {
	s := newSim(t)
	source := cluster(t, s, "src", "127.0.92.1")
	target := cluster(t, s, "dst", "127.0.92.2")
	time.Sleep(100 * time.Millisecond)
	want := fill(t, "127.0.92.1")
	store := httptest.NewServer(gofakes3.New(s3mem.New(), gofakes3.WithAutoBucket(true)).Server())
	t.Cleanup(store.Close)
	env := func(k string) string {
		return map[string]string{"AWS_ACCESS_KEY_ID": "id", "AWS_SECRET_ACCESS_KEY": "secret"}[k]
	}
	s3Args := []string{"-d", "s3://backups/nightly/one/test", "--s3-endpoint-override", store.URL, "--s3-region", "eu-west-1"}
	if out := runWith(t, env, "asbackup", append([]string{"-h", source, "-n", "test", "--parallel", "2"}, s3Args...)...); !strings.Contains(out, "Backed up 300 record(s)") {
		t.Fatalf("asbackup said %q", out)
	}
	var errs bytes.Buffer
	if code := Main(context.Background(), "asbackup", append([]string{"-h", source, "-n", "test"}, s3Args...), env, io.Discard, &errs); code != 1 ||
		!strings.Contains(errs.String(), "S3 directory nightly/one/test in bucket backups seems to contain an existing backup; use -r to clear the directory") {
		t.Fatalf("a second backup without --remove-files: exit %d, %s", code, errs.String())
	}
	if out := runWith(t, env, "asrestore", append([]string{"-h", target}, s3Args...)...); !strings.Contains(out, ": inserted 300: failed 0") {
		t.Fatalf("asrestore said %q", out)
	}
	expectRecords(t, "127.0.92.2", want)
	errs.Reset()
	if code := Main(context.Background(), "asrestore", append([]string{"-h", target}, s3Args...), noEnv, io.Discard, &errs); code != 1 ||
		!strings.Contains(errs.String(), "no S3 credentials") {
		t.Fatalf("without credentials: exit %d, %s", code, errs.String())
	}
	runWith(t, env, "asbackup", append([]string{"--remove-artifacts", "-n", "test"}, s3Args...)...)
	errs.Reset()
	if code := Main(context.Background(), "asrestore", append([]string{"-h", target}, s3Args...), env, io.Discard, &errs); code != 1 ||
		!strings.Contains(errs.String(), "No backup files found") {
		t.Fatalf("after --remove-artifacts: exit %d, %s", code, errs.String())
	}
}

// --compress zstd and --encrypt aes256 with a key in the environment (base64, --encryption-key-env):
// the files are neither text nor readable without the same options and key; with them, every record
// comes back.
func TestCompressedAndEncrypted(t *testing.T) {
	s := newSim(t)
	source := cluster(t, s, "src", "127.0.94.1")
	target := cluster(t, s, "dst", "127.0.94.2")
	time.Sleep(100 * time.Millisecond)
	want := fill(t, "127.0.94.1")
	keys := map[string]string{"KEY": "c2VjcmV0IGtleSBieXRlcw==", "OTHER": "b3RoZXIga2V5"}
	env := func(k string) string { return keys[k] }
	dir := filepath.Join(t.TempDir(), "test")
	sealed := []string{"--compress", "zstd", "--encrypt", "aes256", "--encryption-key-env", "KEY"}
	runWith(t, env, "asbackup", append([]string{"-h", source, "-n", "test", "-d", dir}, sealed...)...)
	content, err := os.ReadFile(filepath.Join(dir, "test_00000.asb"))
	if err != nil || bytes.Contains(content, []byte("Version 3.1")) || bytes.Contains(content, []byte("value 1")) {
		t.Fatalf("the file is readable as text (%v)", err)
	}
	for name, args := range map[string][]string{
		"without the options": {},
		"with another key":    {"--compress", "zstd", "--encrypt", "aes256", "--encryption-key-env", "OTHER"},
	} {
		var errs bytes.Buffer
		if code := Main(context.Background(), "asrestore", append([]string{"-h", target, "-d", dir}, args...), env,
			io.Discard, &errs); code != 1 || !strings.Contains(errs.String(), "Invalid version line in backup file") {
			t.Errorf("%s: exit %d, %s", name, code, errs.String())
		}
	}
	if out := runWith(t, env, "asrestore", append([]string{"-h", target, "-d", dir}, sealed...)...); !strings.Contains(out, ": inserted 300: failed 0") {
		t.Fatalf("asrestore said %q", out)
	}
	expectRecords(t, "127.0.94.2", want)
}

// --modified-after keeps the records last updated at or after the given second of the tool's local
// time (TZ), by the server-side filter asbackup sends: an incremental backup.
func TestModifiedAfter(t *testing.T) {
	start := time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC)
	clk := clocktesting.NewFakeClock(start)
	s, err := aerosim.New(aerosim.Options{Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	source := cluster(t, s, "inc", "127.0.94.1")
	time.Sleep(100 * time.Millisecond)
	fill(t, "127.0.94.1") // 300 records at 10:00:00
	clk.Step(90 * time.Second)
	c, err := as.NewClient("127.0.94.1", 3000)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for i := range 7 { // 7 of them changed at 10:01:30
		k, _ := as.NewKey("test", []string{"users", "orders"}[i%2], i)
		if err := c.Put(nil, k, as.BinMap{"i": int64(-i)}); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		after, tz string
		records   int
	}{
		{"2026-12-03_10:01:30", "", 7},      // at the second of the change: kept (>=)
		{"2026-12-03_10:01:31", "", 0},      // after it
		{"2026-12-03_10:00:00", "UTC", 300}, // every record
		{"2026-12-03", "", 300},             // midnight
		{"2026-12-03_11:01:30", "Europe/Paris", 7},
		{"2026-12-03_11:01:31", "Europe/Paris", 0},
	} {
		dir := t.TempDir()
		env := func(k string) string {
			if k == "TZ" {
				return tc.tz
			}
			return ""
		}
		out := runWith(t, env, "asbackup", "-h", source, "-n", "test", "-d", dir, "--modified-after", tc.after)
		if want := fmt.Sprintf("Backed up %d record(s), ", tc.records); !strings.Contains(out, want) {
			t.Errorf("--modified-after %s (TZ %q): %q, want %q", tc.after, tc.tz, out, want)
		}
	}
}
