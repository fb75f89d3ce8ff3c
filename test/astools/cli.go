package astools

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"

	as "github.com/aerospike/aerospike-client-go/v7"
)

// Main runs asbackup or asrestore (by name) with the real tools' flags that this stand-in knows, and
// says what it did on stdout as they do; it returns the exit code. env is the tool's environment (S3
// credentials).
func Main(ctx context.Context, name string, args []string, env func(string) string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	var common commonFlags
	common.register(fs)
	var run func(c *as.Client) (string, error)
	switch name {
	case "asbackup":
		run = backupFlags(ctx, fs, &common)
	case "asrestore":
		run = restoreFlags(ctx, fs, &common)
	default:
		_, _ = fmt.Fprintf(stderr, "%s: run as asbackup or asrestore\n", name)
		return 2
	}
	if err := fs.Parse(args); err != nil {
		return 2
	}
	fail := func(code int, err error) int {
		_, _ = fmt.Fprintf(stderr, "%s: %v\n", name, err)
		return code
	}
	var remote *s3Dir
	if isS3(common.directory) {
		local, err := os.MkdirTemp("", name)
		if err != nil {
			return fail(1, err)
		}
		defer func() { _ = os.RemoveAll(local) }()
		if remote, err = common.stage(ctx, name, env, local); err != nil {
			return fail(1, err)
		}
	}
	if common.removeArtifacts {
		if remote != nil {
			return 0 // stage removed the objects
		}
		if err := RemoveArtifacts(common.directory, common.file); err != nil {
			return fail(1, err)
		}
		return 0
	}
	return common.run(ctx, name, remote, run, stdout, fail)
}

// run connects to the cluster and runs the tool; a backup to S3 is uploaded once written.
func (f *commonFlags) run(ctx context.Context, name string, remote *s3Dir, run func(c *as.Client) (string, error),
	stdout io.Writer, fail func(int, error) int) int {
	hosts, err := seeds(f.host, f.port)
	if err != nil {
		return fail(2, err)
	}
	c, aerr := as.NewClientWithPolicyAndHost(as.NewClientPolicy(), hosts...)
	if aerr != nil {
		return fail(1, fmt.Errorf("connect: %v", aerr))
	}
	defer c.Close()
	summary, err := run(c)
	if err == nil && remote != nil && name == "asbackup" {
		err = remote.upload(ctx, f.directory)
	}
	_, _ = io.WriteString(stdout, summary)
	if err != nil {
		return fail(1, err)
	}
	return 0
}

// stage puts an S3 directory's run on a local one, as the tools' S3 support streams it: a backup is
// written locally (after the bucket's old files are removed, with --remove-files) and uploaded after;
// a restore reads a local copy; --remove-artifacts removes the objects and stages nothing.
func (f *commonFlags) stage(ctx context.Context, name string, env func(string) string, local string) (*s3Dir, error) {
	remote, err := openS3(f.directory, f.s3Endpoint, f.s3Region, env)
	if err != nil {
		return nil, err
	}
	f.directory = filepath.Join(local, "files")
	switch {
	case f.removeArtifacts:
		return remote, remote.removeAll(ctx)
	case name == "asrestore":
		if err := os.Mkdir(f.directory, 0o755); err != nil {
			return nil, err
		}
		return remote, remote.download(ctx, f.directory)
	case f.removeFiles:
		return remote, remote.removeAll(ctx)
	}
	existing, err := remote.keys(ctx)
	if err == nil && len(existing) > 0 {
		err = fmt.Errorf("directory s3://%s/%s already holds backup files (%s); use --remove-files", remote.bucket,
			remote.prefix, path.Base(existing[0]))
	}
	return remote, err
}

// commonFlags are the flags both tools take.
type commonFlags struct {
	host, namespace, directory, file string
	port, parallel                   int
	// removeArtifacts (asbackup --remove-artifacts): remove the backup files, back up nothing;
	// removeFiles (asbackup --remove-files): remove them first, then back up.
	removeArtifacts, removeFiles bool
	// s3Endpoint and s3Region are where an s3:// directory is (--s3-endpoint-override, --s3-region).
	s3Endpoint, s3Region string
}

