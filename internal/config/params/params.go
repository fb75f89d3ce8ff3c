// Package params holds the Aerospike server's own facts about its configuration parameters, one
// table per server version (tables/, with their provenance in tables/README.md), embedded in the
// binary: type, bounds, allowed values, default, whether the running server takes a change through
// set-config (dynamic), and whether Community Edition refuses it (Enterprise-only).
//
// Paths are those of the tables: the JSON shape of aerospikeConfig, "[]" for each element of a list
// ("namespaces.[].replication-factor") and "storage-engine(type=memory)" for a storage-engine variant.
package params

import (
	"bufio"
	"bytes"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"math"
	"path"
	"slices"
	"strconv"
	"strings"
)

//go:embed tables/*.tsv
var tableFS embed.FS

// Type is a parameter's type as the tables name it.
type Type string

// Parameter types.
const (
	Integer    Type = "integer"
	Boolean    Type = "boolean"
	String     Type = "string"
	StringList Type = "array<string>"
	Enum       Type = "enum"
)

// Param is one row of a table.
type Param struct {
	Path string
	Type Type
	// Min and Max bound an integer, inclusive; nil when the table gives no bound. A maximum beyond
	// int64 (the tables' 2^64-1) is kept as math.MaxInt64: no configuration value can exceed it.
	Min, Max *int64
	// Enum lists the allowed values of an enum (or of a string restricted to some values).
	Enum []string
	// Default is the server's default as the table gives it (decoded JSON; nil when absent).
	Default any
	// Dynamic: the running server accepts a change through set-config.
	Dynamic bool
	// EnterpriseOnly: Community Edition refuses the parameter (it stops the server at start).
	EnterpriseOnly bool
}

// Name is the last element of the parameter's path.
func (p *Param) Name() string { return p.Path[strings.LastIndex(p.Path, ".")+1:] }

// Context is the path of the object that holds the parameter.
func (p *Param) Context() string {
	i := strings.LastIndex(p.Path, ".")
	if i < 0 {
		return ""
	}
	return p.Path[:i]
}

// Table is the parameters of one server version.
type Table struct {
	Version Version
	params  map[string]*Param
	// children maps a context path to the names directly inside it (parameters and sub-contexts).
	children map[string][]string
	// eeOnly holds the contexts whose every parameter is enterprise-only.
	eeOnly map[string]bool
}

// Lookup finds a parameter by its path.
func (t *Table) Lookup(path string) (*Param, bool) {
	p, ok := t.params[path]
	return p, ok
}

// Params lists every parameter, sorted by path.
func (t *Table) Params() []*Param {
	out := make([]*Param, 0, len(t.params))
	for _, p := range t.params {
		out = append(out, p)
	}
	slices.SortFunc(out, func(a, b *Param) int { return strings.Compare(a.Path, b.Path) })
	return out
}

// IsContext reports whether path is an object that holds parameters ("service", "namespaces.[]",
// "namespaces.[].storage-engine(type=memory)", "network.heartbeat").
func (t *Table) IsContext(path string) bool {
	_, ok := t.children[path]
	return ok
}

// Children lists the names directly inside a context, sorted: parameters and sub-contexts.
func (t *Table) Children(context string) []string { return t.children[context] }

// Suggest returns the name inside context closest to name, for a "did you mean" hint: "" unless
// exactly one name is within a small edit distance.
func (t *Table) Suggest(context, name string) string {
	best, bestDist, ties := "", suggestLimit(name)+1, 0
	for _, c := range t.children[context] {
		c = variantBase(c)
		switch d := editDistance(name, c); {
		case d < bestDist:
			best, bestDist, ties = c, d, 0
		case d == bestDist && c != best:
			ties++
		}
	}
	if ties > 0 {
		return ""
	}
	return best
}

// suggestLimit is how many edits still make a plausible typo of name.
func suggestLimit(name string) int { return max(1, min(3, len(name)/4)) }

// variantBase drops a variant qualifier: "storage-engine(type=memory)" is "storage-engine".
func variantBase(name string) string {
	base, _, _ := strings.Cut(name, "(")
	return base
}

func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

var tables = mustLoad()

// Tables lists the embedded tables, oldest version first.
func Tables() []*Table { return slices.Clone(tables) }

// Newest is the table of the newest server version embedded.
func Newest() *Table { return tables[len(tables)-1] }

// Select picks the table that describes server version v: the newest table at or below it (a
// server 8.1.1.1 follows the 8.1.1 table). A version newer than every table uses the newest one
// and reports newer; a version older than every table is an error naming the supported versions.
func Select(v Version) (t *Table, newer bool, err error) {
	if v.Less(tables[0].Version) {
		return nil, false, fmt.Errorf("server version %s is not supported: ACKO supports server versions %s",
			v, SupportedVersions())
	}
	newest := Newest()
	if newest.Version.Less(v.Line()) {
		return newest, true, nil
	}
	for i := len(tables) - 1; i >= 0; i-- {
		if !v.Line().Less(tables[i].Version) {
			return tables[i], false, nil
		}
	}
	return newest, true, nil // unreachable: v is at least the oldest version
}

