package conffile

import (
	"fmt"
	"slices"
	"strings"

	"github.com/acko-io/acko/internal/config/params"
)

// Contexts the rules look at.
const (
	ctxService   = "service"
	ctxNetwork   = "network"
	ctxNamespace = "namespaces.[]"
	// infoNamespace is the info protocol's context of a namespace's parameters.
	infoNamespace = "namespace"
)

// Problem is something in the file that stops asd when it starts.
type Problem struct {
	// Line is where asd stops; 0 when asd names no line (a missing cluster-name).
	Line int
	// Msg is asd's message after "line N :: ".
	Msg string
	// Context is the log context asd stops in: "config" when empty (the file's own checks);
	// "hardware" for the checks asd makes as it sets the node up after reading the file.
	Context string
}

func (p Problem) String() string {
	if p.Line == 0 {
		return p.Msg
	}
	return fmt.Sprintf("line %d :: %s", p.Line, p.Msg)
}

// Error makes a problem the error of a start that failed.
func (p Problem) Error() string { return p.String() }

// LogLine is asd's log line for the problem, e.g. "CRITICAL (config): line 3 :: 'rack-id' is enterprise-only".
func (p Problem) LogLine() string {
	ctx := p.Context
	if ctx == "" {
		ctx = "config"
	}
	return fmt.Sprintf("CRITICAL (%s): %s", ctx, p)
}

// Section is the block a setting is in.
type Section struct {
	// Path is the tables' context path: "service", "network.heartbeat", "logging.[]", "namespaces.[]",
	// "namespaces.[].storage-engine(type=memory)", "namespaces.[].sets.[]".
	Path string
	// Blocks are the headers of the enclosing blocks, outermost first ("namespace test",
	// "storage-engine memory").
	Blocks []string
	// Namespace, Set and Sink name the namespace, the set and the logging sink ("console", "file <path>",
	// "syslog") the setting belongs to, when it is inside one.
	Namespace, Set, Sink string
}

func (s Section) child(path, header string) Section {
	s.Path = path
	s.Blocks = append(slices.Clip(s.Blocks), header)
	return s
}

// Setting is one parameter of the file.
type Setting struct {
	// Line is the line that set it last (the first, for a list).
	Line    int
	Section Section
	// Name is the parameter's name in the tables: "proto-fd-max", "mesh-seed-address-ports" (gathering
	// the mesh-seed-address-port lines), or for a logging sink the log context ("any").
	Name  string
	Param *params.Param
	// Values are the values as written: one for a single value, one per line for a list.
	Values []string
}

// Key identifies the setting within its file: the enclosing blocks and the name,
// "namespace test/storage-engine memory/data-size".
func (s Setting) Key() string {
	return strings.Join(append(slices.Clip(s.Section.Blocks), s.Name), "/")
}

// ServerValue is the value in the server's units (see params.Param.ServerValue); a list's values are
// joined by commas.
func (s Setting) ServerValue() string {
	out := make([]string, 0, len(s.Values))
	for _, v := range s.Values {
		if sv, err := s.Param.ServerValue(v); err == nil {
			v = sv
		}
		out = append(out, v)
	}
	return strings.Join(out, ",")
}

// Check reports, in file order, what stops asd when it starts with this file, with asd's messages:
// names the table does not have, values of the wrong type, out of bounds or not allowed,
// Enterprise-only parameters and blocks, required settings that are missing, and Community Edition's
// limits (2 namespaces; replication-factor at most 8). asd stops at the first of them.
func Check(f *File, t *params.Table) []Problem { return walk(f, t).problems }

// Settings lists the parameters of the file that the table knows, in file order. A list parameter's
// lines make one setting; a parameter given twice keeps its last value, as asd does.
func Settings(f *File, t *params.Table) []Setting { return walk(f, t).settings }

// walker maps a file onto a table once, collecting settings and problems.
type walker struct {
	t          *params.Table
	problems   []Problem
	settings   []Setting
	index      map[string]int // Key → settings index
	namespaces []string
}

func walk(f *File, t *params.Table) *walker {
	w := &walker{t: t, index: map[string]int{}}
	for _, n := range f.Nodes {
		w.node(Section{}, n)
	}
	w.fileEnd()
	w.startUp()
	return w
}

func (w *walker) problem(line int, format string, args ...any) {
	w.problems = append(w.problems, Problem{Line: line, Msg: fmt.Sprintf(format, args...)})
}

