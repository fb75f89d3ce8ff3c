package aerosim

import (
	"fmt"
	"io/fs"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/acko-io/acko/internal/config"
	"github.com/acko-io/acko/internal/config/conffile"
	"github.com/acko-io/acko/internal/config/params"
)

// A node started on a config holds its running values the way asd does, and answers get-config,
// set-config, log-set, logs and log/<id> as a real 8.1.2.0 server did (fixtures/.../dynamic). The
// lists get-config reports, and their order, are that server's answers: the values the node's file
// sets replace the server's, those the server's own file set and the node's does not go back to the
// table's defaults.

// Answers of the live config commands (dynamic/).
const (
	errInvalidSetConfig = "ERROR:4:invalid set-config parameter"
	errMissingContext   = "ERROR:4:missing 'context'"
	errInvalidContext   = "ERROR:4:invalid context"
	errNoNamespace      = "ERROR:20:namespace not found on node"
	errBadSinkID        = "ERROR::bad-id" // cf_log_get_all_levels
	// Not in the fixtures: a namespace context without an id, and a log-set asd refuses (the server
	// logs why; what it answers was not recorded).
	errMissingID     = "ERROR:4:missing 'id'"
	errInvalidLogSet = "ERROR:4:invalid log-set parameter"
	answerOK         = "ok"
	// recluster: as the fixtures' single node answered it (the principal); the others' answer and the
	// principal's refusal are asd's source (cmd_recluster: AS_ERR_UNKNOWN prints no number), and a real
	// 8.1.2.0 stuck in an exchange answered them so.
	reclusterIgnored = "ignored-by-non-principal"
	errRecluster     = "ERROR::unknown"
)

// Info contexts of get-config and set-config.
const (
	ctxService   = "service"
	ctxNetwork   = "network"
	ctxNamespace = "namespace"
)

// dynamicDir holds the real server's answers to the live config commands.
const dynamicDir = "dynamic"

// kvList is an ordered name=value list as get-config reports it.
type kvList struct {
	keys []string
	vals map[string]string
}

func parseKV(list string) *kvList {
	kv := &kvList{vals: map[string]string{}}
	for item := range strings.SplitSeq(list, ";") {
		k, v, _ := strings.Cut(item, "=")
		kv.set(k, v)
	}
	return kv
}

func (kv *kvList) set(k, v string) {
	if _, ok := kv.vals[k]; !ok {
		kv.keys = append(kv.keys, k)
	}
	kv.vals[k] = v
}

func (kv *kvList) String() string {
	items := make([]string, len(kv.keys))
	for i, k := range kv.keys {
		items[i] = k + "=" + kv.vals[k]
	}
	return strings.Join(items, ";")
}

func (kv *kvList) clone() *kvList {
	return &kvList{keys: slices.Clone(kv.keys), vals: maps.Clone(kv.vals)}
}

func (kv *kvList) equal(o *kvList) bool {
	return slices.Equal(kv.keys, o.keys) && maps.Equal(kv.vals, o.vals)
}

// logSink is a logging sink: its name in "logs" and its level of every log context.
type logSink struct {
	name   string
	levels []string // in logContexts order
}

// liveConfig is a node's running configuration.
type liveConfig struct {
	table      *params.Table
	contexts   map[string]*kvList // "service", "network", "namespace/<name>"
	namespaces []string
	engines    map[string]string // namespace → storage-engine type
	sinks      []logSink
	fdLimit    int64 // the container's open-file limit: proto-fd-max may not exceed it
}

// protoFdMax is the service parameter held to the open-file limit.
const protoFdMax = "proto-fd-max"

// on is how get-config shows a boolean that is set.
const on = "true"

func namespaceKey(ns string) string { return ctxNamespace + "/" + ns }

func (c *liveConfig) clone() *liveConfig {
	out := *c
	out.contexts = make(map[string]*kvList, len(c.contexts))
	for k, kv := range c.contexts {
		out.contexts[k] = kv.clone()
	}
	out.sinks = slices.Clone(c.sinks)
	for i := range out.sinks {
		out.sinks[i].levels = slices.Clone(c.sinks[i].levels)
	}
	return &out
}

func (c *liveConfig) equal(o *liveConfig) bool {
	if len(c.contexts) != len(o.contexts) || len(c.sinks) != len(o.sinks) {
		return false
	}
	for k, kv := range c.contexts {
		if ov, ok := o.contexts[k]; !ok || !kv.equal(ov) {
			return false
		}
	}
	for i := range c.sinks {
		if c.sinks[i].name != o.sinks[i].name || !slices.Equal(c.sinks[i].levels, o.sinks[i].levels) {
			return false
		}
	}
	return true
}

