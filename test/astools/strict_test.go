package astools

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// logPrefix is log_line's "YYYY-MM-DD HH:MM:SS UTC [TAG] [thread] " (src/utils.c), the tag kept.
var logPrefix = regexp.MustCompile(`^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC \[(INF|ERR|VER)\] \[[ \d]{5}\] `)

// runTool runs a tool and returns its exit code and its stderr lines, log lines as "[TAG] message".
func runTool(t *testing.T, name string, args ...string) (int, []string) {
	t.Helper()
	var out, errs bytes.Buffer
	code := Main(context.Background(), name, args, noEnv, &out, &errs)
	if out.Len() > 0 {
		t.Errorf("%s wrote on stdout: %q (the tools log on stderr)", name, out.String())
	}
	var lines []string
	for _, l := range strings.Split(strings.TrimSuffix(errs.String(), "\n"), "\n") {
		if m := logPrefix.FindStringSubmatch(l); m != nil {
			l = "[" + m[1] + "] " + l[len(m[0]):]
		}
		lines = append(lines, l)
	}
	return code, lines
}

// The stand-in says and does what the real tools (aerospike-tools-backup 4.5.8, the asbackup and
// asrestore of aerospike-tools 11.2.2) say and do on the same input: their exit codes, their log lines
// (src/utils.c log_line), the closing lines a user or the operator reads. Each case names the source
// its expectation was read from.
func TestToolsAsTheRealOnes(t *testing.T) {
	s := newSim(t)
	host := cluster(t, s, "strict", "127.0.93.1")
	time.Sleep(100 * time.Millisecond)
	fill(t, "127.0.93.1")
	root := t.TempDir()
	dir := func(name string, files ...string) string {
		d := filepath.Join(root, name)
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			content := "Version 3.1\n# namespace test\n"
			if strings.HasPrefix(f, "bad-") {
				content = strings.TrimPrefix(f, "bad-")
				f = "x.asb"
			}
			if err := os.WriteFile(filepath.Join(d, f), []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return d
	}
	backedUpNothing := "[INF] Backed up 0 record(s), 0 secondary index(es), 0 UDF file(s), 0 byte(s) in total (~0 B/rec)"
	restoredNothing := []string{"[INF] 0 UDF file(s), 0 secondary index(es), 0 record(s) (0 rec/s, 0 KiB/s, 0 B/rec, retries: 0)",
		"[INF] Expired 0 : skipped 0 : err_ignored 0 : inserted 0: failed 0 (existed 0 , fresher 0)"}
	missing := filepath.Join(root, "no", "such", "test")
	full := dir("full", "test_00000.asb")
	for _, tc := range []struct {
		name string
		tool string
		args []string
		code int
		// want are lines the tool says, in this order (others may come between); last its last line.
		want []string
		last string
	}{
		// src/file_proxy.c prepare_directory: one mkdir, not mkdir -p; src/backup.c start_backup still
		// closes with the "Backed up" line.
		{"asbackup: the parent of --directory is missing", "asbackup",
			[]string{"-h", host, "-n", "test", "-d", missing}, 1,
			[]string{"[INF] Directory " + missing + " does not exist, creating",
				"[ERR] Error while creating directory " + missing + " (error 2: No such file or directory)"}, backedUpNothing},
		// src/file_proxy.c scan_directory: an .asb file refused without -r.
		{"asbackup: the directory holds a backup", "asbackup",
			[]string{"-h", host, "-n", "test", "-d", full}, 1,
			[]string{"[INF] Directory " + full + " prepared for backup",
				"[ERR] Directory " + full + " seems to contain an existing backup; use -r to clear directory"}, backedUpNothing},
		// src/file_proxy.c scan_directory: only .asb files count.
		{"asbackup: the directory holds other files", "asbackup",
			[]string{"-h", host, "-n", "test", "-d", dir("other", "notes.txt"), "--parallel", "2"}, 0,
			nil, "[INF] Backed up 300 record(s), 0 secondary index(es), 0 UDF file(s), "},
		// src/backup_config.c: the options' bounds and backup_config_validate.
		{"asbackup: --parallel 0", "asbackup", []string{"-n", "test", "-d", root, "--parallel", "0"}, 1,
			nil, "[ERR] Invalid parallelism value 0"},
		{"asbackup: --parallel 101", "asbackup", []string{"-n", "test", "-d", root, "-w", "101"}, 1,
			nil, "[ERR] Invalid parallelism value 101"},
		{"asbackup: --records-per-second -1", "asbackup", []string{"-n", "test", "-d", root, "-L", "-1"}, 1,
			nil, "[ERR] Invalid records-per-second value -1"},
		{"asbackup: --port 0", "asbackup", []string{"-n", "test", "-d", root, "-p", "0"}, 1,
			nil, "[ERR] Invalid port value 0"},
		{"asbackup: no namespace", "asbackup", []string{"-d", root}, 1,
			nil, "[ERR] Please specify a namespace (-n option)"},
		{"asbackup: no directory", "asbackup", []string{"-n", "test"}, 1,
			nil, "[ERR] Please specify a directory (-d), an output file (-o), or make an estimate (-e)."},
		{"asbackup: directory and file", "asbackup", []string{"-n", "test", "-d", root, "-o", "x.asb"}, 1,
			nil, "[ERR] Invalid options: --directory, --output-file, and --estimate are mutually exclusive."},
		{"asbackup: unknown option", "asbackup", []string{"-n", "test", "--bogus"}, 1,
			[]string{"asbackup: unrecognized option '--bogus'"}, "Run with --help for usage information and flag options"},
		// src/io_proxy.c parse_compression_type, parse_encryption_type; src/backup_config.c
		// backup_config_validate; src/utils.c parse_encryption_key_env.
		{"asbackup: --compress gzip", "asbackup", []string{"-n", "test", "-d", root, "--compress", "gzip"}, 1,
			nil, `[ERR] Invalid compression type "gzip"`},
		{"asbackup: --encrypt aes192", "asbackup", []string{"-n", "test", "-d", root, "--encrypt", "aes192"}, 1,
			nil, `[ERR] Invalid encryption type "aes192"`},
		{"asbackup: --encrypt without a key", "asbackup", []string{"-n", "test", "-d", root, "--encrypt", "aes128"}, 1,
			nil, "[ERR] Must specify both encryption mode and a private key file/environment variable"},
		{"asbackup: a key variable that is not set", "asbackup",
			[]string{"-n", "test", "-d", root, "--encrypt", "aes128", "--encryption-key-env", "NO_SUCH_KEY"}, 1,
			[]string{`[ERR] No environment variable "NO_SUCH_KEY" found`}, ""},
		// src/utils.c parse_date_time (told apart by length, read with sscanf), src/backup_config.c
		// backup_config_init's "Invalid date and time string" after it.
		{"asbackup: --modified-after of another length", "asbackup",
			[]string{"-n", "test", "-d", root, "--modified-after", "yesterday"}, 1,
			nil, "[ERR] Invalid date and time string yesterday"},
		{"asbackup: --modified-after, a date that does not scan", "asbackup",
			[]string{"-n", "test", "-d", root, "-a", "2026/12/03"}, 1,
			[]string{"[ERR] Date format error in 2026/12/03"}, "[ERR] Invalid date and time string 2026/12/03"},
		{"asbackup: --modified-after, a time that does not scan", "asbackup",
			[]string{"-n", "test", "-d", root, "-a", "12-00-00"}, 1,
			[]string{"[ERR] Time format error in 12-00-00"}, "[ERR] Invalid date and time string 12-00-00"},
		{"asbackup: --modified-after before 1900", "asbackup",
			[]string{"-n", "test", "-d", root, "--modified-after", "1899-12-31_23:59:59"}, 1,
			[]string{"[ERR] Date/time format error in 1899-12-31_23:59:59"},
			"[ERR] Invalid date and time string 1899-12-31_23:59:59"},
		// src/restore_config.c: its messages of these options end with a line feed of their own.
		{"asrestore: --compress gzip", "asrestore", []string{"-d", root, "--compress", "gzip"}, 1,
			[]string{`[ERR] Invalid compression type "gzip"`}, ""},
		{"asbackup: trailing argument", "asbackup", []string{"-n", "test", "-d", root, "extra"}, 1,
			nil, "[ERR] Unexpected trailing argument extra"},
		// src/file_proxy.c file_proxy_delete_directory: a directory that cannot be opened fails.
		{"asbackup --remove-artifacts: no directory", "asbackup", []string{"--remove-artifacts", "-d", missing}, 1,
			[]string{"[INF] Deleting backup directory " + missing},
			"[ERR] Error while opening local directory " + missing + " for deleting (error 2: No such file or directory)"},
		// src/file_proxy.c get_backup_files, src/restore.c start_restore and counter_thread_func.
		{"asrestore: no directory", "asrestore", []string{"-h", host, "-d", missing}, 1,
			[]string{"[ERR] Error while opening directory " + missing + " (error 2: No such file or directory)",
				"[ERR] Error while getting backup files from directory", restoredNothing[0]}, restoredNothing[1]},
		{"asrestore: no backup files", "asrestore", []string{"-h", host, "-d", dir("empty", "notes.txt")}, 1,
			[]string{"[ERR] No backup files found", restoredNothing[0]}, restoredNothing[1]},
		// src/restore.c open_file: the version line and the namespace meta data line.
		{"asrestore: not a backup file", "asrestore", []string{"-h", host, "-d", dir("bad", "bad-hello\n")}, 1,
			[]string{"[ERR] Invalid version line in backup file " + filepath.Join(root, "bad", "x.asb")}, restoredNothing[1]},
		{"asrestore: another version", "asrestore", []string{"-h", host, "-d", dir("v4", "bad-Version 4.0\n")}, 1,
			[]string{"[ERR] Invalid backup file version 4.0 in backup file " + filepath.Join(root, "v4", "x.asb")}, restoredNothing[1]},
		{"asrestore: another namespace", "asrestore", []string{"-h", host, "-d", full, "-n", "other,test"}, 1,
			[]string{"[ERR] Invalid namespace test in backup file " + filepath.Join(full, "test_00000.asb") + " (expected: other)"},
			restoredNothing[1]},
		// src/restore_config.c: the options' bounds and restore_config_validate.
		{"asrestore: --parallel 0", "asrestore", []string{"-d", root, "--parallel", "0"}, 1,
			nil, "[ERR] Invalid threads value 0"},
		{"asrestore: --unique --replace", "asrestore", []string{"-d", root, "--unique", "--replace"}, 1,
			nil, "[ERR] Invalid options: --unique is mutually exclusive with --replace and --no-generation."},
		{"asrestore: no directory nor file", "asrestore", nil, 1,
			nil, "[ERR] Invalid options: please specify a directory (-d option), directory list (--directory-list option), or an input file (-i option)."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, lines := runTool(t, tc.tool, tc.args...)
			if code != tc.code {
				t.Errorf("exit %d, want %d", code, tc.code)
			}
			at := 0
			for _, w := range tc.want {
				for at < len(lines) && lines[at] != w {
					at++
				}
				if at == len(lines) {
					t.Errorf("missing (in this order) %q", w)
				}
			}
			if last := lines[len(lines)-1]; !strings.HasPrefix(last, tc.last) {
				t.Errorf("last line %q, want %q", last, tc.last)
			}
			if t.Failed() {
				t.Logf("said:\n%s", strings.Join(lines, "\n"))
			}
		})
	}
}
