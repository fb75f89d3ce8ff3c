// Package live works out how a running Aerospike node takes a new config: either every changed
// parameter is dynamic, and Plan lists the info commands that apply it (set-config, log-set) with the
// reads that confirm each (get-config, log/<id>), or the change needs a restart, and Plan says why.
//
// The commands follow what a real Aerospike CE 8.1.2.0 server answered
// (../shared/fixtures/aerospike-ce-8.1.2.0/dynamic): several parameters of one context go in one
// set-config; a namespace's storage-engine parameters are set without their "storage-engine." prefix
// and read back with it; network parameters are set and read as <sub-context>.<name>; logging is not a
// set-config context (log-set:id=<sink>;<context>=<level>, sinks listed by "logs", levels by
// log/<id>); values go in the server's units (1G is 1073741824); a namespace's default-ttl needs
// nsup-period above 0 first. Everything here is pure: the caller sends the commands, outside Reconcile.
package live

import (
	"fmt"
	"slices"
	"strings"

	"github.com/acko-io/acko/internal/config/conffile"
	"github.com/acko-io/acko/internal/config/params"
)

// Plan is how a node goes from the config it runs to the desired one.
type Plan struct {
	// Restart says why the change needs a restart of the node; when it is not empty, Steps and Logging
	// are empty: nothing is applied live (Together still names the replication-factors that change).
	Restart []string
	// Steps apply the change live, in order: a set-config request each, with its read-backs.
	Steps []Step
	// Logging are log level changes, applied with log-set once the sink's id is known (see SinkID).
	Logging []LogLevel
	// Together are changes every node of the cluster must have before the cluster rebalances: a
	// namespace's replication-factor. Set on one node, it takes effect at the next rebalance, and a
	// cluster whose nodes disagree on it abandons that exchange (a real 8.1.2.0 server logs "{test} has
	// unmatched replication factors from 2 to 3" and "abandoned exchange - fix configuration conflict").
	// So they go to every node, then the cluster reclusters once (the caller's part).
	Together []Step
	// Factors are the new replication-factors that Together sets, by namespace.
	Factors map[string]string
}

// Live reports a change each node takes with no restart, on its own (an empty plan is live: there is
// nothing to do).
func (p Plan) Live() bool { return len(p.Restart) == 0 && len(p.Together) == 0 }

// Empty reports no change at all.
func (p Plan) Empty() bool {
	return len(p.Restart) == 0 && len(p.Steps) == 0 && len(p.Logging) == 0 && len(p.Together) == 0
}

// Step is one info request and the reads that confirm it took effect.
type Step struct {
	// Command is the request: "set-config:context=service;proto-fd-max=20000".
	Command string
	// Confirm are the values the server must report afterwards.
	Confirm []Read
}

// Read is a value to read back after a step.
type Read struct {
	// Command is the request that reports it: "get-config:context=service", "log/0".
	Command string
	// Name and Value are the entry of the answer that must be there: "proto-fd-max" "20000",
	// "storage-engine.defrag-lwm-pct" "60", "misc" "INFO".
	Name, Value string
	// anyCase: log/<id> reports levels in capitals.
	anyCase bool
	// every: the read is of log context "any", which log/<id> never lists: every context it lists
	// must report Value, except those in later (set by a later line of the sink).
	every bool
	later []string
}

// Confirmed reports whether an answer to the Read's Command holds its value. The answer may be the
// body alone or the whole response line ("<request>\t<body>\n").
func (r Read) Confirmed(answer string) bool {
	if _, body, found := strings.Cut(answer, "\t"); found {
		answer = body
	}
	answer = strings.TrimRight(answer, "\n")
	if strings.HasPrefix(answer, "ERROR") {
		return false
	}
	seen := false
	for _, entry := range strings.Split(answer, ";") {
		sep := strings.IndexAny(entry, "=:")
		if sep < 0 {
			continue
		}
		name, got := entry[:sep], entry[sep+1:]
		same := got == r.Value || r.anyCase && strings.EqualFold(got, r.Value)
		switch {
		case r.every && !slices.Contains(r.later, name):
			if !same {
				return false
			}
			seen = true
		case !r.every && name == r.Name:
			return same
		}
	}
	return seen
}