// serverTemplates are the real server's get-config lists, its log contexts, and the settings of the
// file it ran.
type serverTemplates struct {
	service, network, namespace *kvList
	logContexts                 []string
	settings                    []conffile.Setting
}

var loadServer = sync.OnceValues(func() (*serverTemplates, error) {
	read := func(name string) (string, error) {
		b, err := fs.ReadFile(Fixtures(), dynamicDir+"/"+name)
		if err != nil {
			return "", err
		}
		if strings.HasSuffix(name, ".conf") {
			return string(b), nil
		}
		_, value, ok := splitAnswer(b)
		if !ok {
			return "", fmt.Errorf("fixture %s is not one \"cmd\\tvalue\\n\" line", name)
		}
		return value, nil
	}
	var t serverTemplates
	lists := map[string]**kvList{"get-config-service.txt": &t.service, "get-config-network.txt": &t.network,
		"get-config-namespace-test.txt": &t.namespace}
	for name, dst := range lists {
		v, err := read(name)
		if err != nil {
			return nil, err
		}
		*dst = parseKV(v)
	}
	levels, err := read("log-0.txt")
	if err != nil {
		return nil, err
	}
	for item := range strings.SplitSeq(levels, ";") {
		ctx, _, _ := strings.Cut(item, ":")
		t.logContexts = append(t.logContexts, ctx)
	}
	text, err := read("aerospike.conf")
	if err != nil {
		return nil, err
	}
	f, err := conffile.Parse(text)
	if err != nil {
		return nil, err
	}
	t.settings = conffile.Settings(f, params.Newest())
	return &t, nil
})

// tableFor is the parameter table of the server version the image runs (the newest for a tag that
// names none).
func tableFor(image string) *params.Table {
	t, _, err := config.TableFor(image)
	if err != nil {
		return params.Newest()
	}
	return t
}

// loadConfig is asd reading its config at start on the node's host: a file it refuses is an error
// with asd's message (a conffile.Problem), else its cluster, its mesh, its identity, its running
// values and the warnings asd logs.
func loadConfig(text string, spec NodeSpec, host podHost) (nodeConfig, *liveConfig, []string, error) {
	f, err := conffile.Parse(text)
	if err != nil {
		return nodeConfig{}, nil, nil, err
	}
	table := tableFor(spec.Image)
	if problems := conffile.Check(f, table); len(problems) > 0 {
		return nodeConfig{}, nil, nil, problems[0]
	}
	settings := conffile.Settings(f, table)
	server, err := loadServer()
	if err != nil {
		return nodeConfig{}, nil, nil, err
	}
	var warnings []string
	for _, s := range settings {
		if w, ignored := conffile.IgnoredInCE(s.Param.Path); ignored {
			warnings = append(warnings, w.LogLine())
		}
	}
	live := newLive(table, server, settings)
	live.fdLimit = spec.OpenFileLimit
	// as_config_post_process: cf_crash(AS_CFG, "%lu system file descriptors not enough, config specified %d")
	if fdMax, _ := strconv.ParseInt(live.contexts[ctxService].vals[protoFdMax], 10, 64); fdMax > spec.OpenFileLimit {
		return nodeConfig{}, nil, nil,
			fmt.Errorf("%d system file descriptors not enough, config specified %d", spec.OpenFileLimit, fdMax)
	}
	conf := meshConfig(settings)
	// Next in as_config_post_process: the node id, then the access addresses.
	if conf.ident, err = host.identity(settings); err != nil {
		return nodeConfig{}, nil, nil, err
	}
	live.contexts[ctxService].set("node-id", conf.ident.nodeID)
	// The host checks come last, once asd has read and set up its config.
	if !spec.HostPassesBestPractices {
		if live.contexts[ctxService].vals["enforce-best-practices"] == on {
			return nodeConfig{}, nil, nil, conffile.Problem{Msg: conffile.BestPracticesFailed}
		}
		warnings = append(warnings, conffile.Warning{Context: "config", Msg: conffile.BestPracticesFailed}.LogLine())
	}
	return conf, live, warnings, nil
}

