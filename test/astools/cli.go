package astools

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"math"
	"net"
	"os"
	"strconv"
	"strings"

	as "github.com/aerospike/aerospike-client-go/v7"
)

// Main runs asbackup or asrestore (by name) with the real tools' options that this stand-in knows,
// and says what it did as they do: log lines on stderr (toolLog), exit 0 or 1 (EXIT_SUCCESS,
// EXIT_FAILURE: src/backup.c backup_main, src/restore.c restore_main). env is the tool's environment
// (S3 credentials).
func Main(ctx context.Context, name string, args []string, env func(string) string, stdout, stderr io.Writer) int {
	log := newToolLog(stderr)
	p := newParser(name)
	var common commonFlags
	common.register(p)
	var t interface {
		validate(*commonFlags, func(string) string) string
		run(context.Context, *commonFlags, func(string) string, *toolLog) bool
	}
	switch name {
	case "asbackup":
		t = newBackupFlags(p, &common, env)
	case "asrestore":
		t = newRestoreFlags(p, &common)
	default:
		_, _ = fmt.Fprintf(stderr, "%s: run as asbackup or asrestore\n", name)
		return 1
	}
	_ = stdout // the tools write their log on stderr only
	if !p.parse(args, log, stderr) {
		return 1
	}
	if msg := t.validate(&common, env); msg != "" {
		log.err("%s", msg)
		return 1
	}
	if !t.run(ctx, &common, env, log) {
		return 1
	}
	return 0
}

// commonFlags are the options both tools take.
type commonFlags struct {
	host, namespace, directory string
	port, parallel             int64
	// machine is --machine: a file the closing SUMMARY line is appended to.
	machine string
	// s3Endpoint and s3Region are where an s3:// directory is (--s3-endpoint-override, --s3-region).
	s3Endpoint, s3Region string
	// compress (--compress zstd), encrypt (--encrypt aes128|aes256) and the variable of its key
	// (--encryption-key-env): how the files are written and read (fileCodec).
	compress, encrypt, keyEnv string
	codec                     fileCodec
	// eol ends asrestore's messages of these options: its err() calls end with "\n" (src/restore_config.c).
	eol string
}

func (f *commonFlags) register(p *parser) {
	p.str(&f.host, "h", "host")
	p.number(&f.port, 3000, 1, 65535, "Invalid port value %s", "p", "port")
	p.str(&f.namespace, "n", "namespace")
	p.str(&f.directory, "d", "directory")
	p.str(&f.machine, "m", "machine")
	p.str(&f.s3Endpoint, "s3-endpoint-override")
	p.str(&f.s3Region, "s3-region")
	p.check(func(v string) string {
		f.compress = v
		return invalidUnless(v == "zstd", "Invalid compression type \"%s\""+f.eol, v)
	}, "z", "compress")
	p.check(func(v string) string {
		f.encrypt = v
		return invalidUnless(v == "aes128" || v == "aes256", "Invalid encryption type \"%s\""+f.eol, v)
	}, "y", "encrypt")
	p.str(&f.keyEnv, "encryption-key-env")
}

func invalidUnless(ok bool, format string, v string) string {
	if ok {
		return ""
	}
	return fmt.Sprintf(format, v)
}

// codecOf reads the encryption key, and says why the tool stops if it cannot.
func (f *commonFlags) codecOf(env func(string) string) string {
	var key []byte
	if f.keyEnv != "" {
		var msg string
		if key, msg = keyFromEnv(env, f.keyEnv); msg != "" {
			return msg
		}
	}
	if (key != nil) != (f.encrypt != "") {
		return "Must specify both encryption mode and a private key file/environment variable" + f.eol
	}
	f.codec = newFileCodec(f.compress, f.encrypt, key)
	return ""
}

// connect is what restore_status_init and backup_status_init do first: a client of the seeds.
func (f *commonFlags) connect(log *toolLog) (*as.Client, bool) {
	hosts, err := seeds(cmp.Or(f.host, "127.0.0.1"), int(f.port))
	if err != nil {
		log.err("Invalid host(s) string %s", f.host)
		return nil, false
	}
	c, aerr := as.NewClientWithPolicyAndHost(as.NewClientPolicy(), hosts...)
	if aerr != nil {
		log.err("Error while connecting to %s:%d - code %d: %s", hosts[0].Name, hosts[0].Port, resultCode(aerr),
			aerr.Error())
		return nil, false
	}
	return c, true
}

