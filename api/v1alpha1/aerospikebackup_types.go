package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// AerospikeBackupSpec declares backups of an AerospikeCluster of the same namespace, taken with Aerospike's
// own asbackup (Community Edition servers need nothing more): on a schedule, on demand, or both.
type AerospikeBackupSpec struct {
	// Cluster is the name of the AerospikeCluster to back up, in this namespace.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	Cluster string `json:"cluster"`

	// Namespaces are the Aerospike namespaces to back up, each in a directory of its own; empty: every
	// namespace of the cluster's config.
	// +kubebuilder:validation:MaxItems=32
	// +listType=set
	// +optional
	Namespaces []string `json:"namespaces,omitempty"`

	// Sets limits the backup to these sets (asbackup --set); empty: every set.
	// +kubebuilder:validation:MaxItems=64
	// +listType=set
	// +optional
	Sets []string `json:"sets,omitempty"`

	// Destination is where the backup files go.
	Destination BackupDestination `json:"destination"`

	// Schedule is a cron expression (five fields, or @daily, @hourly, ...; UTC) for scheduled backups.
	// +optional
	Schedule string `json:"schedule,omitempty"`

	// Incremental takes incremental backups on a schedule of their own: each backs up only the records
	// changed since the start of the newest successful run, full or incremental (asbackup
	// --modified-after). One waits until a full backup has succeeded.
	// +optional
	Incremental *IncrementalBackup `json:"incremental,omitempty"`

	// Runs are on-demand backups, keyed by id: each id runs once, when it appears.
	// +kubebuilder:validation:MaxItems=16
	// +listType=map
	// +listMapKey=id
	// +optional
	Runs []BackupRunSpec `json:"runs,omitempty"`

	// Retention bounds the backups kept: the oldest successful ones beyond it are deleted with their files.
	// +optional
	Retention *BackupRetention `json:"retention,omitempty"`

	// Parallel is asbackup's --parallel: how many partition ranges are scanned at once.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=64
	// +kubebuilder:default=1
	// +optional
	Parallel int32 `json:"parallel,omitempty"`

	// RecordsPerSecond throttles the scan (asbackup --records-per-second); 0: unthrottled.
	// +kubebuilder:validation:Minimum=0
	// +optional
	RecordsPerSecond int32 `json:"recordsPerSecond,omitempty"`

	// Image is the aerospike-tools image; empty: the version this operator is tested with.
	// +optional
	Image string `json:"image,omitempty"`

	// WhileChanging lets a backup start while the operator changes the cluster (a roll, a scale, an
	// operation); by default it waits until every pod is Ready and nothing but Aerospike's migrations is
	// left (the run then says the cluster was not stable). A paused cluster is never backed up.
	// +optional
	WhileChanging bool `json:"whileChanging,omitempty"`

	// Files are how the backup files are written: compressed, encrypted. Restores of this backup read
	// them so.
	// +optional
	Files BackupFiles `json:"files,omitempty"`

	// ServiceAccountName is the ServiceAccount the tools' Jobs run as, with its token mounted: a cloud
	// identity (IRSA on EKS, Workload Identity on GKE) for the S3 destination. Empty: the operator's
	// own acko-backup-tools, which may do nothing and has no token.
	// +kubebuilder:validation:MaxLength=253
	// +optional
	ServiceAccountName string `json:"serviceAccountName,omitempty"`
}

// IncrementalBackup is the schedule of incremental backups.
type IncrementalBackup struct {
	// Schedule is a cron expression (five fields, or @hourly, @every 15m, ...; UTC).
	// +kubebuilder:validation:MinLength=1
	Schedule string `json:"schedule"`
}

// BackupCompression is how backup files are compressed.
// +kubebuilder:validation:Enum=ZSTD
type BackupCompression string

// BackupCompressionZSTD compresses with zstd (asbackup --compress zstd).
const BackupCompressionZSTD BackupCompression = "ZSTD"

// EncryptionAlgorithm is the AES key size of encrypted backup files.
// +kubebuilder:validation:Enum=AES128;AES256
type EncryptionAlgorithm string

// The tools' encryption modes (asbackup --encrypt aes128|aes256).
const (
	EncryptionAES128 EncryptionAlgorithm = "AES128"
	EncryptionAES256 EncryptionAlgorithm = "AES256"
)

