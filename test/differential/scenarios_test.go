package differential

import (
	"context"
	"errors"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	ackov1alpha1 "github.com/acko-io/acko/api/v1alpha1"
	"github.com/acko-io/acko/internal/aerospike"
	"github.com/acko-io/acko/internal/config"
	"github.com/acko-io/acko/internal/config/conffile"
	"github.com/acko-io/acko/internal/config/live"
	"github.com/acko-io/acko/internal/config/params"
	"github.com/acko-io/acko/internal/liveconfig"
	"github.com/acko-io/acko/test/testcluster"
)

// entry is one thing the operator reads, normalised: what was asked where, and the answer.
type entry struct{ key, value string }

// transcript is what a run of the scenarios read, in order.
type transcript struct {
	b       backend
	pods    []string
	info    *aerospike.Client
	entries []entry
}

func (tr *transcript) add(key, format string, args ...any) {
	tr.entries = append(tr.entries, entry{key, fmt.Sprintf(format, args...)})
}

var hexKey = regexp.MustCompile(`^[0-9A-F]{1,16}$`)

// normalise replaces the nodes' addresses by their index.
func (tr *transcript) normalise(answer string) string {
	for i, ip := range tr.b.ips() {
		answer = strings.ReplaceAll(answer, ip+":", fmt.Sprintf("IP%d:", i))
	}
	return answer
}

// normaliseKey replaces a cluster key (cluster-stable's answer) by KEY.
func normaliseKey(answer string) string {
	if hexKey.MatchString(answer) && answer != "0" {
		return "KEY"
	}
	return answer
}

// ask sends one command to node i and returns its normalised answer (or the error).
func (tr *transcript) ask(ctx context.Context, i int, cmd string) string {
	answers, err := tr.info.Info(ctx, tr.b.addr(i), cmd)
	if err != nil {
		return "error: " + err.Error()
	}
	if strings.HasPrefix(cmd, "cluster-stable:") {
		return normaliseKey(answers[cmd])
	}
	return tr.normalise(answers[cmd])
}

// record asks node i and adds the answer under scenario/pod/command.
func (tr *transcript) record(ctx context.Context, scenario string, i int, cmd string) {
	tr.add(scenario+"/"+tr.pods[i]+"/"+cmd, "%s", tr.ask(ctx, i, cmd))
}

func (tr *transcript) stats(ctx context.Context, i int, cmd string) map[string]string {
	answers, err := tr.info.Info(ctx, tr.b.addr(i), cmd)
	if err != nil {
		return map[string]string{}
	}
	return aerospike.ParseKV(answers[cmd])
}

