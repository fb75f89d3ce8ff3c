package astools

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"

	as "github.com/aerospike/aerospike-client-go/v7"
)

// Main runs asbackup or asrestore (by name) with the real tools' flags that this stand-in knows, and
// says what it did on stdout as they do; it returns the exit code.
func Main(ctx context.Context, name string, args []string, stdout, stderr io.Writer) int {
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
	if common.removeArtifacts {
		if err := RemoveArtifacts(common.directory, common.file); err != nil {
			_, _ = fmt.Fprintf(stderr, "%s: %v\n", name, err)
			return 1
		}
		return 0
	}
	hosts, err := seeds(common.host, common.port)
	if err != nil {
		_, _ = fmt.Fprintf(stderr, "%s: %v\n", name, err)
		return 2
	}
	c, aerr := as.NewClientWithPolicyAndHost(as.NewClientPolicy(), hosts...)
	if aerr != nil {
		_, _ = fmt.Fprintf(stderr, "%s: connect: %v\n", name, aerr)
		return 1
	}
	defer c.Close()
	summary, err := run(c)
	_, _ = io.WriteString(stdout, summary)
	if err != nil {
		_, _ = fmt.Fprintf(stderr, "%s: %v\n", name, err)
		return 1
	}
	return 0
}

// commonFlags are the flags both tools take.
type commonFlags struct {
	host, namespace, directory, file string
	port, parallel                   int
	// removeArtifacts (asbackup --remove-artifacts): remove the backup files, back up nothing.
	removeArtifacts bool
}

func (f *commonFlags) register(fs *flag.FlagSet) {
	stringFlag(fs, &f.host, "h", "host", "seed hosts: host[:port][,...]")
	intFlag(fs, &f.port, "p", "port", 3000, "port of the hosts that name none")
	stringFlag(fs, &f.namespace, "n", "namespace", "the namespace (asrestore: source,destination maps it)")
	stringFlag(fs, &f.directory, "d", "directory", "the backup directory")
	intFlag(fs, &f.parallel, "w", "parallel", 1, "workers")
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
	var remove bool
	stringFlag(fs, &sets, "s", "set", "sets to back up: set[,...]")
	stringFlag(fs, &common.file, "o", "output-file", "the backup file")
	intFlag(fs, &rps, "L", "records-per-second", 0, "records per second (0: unlimited)")
	boolFlag(fs, &remove, "r", "remove-files", "remove the directory's backup files first")
	fs.BoolVar(&common.removeArtifacts, "remove-artifacts", false, "remove the backup files and back up nothing")
	return func(c *as.Client) (string, error) {
		cfg := BackupConfig{Namespace: common.namespace, Directory: common.directory, OutputFile: common.file,
			RemoveFiles: remove, Parallel: common.parallel, RecordsPerSecond: rps}
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
