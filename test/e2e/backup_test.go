package e2e

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	as "github.com/aerospike/aerospike-client-go/v7"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// Issue 27: a cluster filled by the official client's workload is backed up by an AerospikeBackup (a
// Job running asbackup onto a volume claim), a second cluster is created, an AerospikeRestore restores
// the backup into it, and every record reads back equal. The test bed runs the Jobs' pods with a stand-in
// of the tools (test/astools) that takes their flags and writes their .asb format with the official
// client, so the Jobs, arguments and status are what a real cluster gets.
// backupNamespace holds the clusters, backups and restores of the spec.
const backupNamespace = "e2e-backup"

var _ = Describe("Backup and restore", Label("backup"), func() {
	It("backs a cluster up to a volume claim and restores it into another cluster: every record equal", func() {
		const ns = backupNamespace
		createCluster(ns, "src", 3, "")
		allUp(ns+"/src-", 3)
		w := withWorkload(ns, "src")
		w.expectNothingLost()
		source := scanRecords("src")
		Expect(len(source)).To(BeNumerically(">=", workloadKeys))

		By("bad input is refused with the reason, and nothing starts")
		_, err := kubectlErr("apply", "-f", writeManifest(restoreYAML(ns, "too-soon", "src", "nightly", "first")))
		Expect(err).To(MatchError(ContainSubstring(`AerospikeBackup "nightly" not found in namespace "` + ns + `"`)))
		_, err = kubectlErr("apply", "-f", writeManifest(backupYAML(ns, "nightly", "src", "every night")))
		Expect(err).To(MatchError(ContainSubstring(`spec.schedule: Invalid value: "every night"`)))
		Expect(kubectl("get", "jobs,asbk,asrs", "-n", ns, "-o", "name")).To(BeEmpty())

		By("an on-demand backup onto a volume claim, a fresh run id: asbackup makes only the last level of its directory")
		start := time.Now()
		applyYAML(fmt.Sprintf(`apiVersion: v1
kind: PersistentVolumeClaim
metadata:
  name: backups
  namespace: %s
spec:
  accessModes: [ReadWriteOnce]
  resources:
    requests:
      storage: 1Gi
---
%s`, ns, backupYAML(ns, "nightly", "src", "@daily")))
		Eventually(func() (string, error) {
			return field(ns, "asbk/nightly", `{.status.backups[?(@.id=="first")].phase}`)
		}).WithTimeout(2 * time.Minute).WithPolling(time.Second).Should(Equal("Succeeded"))
		reportTime("backup of 3 nodes", time.Since(start))
		records, err := strconv.Atoi(mustField(ns, "asbk/nightly", `{.status.backups[?(@.id=="first")].records}`))
		Expect(err).NotTo(HaveOccurred())
		Expect(records).To(Equal(len(source)), "records the status says were backed up")
		Expect(mustField(ns, "asbk/nightly", `{.status.backups[?(@.id=="first")].path}`)).To(Equal("backups:/aerospike/nightly/first"))
		Expect(mustField(ns, "asbk/nightly", `{.status.backups[?(@.id=="first")].clusterStable}`)).To(Equal("true"))
		Expect(mustField(ns, "asbk/nightly", `{.status.conditions[?(@.type=="Ready")].status}`)).To(Equal("True"))
		Expect(mustField(ns, "asbk/nightly", `{.status.nextScheduleTime}`)).NotTo(BeEmpty())
		Expect(eventMessages(ns, "nightly", "BackupSucceeded")).To(ContainElement(
			ContainSubstring(fmt.Sprintf("backup first: %d records", records))))
		backupLog := kubectl("logs", "-n", ns, "job/nightly-first-test")
		Expect(backupLog).To(ContainSubstring("Directory /backup/test does not exist, creating"))
		Expect(backupLog).To(ContainSubstring(fmt.Sprintf("Backed up %d record(s), 0 secondary index(es)", records)))

		By("a second cluster, and the backup restored into it")
		applyYAML(clusterYAML(ns, "dst", 3, ""))
		waitRunningObserved(ns, "dst")
		allUp(ns+"/dst-", 3)
		Expect(scanRecords("dst")).To(BeEmpty())
		applyYAML(restoreYAML(ns, "from-first", "dst", "nightly", "first"))
		Eventually(func() (string, error) { return field(ns, "asrs/from-first", "{.status.phase}") }).
			WithTimeout(2 * time.Minute).WithPolling(time.Second).Should(Equal("Succeeded"))
		Expect(mustField(ns, "asrs/from-first", "{.status.restored}")).To(Equal(strconv.Itoa(len(source))))
		By("the restore's status says what asrestore printed")
		Expect(kubectl("logs", "-n", ns, "job/from-first-restore-test")).To(And(
			ContainSubstring(fmt.Sprintf(" %d record(s) (", len(source))),
			ContainSubstring(fmt.Sprintf("Expired 0 : skipped 0 : err_ignored 0 : inserted %d: failed 0 (existed 0 , fresher 0)", len(source)))))
		Expect(mustField(ns, "asrs/from-first", "{.status.records}")).To(Equal(strconv.Itoa(len(source))))
		Expect(eventMessages(ns, "from-first", "RestoreSucceeded")).NotTo(BeEmpty())

		By("every record of the source reads back equal from the restored cluster")
		restored := scanRecords("dst")
		Expect(restored).To(HaveLen(len(source)))
		for key, bins := range source {
			Expect(restored).To(HaveKeyWithValue(key, bins), "record %s", key)
		}
		report := fmt.Sprintf("%d records backed up, restored into another cluster and read back equal", len(source))
		AddReportEntry("backup and restore", report)
		_, _ = fmt.Fprintln(GinkgoWriter, report)

		By("writes under the workload, then an incremental backup: only the records changed since the full run's start")
		w2 := withWorkload(ns, "src")
		w2.expectNothingLost()
		touchRecords("src", "before the incremental", source)
		atIncremental := scanRecords("src")
		kubectl("patch", "asbk/nightly", "-n", ns, "--type=json", "-p",
			`[{"op":"add","path":"/spec/runs/-","value":{"id":"more","incremental":true}}]`)
		Eventually(func() (string, error) {
			return field(ns, "asbk/nightly", `{.status.backups[?(@.id=="more")].phase}`)
		}).WithTimeout(2 * time.Minute).WithPolling(time.Second).Should(Equal("Succeeded"))
		Expect(mustField(ns, "asbk/nightly", `{.status.backups[?(@.id=="more")].base}`)).To(Equal("first"))
		Expect(mustField(ns, "asbk/nightly", `{.status.backups[?(@.id=="more")].after}`)).To(Equal("first"))
		changed, err := strconv.Atoi(mustField(ns, "asbk/nightly", `{.status.backups[?(@.id=="more")].records}`))
		Expect(err).NotTo(HaveOccurred())
		Expect(changed).To(And(BeNumerically(">=", len(atIncremental)-len(source)+touched),
			BeNumerically("<", len(atIncremental))), "the incremental holds the changed records only")
		Expect(kubectl("get", "job/nightly-more-test", "-n", ns, "-o", "jsonpath={.spec.template.spec.containers[0].args}")).
			To(ContainSubstring("--modified-after"))

		By("more writes after it, then the chain restored into a third cluster: exactly the records at the incremental's start")
		w3 := withWorkload(ns, "src")
		w3.expectNothingLost()
		touchRecords("src", "after the incremental", source)
		applyYAML(clusterYAML(ns, "chain", 1, ""))
		waitRunningObserved(ns, "chain")
		allUp(ns+"/chain-", 1)
		applyYAML(restoreYAML(ns, "from-more", "chain", "nightly", "more"))
		Eventually(func() (string, error) { return field(ns, "asrs/from-more", "{.status.phase}") }).
			WithTimeout(3 * time.Minute).WithPolling(time.Second).Should(Equal("Succeeded"))
		Expect(mustField(ns, "asrs/from-more", "{.status.chain[*].id}")).To(Equal("first more"))
		Expect(mustField(ns, "asrs/from-more", "{.status.chain[*].phase}")).To(Equal("Succeeded Succeeded"))
		Expect(mustField(ns, "asrs/from-more", "{.status.records}")).To(Equal(strconv.Itoa(len(source) + changed)))
		Expect(eventMessages(ns, "from-more", "RestoreSucceeded")).To(ContainElement(
			ContainSubstring("full backup first, then incrementals more")))
		Expect(scanRecords("chain")).To(Equal(atIncremental))
		_, _ = fmt.Fprintf(GinkgoWriter, "incremental: %d changed records of %d; the chain restored %d records equal\n",
			changed, len(atIncremental), len(atIncremental))

		By("a compressed, encrypted backup to S3-compatible storage with its credentials from a Secret, restored over the copy from its path: every record again")
		source = scanRecords("src")
		const secretValue = "s3-secret-value-never-shown"
		applyYAML(fmt.Sprintf(`apiVersion: v1
kind: Secret
metadata:
  name: s3-creds
  namespace: %[1]s
stringData:
  AWS_ACCESS_KEY_ID: acko
  AWS_SECRET_ACCESS_KEY: %[2]s
---
apiVersion: v1
kind: Secret
metadata:
  name: backup-key
  namespace: %[1]s
stringData:
  key: %[4]s
---
%[3]s%[5]s`, ns, secretValue, s3BackupYAML(ns, "offsite", "s3-creds"), encryptionKey, sealedFiles))
		Eventually(func() (string, error) {
			return field(ns, "asbk/offsite", `{.status.backups[?(@.id=="first")].phase}`)
		}).WithTimeout(2 * time.Minute).WithPolling(time.Second).Should(Equal("Succeeded"))
		Expect(mustField(ns, "asbk/offsite", `{.status.backups[?(@.id=="first")].path}`)).To(Equal("s3://acko-backups/prod/offsite/first"))
		Expect(mustField(ns, "asbk/offsite", `{.status.backups[?(@.id=="first")].records}`)).To(Equal(strconv.Itoa(len(source))))
		// Restored by where the files are, as a backup made elsewhere would be: no AerospikeBackup named.
		applyYAML(fmt.Sprintf(`apiVersion: acko.io/v1alpha1
kind: AerospikeRestore
metadata:
  name: from-offsite
  namespace: %s
spec:
  cluster: dst
  conflictPolicy: NoGeneration
  source:
    s3:
      bucket: acko-backups
      path: prod/offsite/first
      region: eu-west-1
      endpoint: %s
      credentialsSecret: s3-creds
    namespaces: [test]
%s`, ns, opts.S3URL(), sealedFiles))
		Eventually(func() (string, error) { return field(ns, "asrs/from-offsite", "{.status.phase}") }).
			WithTimeout(2 * time.Minute).WithPolling(time.Second).Should(Equal("Succeeded"))
		Expect(mustField(ns, "asrs/from-offsite", "{.status.restored}")).To(Equal(strconv.Itoa(len(source))),
			"NoGeneration writes every record")
		Expect(scanRecords("dst")).To(Equal(source))
		for _, shown := range []string{kubectl("get", "asbk,asrs", "-n", ns, "-o", "yaml"),
			kubectl("get", "events", "-n", ns, "-o", "yaml")} {
			Expect(shown).NotTo(ContainSubstring(secretValue), "no Secret content in status or events")
		}

		By("an S3 destination whose Secret does not exist: the run fails at once with the kubelet's reason")
		applyYAML(s3BackupYAML(ns, "nocreds", "missing"))
		Eventually(func() (string, error) {
			return field(ns, "asbk/nocreds", `{.status.backups[?(@.id=="first")].message}`)
		}).WithTimeout(time.Minute).WithPolling(time.Second).Should(ContainSubstring(
			`cannot start: CreateContainerConfigError: secret "missing" not found`))
		Expect(eventMessages(ns, "nocreds", "BackupFailed")).To(ContainElement(ContainSubstring(`secret "missing" not found`)))
	})
})