func (w *walker) node(sec Section, n *Node) {
	if n.Block {
		w.block(sec, n)
		return
	}
	w.line(sec, n)
}

// block opens the section a block names and walks its nodes. Like asd, an Enterprise-only or unknown
// block stops the walk of its contents.
func (w *walker) block(sec Section, n *Node) {
	child, ok := w.open(sec, n)
	if !ok {
		return
	}
	if w.t.EnterpriseOnlyContext(child.Path) {
		w.problem(n.Line, "'%s' is enterprise-only", n.Name)
		return
	}
	w.enter(child, n)
	for _, c := range n.Children {
		w.node(child, c)
	}
	w.close(child, n)
}

// open resolves a block's header to the tables' context: a plain context ("service",
// "network.heartbeat"), an element of a list ("namespace test" is namespaces.[]), a variant
// ("storage-engine memory") or a logging sink.
func (w *walker) open(sec Section, n *Node) (Section, bool) {
	header := n.Header()
	path := join(sec.Path, n.Name)
	switch {
	case sec.Path == "" && n.Name == "logging":
		return sec.child("logging", header), true
	case sec.Path == "logging":
		return w.openSink(sec, n)
	case len(w.t.Children(path)) > 0:
		return sec.child(path, header), true
	}
	if list, ok := w.listContext(sec.Path, n.Name); ok {
		if len(n.Args) == 0 {
			w.problem(n.Line, "%s must have a value specified", n.Name)
			return Section{}, false
		}
		child := sec.child(list, header)
		switch list {
		case ctxNamespace:
			child.Namespace = n.Args[0]
		case "namespaces.[].sets.[]":
			child.Set = n.Args[0]
		}
		return child, true
	}
	if w.hasVariants(sec.Path, n.Name) {
		if len(n.Args) > 0 && w.t.IsContext(variant(path, n.Args[0])) {
			return sec.child(variant(path, n.Args[0]), header), true
		}
		w.problem(n.Line, "%s has unknown value '%s'", n.Name, strings.Join(n.Args, " "))
		return Section{}, false
	}
	w.problem(n.Line, "unknown config parameter name '%s'", n.Name)
	return Section{}, false
}

func (w *walker) openSink(sec Section, n *Node) (Section, bool) {
	switch n.Name {
	case "console", "syslog":
	case "file":
		if len(n.Args) == 0 {
			w.problem(n.Line, "file must have a value specified")
			return Section{}, false
		}
	default:
		w.problem(n.Line, "unknown config parameter name '%s'", n.Name)
		return Section{}, false
	}
	child := sec.child("logging.[]", n.Header())
	child.Sink = n.Header()
	return child, true
}

// listContext finds the list a block is an element of: "namespace" is namespaces.[], "set" is
// sets.[], "dc" is dcs.[], "tls" is tls.[].
func (w *walker) listContext(ctx, name string) (string, bool) {
	for _, plural := range []string{name + "s", name + "es", name} {
		if p := join(ctx, plural) + ".[]"; w.t.IsContext(p) {
			return p, true
		}
	}
	return "", false
}

// hasVariants reports a block chosen by its type: storage-engine, index-type, sindex-type.
func (w *walker) hasVariants(ctx, name string) bool {
	return slices.ContainsFunc(w.t.Children(ctx), func(c string) bool { return strings.HasPrefix(c, name+"(") })
}

// line checks one parameter line and records it.
func (w *walker) line(sec Section, n *Node) {
	if sec.Path == "logging.[]" && n.Name == "context" {
		w.logContext(sec, n)
		return
	}
	p, list := w.param(sec.Path, n.Name)
	if p == nil {
		w.notAParameter(sec, n)
		return
	}
	if p.EnterpriseOnly {
		w.problem(n.Line, "'%s' is enterprise-only", n.Name)
		return
	}
	value := n.Value()
	if !list && len(n.Args) > 0 {
		value = n.Args[0] // asd reads the first value token of a single-valued parameter
	}
	if err := w.checkValue(p, n, value); err != "" {
		w.problem(n.Line, "%s", err)
		return
	}
	w.record(sec, p, n.Line, value, list)
}