// waitStable waits until every node answers cluster-stable for all of them with one key.
func (tr *transcript) waitStable(ctx context.Context, deadline time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, deadline)
	defer cancel()
	cmd := aerospike.ClusterStableCommand(nodes, false)
	for {
		keys := map[string]bool{}
		for i := range nodes {
			answers, err := tr.info.Info(ctx, tr.b.addr(i), cmd)
			if err == nil {
				if key, err := aerospike.ParseClusterStable(answers[cmd]); err == nil {
					keys[key] = true
					continue
				}
			}
			keys[""] = true
		}
		if len(keys) == 1 && !keys[""] {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("no stable cluster of %d after %s", nodes, deadline)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// stableInfo: the info commands the operator sends to a stable cluster, and its parser's reading.
func (tr *transcript) stableInfo(ctx context.Context) error {
	const sc = "stable"
	if err := tr.waitStable(ctx, time.Minute); err != nil {
		return err
	}
	for i := range nodes {
		facts, err := aerospike.ReadNodeFacts(ctx, tr.info, tr.b.addr(i), nodes, true)
		key := sc + "/" + tr.pods[i] + "/ReadNodeFacts"
		if err != nil {
			tr.add(key, "error: %v", err)
		} else {
			tr.add(key, "node=%s build=%s size=%d integrity=%t migrating=%d stable=%s stableErr=%v std=%s alt=%s uptime>=0:%t",
				facts.NodeID, facts.Build, facts.ClusterSize, facts.ClusterIntegrity, facts.MigratePartitionsRemaining,
				normaliseKey(facts.ClusterStableKey), facts.ClusterStableErr, tr.normalise(facts.ServiceStd),
				tr.normalise(facts.ServiceAlt), facts.Uptime >= 0)
			tr.add(sc+"/"+tr.pods[i]+"/cluster-stable key is statistics' cluster_key", "%t",
				facts.ClusterStableKey == facts.ClusterKey)
		}
		for _, cmd := range []string{"node", "build", "namespaces", "logs", "log/0", "quiesce:", "cluster-stable:",
			aerospike.ClusterStableCommand(nodes+1, false), aerospike.ClusterStableCommand(nodes, true),
			aerospike.ClusterStableCommand(nodes-1, true)} {
			tr.record(ctx, sc, i, cmd)
		}
		ns := tr.stats(ctx, i, "namespace/test")
		for _, k := range []string{"ns_cluster_size", "replication-factor", "effective_replication_factor"} {
			tr.add(sc+"/"+tr.pods[i]+"/namespace/test "+k, "%s", ns[k])
		}
	}
	return nil
}

// observation is what the nodes showed while the cluster changed: the answers seen, not their timing.
type observation struct {
	sizes    map[int]map[string]bool // node → cluster_size values seen
	stable   map[int]map[string]bool // node → cluster-stable answers seen
	migrated bool                    // migrate_partitions_remaining above 0 somewhere
}

func (o observation) seen(i int, what map[int]map[string]bool) string {
	vals := make([]string, 0, len(what[i]))
	for v := range what[i] {
		vals = append(vals, v)
	}
	slices.Sort(vals)
	return strings.Join(vals, ",")
}

// watch polls every node until done (or the deadline), recording what they answer.
func (tr *transcript) watch(ctx context.Context, deadline time.Duration, done func() bool) (observation, error) {
	o := observation{sizes: map[int]map[string]bool{}, stable: map[int]map[string]bool{}}
	ctx, cancel := context.WithTimeout(ctx, deadline)
	defer cancel()
	cmd := aerospike.ClusterStableCommand(nodes, false)
	for {
		for i := range nodes {
			if o.sizes[i] == nil {
				o.sizes[i], o.stable[i] = map[string]bool{}, map[string]bool{}
			}
			answers, err := tr.info.Info(ctx, tr.b.addr(i), "statistics", cmd)
			if err != nil {
				o.stable[i]["no answer"] = true
				continue
			}
			kv := aerospike.ParseKV(answers["statistics"])
			o.sizes[i][kv["cluster_size"]] = true
			o.stable[i][normaliseKey(answers[cmd])] = true
			o.migrated = o.migrated || kv["migrate_partitions_remaining"] != "0"
		}
		if done() {
			return o, nil
		}
		select {
		case <-ctx.Done():
			return o, fmt.Errorf("not done after %s", deadline)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// warmRestart: cluster-stable and the migration counters through a warm restart of one node.
func (tr *transcript) warmRestart(ctx context.Context) error {
	const sc, restarted = "warm-restart", 1
	if err := tr.b.warmRestart(restarted); err != nil {
		return err
	}
	start := time.Now()
	reset := false // the restarted node answered an uptime counted from the signal at most
	o, err := tr.watch(ctx, time.Minute, func() bool {
		if uptime, err := strconv.Atoi(tr.stats(ctx, restarted, "statistics")["uptime"]); err == nil {
			reset = reset || uptime <= int(time.Since(start).Seconds())
		}
		return reset && tr.waitStable(ctx, time.Millisecond) == nil
	})
	if err != nil {
		return err
	}
	// Not the timings: whether the others drop the restarting node for a moment depends on how long its
	// asd takes to stop (a loaded machine: longer than the heartbeat timeout).
	for i := range nodes {
		key := sc + "/" + tr.pods[i]
		if i == restarted {
			tr.add(key+"/answered cluster_size 0", "%t", o.sizes[i]["0"])
		} else {
			tr.add(key+"/cluster_size seen", "never below %d: %t", nodes-1, !o.sizes[i]["0"] && !o.sizes[i]["1"])
		}
		tr.add(key+"/answered unstable", "%t", o.stable[i]["ERROR:7:unstable cluster"])
		delete(o.stable[i], "ERROR:7:unstable cluster")
		delete(o.stable[i], "ERROR:7:cluster not specified size")
		delete(o.stable[i], "KEY")
		delete(o.stable[i], "no answer")
		tr.add(key+"/other cluster-stable answers", "%s", o.seen(i, o.stable))
	}
	tr.add(sc+"/migrations seen", "%t", o.migrated)
	return nil
}

// The log lines the operator's stuck-exchange handling reads.
var exchangeLines = []string{"has unmatched replication factors from 2 to 3", "abandoned exchange - fix configuration conflict"}

// asdPrefix is what a line starts with before its message: the time, and the source position
// ("(exchange.c:1234) ") where asd prints one.
var asdPrefix = regexp.MustCompile(`^[A-Z][a-z]{2} \d{2} \d{4} \d{2}:\d{2}:\d{2} GMT: ([A-Z]+ \([a-z_-]+\): )(\([a-z_]+\.c:\d+\) )?`)

// logged is the normalised log lines of node i holding any of the texts.
func (tr *transcript) logged(i int, texts []string) ([]string, error) {
	lines, err := tr.b.logLines(i)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, l := range lines {
		for _, text := range texts {
			if strings.Contains(l, text) {
				out = append(out, asdPrefix.ReplaceAllString(l, "$1"))
			}
		}
	}
	return out, nil
}

// replicationFactorDisagreement: the new factor set live on every node, then one node crashed (the
// others drop it) and started again with the old factor in its file (the others' files have the new
// one): the stuck exchange, and its end by restarting that node once its file has the new factor. A
// crash, not a warm restart: whether the others drop a warm-restarting node depends on how long its
// asd takes to stop, and the stuck cluster keeps the last membership (its size and principal).
func (tr *transcript) replicationFactorDisagreement(ctx context.Context, files []string) error {
	const sc, odd = "rf-disagreement", 2
	rf3, err := withReplicationFactor3(files)
	if err != nil {
		return err
	}
	for i := range nodes {
		tr.record(ctx, sc, i, "set-config:context=namespace;id=test;replication-factor=3")
		if i != odd {
			if err := tr.b.writeConfig(i, rf3[i]); err != nil {
				return err
			}
		}
	}
	if err := tr.returnOnTheOldFactor(ctx, odd); err != nil {
		return err
	}
	if err := tr.stuckAnswers(ctx, sc+"/stuck"); err != nil {
		return err
	}
	// The new factor set on the odd node too changes nothing.
	tr.record(ctx, sc+"/stuck", odd, "set-config:context=namespace;id=test;replication-factor=3")
	time.Sleep(3 * time.Second)
	for i := range nodes {
		tr.record(ctx, sc+"/stuck-after-set", i, aerospike.ClusterStableCommand(nodes, false))
	}
	return tr.endStuckExchange(ctx, sc, odd, rf3[odd])
}

// withReplicationFactor3 is each rendered file with replication-factor 3 instead of 2.
func withReplicationFactor3(files []string) ([]string, error) {
	rf3 := make([]string, len(files))
	for i, f := range files {
		rf3[i] = strings.Replace(f, "replication-factor 2\n", "replication-factor 3\n", 1)
		if rf3[i] == f {
			return nil, errors.New("the rendered file sets no replication-factor 2")
		}
	}
	return rf3, nil
}

// returnOnTheOldFactor crashes the odd node, waits until the others drop it, starts it again on its
// old file and waits until the exchange is stuck on every node.
func (tr *transcript) returnOnTheOldFactor(ctx context.Context, odd int) error {
	if err := tr.b.crash(odd); err != nil {
		return err
	}
	if _, err := tr.watch(ctx, 30*time.Second, func() bool {
		return tr.stats(ctx, 0, "statistics")["cluster_size"] == strconv.Itoa(nodes-1)
	}); err != nil {
		return fmt.Errorf("the others after the crash of %s: %w", tr.pods[odd], err)
	}
	if err := tr.b.start(odd); err != nil {
		return err
	}
	var logErr error
	stuck := func() bool {
		for i := range nodes {
			lines, err := tr.logged(i, exchangeLines)
			if logErr = err; err != nil || len(lines) < len(exchangeLines) {
				return false
			}
		}
		return true
	}
	if _, err := tr.watch(ctx, 45*time.Second, stuck); err != nil {
		return errors.Join(err, logErr)
	}
	// Stuck on every node, not just logged: until the newcomer's exchange, the two it came back to are
	// a cluster of two of their own (cluster-stable:size=3 is "cluster not specified size" there).
	if _, err := tr.watch(ctx, 30*time.Second, func() bool {
		return tr.ask(ctx, 0, aerospike.ClusterStableCommand(nodes, false)) == "ERROR:7:unstable cluster"
	}); err != nil {
		return fmt.Errorf("the exchange with the newcomer: %w", err)
	}
	return nil
}

// endStuckExchange restarts the odd node on the new factor and records the one cluster that follows.
func (tr *transcript) endStuckExchange(ctx context.Context, sc string, odd int, rf3File string) error {
	if err := tr.b.writeConfig(odd, rf3File); err != nil {
		return err
	}
	if err := tr.b.warmRestart(odd); err != nil {
		return err
	}
	start := time.Now()
	if _, err := tr.watch(ctx, 90*time.Second, func() bool {
		return time.Since(start) > 3*time.Second && tr.waitStable(ctx, time.Millisecond) == nil
	}); err != nil {
		return fmt.Errorf("the odd node restarted with the new factor: %w", err)
	}
	for i := range nodes {
		ns := tr.stats(ctx, i, "namespace/test")
		tr.add(sc+"/ended/"+tr.pods[i]+"/namespace/test", "replication-factor=%s effective_replication_factor=%s ns_cluster_size=%s",
			ns["replication-factor"], ns["effective_replication_factor"], ns["ns_cluster_size"])
	}
	return nil
}

// stuckAnswers records what every node answers in the stuck exchange, and the exchange's log lines.
func (tr *transcript) stuckAnswers(ctx context.Context, sc string) error {
	for i := range nodes {
		for _, cmd := range []string{aerospike.ClusterStableCommand(nodes, false), "cluster-stable:", "recluster:"} {
			tr.record(ctx, sc, i, cmd)
		}
		tr.add(sc+"/"+tr.pods[i]+"/cluster_size", "%s", tr.stats(ctx, i, "statistics")["cluster_size"])
		lines, err := tr.logged(i, exchangeLines)
		if err != nil {
			return err
		}
		tr.add(sc+"/"+tr.pods[i]+"/log", "%s", strings.Join(lines, " | "))
	}
	return nil
}

// setConfigVerdicts: for every dynamic parameter Community Edition has and the operator can address
// live (a get-config and set-config name), the running value get-config reports, the answer to setting
// it to that value, and the answer to a value its type or bounds refuse.
func (tr *transcript) setConfigVerdicts(ctx context.Context) {
	const sc = "set-config"
	for _, p := range params.Newest().Params() {
		in, ok := liveName(p)
		if !ok {
			continue
		}
		selector := "context=" + in.Context
		if in.ID != "" {
			selector += ";id=" + in.ID
		}
		key := sc + "/" + p.Path
		current, found := tr.stats(ctx, 0, "get-config:"+selector)[in.Get]
		tr.add(key+" get-config", "%q found=%t", current, found)
		if found {
			tr.add(key+" same value", "%s", tr.ask(ctx, 0, "set-config:"+selector+";"+in.Set+"="+current))
		}
		if bad, ok := invalidValue(p); ok {
			tr.add(key+" "+bad, "%s", tr.ask(ctx, 0, "set-config:"+selector+";"+in.Set+"="+bad))
			tr.add(key+" after "+bad, "%q", tr.stats(ctx, 0, "get-config:"+selector)[in.Get])
		}
	}
}

// liveName is the parameter's info names in namespace test (memory), as the operator sends them: none
// for logging (log-set), lists, Enterprise-only parameters and other storage engines.
func liveName(p *params.Param) (conffile.InfoName, bool) {
	if !p.Dynamic || p.EnterpriseOnly || strings.HasPrefix(p.Path, "logging.") {
		return conffile.InfoName{}, false
	}
	section := p.Path[:strings.LastIndex(p.Path, ".")]
	if strings.HasPrefix(section, "namespaces.[].storage-engine(") && section != "namespaces.[].storage-engine(type=memory)" {
		return conffile.InfoName{}, false
	}
	in, ok := conffile.Setting{Section: conffile.Section{Path: section, Namespace: "test"}, Name: p.Name(), Param: p}.InfoName()
	return in, ok && in.Set != ""
}

// invalidValue is a value the parameter's type or bounds refuse (none for a free string).
func invalidValue(p *params.Param) (string, bool) {
	switch p.Type {
	case params.Boolean:
		return "maybe", true
	case params.Enum:
		return "nope", true
	case params.Integer:
		if p.Max != nil && *p.Max < math.MaxUint32 {
			return strconv.FormatInt(*p.Max+1, 10), true
		}
		if p.Min != nil && *p.Min > 0 {
			return strconv.FormatInt(*p.Min-1, 10), true
		}
		return "x1", true
	}
	return "", false
}

// liveByThePlan: the operator's plan of a live change (from node 0's file to one with a new
// proto-fd-max) goes to node 0 through the applier, while the pod's own copy is the new file already (a
// copy made before the pod recorded it): the applier sends the plan all the same, reads every value
// back, and the node reports the new value.
func (tr *transcript) liveByThePlan(ctx context.Context, cf clusterFiles) error {
	const sc = "live by the operator's plan"
	table, _, _ := config.TableFor(testcluster.Image)
	plan, err := live.Compute(cf.files[0], cf.live[0], table)
	if err != nil {
		return err
	}
	change := liveconfig.Change{From: config.Hash(cf.files[0]), To: config.Hash(cf.live[0]), Plan: &plan}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: tr.pods[0]},
		Spec:   corev1.PodSpec{Containers: []corev1.Container{{Name: ackov1alpha1.AerospikeContainerName, Image: testcluster.Image}}},
		Status: corev1.PodStatus{PodIP: tr.b.ips()[0]}}
	applier := &liveconfig.Applier{Pods: copiedAlready{conf: cf.live[0]}, Info: tr.info}
	applied, err := applier.Apply(ctx, pod, change)
	tr.add(sc+"/applied", "%s (error: %v)", applied, err)
	got := tr.stats(ctx, 0, "get-config:context=service")["proto-fd-max"]
	tr.add(sc+"/"+tr.pods[0]+"/proto-fd-max", "%s", got)
	if err != nil || got != "20000" {
		return fmt.Errorf("the node runs proto-fd-max=%s after the plan was applied (%q, %v)", got, applied, err)
	}
	return nil
}

// copiedAlready stands in for exec into a pod whose own copy of the config is the projected file.
type copiedAlready struct{ conf string }

func (c copiedAlready) ReadConfigs(context.Context, *corev1.Pod) (string, string, error) {
	return c.conf, c.conf, nil
}

func (copiedAlready) CopyConfig(context.Context, *corev1.Pod, string) error { return nil }

func (copiedAlready) PrepareRestart(context.Context, *corev1.Pod, string) error {
	return errors.New("a live change must never restart asd")
}

func (copiedAlready) SignalRestart(context.Context, *corev1.Pod) error {
	return errors.New("a live change must never restart asd")
}