// LogLevel is a log context's new level in one logging sink.
type LogLevel struct {
	// Sink is the sink as the "logs" command names it: "stderr" for the console, a file's path.
	Sink    string
	Context string
	Level   string
	// Later, for context "any", are the contexts later lines of the sink set again: "any" sets every
	// context, and log/<id> confirms it by the level of every other one (it never lists "any").
	Later []string
}

// contextAny is the log context that stands for every context.
const contextAny = "any"

// Step is the log-set request for the sink whose id "logs" reported.
func (l LogLevel) Step(sinkID string) Step {
	return Step{
		Command: fmt.Sprintf("log-set:id=%s;%s=%s", sinkID, l.Context, l.Level),
		Confirm: []Read{{Command: "log/" + sinkID, Name: l.Context, Value: strings.ToUpper(l.Level), anyCase: true,
			every: l.Context == contextAny, later: l.Later}},
	}
}

// SinkID finds a sink's id in the answer to "logs" ("0:stderr;1:/var/log/aerospike.log").
func SinkID(logs, sink string) (string, bool) {
	if _, body, found := strings.Cut(logs, "\t"); found {
		logs = body
	}
	for _, entry := range strings.Split(strings.TrimRight(logs, "\n"), ";") {
		if id, name, ok := strings.Cut(entry, ":"); ok && name == sink {
			return id, true
		}
	}
	return "", false
}

// Compute plans the change from the config a node runs to the desired one, both rendered
// aerospike.conf texts, against the table of the node's server version. The mesh seeds are no change
// (config.Hash leaves them out: a running node needs none). It is an error when a text does not parse,
// or when the server would refuse the desired config.
func Compute(running, desired string, t *params.Table) (Plan, error) {
	from, err := load(running, t)
	if err != nil {
		return Plan{}, fmt.Errorf("the running config: %w", err)
	}
	to, err := load(desired, t)
	if err != nil {
		return Plan{}, fmt.Errorf("the desired config: %w", err)
	}
	if problems := conffile.Check(to.file, t); len(problems) > 0 {
		return Plan{}, fmt.Errorf("the server refuses the desired config: %s", problems[0])
	}
	d := differ{from: from, to: to, fromBlocks: from.blocks(), toBlocks: to.blocks()}
	d.sections()
	d.settings()
	together, factors := make([]Step, 0, len(d.together)), map[string]string{}
	for _, s := range d.together {
		in, _ := s.InfoName()
		together = append(together, setConfig(group{context: in.Context, id: in.ID, phase: phaseChange},
			[]conffile.Setting{s}))
		factors[in.ID] = s.ServerValue()
	}
	if len(d.restart) > 0 {
		for _, s := range d.together {
			d.restartFor("%s changes with a change that needs a restart: a node restarted with another "+
				"replication-factor does not rejoin the others, so it must change alone", s.Key())
		}
		return Plan{Restart: d.restart, Together: together, Factors: factors}, nil
	}
	return Plan{Steps: d.steps(), Logging: d.logLevels(), Together: together, Factors: factors}, nil
}

// config is a parsed file with its settings by key, in file order.
type config struct {
	file     *conffile.File
	settings map[string]conffile.Setting
	order    []string
}

func load(text string, t *params.Table) (config, error) {
	f, err := conffile.Parse(text)
	if err != nil {
		return config{}, err
	}
	c := config{file: f, settings: map[string]conffile.Setting{}}
	for _, s := range conffile.Settings(f, t) {
		if s.Name == seedsName {
			continue // seeds are no change
		}
		c.settings[s.Key()] = s
		c.order = append(c.order, s.Key())
	}
	return c, nil
}