// param finds the parameter a line sets: by its name, or the list parameter its repeated lines
// build ("mesh-seed-address-port" lines are mesh-seed-address-ports, "device" lines devices). A list
// is never written by its plural name.
func (w *walker) param(ctx, name string) (p *params.Param, list bool) {
	if p, ok := w.t.Lookup(join(ctx, name)); ok && LineName(p) == name {
		return p, p.Type == params.StringList
	}
	for _, plural := range []string{name + "s", name + "es"} {
		if p, ok := w.t.Lookup(join(ctx, plural)); ok && LineName(p) == name {
			return p, true
		}
	}
	return nil, false
}

// LineName is the name aerospike.conf spells a parameter with: a list the tables name in the plural
// is one line per element in the singular ("addresses" is "address" lines, "devices" "device" lines).
func LineName(p *params.Param) string {
	name := p.Name()
	switch {
	case p.Type != params.StringList:
		return name
	case strings.HasSuffix(name, "sses"):
		return strings.TrimSuffix(name, "es")
	}
	return strings.TrimSuffix(name, "s")
}

// notAParameter reports a line that names no parameter: a block written without '{', or an unknown name.
func (w *walker) notAParameter(sec Section, n *Node) {
	path := join(sec.Path, n.Name)
	if len(w.t.Children(path)) > 0 || w.hasVariants(sec.Path, n.Name) {
		if w.t.EnterpriseOnlyContext(path) || w.hasVariants(sec.Path, n.Name) && len(n.Args) > 0 &&
			w.t.EnterpriseOnlyContext(variant(path, n.Args[0])) {
			w.problem(n.Line, "'%s' is enterprise-only", n.Name)
			return
		}
		w.problem(n.Line, "'%s' opens a block: write '%s {' and close it with '}'", n.Name, n.Header())
		return
	}
	w.problem(n.Line, "unknown config parameter name '%s'", n.Name)
}

// checkValue returns asd's message for a value it refuses, or "".
func (w *walker) checkValue(p *params.Param, n *Node, value string) string {
	if err := p.CheckText(value); err != nil {
		if p.Path == "logging.[].facility" {
			return fmt.Sprintf("can't add logging facility %s", value)
		}
		if ve, ok := err.(*params.ValueError); ok {
			return ve.ServerMessage()
		}
		return err.Error()
	}
	if p.Name() == "mesh-seed-address-ports" {
		return seedPort(n)
	}
	return ""
}

// seedPort checks a mesh seed's port, its second token (cfg_port_val2).
func seedPort(n *Node) string {
	port, _ := params.Newest().Lookup("network.heartbeat.port")
	text := ""
	if len(n.Args) > 1 {
		text = n.Args[1]
	}
	if text == "" {
		return n.Name + " must specify an unsigned integer value"
	}
	if err := port.CheckText(text); err != nil {
		return strings.Replace(err.(*params.ValueError).ServerMessage(), "port", n.Name, 1)
	}
	return ""
}

// logContext checks "context <log context> <level>" in a logging sink.
func (w *walker) logContext(sec Section, n *Node) {
	ctx, level := "", ""
	if len(n.Args) > 0 {
		ctx = n.Args[0]
	}
	if len(n.Args) > 1 {
		level = n.Args[1]
	}
	p, ok := w.t.Lookup(join(sec.Path, ctx))
	if !ok || len(p.Enum) == 0 || !slices.Contains(p.Enum, level) || p.EnterpriseOnly {
		w.problem(n.Line, "can't add logging context %s %s", ctx, level)
		return
	}
	w.settingAt(sec, ctx, p, n.Line).Values = []string{level}
}

func (w *walker) record(sec Section, p *params.Param, line int, value string, list bool) {
	s := w.settingAt(sec, p.Name(), p, line)
	if list {
		s.Values = append(s.Values, value)
		return
	}
	s.Line, s.Values = line, []string{value}
}

// settingAt returns the setting of that name in the section, adding it at line if it is new.
func (w *walker) settingAt(sec Section, name string, p *params.Param, line int) *Setting {
	s := Setting{Line: line, Section: sec, Name: name, Param: p}
	if i, ok := w.index[s.Key()]; ok {
		return &w.settings[i]
	}
	w.index[s.Key()] = len(w.settings)
	w.settings = append(w.settings, s)
	return &w.settings[len(w.settings)-1]
}

func join(ctx, name string) string {
	if ctx == "" {
		return name
	}
	return ctx + "." + name
}

func variant(path, typ string) string { return path + "(type=" + typ + ")" }
