package conffile

import (
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
)

// Community Edition's compiled-in limits on namespaces (AS_NAMESPACE_SZ, AS_ID_NAMESPACE_SZ - 1).
const (
	MaxNamespaces          = 2
	MaxNamespaceNameLength = 31
)

// enter checks a block as it opens: a namespace's name, and how many namespaces there are
// (as_namespace_create).
func (w *walker) enter(sec Section, n *Node) {
	if sec.Path != ctxNamespace {
		return
	}
	name := sec.Namespace
	switch {
	case len(name) > MaxNamespaceNameLength:
		w.problem(n.Line, "{%s} namespace name too long (max length is %d)", name, MaxNamespaceNameLength)
	case len(w.namespaces) >= MaxNamespaces:
		w.problem(n.Line, "too many namespaces (max is %d)", MaxNamespaces)
	case slices.Contains(w.namespaces, name):
		w.problem(n.Line, "{%s} duplicate namespace", name)
	}
	w.namespaces = append(w.namespaces, name)
}

// close checks what a block needs once it is complete, as asd does at its '}'.
func (w *walker) close(sec Section, n *Node) {
	switch sec.Path {
	case ctxNamespace:
		w.closeNamespace(sec, n)
	case "namespaces.[].storage-engine(type=memory)":
		w.closeMemory(sec, n)
	case "namespaces.[].storage-engine(type=device)":
		if !w.isSet(sec, "devices") && !w.isSet(sec, "files") {
			w.problem(n.End, "{%s} has no devices or files", sec.Namespace)
		}
		w.needFilesize(sec, n)
	case "network.heartbeat":
		interval, timeout, connect := w.intOr(sec, "interval", 150), w.intOr(sec, "timeout", 10),
			w.intOr(sec, "connect-timeout-ms", 500)
		if connect > interval*timeout/3 {
			w.problem(n.End, "'connect-timeout-ms' must be <= 'interval' * 'timeout' / 3")
		}
	case "network.fabric":
		if w.intOr(sec, "channel-rw-recv-threads", 16)%w.intOr(sec, "channel-rw-recv-pools", 1) != 0 {
			w.problem(n.End, "'channel-rw-recv-threads' must be a multiple of 'channel-rw-recv-pools'")
		}
	}
}

func (w *walker) closeNamespace(sec Section, n *Node) {
	engines := 0
	for _, c := range n.Children {
		if c.Name == "storage-engine" {
			engines++
			if engines == 2 {
				w.problem(c.Line, "{%s} can only configure one 'storage-engine'", sec.Namespace)
			}
		}
	}
	if engines == 0 {
		w.problem(n.End, "{%s} must configure 'storage-engine'", sec.Namespace)
	}
	if w.intOr(sec, "default-ttl", 0) != 0 && w.intOr(sec, "nsup-period", 0) == 0 &&
		w.valueOr(sec, "allow-ttl-without-nsup", "false") != "true" {
		w.problem(n.End, "{%s} must configure non-zero 'nsup-period' or 'allow-ttl-without-nsup' true if "+
			"'default-ttl' is non-zero", sec.Namespace)
	}
}

func (w *walker) closeMemory(sec Section, n *Node) {
	backed := w.isSet(sec, "devices") || w.isSet(sec, "files")
	sized := w.intOr(sec, "data-size", 0) != 0
	switch {
	case !backed && !sized:
		w.problem(n.End, "{%s} must configure 'data-size' if not using storage backing", sec.Namespace)
	case backed && sized:
		w.problem(n.End, "{%s} can't configure 'data-size' if using storage backing", sec.Namespace)
	default:
		if msg, refused := FlushSizeWithoutBacking(sec.Namespace, w.values(sec)); refused {
			w.problem(n.End, "%s", msg)
		}
	}
	w.needFilesize(sec, n)
}

func (w *walker) needFilesize(sec Section, n *Node) {
	if w.isSet(sec, "files") && w.intOr(sec, "filesize", 0) == 0 {
		w.problem(n.End, "{%s} must configure 'filesize' if using storage files", sec.Namespace)
	}
}

// fileEnd checks what the whole file needs once it is read; asd names no line for these.
func (w *walker) fileEnd() {
	if w.valueOr(Section{Path: ctxService, Blocks: []string{ctxService}}, "cluster-name", "") == "" {
		w.problem(0, "must configure 'cluster-name'")
	}
	if len(w.namespaces) == 0 {
		w.problem(0, "must configure at least one namespace")
	}
	for _, need := range []struct{ block, msg string }{
		{"service", "no service ports configured"},
		{"heartbeat", "no heartbeat ports configured"},
		{"fabric", "no fabric ports configured"},
	} {
		sec := Section{Blocks: []string{ctxNetwork, need.block}}
		if w.intOr(sec, "port", 0) == 0 {
			w.problem(0, "%s", need.msg)
		}
	}
}