const seedsName = "mesh-seed-address-ports"

// blocks lists the headers of a file's blocks, with their path ("namespace test", "namespace
// test/storage-engine memory", "logging/console").
func (c config) blocks() []string {
	var out []string
	var walk func(prefix string, nodes []*conffile.Node)
	walk = func(prefix string, nodes []*conffile.Node) {
		for _, n := range nodes {
			if n.Block {
				out = append(out, prefix+n.Header())
				walk(prefix+n.Header()+"/", n.Children)
			}
		}
	}
	walk("", c.file.Nodes)
	return out
}

// differ collects what changes between two configs.
type differ struct {
	from, to             config
	fromBlocks, toBlocks []string
	restart              []string
	// live are the changed settings a set-config applies, in the desired file's order.
	live []conffile.Setting
	// logging are the changed log levels, in the desired file's order.
	logging []conffile.Setting
	// together are the changed settings every node must have before the next rebalance.
	together []conffile.Setting
}

func (d *differ) restartFor(format string, args ...any) {
	d.restart = append(d.restart, fmt.Sprintf(format, args...))
}

// sections: a namespace, a storage engine, a set or a logging sink added or removed changes what the
// server built at start.
func (d *differ) sections() {
	from, to := d.fromBlocks, d.toBlocks
	for _, b := range from {
		if !slices.Contains(to, b) && !covered(b, to, from) && !parameterGroup(b) {
			d.restartFor("%s is removed: the server builds it only at start", b)
		}
	}
	for _, b := range to {
		if !slices.Contains(from, b) && !covered(b, from, to) && !parameterGroup(b) {
			d.restartFor("%s is added: the server builds it only at start", b)
		}
	}
}

// covered: a block inside one that is itself added or removed is not reported again.
func covered(block string, other, same []string) bool {
	for i := strings.LastIndex(block, "/"); i > 0; i = strings.LastIndex(block[:i], "/") {
		if parent := block[:i]; slices.Contains(same, parent) && !slices.Contains(other, parent) {
			return true
		}
	}
	return false
}

// settings compares every parameter: a change applies live only when the parameter is dynamic and
// has a live form known to work.
func (d *differ) settings() {
	for _, key := range d.from.order {
		if _, kept := d.to.settings[key]; !kept && d.blockKept(key) {
			d.restartFor("%s is removed: a restart restores its default (a running server keeps the value it "+
				"has, and the table's default is not always the server's)", key)
		}
	}
	for _, key := range d.to.order {
		s := d.to.settings[key]
		old, had := d.from.settings[key]
		switch {
		case had && old.ServerValue() == s.ServerValue():
		case !d.blockKept(key):
			// its block is new: reported by sections
		default:
			d.change(key, s, old, had)
		}
	}
}

// blockKept reports whether the block holding a setting is in both files (a parameter group counts
// as its enclosing block).
func (d *differ) blockKept(key string) bool {
	i := strings.LastIndex(key, "/")
	if i < 0 {
		return true
	}
	block := key[:i]
	if parameterGroup(block) {
		return d.blockKept(block)
	}
	return slices.Contains(d.fromBlocks, block) && slices.Contains(d.toBlocks, block)
}

// parameterGroup is a block the server builds nothing for: a namespace's geo2dsphere-within
// parameters exist, at their defaults, whether the file writes the block or not.
func parameterGroup(block string) bool {
	return strings.HasSuffix(block, "/geo2dsphere-within")
}

// ReplicationFactorPath is the parameter the tables call static that a real 8.1.2.0 server takes live
// (set-config:context=namespace;id=test;replication-factor=3 answered ok and get-config reported it), on
// the node that gets it, from the next rebalance on.
const ReplicationFactorPath = "namespaces.[].replication-factor"