// summary appends the --machine SUMMARY line, as both tools do at their end.
func (f *commonFlags) summary(log *toolLog, fields ...any) bool {
	if f.machine == "" {
		return true
	}
	m, err := os.OpenFile(f.machine, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err == nil {
		parts := make([]string, len(fields))
		for i, v := range fields {
			parts[i] = fmt.Sprint(v)
		}
		_, err = fmt.Fprintf(m, "SUMMARY:%s\n", strings.Join(parts, ":"))
		err = firstErr(err, m.Close())
	}
	if err != nil {
		log.errCode(err, "Error while writing machine-readable summary")
		return false
	}
	return true
}

func firstErr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

// backupFlags are asbackup's own options (src/backup_config.c).
type backupFlags struct {
	sets, outputFile             string
	recordsPerSecond             int64
	removeFiles, removeArtifacts bool
	// modifiedAfter is --modified-after, in nanoseconds since the epoch (0: not given).
	modifiedAfter int64
}

func newBackupFlags(p *parser, common *commonFlags, env func(string) string) *backupFlags {
	b := &backupFlags{}
	p.checkLines(func(v string) []string { return modifiedAfter(v, env, &b.modifiedAfter) }, "a", "modified-after")
	p.str(&b.sets, "s", "set")
	p.str(&b.outputFile, "o", "output-file")
	p.number(&b.recordsPerSecond, 0, 0, math.MaxUint32, "Invalid records-per-second value %s", "L", "records-per-second")
	p.number(&common.parallel, 0, 1, 100, "Invalid parallelism value %s", "w", "parallel")
	p.boolean(&b.removeFiles, "r", "remove-files")
	p.boolean(&b.removeArtifacts, "remove-artifacts")
	return b
}

// validate is backup_config_validate's checks of the options this stand-in takes, in its order.
func (b *backupFlags) validate(common *commonFlags, env func(string) string) string {
	if msg := common.codecOf(env); msg != "" {
		return msg
	}
	switch {
	case common.namespace == "" && !b.removeArtifacts:
		return "Please specify a namespace (-n option)"
	case common.directory != "" && b.outputFile != "":
		return "Invalid options: --directory, --output-file, and --estimate are mutually exclusive."
	case common.directory == "" && b.outputFile == "":
		return "Please specify a directory (-d), an output file (-o), or make an estimate (-e)."
	}
	return ""
}

// run is start_backup (src/backup.c): --remove-artifacts alone; else connect, prepare the directory or
// file, back up, and close with "Backed up ..." (also when the preparation failed).
func (b *backupFlags) run(ctx context.Context, common *commonFlags, env func(string) string, log *toolLog) bool {
	if b.removeArtifacts {
		if isS3(common.directory) {
			log.inf("Deleting backup directory %s", common.directory)
			remote, ok := openS3Logged(log, common, env)
			return ok && logErr(log, remote.removeAll(ctx))
		}
		return removeArtifacts(log, common.directory, b.outputFile)
	}
	c, ok := common.connect(log)
	if !ok {
		return false
	}
	defer c.Close()
	cfg := BackupConfig{Namespace: common.namespace, Directory: common.directory, OutputFile: b.outputFile,
		Parallel: int(max(common.parallel, 1)), RecordsPerSecond: int(b.recordsPerSecond), codec: common.codec,
		ModifiedAfter: b.modifiedAfter}
	if b.sets != "" {
		cfg.Sets = strings.Split(b.sets, ",")
	}
	var st Stats
	ok = b.backup(ctx, c, cfg, common, env, log, &st)
	perRecord := int64(0)
	if st.Records > 0 {
		perRecord = st.Bytes / st.Records
	}
	log.inf("Backed up %d record(s), 0 secondary index(es), 0 UDF file(s), %d byte(s) in total (~%d B/rec)",
		st.Records, st.Bytes, perRecord)
	return common.summary(log, st.Records, 0, 0, st.Bytes, perRecord) && ok
}

// backup prepares where the files go and writes them; an s3:// directory is written locally and
// uploaded (its old files removed with --remove-files first, as s3 _scan_objects does).
func (b *backupFlags) backup(ctx context.Context, c *as.Client, cfg BackupConfig, common *commonFlags,
	env func(string) string, log *toolLog, st *Stats) bool {
	var remote *s3Dir
	switch {
	case cfg.OutputFile != "":
		if !prepareOutputFile(log, cfg.OutputFile, b.removeFiles) {
			return false
		}
	case isS3(cfg.Directory):
		var ok bool
		if remote, ok = openS3Logged(log, common, env); !ok || !remote.scan(ctx, log, b.removeFiles) {
			return false
		}
		local, err := os.MkdirTemp("", "asbackup")
		if err != nil {
			return logErr(log, err)
		}
		defer func() { _ = os.RemoveAll(local) }()
		cfg.Directory = local
	default:
		if !prepareDirectory(log, cfg.Directory, b.removeFiles) {
			return false
		}
	}
	var err error
	*st, err = Backup(ctx, c, cfg)
	if err == nil && remote != nil {
		err = remote.upload(ctx, cfg.Directory)
	}
	return logErr(log, err)
}

// logErr logs a failure the stand-in has no exact words of the real tool for.
func logErr(log *toolLog, err error) bool {
	if err != nil {
		log.err("%v", err)
		return false
	}
	return true
}

// restoreFlags are asrestore's own options (src/restore_config.c).
type restoreFlags struct {
	inputFile                     string
	unique, replace, noGeneration bool
}

func newRestoreFlags(p *parser, common *commonFlags) *restoreFlags {
	r := &restoreFlags{}
	common.eol = "\n"
	p.str(&r.inputFile, "i", "input-file")
	p.number(&common.parallel, 20, 1, 4096, "Invalid threads value %s", "parallel")
	p.boolean(&r.unique, "u", "unique")
	p.boolean(&r.replace, "r", "replace")
	p.boolean(&r.noGeneration, "g", "no-generation")
	return r
}

// validate is restore_config_validate's checks of the options this stand-in takes, in its order.
func (r *restoreFlags) validate(common *commonFlags, env func(string) string) string {
	switch {
	case common.directory == "" && r.inputFile == "":
		return "Invalid options: please specify a directory (-d option), directory list (--directory-list option), " +
			"or an input file (-i option)."
	case common.directory != "" && r.inputFile != "":
		return "Invalid options: --directory and --input-file are mutually exclusive."
	case r.unique && (r.replace || r.noGeneration):
		return "Invalid options: --unique is mutually exclusive with --replace and --no-generation."
	}
	return common.codecOf(env)
}

// run is start_restore (src/restore.c): connect, find the files, restore them, and close with the
// counter thread's last two lines (also when it stopped on an error).
func (r *restoreFlags) run(ctx context.Context, common *commonFlags, env func(string) string, log *toolLog) bool {
	c, ok := common.connect(log)
	if !ok {
		log.err("Failed to initialize restore status")
		return false
	}
	defer c.Close()
	log.inf("Starting restore to %s (bins: [all], sets: [all]) from %s", common.host,
		cmp.Or(r.inputFile, common.directory))
	log.inf("Processing %d node(s)", len(c.GetNodes()))
	var st RestoreStats
	ok = r.restore(ctx, c, common, env, log, &st)
	log.inf("0 UDF file(s), 0 secondary index(es), %d record(s) (0 rec/s, 0 KiB/s, 0 B/rec, retries: 0)", st.Records)
	log.inf("Expired %d : skipped %d : err_ignored %d : inserted %d: failed %d (existed %d , fresher %d)",
		st.Expired, st.Skipped, st.ErrIgnored, st.Inserted, st.Existed+st.Fresher, st.Existed, st.Fresher)
	return common.summary(log, 0, 0, st.Records, st.Expired, st.Skipped, st.ErrIgnored, st.Inserted, st.Existed,
		st.Fresher) && ok
}

func (r *restoreFlags) restore(ctx context.Context, c *as.Client, common *commonFlags, env func(string) string,
	log *toolLog, st *RestoreStats) bool {
	dir := common.directory
	if isS3(dir) {
		remote, ok := openS3Logged(log, common, env)
		if !ok {
			return false
		}
		local, err := os.MkdirTemp("", "asrestore")
		if err != nil {
			return logErr(log, err)
		}
		defer func() { _ = os.RemoveAll(local) }()
		if !logErr(log, remote.download(ctx, local)) {
			return false
		}
		dir = local
	}
	cfg := RestoreConfig{Namespace: common.namespace, Unique: r.unique, Replace: r.replace, NoGeneration: r.noGeneration,
		codec: common.codec}
	if r.inputFile != "" {
		cfg.Files = []string{r.inputFile}
	} else {
		files, ok := restoreFiles(log, dir)
		if !ok {
			return false
		}
		cfg.Files = files
	}
	log.inf("Restoring records")
	return Restore(ctx, log, c, cfg, st)
}

// openS3Logged opens an s3:// directory, saying why it cannot.
func openS3Logged(log *toolLog, common *commonFlags, env func(string) string) (*s3Dir, bool) {
	remote, err := openS3(common.directory, common.s3Endpoint, common.s3Region, env)
	return remote, logErr(log, err)
}

// seeds parses --host: host[:port][,...], the port defaulting to --port.
func seeds(list string, port int) ([]*as.Host, error) {
	var out []*as.Host
	for _, h := range strings.Split(list, ",") {
		name, p := h, port
		if hn, ps, err := net.SplitHostPort(h); err == nil {
			n, err := strconv.Atoi(ps)
			if err != nil {
				return nil, fmt.Errorf("host %q: port %q", h, ps)
			}
			name, p = hn, n
		}
		out = append(out, as.NewHost(name, p))
	}
	return out, nil
}