// startUp checks what asd refuses after it has read the whole file, as it sets the node up.
func (w *walker) startUp() {
	service := Section{Path: ctxService, Blocks: []string{ctxService}}
	var addresses []string
	if s, ok := w.lookup(Section{Blocks: []string{ctxNetwork, ctxService}}, "addresses"); ok {
		addresses = s.Values
	}
	if msg, refused := AutoPin(w.values(service), addresses); refused {
		w.problems = append(w.problems, Problem{Context: "hardware", Msg: msg})
	}
}

// values reads a block's settings for a rule, in the server's units.
func (w *walker) values(sec Section) Values {
	return func(name string) (string, bool) {
		s, ok := w.lookup(sec, name)
		if !ok {
			return "", false
		}
		return strings.ToLower(s.ServerValue()), true
	}
}

func (w *walker) lookup(sec Section, name string) (*Setting, bool) {
	i, ok := w.index[Setting{Section: sec, Name: name}.Key()]
	if !ok {
		return nil, false
	}
	return &w.settings[i], true
}

func (w *walker) isSet(sec Section, name string) bool {
	_, ok := w.lookup(sec, name)
	return ok
}

// valueOr is a setting's value in the server's units, or def when the file does not set it.
func (w *walker) valueOr(sec Section, name, def string) string {
	s, ok := w.lookup(sec, name)
	if !ok {
		return def
	}
	return strings.ToLower(s.ServerValue())
}

func (w *walker) intOr(sec Section, name string, def int64) int64 {
	n, err := strconv.ParseInt(w.valueOr(sec, name, strconv.FormatInt(def, 10)), 10, 64)
	if err != nil {
		return def
	}
	return n
}

// Values is what a rule reads of one stanza: a parameter's value in the server's units (lower case),
// and whether the stanza sets it. The file check reads a block of aerospike.conf with it; the
// validator an object of aerospikeConfig, so that both hold a config to the same rule.
type Values func(name string) (string, bool)

// FlushSizeWithoutBacking is asd's refusal of a storage-engine memory stanza that sets flush-size
// without devices or files to flush to.
func FlushSizeWithoutBacking(namespace string, memory Values) (string, bool) {
	_, devices := memory("devices")
	_, files := memory("files")
	if _, flush := memory("flush-size"); !flush || devices || files {
		return "", false
	}
	return fmt.Sprintf("{%s} can't configure 'flush-size' if not using storage backing", namespace), true
}

// AutoPin is asd's refusal of auto-pinning (service auto-pin other than none) unless the service
// binds to network interfaces by name (cf_topo_config): addresses are the service's address lines.
// "any" and IP addresses are never an interface's name; another name depends on the host's
// interfaces, which a file check cannot see, so it passes.
func AutoPin(service Values, addresses []string) (string, bool) {
	if mode, set := service("auto-pin"); !set || mode == "none" {
		return "", false
	}
	if len(addresses) == 0 {
		return "auto-pinning requires binding the service to one or more network interfaces", true
	}
	for _, a := range addresses {
		if a == "any" || net.ParseIP(a) != nil {
			return fmt.Sprintf("auto-pinning requires binding the service to network interfaces; %q isn't a "+
				"network interface", a), true
		}
	}
	return "", false
}

// A real 8.1.2.0 server refuses to change microsecond-histograms while any enable-benchmarks-* is on.
const (
	MicrosecondHistograms = "microsecond-histograms"
	BenchmarksPrefix      = "enable-benchmarks-"
)

// BestPracticesFailed is asd's message when its host fails one of its best-practices checks (kernel and
// memory settings such as swappiness and transparent huge pages, read as it starts, after the file:
// as_config_post_process in cfg.c). With service enforce-best-practices true asd stops on it (CRITICAL,
// log context config); otherwise it logs it as a WARNING and goes on. Which host fails, no file check
// can see.
const BestPracticesFailed = "failed best-practices checks - see " +
	"'https://docs.aerospike.com/docs/operations/install/linux/bestpractices/index.html'"

// ceIgnored are the parameters Community Edition reads and then ignores, with the warning asd logs
// for each (its CE socket code: the value stays false, at start and through set-config).
var ceIgnored = map[string]Warning{
	"service.advertise-ipv6": {Context: "socket", Msg: "'advertise-ipv6' is relevant for enterprise only"},
}

// Warning is a line asd logs at WARNING level and goes on.
type Warning struct {
	Context, Msg string
}

// LogLine is asd's log line, e.g. "WARNING (socket): 'advertise-ipv6' is relevant for enterprise only".
func (w Warning) LogLine() string { return fmt.Sprintf("WARNING (%s): %s", w.Context, w.Msg) }

// IgnoredInCE returns asd's warning for a parameter (by table path) that Community Edition accepts
// and ignores: it keeps its default whatever the config says.
func IgnoredInCE(path string) (Warning, bool) {
	w, ok := ceIgnored[path]
	return w, ok
}
