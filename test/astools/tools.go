package astools

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	as "github.com/aerospike/aerospike-client-go/v7"
	"github.com/aerospike/aerospike-client-go/v7/types"
)

// aerospikeEpoch is where record expirations count from.
var aerospikeEpoch = time.Date(2010, 1, 1, 0, 0, 0, 0, time.UTC)

// nPartitions is Aerospike's partition count: a backup worker scans a range of them.
const nPartitions = 4096

// BackupConfig is what asbackup is asked.
type BackupConfig struct {
	Namespace string
	Sets      []string // none: every set
	// Directory receives one file per worker (<namespace>_<worker>.asb), or OutputFile one file: either
	// prepared already (prepareDirectory, prepareOutputFile).
	Directory, OutputFile string
	Parallel              int // scan workers, each a range of partitions; default 1
	RecordsPerSecond      int // 0: unlimited
	// ModifiedAfter keeps the records last updated at or after it (ns since the epoch; 0 or less: all),
	// with the server-side filter asbackup sends (backup_status_init, src/backup_status.c).
	ModifiedAfter int64
	codec         fileCodec
}

// Stats is what a run did.
type Stats struct {
	Records int64
	Bytes   int64
	Files   []string
}

// Backup scans the namespace (each worker a range of partitions, as src/backup.c divides them) and
// writes its records.
func Backup(ctx context.Context, c *as.Client, cfg BackupConfig) (Stats, error) {
	workers := max(cfg.Parallel, 1)
	files := backupFiles(cfg, workers)
	var records atomic.Int64
	errs := make([]error, len(files))
	var wg sync.WaitGroup
	for i, path := range files {
		begin := nPartitions * i / len(files)
		count := nPartitions*(i+1)/len(files) - begin
		wg.Go(func() {
			errs[i] = backupRange(ctx, c, cfg, path, i == 0, begin, count, &records, len(files))
		})
	}
	wg.Wait()
	st := Stats{Records: records.Load(), Files: files}
	for _, f := range files {
		if info, err := os.Stat(f); err == nil {
			st.Bytes += info.Size()
		}
	}
	return st, errors.Join(errs...)
}

// removeArtifacts is --remove-artifacts (file_proxy_delete_file, file_proxy_delete_directory in
// src/file_proxy.c): the file, or the directory's .asb files and then the directory if nothing else is
// in it. A directory that cannot be opened (it does not exist) fails.
func removeArtifacts(log *toolLog, directory, file string) bool {
	if file != "" {
		log.inf("Deleting output file %s", file)
		if err := os.Remove(file); err != nil && !errors.Is(err, os.ErrNotExist) {
			log.errCode(err, "Error while removing existing backup file %s", file)
			return false
		}
		return true
	}
	log.inf("Deleting backup directory %s", directory)
	entries, err := os.ReadDir(directory)
	if err != nil {
		log.errCode(err, "Error while opening local directory %s for deleting", directory)
		return false
	}
	left := false
	for _, e := range entries {
		if !isBackupFile(e.Name()) {
			left = true
			continue
		}
		if !removeBackupFile(log, filepath.Join(directory, e.Name())) {
			return false
		}
	}
	if !left {
		if err := os.Remove(directory); err != nil {
			log.errCode(err, "Error while removing empty directory %s", directory)
		}
	}
	return true
}

// isBackupFile is file_proxy_is_backup_file_path: a name longer than ".asb" that ends with it.
func isBackupFile(name string) bool { return len(name) > 4 && strings.HasSuffix(name, ".asb") }

// prepareDirectory is prepare_directory and scan_directory (src/file_proxy.c): a directory that does
// not exist is made with one mkdir (its parent must exist: no mkdir -p); its .asb files are removed
// with --remove-files, else the backup stops. Other files are left alone.
func prepareDirectory(log *toolLog, dir string, removeFiles bool) bool {
	entries, err := os.ReadDir(dir)
	switch {
	case errors.Is(err, os.ErrNotExist):
		log.inf("Directory %s does not exist, creating", dir)
		if err := os.Mkdir(dir, 0o775); err != nil {
			log.errCode(err, "Error while creating directory %s", dir)
			return false
		}
	case err != nil:
		log.errCode(err, "Error while opening directory %s", dir)
		return false
	}
	log.inf("Directory %s prepared for backup", dir)
	for _, e := range entries {
		if !isBackupFile(e.Name()) {
			continue
		}
		path := filepath.Join(dir, e.Name())
		if !removeFiles {
			log.err("Directory %s seems to contain an existing backup; use -r to clear directory", dir)
			return false
		}
		if !removeBackupFile(log, path) {
			return false
		}
	}
	return true
}

// removeBackupFile removes a backup file, saying why it cannot.
func removeBackupFile(log *toolLog, path string) bool {
	if err := os.Remove(path); err != nil {
		log.errCode(err, "Error while removing existing backup file %s", path)
		return false
	}
	return true
}