// allNodesTogether are dynamic parameters that must not differ between nodes: set one node at a time,
// they split the cluster, so they change by restart.
var allNodesTogether = map[string]string{
	"service.cluster-name": "nodes join by cluster name (the webhook refuses the change)",
	"network.heartbeat.interval": "every node of the cluster must change it at once, which a node-by-node " +
		"change cannot do",
	"network.heartbeat.timeout": "every node of the cluster must change it at once, which a node-by-node " +
		"change cannot do",
	"network.heartbeat.protocol": "every node of the cluster must change it at once, which a node-by-node " +
		"change cannot do",
}

func (d *differ) change(key string, s, old conffile.Setting, had bool) {
	what := fmt.Sprintf("%s changes to %s", key, s.ServerValue())
	if had {
		what = fmt.Sprintf("%s changes from %s to %s", key, old.ServerValue(), s.ServerValue())
	}
	in, known := s.InfoName()
	switch {
	case s.Param.Path == ReplicationFactorPath:
		d.together = append(d.together, s)
	case !s.Param.Dynamic:
		d.restartFor("%s: the server reads it only at start", what)
	case allNodesTogether[s.Param.Path] != "":
		d.restartFor("%s: %s", what, allNodesTogether[s.Param.Path])
	case s.Section.Path == "logging.[]":
		d.logChange(what, s)
	case !known || in.Set == "":
		d.restartFor("%s: no live form of it is known to work", what)
	default:
		d.live = append(d.live, s)
	}
}

func (d *differ) logChange(what string, s conffile.Setting) {
	if _, ok := sinkName(s.Section.Sink); !ok {
		d.restartFor("%s: the %s sink's live form is not known", what, s.Section.Sink)
		return
	}
	d.logging = append(d.logging, s)
}

// sinkName is a sink as the "logs" command names it: "stderr" for the console, a file's path.
func sinkName(sink string) (string, bool) {
	switch {
	case sink == "console":
		return "stderr", true
	case strings.HasPrefix(sink, "file "):
		return strings.TrimPrefix(sink, "file "), true
	}
	return "", false
}

// logLevels are the log-set changes, sink by sink. asd reads a sink's context lines in order at start,
// "any" setting every context; set live, "any" does the same. So a sink whose "any" changes, or whose
// changed context comes before its "any" line (which then overrides it), gets all its lines again in
// the file's order: "any", then the contexts after it; otherwise only the changed contexts are set.
func (d *differ) logLevels() []LogLevel {
	var out []LogLevel
	done := map[string]bool{}
	for _, changed := range d.logging {
		sink := changed.Section.Sink
		if done[sink] {
			continue
		}
		done[sink] = true
		lines := d.sinkLines(sink)
		anyAt := slices.IndexFunc(lines, func(s conffile.Setting) bool { return s.Name == contextAny })
		replay := anyAt >= 0 && slices.ContainsFunc(d.logging, func(s conffile.Setting) bool {
			return s.Section.Sink == sink && s.Line <= lines[anyAt].Line
		})
		if !replay {
			lines = slices.DeleteFunc(lines, func(s conffile.Setting) bool {
				return !slices.ContainsFunc(d.logging, func(c conffile.Setting) bool { return c.Key() == s.Key() })
			})
		}
		name, _ := sinkName(sink)
		for i, s := range lines {
			l := LogLevel{Sink: name, Context: s.Name, Level: s.Values[0]}
			if s.Name == contextAny {
				for _, after := range lines[i+1:] {
					l.Later = append(l.Later, after.Name)
				}
			}
			out = append(out, l)
		}
	}
	return out
}

// sinkLines are the desired file's context lines of a sink, in file order.
func (d *differ) sinkLines(sink string) []conffile.Setting {
	var lines []conffile.Setting
	for _, key := range d.to.order {
		if s := d.to.settings[key]; s.Section.Path == "logging.[]" && s.Section.Sink == sink {
			lines = append(lines, s)
		}
	}
	slices.SortStableFunc(lines, func(a, b conffile.Setting) int { return a.Line - b.Line })
	return lines
}