// BackupFiles is how backup files are written, and so how they are read.
type BackupFiles struct {
	// Compression compresses the files; empty: none.
	// +optional
	Compression BackupCompression `json:"compression,omitempty"`

	// Encryption encrypts them (after compression); nil: none.
	// +optional
	Encryption *BackupEncryption `json:"encryption,omitempty"`
}

// BackupEncryption encrypts backup files with AES under a key kept in a Secret. The Job takes the key
// into the tool's environment (asbackup/asrestore --encryption-key-env); the operator never reads it.
type BackupEncryption struct {
	// Algorithm is the AES key size.
	// +kubebuilder:default=AES256
	// +optional
	Algorithm EncryptionAlgorithm `json:"algorithm,omitempty"`

	// KeySecret is a Secret of this namespace whose key KeySecretKey holds the encryption key in base64,
	// as the tools read it from their environment.
	// +kubebuilder:validation:MinLength=1
	KeySecret string `json:"keySecret"`

	// KeySecretKey is the key of the Secret that holds the encryption key.
	// +kubebuilder:default=key
	// +optional
	KeySecretKey string `json:"keySecretKey,omitempty"`
}

// BackupRunSpec is one on-demand backup.
type BackupRunSpec struct {
	// ID names the run; it is part of the backup's path, so it never runs twice.
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]{0,18}[a-z0-9])?$`
	ID string `json:"id"`

	// Incremental backs up only the records changed since the start of the newest successful run
	// (asbackup --modified-after); it waits until a full backup has succeeded.
	// +optional
	Incremental bool `json:"incremental,omitempty"`
}

// BackupDestination is a volume claim or S3-compatible storage; exactly one.
// +kubebuilder:validation:XValidation:rule="has(self.volume) != has(self.s3)",message="destination needs exactly one of volume and s3"
type BackupDestination struct {
	// Volume is a PersistentVolumeClaim of this namespace that holds the backups.
	// +optional
	Volume *VolumeDestination `json:"volume,omitempty"`

	// S3 is a bucket of S3-compatible storage, written by asbackup's own S3 support.
	// +optional
	S3 *S3Destination `json:"s3,omitempty"`
}

// VolumeDestination is a directory on a PersistentVolumeClaim.
type VolumeDestination struct {
	// ClaimName is the PersistentVolumeClaim, in this namespace.
	// +kubebuilder:validation:MinLength=1
	ClaimName string `json:"claimName"`

	// Path is the directory on the claim under which each backup gets its own; empty: the claim's root.
	// +kubebuilder:validation:Pattern=`^[^.][^:]*$`
	// +optional
	Path string `json:"path,omitempty"`
}

// S3Destination is a prefix in an S3 bucket.
type S3Destination struct {
	// Bucket is the bucket's name.
	// +kubebuilder:validation:MinLength=1
	Bucket string `json:"bucket"`

	// Path is the prefix under which each backup gets its own.
	// +optional
	Path string `json:"path,omitempty"`

	// Region is the bucket's region (asbackup --s3-region).
	// +optional
	Region string `json:"region,omitempty"`

	// Endpoint overrides the S3 endpoint, for S3-compatible storage (asbackup --s3-endpoint-override).
	// +optional
	Endpoint string `json:"endpoint,omitempty"`

	// CredentialsSecret is a Secret of this namespace with the keys AWS_ACCESS_KEY_ID and
	// AWS_SECRET_ACCESS_KEY; the tool reads them from its environment, never from the spec. Empty: the
	// tool finds its credentials as the AWS SDK does (the Jobs' ServiceAccount, serviceAccountName).
	// +optional
	CredentialsSecret string `json:"credentialsSecret,omitempty"`
}

// BackupRetention bounds the successful backups kept.
type BackupRetention struct {
	// KeepLast keeps at most this many successful backups.
	// +kubebuilder:validation:Minimum=1
	// +optional
	KeepLast *int32 `json:"keepLast,omitempty"`

	// KeepFor keeps successful backups this long (e.g. 168h), the newest one always.
	// +optional
	KeepFor *metav1.Duration `json:"keepFor,omitempty"`
}

// BackupPhase is where one backup run is.
// +kubebuilder:validation:Enum=Pending;Running;Succeeded;Failed
type BackupPhase string

const (
	// BackupPending: the run is due and waits (for the cluster to be Ready, or for the run before it).
	BackupPending BackupPhase = "Pending"
	// BackupRunning: the run's Jobs run asbackup.
	BackupRunning BackupPhase = "Running"
	// BackupSucceeded: every namespace was backed up.
	BackupSucceeded BackupPhase = "Succeeded"
	// BackupFailed: a Job failed; the message says which and why.
	BackupFailed BackupPhase = "Failed"
)

// BackupTrigger says why a run started.
// +kubebuilder:validation:Enum=Schedule;OnDemand
type BackupTrigger string

const (
	// TriggerSchedule: spec.schedule came due.
	TriggerSchedule BackupTrigger = "Schedule"
	// TriggerOnDemand: an id appeared in spec.runs.
	TriggerOnDemand BackupTrigger = "OnDemand"
)

// BackupRunStatus is one backup: its run, its files and what they hold.
type BackupRunStatus struct {
	// ID is the run's id: the on-demand id, or the scheduled time (UTC, 20261203-1015).
	ID string `json:"id"`
	// Trigger says why it ran.
	Trigger BackupTrigger `json:"trigger"`
	// Phase is Pending, Running, Succeeded or Failed.
	Phase BackupPhase `json:"phase"`
	// Incremental: the run backs up only the records changed since ModifiedAfter.
	// +optional
	Incremental bool `json:"incremental,omitempty"`
	// Base is the full backup an incremental builds on, set when it starts; a restore of the incremental
	// restores the base, then every incremental after it up to this one.
	// +optional
	Base string `json:"base,omitempty"`
	// After is the run an incremental follows (the base, or the incremental before it): the newest
	// successful run when it started, whose start is ModifiedAfter.
	// +optional
	After string `json:"after,omitempty"`
	// ModifiedAfter is the start of the run After (to the second, as asbackup --modified-after takes it):
	// records changed at or after it are in this incremental.
	// +optional
	ModifiedAfter *metav1.Time `json:"modifiedAfter,omitempty"`
	// Namespaces are the Aerospike namespaces in this backup, each in Path/<namespace>.
	// +optional
	Namespaces []string `json:"namespaces,omitempty"`
	// Path is the backup's directory on the destination (the claim's path, or s3://bucket/prefix).
	// +optional
	Path string `json:"path,omitempty"`
	// StartTime is when its Jobs were created.
	// +optional
	StartTime *metav1.Time `json:"startTime,omitempty"`
	// CompletionTime is when the last Job ended.
	// +optional
	CompletionTime *metav1.Time `json:"completionTime,omitempty"`
	// Records is how many records asbackup wrote.
	// +optional
	Records int64 `json:"records,omitempty"`
	// Bytes is how many bytes asbackup wrote.
	// +optional
	Bytes int64 `json:"bytes,omitempty"`
	// ClusterStable is false when the cluster was seen not Ready, or migrating, during the run: the backup
	// is valid (asbackup scans by partition) but was taken while data moved.
	// +optional
	ClusterStable *bool `json:"clusterStable,omitempty"`
	// Message says what the run waits for, or why it failed.
	// +optional
	Message string `json:"message,omitempty"`
}

// AerospikeBackupStatus is the observed state of an AerospikeBackup. Only the operator writes it.
type AerospikeBackupStatus struct {
	// ObservedGeneration is the generation of the spec last acted on.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Conditions: Ready (the newest run succeeded), Reconciling (a run is pending or running), Stalled (the
	// spec cannot be acted on, or the newest run failed).
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// Backups are the runs, oldest first: those kept by the retention, and the ones that failed (the last 5).
	// +optional
	Backups []BackupRunStatus `json:"backups,omitempty"`

	// FinishedRuns are the on-demand ids whose runs the retention dropped (newest last, bounded): they
	// never run again.
	// +kubebuilder:validation:MaxItems=64
	// +optional
	FinishedRuns []string `json:"finishedRuns,omitempty"`

	// LastScheduleTime is the scheduled time of the newest scheduled run.
	// +optional
	LastScheduleTime *metav1.Time `json:"lastScheduleTime,omitempty"`

	// LastSuccessTime is when the newest successful run completed.
	// +optional
	LastSuccessTime *metav1.Time `json:"lastSuccessTime,omitempty"`

	// NextScheduleTime is when the schedule comes due next.
	// +optional
	NextScheduleTime *metav1.Time `json:"nextScheduleTime,omitempty"`

	// LastIncrementalScheduleTime is the scheduled time of the newest scheduled incremental run.
	// +optional
	LastIncrementalScheduleTime *metav1.Time `json:"lastIncrementalScheduleTime,omitempty"`

	// NextIncrementalScheduleTime is when the incremental schedule comes due next.
	// +optional
	NextIncrementalScheduleTime *metav1.Time `json:"nextIncrementalScheduleTime,omitempty"`
}

// AerospikeBackup is a backup policy for an AerospikeCluster and the backups it made.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=asbk,categories=aerospike
// +kubebuilder:printcolumn:name="Cluster",type=string,JSONPath=`.spec.cluster`
// +kubebuilder:printcolumn:name="Schedule",type=string,JSONPath=`.spec.schedule`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Last-Success",type=date,JSONPath=`.status.lastSuccessTime`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type AerospikeBackup struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +required
	Spec AerospikeBackupSpec `json:"spec"`
	// +optional
	Status AerospikeBackupStatus `json:"status,omitempty"`
}

// AerospikeBackupList contains a list of AerospikeBackup.
// +kubebuilder:object:root=true
type AerospikeBackupList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []AerospikeBackup `json:"items"`
}

// ConflictPolicy is what asrestore does with a record that exists in the cluster.
// +kubebuilder:validation:Enum=Generation;Unique;Replace;NoGeneration
type ConflictPolicy string

const (
	// ConflictGeneration (asrestore's default): write the record unless the cluster's copy is newer
	// (a higher generation); bins not in the backup are kept.
	ConflictGeneration ConflictPolicy = "Generation"
	// ConflictUnique (--unique): write only records that do not exist.
	ConflictUnique ConflictPolicy = "Unique"
	// ConflictReplace (--replace): replace whole records (bins not in the backup are dropped), unless the
	// cluster's copy is newer.
	ConflictReplace ConflictPolicy = "Replace"
	// ConflictNoGeneration (--no-generation): write every record, whatever its generation.
	ConflictNoGeneration ConflictPolicy = "NoGeneration"
)

// AerospikeRestoreSpec restores a backup into an AerospikeCluster of the same namespace, once.
type AerospikeRestoreSpec struct {
	// Cluster is the name of the AerospikeCluster to restore into, in this namespace.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	Cluster string `json:"cluster"`

	// Backup is the AerospikeBackup (this namespace) and the run to restore.
	// +optional
	Backup *BackupReference `json:"backup,omitempty"`

	// Source is a backup by where its files are, for one no AerospikeBackup of this namespace records: made
	// in another Kubernetes namespace or cluster, or by hand.
	// +optional
	Source *RestoreSource `json:"source,omitempty"`

	// Namespaces maps a namespace of the backup to another of the cluster (source: destination); a
	// namespace not named keeps its name.
	// +optional
	Namespaces map[string]string `json:"namespaces,omitempty"`

	// ConflictPolicy is what happens to records that exist: Generation (default), Unique, Replace or
	// NoGeneration.
	// +kubebuilder:default=Generation
	// +optional
	ConflictPolicy ConflictPolicy `json:"conflictPolicy,omitempty"`

	// Parallel is asrestore's --parallel.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=64
	// +kubebuilder:default=1
	// +optional
	Parallel int32 `json:"parallel,omitempty"`

	// Image is the aerospike-tools image; empty: the version this operator is tested with.
	// +optional
	Image string `json:"image,omitempty"`

	// Files are how the backup files were written (compressed, encrypted); nil: as the named backup
	// writes them (spec.backup), or plain files (spec.source).
	// +optional
	Files *BackupFiles `json:"files,omitempty"`

	// ServiceAccountName is the ServiceAccount the restore's Jobs run as, with its token mounted (a cloud
	// identity for an S3 source). Empty: the operator's own acko-backup-tools, with no token.
	// +kubebuilder:validation:MaxLength=253
	// +optional
	ServiceAccountName string `json:"serviceAccountName,omitempty"`
}

// RestoreSource is a backup's files: a directory on a claim of this namespace, or in S3, that holds a
// directory of .asb files per Aerospike namespace (as a run of an AerospikeBackup writes them).
// +kubebuilder:validation:XValidation:rule="has(self.volume) != has(self.s3)",message="source needs exactly one of volume and s3"
type RestoreSource struct {
	// Volume is the claim, and on it the backup's directory (path).
	// +optional
	Volume *VolumeDestination `json:"volume,omitempty"`

	// S3 is the bucket, and in it the backup's prefix (path), with the credentials Secret.
	// +optional
	S3 *S3Destination `json:"s3,omitempty"`

	// Namespaces are the Aerospike namespaces to restore, each from the directory of its name.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=32
	// +listType=set
	Namespaces []string `json:"namespaces"`
}

// Destination is where the source's files are, in the form of a backup's destination.
func (s *RestoreSource) Destination() BackupDestination {
	return BackupDestination{Volume: s.Volume, S3: s.S3}
}

// BackupReference names one run of an AerospikeBackup.
type BackupReference struct {
	// Name is the AerospikeBackup.
	// +kubebuilder:validation:MinLength=1
	Name string `json:"name"`
	// ID is the run; empty: its newest successful run.
	// +optional
	ID string `json:"id,omitempty"`
}

// AerospikeRestoreStatus is the observed state of an AerospikeRestore. Only the operator writes it.
type AerospikeRestoreStatus struct {
	// ObservedGeneration is the generation of the spec acted on.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Conditions: Ready (restored), Reconciling (running), Stalled (failed, or cannot start).
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// Phase is Pending, Running, Succeeded or Failed.
	// +optional
	Phase BackupPhase `json:"phase,omitempty"`
	// BackupID is the backup run restored.
	// +optional
	BackupID string `json:"backupID,omitempty"`
	// Chain is what a restore of an incremental restores, in order: its full base first, then every
	// incremental after it up to BackupID. One step for a full backup.
	// +optional
	Chain []RestoreStep `json:"chain,omitempty"`
	// Path is where the backup was read.
	// +optional
	Path string `json:"path,omitempty"`
	// Namespaces are the Aerospike namespaces restored (as the backup names them).
	// +optional
	Namespaces []string `json:"namespaces,omitempty"`
	// StartTime is when its Jobs were created.
	// +optional
	StartTime *metav1.Time `json:"startTime,omitempty"`
	// CompletionTime is when the last Job ended.
	// +optional
	CompletionTime *metav1.Time `json:"completionTime,omitempty"`
	// Records is how many records asrestore read from the backup.
	// +optional
	Records int64 `json:"records,omitempty"`
	// Restored is how many records were written (asrestore's "inserted").
	// +optional
	Restored int64 `json:"restored,omitempty"`
	// Existed is how many were not written because they existed (conflictPolicy Unique).
	// +optional
	Existed int64 `json:"existed,omitempty"`
	// Fresher is how many were not written because the cluster's copy was as new (its generation as
	// high), unless conflictPolicy NoGeneration.
	// +optional
	Fresher int64 `json:"fresher,omitempty"`
	// Expired is how many were not written because they expired since the backup.
	// +optional
	Expired int64 `json:"expired,omitempty"`
	// Skipped is how many were not written by the conflict policy: existed and fresher.
	// +optional
	Skipped int64 `json:"skipped,omitempty"`
	// Failures is asrestore's "failed" count, as it prints it: the records it did not write because they
	// existed or were fresher. A write that fails otherwise stops asrestore, and the restore fails.
	// +optional
	Failures int64 `json:"failures,omitempty"`
	// Message says what the restore waits for, or why it failed.
	// +optional
	Message string `json:"message,omitempty"`
}

// RestoreStep is one backup run a restore restores, and what asrestore said of it.
type RestoreStep struct {
	// ID is the backup run.
	ID string `json:"id"`
	// Incremental: the run is an incremental (else the full base).
	// +optional
	Incremental bool `json:"incremental,omitempty"`
	// Path is where its files are.
	Path string `json:"path"`
	// Namespaces are its Aerospike namespaces.
	// +optional
	Namespaces []string `json:"namespaces,omitempty"`
	// Phase is Pending, Running, Succeeded or Failed.
	Phase BackupPhase `json:"phase"`
	// Records is how many records asrestore read from it.
	// +optional
	Records int64 `json:"records,omitempty"`
	// Restored is how many of them it wrote.
	// +optional
	Restored int64 `json:"restored,omitempty"`
}

// AerospikeRestore restores one backup into an AerospikeCluster.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=asrs,categories=aerospike
// +kubebuilder:printcolumn:name="Cluster",type=string,JSONPath=`.spec.cluster`
// +kubebuilder:printcolumn:name="Backup",type=string,JSONPath=`.spec.backup.name`
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Restored",type=integer,JSONPath=`.status.restored`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:validation:XValidation:rule="!has(oldSelf.spec) || self.spec == oldSelf.spec",message="a restore runs once: create another to restore again"
// +kubebuilder:validation:XValidation:rule="has(self.spec.backup) != has(self.spec.source)",message="name exactly one of spec.backup and spec.source"
type AerospikeRestore struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +required
	Spec AerospikeRestoreSpec `json:"spec"`
	// +optional
	Status AerospikeRestoreStatus `json:"status,omitempty"`
}

// AerospikeRestoreList contains a list of AerospikeRestore.
// +kubebuilder:object:root=true
type AerospikeRestoreList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []AerospikeRestore `json:"items"`
}

// Condition reasons of AerospikeBackup and AerospikeRestore (their conditions are Ready, Reconciling and
// Stalled, as a cluster's).
const (
	// ReasonNoBackupYet: no run has ended yet (Ready False).
	ReasonNoBackupYet = "NoBackupYet"
	// ReasonBackupSucceeded: the newest ended run succeeded (Ready True).
	ReasonBackupSucceeded = "BackupSucceeded"
	// ReasonBackupFailed: the newest ended run failed (Ready False, Stalled True until another run).
	ReasonBackupFailed = "BackupFailed"
	// ReasonBackupRunning: a run's Jobs run (Reconciling).
	ReasonBackupRunning = "BackupRunning"
	// ReasonWaitingForCluster: a run waits for its cluster to be Ready or resumed (Reconciling).
	ReasonWaitingForCluster = "WaitingForCluster"
	// ReasonClusterNotFound: the AerospikeCluster named does not exist (Stalled).
	ReasonClusterNotFound = "ClusterNotFound"
	// ReasonBackupNotFound: the backup a restore names does not exist, or has no such successful run (Stalled).
	ReasonBackupNotFound = "BackupNotFound"
	// ReasonWaitingForFullBackup: an incremental run waits for a full backup to succeed first (Reconciling).
	ReasonWaitingForFullBackup = "WaitingForFullBackup"
	// ReasonIncompleteChain: a restore of an incremental names a chain with a run missing (Stalled).
	ReasonIncompleteChain = "IncompleteChain"
	// ReasonRestoreRunning: the restore's Jobs run (Reconciling).
	ReasonRestoreRunning = "RestoreRunning"
	// ReasonRestoreSucceeded: every namespace was restored (Ready True).
	ReasonRestoreSucceeded = "RestoreSucceeded"
	// ReasonRestoreFailed: a restore Job failed (Stalled True).
	ReasonRestoreFailed = "RestoreFailed"
)

// Event reasons of AerospikeBackup and AerospikeRestore.
const (
	// EventBackupStarted: a run's Jobs were created.
	EventBackupStarted = "BackupStarted"
	// EventBackupWaiting: an incremental run waits for a full backup to succeed first.
	EventBackupWaiting = "WaitingForFullBackup"
	// EventBackupSucceeded: a run ended with every namespace backed up; the message has records and bytes.
	EventBackupSucceeded = "BackupSucceeded"
	// EventBackupFailed: a run failed; the message says which Job and the tool's last words.
	EventBackupFailed = "BackupFailed"
	// EventBackupDeleted: the retention dropped a successful run and removes its files.
	EventBackupDeleted = "BackupDeleted"
	// EventRestoreStarted: the restore's Jobs were created.
	EventRestoreStarted = "RestoreStarted"
	// EventRestoreSucceeded: every namespace was restored; the message has the counts.
	EventRestoreSucceeded = "RestoreSucceeded"
	// EventRestoreFailed: a restore Job failed.
	EventRestoreFailed = "RestoreFailed"
)