// prepareOutputFile is prepare_output_file (src/file_proxy.c): an existing file is removed with
// --remove-files, else the backup stops.
func prepareOutputFile(log *toolLog, file string, removeFiles bool) bool {
	_, err := os.Stat(file)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return true
	case err != nil:
		log.errCode(err, "Error while checking output file %s", file)
		return false
	case !removeFiles:
		log.err("Output file %s already exists; use -r to remove", file)
		return false
	}
	return removeBackupFile(log, file)
}

// backupFiles are the files the workers write: one per worker in the directory (named as
// src/backup.c names them, <namespace>_<NNNNN>.asb), or the one file.
func backupFiles(cfg BackupConfig, workers int) []string {
	if cfg.OutputFile != "" {
		return []string{cfg.OutputFile}
	}
	files := make([]string, workers)
	for i := range files {
		files[i] = filepath.Join(cfg.Directory, fmt.Sprintf("%s_%05d.asb", cfg.Namespace, i))
	}
	return files
}

// backupRange writes the records of a range of partitions of every asked set to one file.
func backupRange(ctx context.Context, c *as.Client, cfg BackupConfig, path string, first bool, begin, count int,
	records *atomic.Int64, workers int) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer f.Close()
	out, closeCodec, err := cfg.codec.writer(f)
	if err != nil {
		return err
	}
	w := NewWriter(out, cfg.Namespace, first)
	sets := cfg.Sets
	if len(sets) == 0 {
		sets = []string{""}
	}
	var pace time.Duration
	if cfg.RecordsPerSecond > 0 {
		pace = time.Duration(workers) * time.Second / time.Duration(cfg.RecordsPerSecond)
	}
	for _, set := range sets {
		rs, aerr := c.ScanPartitions(cfg.scanPolicy(), as.NewPartitionFilterByRange(begin, count), cfg.Namespace, set)
		if aerr != nil {
			return aerr
		}
		for res := range rs.Results() {
			if res.Err != nil {
				return res.Err
			}
			if err := w.Write(recordOf(res.Record, time.Now())); err != nil {
				return err
			}
			records.Add(1)
			if pace > 0 {
				select {
				case <-ctx.Done():
					return ctx.Err()
				case <-time.After(pace):
				}
			}
		}
	}
	if err := w.Flush(); err != nil {
		return err
	}
	if err := closeCodec(); err != nil {
		return err
	}
	return f.Close()
}

// scanPolicy is the scan's policy: with --modified-after, the filter asbackup sends
// (as_exp_cmp_ge(as_exp_last_update(), as_exp_int(mod_after)) in backup_status_init, src/backup_status.c).
func (cfg BackupConfig) scanPolicy() *as.ScanPolicy {
	policy := as.NewScanPolicy()
	if cfg.ModifiedAfter > 0 {
		policy.FilterExpression = as.ExpGreaterEq(as.ExpLastUpdate(), as.ExpIntVal(cfg.ModifiedAfter))
	}
	return policy
}

// recordOf is a scanned record as the backup file holds it.
func recordOf(r *as.Record, now time.Time) Record {
	rec := Record{Namespace: r.Key.Namespace(), Set: r.Key.SetName(), Digest: r.Key.Digest(),
		Generation: r.Generation, Bins: r.Bins}
	if v := r.Key.Value(); v != nil {
		rec.Key = v.GetObject()
	}
	if r.Expiration != 0 && r.Expiration != as.TTLDontExpire {
		rec.Expiration = uint32(now.Sub(aerospikeEpoch)/time.Second) + r.Expiration
	}
	return rec
}

// RestoreConfig is what asrestore is asked.
type RestoreConfig struct {
	// Files are the backup files to restore (restoreFiles).
	Files []string
	// Namespace maps the backup's namespace to another ("source,destination"); empty keeps it.
	Namespace string
	// Unique writes only records that do not exist; Replace replaces whole records (else bins are
	// updated); NoGeneration writes whatever the record's generation in the database (else only
	// records whose generation in the backup is higher).
	Unique, Replace, NoGeneration bool
	codec                         fileCodec
}

// RestoreStats counts what a restore did with each record, as restore_status_t does
// (include/restore_status.h).
type RestoreStats struct {
	Records    int64 // read from the backup
	Inserted   int64 // written
	Existed    int64 // left alone: it existed (Unique)
	Fresher    int64 // left alone: the database's generation was as high (without NoGeneration)
	Expired    int64 // left alone: expired since the backup
	Skipped    int64 // left alone: no bins
	ErrIgnored int64 // refused by the server for this record alone (too big, bad bin name, ...)
}

// restoreFiles are a directory's backup files (get_backup_files, src/file_proxy.c): a directory that
// cannot be opened or holds none stops the restore.
func restoreFiles(log *toolLog, dir string) ([]string, bool) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		log.errCode(err, "Error while opening directory %s", dir)
		log.err("Error while getting backup files from directory")
		return nil, false
	}
	var files []string
	for _, e := range entries {
		if isBackupFile(e.Name()) {
			files = append(files, filepath.Join(dir, e.Name()))
		}
	}
	if len(files) == 0 {
		log.err("No backup files found")
		return nil, false
	}
	return files, true
}