// meshConfig is who the node clusters with.
func meshConfig(settings []conffile.Setting) nodeConfig {
	conf := nodeConfig{hbPort: heartbeatPort}
	for _, s := range settings {
		switch s.Section.Path + "." + s.Name {
		case "service.cluster-name":
			conf.clusterName = s.Values[0]
		case "network.heartbeat.port":
			conf.hbPort, _ = strconv.Atoi(s.Values[0])
		case "network.heartbeat.mesh-seed-address-ports":
			for _, v := range s.Values {
				host, port, _ := strings.Cut(v, " ")
				p, _ := strconv.Atoi(port)
				conf.seeds = append(conf.seeds, seedAddr{host: host, port: p})
			}
		}
	}
	return conf
}

// newLive builds the running values of a node that read settings (all but its node id).
func newLive(table *params.Table, server *serverTemplates, settings []conffile.Setting) *liveConfig {
	c := &liveConfig{table: table, engines: map[string]string{}, contexts: map[string]*kvList{
		ctxService: server.service.clone(), ctxNetwork: server.network.clone()}}
	for _, s := range settings {
		if ns := s.Section.Namespace; ns != "" && c.contexts[namespaceKey(ns)] == nil {
			c.namespaces = append(c.namespaces, ns)
			c.contexts[namespaceKey(ns)] = server.namespace.clone()
		}
		if typ, ok := engineType(s.Section.Path); ok {
			c.engines[s.Section.Namespace] = typ
		}
	}
	// What the server's own file set goes back to the default, unless the node's file sets it too.
	for _, s := range server.settings {
		name, ok := s.InfoName()
		if !ok {
			continue
		}
		for _, kv := range c.lists(name.Context, "") {
			kv.set(name.Get, defaultText(s.Param))
		}
	}
	for ns, typ := range c.engines {
		c.contexts[namespaceKey(ns)].set("storage-engine", typ)
	}
	for _, s := range settings {
		if _, ignored := conffile.IgnoredInCE(s.Param.Path); ignored {
			continue // Community Edition keeps its default
		}
		if name, ok := s.InfoName(); ok {
			for _, kv := range c.lists(name.Context, name.ID) {
				kv.set(name.Get, s.ServerValue())
			}
		}
	}
	c.sinks = logSinks(server.logContexts, settings)
	return c
}

// lists are the get-config lists of a context: a namespace's, or with no namespace named, every
// namespace's (the server's namespace settings apply to each of the node's).
func (c *liveConfig) lists(context, namespace string) []*kvList {
	switch {
	case context != ctxNamespace:
		return []*kvList{c.contexts[context]}
	case namespace != "":
		return []*kvList{c.contexts[namespaceKey(namespace)]}
	}
	out := make([]*kvList, 0, len(c.namespaces))
	for _, ns := range c.namespaces {
		out = append(out, c.contexts[namespaceKey(ns)])
	}
	return out
}

func engineType(path string) (string, bool) {
	rest, ok := strings.CutPrefix(path, "namespaces.[].storage-engine(type=")
	if !ok {
		return "", false
	}
	return strings.TrimSuffix(rest, ")"), true
}

// defaultText is a parameter's default as get-config prints it.
func defaultText(p *params.Param) string {
	switch v := p.Default.(type) {
	case bool:
		return strconv.FormatBool(v)
	case float64:
		return strconv.FormatInt(int64(v), 10)
	case string:
		if v != "" {
			return v
		}
	}
	return "null"
}

// logSinks are the file's logging sinks: "stderr" for the console, a file's path; every context at
// CRITICAL until a context line sets it ("any" sets them all).
func logSinks(contexts []string, settings []conffile.Setting) []logSink {
	var sinks []logSink
	index := map[string]int{}
	for _, s := range settings {
		if s.Section.Sink == "" {
			continue
		}
		i, ok := index[s.Section.Sink]
		if !ok {
			i = len(sinks)
			index[s.Section.Sink] = i
			name, _ := strings.CutPrefix(s.Section.Sink, "file ")
			if name == "console" {
				name = "stderr"
			}
			sinks = append(sinks, logSink{name: name, levels: slices.Repeat([]string{"CRITICAL"}, len(contexts))})
		}
		setLevel(contexts, sinks[i].levels, s.Name, s.Values[0])
	}
	return sinks
}

// setLevel sets a context's level ("any": every context); false for an unknown context or level.
func setLevel(contexts, levels []string, ctx, level string) bool {
	level = strings.ToUpper(level)
	if !slices.Contains([]string{"CRITICAL", "WARNING", "INFO", "DEBUG", "DETAIL"}, level) {
		return false
	}
	if ctx == "any" {
		for i := range levels {
			levels[i] = level
		}
		return true
	}
	i := slices.IndexFunc(contexts, func(c string) bool { return strings.EqualFold(c, ctx) })
	if i < 0 {
		return false
	}
	levels[i] = level
	return true
}