// sealedFiles is spec.files of a compressed, encrypted backup (and of its restore), with the key of
// the Secret backup-key.
const sealedFiles = `  files:
    compression: ZSTD
    encryption:
      algorithm: AES256
      keySecret: backup-key
`

// encryptionKey is the key in backup-key: any bytes, base64-encoded, as the tools read it.
const encryptionKey = "c2l4dGVlbi1ieXRlLWtleS1vZi1hY2tvLWUyZSE="

// touched is how many records of a cluster touchRecords changes.
const touched = 25

// touchRecords rewrites the first touched records (by digest) of among that a cluster of
// backupNamespace holds with a bin of their own: updates of records a full backup holds.
func touchRecords(name, mark string, among map[string]as.BinMap) {
	GinkgoHelper()
	c := clientOf(name)
	defer c.Close()
	rs, err := c.ScanAll(nil, "test", "")
	Expect(err).NotTo(HaveOccurred())
	var keys []*as.Key
	for r := range rs.Results() {
		Expect(r.Err).NotTo(HaveOccurred())
		if _, ok := among[recordID(r.Record.Key)]; ok {
			keys = append(keys, r.Record.Key)
		}
	}
	slices.SortFunc(keys, func(a, b *as.Key) int { return bytes.Compare(a.Digest(), b.Digest()) })
	Expect(len(keys)).To(BeNumerically(">=", touched))
	for _, k := range keys[:touched] {
		Expect(c.Put(nil, k, as.BinMap{"touched": mark})).To(Succeed())
	}
}