// Restore writes the backup files' records; false when it stopped on an error (logged as asrestore
// logs it).
func Restore(ctx context.Context, log *toolLog, c *as.Client, cfg RestoreConfig, st *RestoreStats) bool {
	from, to, _ := strings.Cut(cfg.Namespace, ",")
	for _, path := range cfg.Files {
		if !restoreFile(ctx, log, c, cfg, path, from, to, st) {
			return false
		}
	}
	return ctx.Err() == nil
}

// restoreFile restores one file: its header as open_file (src/restore.c) checks it, then its records
// (restore_thread_func).
func restoreFile(ctx context.Context, log *toolLog, c *as.Client, cfg RestoreConfig, path, from, to string,
	st *RestoreStats) bool {
	f, err := os.Open(path)
	if err != nil {
		log.err("Error while opening backup file")
		return false
	}
	defer f.Close()
	log.inf("Opened backup file %s", path)
	in, err := cfg.codec.reader(f)
	if err != nil {
		log.err("%v", err)
		return false
	}
	r, err := NewReader(in)
	switch {
	case errors.Is(err, ErrVersionLine):
		log.err("Invalid version line in backup file %s", path)
		return false
	case errors.Is(err, ErrVersion):
		version := strings.TrimPrefix(err.Error(), ErrVersion.Error()+" ")
		log.err("Invalid backup file version %s in backup file %s", version, path)
		return false
	case errors.Is(err, ErrMetaLine):
		meta := strings.TrimPrefix(err.Error(), ErrMetaLine.Error()+" ")
		log.err("Invalid meta data line \"#%s\" in backup file %s:%d [2]", meta, path, r.line)
		return false
	case err != nil:
		log.err("Error while parsing backup file %s (line %d)", path, r.line)
		return false
	case to != "" && r.Namespace != from:
		log.err("Invalid namespace %s in backup file %s (expected: %s)", r.Namespace, path, from)
		return false
	}
	for ctx.Err() == nil {
		rec, err := r.Next()
		if errors.Is(err, io.EOF) {
			return true
		}
		if err != nil {
			log.err("Error while parsing backup file %s (line %d)", path, r.line)
			return false
		}
		if to != "" {
			rec.Namespace = to
		}
		ok := st.count(write(c, cfg, rec, time.Now()), log)
		st.Records++
		if !ok {
			return false
		}
	}
	return false
}

// count records a write's outcome as _batch_status_submit (src/batch_uploader.c) does: false when the
// restore stops (any error but the record's own, and those too without --ignore-record-error).
func (st *RestoreStats) count(res writeResult, log *toolLog) bool {
	switch {
	case res.expired:
		st.Expired++
	case res.noBins:
		st.Skipped++
	case res.err == nil:
		st.Inserted++
	case res.err.Matches(types.GENERATION_ERROR):
		st.Fresher++
	case res.err.Matches(types.KEY_EXISTS_ERROR):
		st.Existed++
	case res.err.Matches(types.RECORD_TOO_BIG, types.KEY_MISMATCH, types.BIN_NAME_TOO_LONG, types.ALWAYS_FORBIDDEN,
		types.FAIL_FORBIDDEN, types.BIN_TYPE_ERROR, types.BIN_NOT_FOUND):
		st.ErrIgnored++
		log.err("Error while storing record - code %d", resultCode(res.err))
		return false
	default:
		log.err("Error while storing record - code %d: %s", resultCode(res.err), res.err.Error())
		return false
	}
	return true
}

// writeResult is what became of one record.
type writeResult struct {
	expired, noBins bool
	err             as.Error
}

// write puts one record with the policy the flags ask for.
func write(c *as.Client, cfg RestoreConfig, rec Record, now time.Time) writeResult {
	policy := as.NewWritePolicy(rec.Generation, as.TTLDontExpire)
	if rec.Expiration != 0 {
		left := int64(rec.Expiration) - int64(now.Sub(aerospikeEpoch)/time.Second)
		if left <= 0 {
			return writeResult{expired: true}
		}
		policy.Expiration = uint32(left)
	}
	if len(rec.Bins) == 0 {
		return writeResult{noBins: true}
	}
	policy.GenerationPolicy = as.EXPECT_GEN_GT
	if cfg.NoGeneration {
		policy.GenerationPolicy = as.NONE
	}
	switch {
	case cfg.Unique:
		policy.RecordExistsAction = as.CREATE_ONLY
	case cfg.Replace:
		policy.RecordExistsAction = as.REPLACE
	}
	key, aerr := as.NewKeyWithDigest(rec.Namespace, rec.Set, rec.Key, rec.Digest)
	if aerr != nil {
		return writeResult{err: aerr}
	}
	if rec.Key != nil {
		policy.SendKey = true
	}
	return writeResult{err: c.Put(policy, key, rec.Bins)}
}

func resultCode(err as.Error) int {
	var ae *as.AerospikeError
	if errors.As(err, &ae) {
		return int(ae.ResultCode)
	}
	return int(types.COMMON_ERROR)
}