// SupportedVersions names the versions the tables describe, e.g. "8.0.0, 8.1.0, 8.1.1 and 8.1.2 (and
// newer, checked against 8.1.2)".
func SupportedVersions() string {
	names := make([]string, 0, len(tables))
	for _, t := range tables {
		names = append(names, t.Version.String())
	}
	last := names[len(names)-1]
	return fmt.Sprintf("%s and %s (and newer, checked against %s)", strings.Join(names[:len(names)-1], ", "), last, last)
}

func mustLoad() []*Table {
	out, err := load(tableFS)
	if err != nil {
		panic(err) // the tables are embedded: a broken one is a build defect, caught by the tests
	}
	return out
}

func load(fsys fs.FS) ([]*Table, error) {
	files, err := fs.Glob(fsys, "tables/server-*.tsv")
	if err != nil {
		return nil, err
	}
	var out []*Table
	for _, f := range files {
		v, err := ParseVersion(strings.TrimSuffix(strings.TrimPrefix(path.Base(f), "server-"), ".tsv"))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		data, err := fs.ReadFile(fsys, f)
		if err != nil {
			return nil, err
		}
		t, err := parseTable(v, data)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		out = append(out, t)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no parameter tables embedded")
	}
	slices.SortFunc(out, func(a, b *Table) int { return a.Version.Compare(b.Version) })
	return out, nil
}

var header = []string{"path", "type", "minimum", "maximum", "enum", "default", "dynamic", "enterprise_only"}

func parseTable(v Version, data []byte) (*Table, error) {
	t := &Table{Version: v, params: map[string]*Param{}, children: map[string][]string{}}
	sc := bufio.NewScanner(bytes.NewReader(data))
	line := 0
	for sc.Scan() {
		line++
		cols := strings.Split(sc.Text(), "\t")
		if line == 1 {
			if !slices.Equal(cols, header) {
				return nil, fmt.Errorf("header %q, want %q", cols, header)
			}
			continue
		}
		p, err := parseRow(cols)
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", line, err)
		}
		if prev, dup := t.params[p.Path]; dup {
			// The schemas list a few parameters twice (a string or a list of strings): one parameter.
			prev.EnterpriseOnly = prev.EnterpriseOnly || p.EnterpriseOnly
			continue
		}
		t.params[p.Path] = p
		t.addChild(p.Path)
	}
	for ctx := range t.children {
		slices.Sort(t.children[ctx])
		t.children[ctx] = slices.Compact(t.children[ctx])
	}
	t.eeOnly = enterpriseOnlyContexts(t.params)
	return t, sc.Err()
}

// enterpriseOnlyContexts are the contexts that hold parameters, all of them enterprise-only.
func enterpriseOnlyContexts(params map[string]*Param) map[string]bool {
	out := map[string]bool{}
	for path, p := range params {
		for i, c := range path {
			if c != '.' {
				continue
			}
			ctx := path[:i]
			if seen, ok := out[ctx]; !ok || seen {
				out[ctx] = p.EnterpriseOnly
			}
		}
	}
	maps.DeleteFunc(out, func(_ string, ee bool) bool { return !ee })
	return out
}

// EnterpriseOnlyContext reports whether every parameter inside ctx (at any depth) is
// enterprise-only, and there is one: Community Edition refuses the whole context.
func (t *Table) EnterpriseOnlyContext(ctx string) bool { return t.eeOnly[ctx] }

// addChild records every step of path as a child of the step before it.
func (t *Table) addChild(path string) {
	parts := strings.Split(path, ".")
	for i := 1; i < len(parts); i++ {
		ctx := strings.Join(parts[:i], ".")
		if parts[i] == "[]" {
			if _, ok := t.children[ctx]; !ok {
				t.children[ctx] = nil
			}
			continue
		}
		t.children[ctx] = append(t.children[ctx], parts[i])
	}
}

func parseRow(cols []string) (*Param, error) {
	if len(cols) != len(header) {
		return nil, fmt.Errorf("%d columns, want %d", len(cols), len(header))
	}
	p := &Param{Path: cols[0], Type: Type(cols[1])}
	switch p.Type {
	case Integer, Boolean, String, StringList, Enum:
	default:
		return nil, fmt.Errorf("%s: unknown type %q", p.Path, cols[1])
	}
	var err error
	if p.Min, err = optionalInt(cols[2]); err != nil {
		return nil, fmt.Errorf("%s minimum: %w", p.Path, err)
	}
	if p.Max, err = optionalInt(cols[3]); err != nil {
		return nil, fmt.Errorf("%s maximum: %w", p.Path, err)
	}
	if cols[4] != "" {
		p.Enum = strings.Split(cols[4], "|")
	}
	if cols[5] != "" {
		if err := json.Unmarshal([]byte(cols[5]), &p.Default); err != nil {
			return nil, fmt.Errorf("%s default: %w", p.Path, err)
		}
	}
	p.Dynamic, p.EnterpriseOnly = cols[6] == textTrue, cols[7] == textTrue
	return p, nil
}

func optionalInt(s string) (*int64, error) {
	if s == "" {
		return nil, nil
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if errors.Is(err, strconv.ErrRange) && !strings.HasPrefix(s, "-") {
		n, err = math.MaxInt64, nil
	}
	if err != nil {
		return nil, err
	}
	return &n, nil
}