// clientOf is the official client of a cluster of backupNamespace.
func clientOf(name string) *as.Client {
	GinkgoHelper()
	var hosts []*as.Host
	for _, seed := range podSeeds(backupNamespace, name) {
		host, _, _ := strings.Cut(seed, ":")
		hosts = append(hosts, as.NewHost(host, 3000))
	}
	policy := as.NewClientPolicy()
	policy.ClusterName = name
	c, err := as.NewClientWithPolicyAndHost(policy, hosts...)
	Expect(err).NotTo(HaveOccurred())
	return c
}

// recordID names a record as scanRecords does: set/digest.
func recordID(k *as.Key) string { return fmt.Sprintf("%s/%x", k.SetName(), k.Digest()) }

// s3BackupYAML is an AerospikeBackup of cluster src to the test bed's S3-compatible store, with one
// on-demand run, "first".
func s3BackupYAML(namespace, name, secret string) string {
	return fmt.Sprintf(`apiVersion: acko.io/v1alpha1
kind: AerospikeBackup
metadata:
  name: %s
  namespace: %s
spec:
  cluster: src
  destination:
    s3:
      bucket: acko-backups
      path: prod
      region: eu-west-1
      endpoint: %s
      credentialsSecret: %s
  runs:
  - id: first
`, name, namespace, opts.S3URL(), secret)
}

