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
	// Directory receives one file per worker (<namespace>_<worker>.asb); or OutputFile one file.
	Directory, OutputFile string
	RemoveFiles           bool // delete the directory's .asb files first (else they are refused)
	Parallel              int  // scan workers, each a range of partitions; default 1
	RecordsPerSecond      int  // 0: unlimited
}

// Stats is what a run did.
type Stats struct {
	Records int64
	Bytes   int64
	Files   []string
}

// Backup scans the namespace (each worker a range of partitions) and writes its records.
func Backup(ctx context.Context, c *as.Client, cfg BackupConfig) (Stats, error) {
	workers := max(cfg.Parallel, 1)
	files, err := backupFiles(cfg, workers)
	if err != nil {
		return Stats{}, err
	}
	var records atomic.Int64
	errs := make([]error, len(files))
	var wg sync.WaitGroup
	per := nPartitions / len(files)
	for i, path := range files {
		begin, count := i*per, per
		if i == len(files)-1 {
			count = nPartitions - begin
		}
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

// RemoveArtifacts removes a backup: the file, or the directory's backup files and then the directory
// when nothing else is left in it.
func RemoveArtifacts(directory, file string) error {
	if (directory == "") == (file == "") {
		return errors.New("give either --directory or --output-file")
	}
	if file != "" {
		return ignoreMissing(os.Remove(file))
	}
	files, err := filepath.Glob(filepath.Join(directory, "*.asb"))
	if err != nil {
		return err
	}
	for _, f := range files {
		if err := os.Remove(f); err != nil {
			return err
		}
	}
	if left, err := os.ReadDir(directory); err == nil && len(left) == 0 {
		return os.Remove(directory)
	}
	return nil
}

func ignoreMissing(err error) error {
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	return err
}

// backupFiles are the files the workers write: one per worker in a directory, or the one file.
func backupFiles(cfg BackupConfig, workers int) ([]string, error) {
	switch {
	case cfg.Namespace == "":
		return nil, errors.New("a namespace is required (--namespace)")
	case (cfg.Directory == "") == (cfg.OutputFile == ""):
		return nil, errors.New("give either --directory or --output-file")
	case cfg.OutputFile != "":
		return []string{cfg.OutputFile}, nil
	}
	if err := os.MkdirAll(cfg.Directory, 0o755); err != nil {
		return nil, err
	}
	existing, err := filepath.Glob(filepath.Join(cfg.Directory, "*.asb"))
	if err != nil {
		return nil, err
	}
	if len(existing) > 0 && !cfg.RemoveFiles {
		return nil, fmt.Errorf("directory %s already holds backup files (%s); use --remove-files", cfg.Directory,
			filepath.Base(existing[0]))
	}
	for _, f := range existing {
		if err := os.Remove(f); err != nil {
			return nil, err
		}
	}
	files := make([]string, workers)
	for i := range files {
		files[i] = filepath.Join(cfg.Directory, fmt.Sprintf("%s_%05d.asb", cfg.Namespace, i))
	}
	return files, nil
}

// backupRange writes the records of a range of partitions of every asked set to one file.
func backupRange(ctx context.Context, c *as.Client, cfg BackupConfig, path string, first bool, begin, count int,
	records *atomic.Int64, workers int) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer f.Close()
	w := NewWriter(f, cfg.Namespace, first)
	sets := cfg.Sets
	if len(sets) == 0 {
		sets = []string{""}
	}
	var pace time.Duration
	if cfg.RecordsPerSecond > 0 {
		pace = time.Duration(workers) * time.Second / time.Duration(cfg.RecordsPerSecond)
	}
	for _, set := range sets {
		policy := as.NewScanPolicy()
		rs, aerr := c.ScanPartitions(policy, as.NewPartitionFilterByRange(begin, count), cfg.Namespace, set)
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
	return f.Close()
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
	// Directory holds the .asb files to restore; or InputFile one file.
	Directory, InputFile string
	// Namespace maps the backup's namespace to another ("source,destination"); empty keeps it.
	Namespace string
	// Unique writes only records that do not exist; Replace replaces whole records (else bins are
	// updated); NoGeneration writes whatever the record's generation in the database (else only
	// records whose generation in the backup is higher).
	Unique, Replace, NoGeneration bool
}

// RestoreStats counts what a restore did with each record.
type RestoreStats struct {
	Records  int64 // read from the backup
	Inserted int64 // written
	Existed  int64 // left alone: it existed (Unique)
	Fresher  int64 // left alone: the database's generation was as high (without NoGeneration)
	Expired  int64 // left alone: expired since the backup
	Failed   int64
}

// Restore writes a backup's records.
func Restore(ctx context.Context, c *as.Client, cfg RestoreConfig) (RestoreStats, error) {
	files, err := restoreFiles(cfg)
	if err != nil {
		return RestoreStats{}, err
	}
	from, to, _ := strings.Cut(cfg.Namespace, ",")
	var st RestoreStats
	for _, path := range files {
		if err := restoreFile(ctx, c, cfg, path, from, to, &st); err != nil {
			return st, fmt.Errorf("%s: %w", path, err)
		}
	}
	return st, nil
}

func restoreFiles(cfg RestoreConfig) ([]string, error) {
	switch {
	case (cfg.Directory == "") == (cfg.InputFile == ""):
		return nil, errors.New("give either --directory or --input-file")
	case cfg.InputFile != "":
		return []string{cfg.InputFile}, nil
	}
	files, err := filepath.Glob(filepath.Join(cfg.Directory, "*.asb"))
	if err == nil && len(files) == 0 {
		err = fmt.Errorf("no backup files in directory %s", cfg.Directory)
	}
	return files, err
}

func restoreFile(ctx context.Context, c *as.Client, cfg RestoreConfig, path, from, to string, st *RestoreStats) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	r, err := NewReader(f)
	if err != nil {
		return err
	}
	for ctx.Err() == nil {
		rec, err := r.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		st.Records++
		if from != "" && rec.Namespace == from && to != "" {
			rec.Namespace = to
		}
		st.count(write(c, cfg, rec, time.Now()))
	}
	return ctx.Err()
}

// outcome is what became of one record.
type outcome int

const (
	inserted outcome = iota
	existed
	fresher
	expired
	failed
)

func (st *RestoreStats) count(o outcome) {
	*[...]*int64{&st.Inserted, &st.Existed, &st.Fresher, &st.Expired, &st.Failed}[o]++
}

// write puts one record with the policy the flags ask for.
func write(c *as.Client, cfg RestoreConfig, rec Record, now time.Time) outcome {
	policy := as.NewWritePolicy(rec.Generation, as.TTLDontExpire)
	if rec.Expiration != 0 {
		left := int64(rec.Expiration) - int64(now.Sub(aerospikeEpoch)/time.Second)
		if left <= 0 {
			return expired
		}
		policy.Expiration = uint32(left)
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
		return failed
	}
	if rec.Key != nil {
		policy.SendKey = true
	}
	switch aerr := c.Put(policy, key, rec.Bins); {
	case aerr == nil:
		return inserted
	case aerr.Matches(types.KEY_EXISTS_ERROR):
		return existed
	case aerr.Matches(types.GENERATION_ERROR):
		return fresher
	}
	return failed
}