// group is one set-config request: a context (and namespace), in an apply phase.
type group struct {
	context, id string
	phase       int
}

// Apply phases. Of a namespace's parameters: expiry needs a running nsup, so nsup-period (or
// allow-ttl-without-nsup) goes on before default-ttl changes and off after. Across every context: the
// server refuses to change microsecond-histograms while any enable-benchmarks-* is on, so the benchmark
// histograms and microsecond-histograms go off before every other change (phaseFirst) and on after them
// (phaseLast).
const (
	phaseFirst = iota
	phaseEnable
	phaseChange
	phaseDisable
	phaseLast
)

// rank orders the phases that cross contexts before the contexts' own order.
func rank(phase int) int {
	switch phase {
	case phaseFirst:
		return 0
	case phaseLast:
		return 2
	}
	return 1
}

// contextOrder: the service first, then the network, then the namespaces in the file's order.
var contextOrder = map[string]int{"service": 0, "network": 1, "namespace": 2}

// steps groups the live changes into set-config requests.
func (d *differ) steps() []Step {
	var groups []group
	members := map[group][]conffile.Setting{}
	firstSeen := map[string]int{}
	for _, s := range d.live {
		in, _ := s.InfoName()
		g := group{context: in.Context, id: in.ID, phase: phaseOf(s)}
		if _, ok := firstSeen[g.context+"/"+g.id]; !ok {
			firstSeen[g.context+"/"+g.id] = len(firstSeen)
		}
		if _, ok := members[g]; !ok {
			groups = append(groups, g)
		}
		members[g] = append(members[g], s)
	}
	slices.SortStableFunc(groups, func(a, b group) int {
		if rank(a.phase) != rank(b.phase) {
			return rank(a.phase) - rank(b.phase)
		}
		if a.context != b.context {
			return contextOrder[a.context] - contextOrder[b.context]
		}
		if a.id != b.id {
			return firstSeen[a.context+"/"+a.id] - firstSeen[b.context+"/"+b.id]
		}
		return a.phase - b.phase
	})
	steps := make([]Step, 0, len(groups))
	for _, g := range groups {
		steps = append(steps, setConfig(g, members[g]))
	}
	return steps
}

// phaseOf orders nsup-period and allow-ttl-without-nsup around a namespace's other changes, and the
// histogram switches around every change.
func phaseOf(s conffile.Setting) int {
	if name := s.Param.Name(); name == conffile.MicrosecondHistograms || strings.HasPrefix(name, conffile.BenchmarksPrefix) {
		if s.ServerValue() == "true" {
			return phaseLast
		}
		return phaseFirst
	}
	switch v := s.ServerValue(); s.Param.Path {
	case "namespaces.[].nsup-period":
		if v == "0" {
			return phaseDisable
		}
		return phaseEnable
	case "namespaces.[].allow-ttl-without-nsup":
		if v == "false" {
			return phaseDisable
		}
		return phaseEnable
	}
	return phaseChange
}

// setConfig is one set-config request for settings of one context, and the get-config reads that
// confirm them.
func setConfig(g group, settings []conffile.Setting) Step {
	selector := "context=" + g.context
	if g.id != "" {
		selector += ";id=" + g.id
	}
	slices.SortFunc(settings, func(a, b conffile.Setting) int {
		ai, _ := a.InfoName()
		bi, _ := b.InfoName()
		return strings.Compare(ai.Set, bi.Set)
	})
	step := Step{Command: "set-config:" + selector}
	for _, s := range settings {
		in, _ := s.InfoName()
		step.Command += ";" + in.Set + "=" + s.ServerValue()
		step.Confirm = append(step.Confirm, Read{Command: "get-config:" + selector, Name: in.Get, Value: s.ServerValue()})
	}
	return step
}