// backupYAML is an AerospikeBackup of a cluster onto the claim "backups", with one on-demand run, "first".
func backupYAML(namespace, name, cluster, schedule string) string {
	return fmt.Sprintf(`apiVersion: acko.io/v1alpha1
kind: AerospikeBackup
metadata:
  name: %s
  namespace: %s
spec:
  cluster: %s
  schedule: %q
  parallel: 2
  destination:
    volume:
      claimName: backups
      path: aerospike
  runs:
  - id: first
`, name, namespace, cluster, schedule)
}

// writeManifest writes a manifest to a file of the spec's, for kubectl apply -f.
func writeManifest(manifest string) string {
	GinkgoHelper()
	path := filepath.Join(GinkgoT().TempDir(), "manifest.yaml")
	Expect(os.WriteFile(path, []byte(manifest), 0o600)).To(Succeed())
	return path
}

// restoreYAML is an AerospikeRestore of one backup run into a cluster.
func restoreYAML(namespace, name, cluster, backupName, id string) string {
	return fmt.Sprintf(`apiVersion: acko.io/v1alpha1
kind: AerospikeRestore
metadata:
  name: %s
  namespace: %s
spec:
  cluster: %s
  backup:
    name: %s
    id: %s
`, name, namespace, cluster, backupName, id)
}

// scanRecords reads every record of namespace test of a cluster of backupNamespace with the official client: set and
// digest to bins.
func scanRecords(name string) map[string]as.BinMap {
	GinkgoHelper()
	c := clientOf(name)
	defer c.Close()
	rs, err := c.ScanAll(nil, "test", "")
	Expect(err).NotTo(HaveOccurred())
	out := map[string]as.BinMap{}
	for r := range rs.Results() {
		Expect(r.Err).NotTo(HaveOccurred())
		out[recordID(r.Record.Key)] = r.Record.Bins
	}
	return out
}
