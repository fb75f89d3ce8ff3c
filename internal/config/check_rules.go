package config

import (
	"fmt"
	"strings"

	"github.com/acko-io/acko/internal/config/conffile"
	"github.com/acko-io/acko/internal/config/params"
)

// Rules across parameters. Where asd refuses at start, the rule is conffile's (the file check the
// simulator and the server-check tests run on rendered files), read here through values, so that the
// webhook and asd give one verdict with asd's line.

const (
	keyFlushSize            = "flush-size"
	keyAutoPin              = "auto-pin"
	keyEnforceBestPractices = "enforce-best-practices"
)

// values reads an object of aerospikeConfig in the table's context ctx as a conffile rule does: a
// value in the server's units. A value the table refuses (reported on its own) and an empty list
// (which renders nothing) read as absent.
func (k *checker) values(ctx string, m map[string]any) conffile.Values {
	return func(name string) (string, bool) {
		v, ok := m[name]
		if list, isList := v.([]any); !ok || v == nil || isList && len(list) == 0 {
			return "", false
		}
		text, _ := scalarString(v)
		if p, found := k.t.Lookup(ctx + "." + name); found && p.Type != params.StringList {
			sv, err := p.ServerValue(text)
			if err != nil {
				return "", false
			}
			text = sv
		}
		return strings.ToLower(text), true
	}
}

// checkFlushSize: asd refuses flush-size in a memory namespace without devices or files to flush to.
func (k *checker) checkFlushSize(i int, ns map[string]any) {
	se, _ := ns[keyStorageEngine].(map[string]any)
	if se[keyType] != engineMemory {
		return
	}
	name, _ := ns[keyName].(string)
	if msg, refused := conffile.FlushSizeWithoutBacking(name, k.values(storageContext(engineMemory), se)); refused {
		k.serverForbidden(i, []any{keyStorageEngine, keyFlushSize}, msg+": Aerospike refuses to start with it; "+
			"give the namespace devices or files, or remove flush-size")
	}
}

// checkAutoPin: asd pins only to a service bound to named network interfaces, and the operator always
// renders address any.
func (k *checker) checkAutoPin(rel []any, svc map[string]any) {
	if msg, refused := conffile.AutoPin(k.values(keyService, svc), []string{addressAny}); refused {
		k.serverForbidden(-1, at(rel, keyAutoPin), msg+": Aerospike refuses to start with it, and ACKO always "+
			"renders address any (so the pod IP works); leave auto-pin at none")
	}
}

// checkIgnoredInCE: a parameter Community Edition reads and ignores cannot take effect; like an
// Enterprise-only one, it is refused rather than left to look applied.
func (k *checker) checkIgnoredInCE(ns int, rel []any, path, key string) bool {
	w, ignored := conffile.IgnoredInCE(path)
	if ignored {
		k.serverForbidden(ns, rel, fmt.Sprintf("%s has no effect in Aerospike Community Edition, which keeps "+
			"its default: asd logs %q", key, w.Msg))
	}
	return ignored
}

// checkMicrosecondHistograms: the server starts with microsecond-histograms and benchmark histograms
// on together, but refuses to change microsecond-histograms while any enable-benchmarks-* is on (a
// real 8.1.2.0 server answered set-config with an error). ACKO refuses the pair, so that a later change
// of either never meets that refusal on a running cluster.
func (k *checker) checkMicrosecondHistograms(tree map[string]any) {
	svc, _ := tree[keyService].(map[string]any)
	if on, _ := k.values(keyService, svc)(conffile.MicrosecondHistograms); on != "true" {
		return
	}
	benchmark := k.benchmarkOn(keyService, svc, "the service")
	namespaces, _ := tree[keyNamespaces].([]any)
	for _, v := range namespaces {
		ns, _ := v.(map[string]any)
		se, _ := ns[keyStorageEngine].(map[string]any)
		typ, _ := se[keyType].(string)
		where := fmt.Sprintf("namespace %q", nameOf(v))
		if benchmark == "" {
			benchmark = k.benchmarkOn(ctxNamespace, ns, where)
		}
		if benchmark == "" {
			benchmark = k.benchmarkOn(storageContext(typ), se, where+"'s storage-engine")
		}
	}
	if benchmark == "" {
		return
	}
	k.serverForbidden(-1, []any{keyService, conffile.MicrosecondHistograms}, fmt.Sprintf("cannot be true while %s is "+
		"on: Aerospike refuses to change microsecond-histograms while any enable-benchmarks-* is on, so the "+
		"pair could not be changed on a running cluster; turn the benchmark histograms off, or leave "+
		"microsecond-histograms false", benchmark))
}

// benchmarkOn names the first enable-benchmarks-* parameter of a stanza that is true, or "".
func (k *checker) benchmarkOn(ctx string, m map[string]any, where string) string {
	get := k.values(ctx, m)
	for _, key := range sortedKeys(m) {
		if v, _ := get(key); strings.HasPrefix(key, conffile.BenchmarksPrefix) && v == "true" {
			return fmt.Sprintf("%s (%s)", key, where)
		}
	}
	return ""
}

// StartRefusalAdvice is what to do about the line asd stopped with at start (a container's last words),
// for the refusals that depend on the host rather than the config ("" for any other): the line alone
// does not say that the fix may be in the spec.
func StartRefusalAdvice(lastWords string) string {
	if strings.Contains(lastWords, conffile.BestPracticesFailed) {
		return "the host fails asd's best-practices checks (kernel and memory settings; asd's log names each) " +
			"and service.enforce-best-practices is true: set it to false, or prepare the hosts"
	}
	return ""
}

// enforceBestPracticesWarning: with enforce-best-practices, asd checks its host (kernel and memory
// settings) at start and stops when a check fails; what the nodes' hosts are, no admission check can
// see.
func enforceBestPracticesWarning(tree map[string]any) []string {
	svc, _ := tree[keyService].(map[string]any)
	if on, _ := scalarString(svc[keyEnforceBestPractices]); !strings.EqualFold(on, "true") {
		return nil
	}
	return []string{"service.enforce-best-practices: true makes asd check its host (kernel and memory settings) " +
		"when it starts and stop if a check fails, which cannot be checked before the pods run: a failed check " +
		"leaves the pod restarting, with asd's reason in its log; set it only for hosts you have prepared"}
}