func (f *commonFlags) register(fs *flag.FlagSet) {
	stringFlag(fs, &f.host, "h", "host", "seed hosts: host[:port][,...]")
	intFlag(fs, &f.port, "p", "port", 3000, "port of the hosts that name none")
	stringFlag(fs, &f.namespace, "n", "namespace", "the namespace (asrestore: source,destination maps it)")
	stringFlag(fs, &f.directory, "d", "directory", "the backup directory")
	intFlag(fs, &f.parallel, "w", "parallel", 1, "workers")
	fs.StringVar(&f.s3Endpoint, "s3-endpoint-override", "", "the S3 endpoint of an s3:// directory")
	fs.StringVar(&f.s3Region, "s3-region", "", "the S3 region of an s3:// directory")
}

func stringFlag(fs *flag.FlagSet, p *string, short, long, usage string) {
	fs.StringVar(p, short, "", usage)
	fs.StringVar(p, long, "", usage)
}

func intFlag(fs *flag.FlagSet, p *int, short, long string, value int, usage string) {
	fs.IntVar(p, short, value, usage)
	fs.IntVar(p, long, value, usage)
}

func boolFlag(fs *flag.FlagSet, p *bool, short, long, usage string) {
	fs.BoolVar(p, short, false, usage)
	fs.BoolVar(p, long, false, usage)
}

// backupFlags registers asbackup's own flags; the run backs up and says so as asbackup does.
func backupFlags(ctx context.Context, fs *flag.FlagSet, common *commonFlags) func(*as.Client) (string, error) {
	var sets string
	var rps int
	stringFlag(fs, &sets, "s", "set", "sets to back up: set[,...]")
	stringFlag(fs, &common.file, "o", "output-file", "the backup file")
	intFlag(fs, &rps, "L", "records-per-second", 0, "records per second (0: unlimited)")
	boolFlag(fs, &common.removeFiles, "r", "remove-files", "remove the directory's backup files first")
	fs.BoolVar(&common.removeArtifacts, "remove-artifacts", false, "remove the backup files and back up nothing")
	return func(c *as.Client) (string, error) {
		cfg := BackupConfig{Namespace: common.namespace, Directory: common.directory, OutputFile: common.file,
			RemoveFiles: common.removeFiles, Parallel: common.parallel, RecordsPerSecond: rps}
		if sets != "" {
			cfg.Sets = strings.Split(sets, ",")
		}
		st, err := Backup(ctx, c, cfg)
		return fmt.Sprintf("Backed up %d record(s), 0 secondary index(es), 0 UDF file(s), %d byte(s) in total\n",
			st.Records, st.Bytes), err
	}
}

// restoreFlags registers asrestore's own flags; the run restores and says what became of the records.
func restoreFlags(ctx context.Context, fs *flag.FlagSet, common *commonFlags) func(*as.Client) (string, error) {
	var unique, replace, noGeneration bool
	stringFlag(fs, &common.file, "i", "input-file", "the backup file")
	boolFlag(fs, &unique, "u", "unique", "write only records that do not exist")
	boolFlag(fs, &replace, "r", "replace", "replace whole records")
	boolFlag(fs, &noGeneration, "g", "no-generation", "write whatever the generation in the database")
	return func(c *as.Client) (string, error) {
		st, err := Restore(ctx, c, RestoreConfig{Directory: common.directory, InputFile: common.file,
			Namespace: common.namespace, Unique: unique, Replace: replace, NoGeneration: noGeneration})
		return fmt.Sprintf("Processed %d record(s): %d inserted, %d existed, %d fresher, %d expired, %d failed\n",
			st.Records, st.Inserted, st.Existed, st.Fresher, st.Expired, st.Failed), err
	}
}

// seeds parses --host: host[:port][,...], the port defaulting to --port.
func seeds(list string, port int) ([]*as.Host, error) {
	if list == "" {
		return nil, fmt.Errorf("--host is required")
	}
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
