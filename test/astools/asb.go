// Package astools stands in for Aerospike's backup tools in the test bed: asbackup and asrestore with
// their command-line flags, reading and writing the real backup file format (.asb, "Version 3.1",
// documented in aerospike-tools-backup's README) through the official Go client. The operator's Jobs
// run it where a real cluster would run aerospike-tools; what it writes a real asrestore reads.
package astools

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"

	as "github.com/aerospike/aerospike-client-go/v7"
)

// formatVersion is the backup file format this package writes and reads.
const formatVersion = "3.1"

// Record is one record of a backup file.
type Record struct {
	Namespace  string
	Set        string
	Digest     []byte
	Key        any // the user key when the record stored it (int64, float64, string or []byte), else nil
	Generation uint32
	// Expiration is seconds since the Aerospike epoch (2010-01-01 UTC); 0 never expires.
	Expiration uint32
	Bins       as.BinMap
}

// Writer writes a backup file.
type Writer struct {
	w   *bufio.Writer
	err error
}

// NewWriter starts a backup file of a namespace: the header and meta data lines; first marks the
// first file of a set (the one that would carry the indexes and UDFs).
func NewWriter(w io.Writer, namespace string, first bool) *Writer {
	bw := &Writer{w: bufio.NewWriter(w)}
	bw.printf("Version %s\n# namespace %s\n", formatVersion, escape(namespace))
	if first {
		bw.printf("# first-file\n")
	}
	return bw
}

func (w *Writer) printf(format string, args ...any) {
	if w.err == nil {
		_, w.err = fmt.Fprintf(w.w, format, args...)
	}
}

// Write appends a record. Bins are written in name order, so that a backup of the same data is the
// same file.
func (w *Writer) Write(r Record) error {
	if r.Key != nil {
		if err := w.value("+ k", "", r.Key); err != nil {
			return err
		}
	}
	w.printf("+ n %s\n+ d %s\n", escape(r.Namespace), base64.StdEncoding.EncodeToString(r.Digest))
	if r.Set != "" {
		w.printf("+ s %s\n", escape(r.Set))
	}
	w.printf("+ g %d\n+ t %d\n+ b %d\n", r.Generation, r.Expiration, len(r.Bins))
	for _, name := range slices.Sorted(maps.Keys(r.Bins)) {
		if err := w.value("-", escape(name), r.Bins[name]); err != nil {
			return err
		}
	}
	return w.err
}

// value writes a key ("+ k", no name) or a bin ("-", its escaped name) of a supported type.
func (w *Writer) value(prefix, name string, v any) error {
	sep := " "
	if name != "" {
		sep = " " + name + " "
	}
	switch x := v.(type) {
	case nil:
		w.printf("%s N%s\n", prefix, strings.TrimSuffix(sep, " "))
	case bool:
		w.printf("%s Z%s%t\n", prefix, sep, x)
	case int:
		w.printf("%s I%s%d\n", prefix, sep, x)
	case int64:
		w.printf("%s I%s%d\n", prefix, sep, x)
	case float64:
		w.printf("%s D%s%s\n", prefix, sep, formatFloat(x))
	case string:
		w.printf("%s S%s%d %s\n", prefix, sep, len(x), x)
	case []byte:
		enc := base64.StdEncoding.EncodeToString(x)
		w.printf("%s B%s%d %s\n", prefix, sep, len(enc), enc)
	default:
		return fmt.Errorf("%T values are not supported by this stand-in of asbackup", v)
	}
	return w.err
}

// Flush writes what is buffered.
func (w *Writer) Flush() error {
	if w.err != nil {
		return w.err
	}
	return w.w.Flush()
}

// formatFloat writes a double as the format has it, including nan, +inf and -inf.
func formatFloat(f float64) string {
	switch {
	case math.IsNaN(f):
		return "nan"
	case math.IsInf(f, 1):
		return "+inf"
	case math.IsInf(f, -1):
		return "-inf"
	}
	return strconv.FormatFloat(f, 'g', -1, 64)
}

// escape puts a backslash before every space, line feed and backslash of a token.
func escape(s string) string {
	var b strings.Builder
	for i := range len(s) {
		if s[i] == ' ' || s[i] == '\n' || s[i] == '\\' {
			b.WriteByte('\\')
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// Reader reads a backup file.
type Reader struct {
	r         *bufio.Reader
	Namespace string // from the meta data section
	First     bool
	line      int
}

// Errors of a backup file that does not follow the format, as open_file (src/restore.c) tells them
// apart: a first line that is not "Version x.y", a version other than 3.1, a meta data line other than
// "# namespace NS" and "# first-file", anything else.
var (
	ErrFormat      = errors.New("not a valid backup file")
	ErrVersionLine = fmt.Errorf("%w: invalid version line", ErrFormat)
	ErrVersion     = fmt.Errorf("%w: invalid backup file version", ErrFormat)
	ErrMetaLine    = fmt.Errorf("%w: invalid meta data line", ErrFormat)
)

// NewReader reads a backup file's header and meta data section.
func NewReader(r io.Reader) (*Reader, error) {
	br := &Reader{r: bufio.NewReader(r)}
	header, err := br.readLine()
	version, ok := strings.CutPrefix(header, "Version ")
	switch {
	case err != nil || !ok || len(version) != 3:
		return br, ErrVersionLine
	case version != formatVersion:
		return br, fmt.Errorf("%w %s", ErrVersion, version)
	}
	for {
		b, err := br.r.Peek(1)
		if err != nil || b[0] != '#' {
			return br, nil
		}
		line, err := br.readLine()
		if err != nil {
			return br, br.errorf("meta data: %v", err)
		}
		switch meta := strings.TrimPrefix(line, "#"); {
		case meta == " first-file":
			br.First = true
		case strings.HasPrefix(meta, " namespace "):
			br.Namespace = unescape(strings.TrimPrefix(meta, " namespace "))
		default:
			return br, fmt.Errorf("%w %s", ErrMetaLine, meta)
		}
	}
}

func (r *Reader) errorf(format string, args ...any) error {
	return fmt.Errorf("%w: line %d: %s", ErrFormat, r.line, fmt.Sprintf(format, args...))
}

// readLine reads up to the next line feed that is not escaped.
func (r *Reader) readLine() (string, error) {
	var b bytes.Buffer
	for {
		c, err := r.r.ReadByte()
		if err != nil {
			if err == io.EOF && b.Len() > 0 {
				return "", r.errorf("the last line has no line feed")
			}
			return "", err
		}
		switch c {
		case '\\':
			next, err := r.r.ReadByte()
			if err != nil {
				return "", r.errorf("a backslash ends the file")
			}
			b.WriteByte(c)
			b.WriteByte(next)
		case '\n':
			r.line++
			return b.String(), nil
		default:
			b.WriteByte(c)
		}
	}
}

// unescape removes the backslashes escape added.
func unescape(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) {
			i++
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// Next reads the next record; io.EOF at the end of the file. Global lines (indexes, UDFs) are
// skipped: this stand-in backs up records only.
func (r *Reader) Next() (Record, error) {
	var rec Record
	if err := r.skipGlobals(); err != nil {
		return rec, err
	}
	if b, err := r.r.Peek(4); err == nil && string(b) == "+ k " {
		if _, err := r.r.Discard(4); err != nil {
			return rec, err
		}
		v, err := r.value()
		if err != nil {
			return rec, err
		}
		rec.Key = v
	}
	header, err := r.recordHeader(rec.Key == nil)
	if err != nil {
		return rec, err
	}
	rec.Namespace, rec.Set = unescape(header["n"]), unescape(header["s"])
	digest, err := base64.StdEncoding.DecodeString(header["d"])
	if err != nil || len(digest) != 20 {
		return rec, r.errorf("digest %q", header["d"])
	}
	rec.Digest = digest
	gen, err1 := strconv.ParseUint(header["g"], 10, 16)
	exp, err2 := strconv.ParseUint(header["t"], 10, 32)
	bins, err3 := strconv.ParseUint(header["b"], 10, 16)
	if err := errors.Join(err1, err2, err3); err != nil {
		return rec, r.errorf("record header: %v", err)
	}
	rec.Generation, rec.Expiration = uint32(gen), uint32(exp)
	rec.Bins, err = r.bins(int(bins))
	return rec, err
}

// skipGlobals skips the lines of the global section before a record.
func (r *Reader) skipGlobals() error {
	for {
		b, err := r.r.Peek(2)
		if err == io.EOF || err == nil && string(b) != "* " {
			return nil
		}
		if err != nil {
			return err
		}
		if err := r.skipGlobal(); err != nil {
			return err
		}
	}
}

// recordHeader reads the "+ n/d/s/g/t/b" lines of a record (the set is optional); io.EOF when the
// file ends before a record begins (atStart: no key line was read).
func (r *Reader) recordHeader(atStart bool) (map[string]string, error) {
	header := map[string]string{}
	for _, field := range []string{"n", "d", "s", "g", "t", "b"} {
		b, err := r.r.Peek(4)
		switch {
		case err == io.EOF && field == "n" && atStart:
			return nil, io.EOF
		case err != nil:
			return nil, r.errorf("record header cut short at %q", field)
		case string(b) != "+ "+field+" " && field == "s":
			continue // the set is optional
		case string(b) != "+ "+field+" ":
			return nil, r.errorf("record header: %q, want \"+ %s \"", b, field)
		}
		line, err := r.readLine()
		if err != nil {
			return nil, err
		}
		header[field] = line[4:]
	}
	return header, nil
}

// bins reads a record's n bin lines.
func (r *Reader) bins(n int) (as.BinMap, error) {
	bins := as.BinMap{}
	for range n {
		if b, err := r.r.Peek(2); err != nil || string(b) != "- " {
			return nil, r.errorf("bin line expected")
		}
		if _, err := r.r.Discard(2); err != nil {
			return nil, err
		}
		name, v, err := r.bin()
		if err != nil {
			return nil, err
		}
		bins[name] = v
	}
	return bins, nil
}

// skipGlobal skips a line of the global section: a secondary index ("* i ...") or a UDF file
// ("* u L name length content", whose raw content may hold line feeds).
func (r *Reader) skipGlobal() error {
	if _, err := r.r.Discard(2); err != nil {
		return err
	}
	kind, _, err := r.token()
	if err != nil || kind != "u" {
		if err == nil {
			_, err = r.readLine()
		}
		return err
	}
	for range 2 { // the type and the name
		if _, _, err := r.token(); err != nil {
			return err
		}
	}
	_, err = r.typedValue('S', false)
	return err
}

// bin reads the rest of a bin line: its type, escaped name and value.
func (r *Reader) bin() (string, any, error) {
	typ, err := r.r.ReadByte()
	if err != nil {
		return "", nil, err
	}
	raw := false
	if b, _ := r.r.Peek(1); len(b) == 1 && b[0] == '!' {
		raw = true
		_, _ = r.r.ReadByte()
	}
	if sp, err := r.r.ReadByte(); err != nil || sp != ' ' {
		return "", nil, r.errorf("bin: a space after the type")
	}
	name, last, err := r.token()
	if err != nil {
		return "", nil, err
	}
	if typ == 'N' {
		if last != '\n' {
			return "", nil, r.errorf("NIL bin %q: line feed expected", name)
		}
		r.line++
		return name, nil, nil
	}
	v, err := r.typedValue(typ, raw)
	return name, v, err
}

// value reads a key's type and value ("I 5", "S 3 abc", ...).
func (r *Reader) value() (any, error) {
	typ, err := r.r.ReadByte()
	if err != nil {
		return nil, err
	}
	raw := false
	if b, _ := r.r.Peek(1); len(b) == 1 && b[0] == '!' {
		raw = true
		_, _ = r.r.ReadByte()
	}
	if sp, err := r.r.ReadByte(); err != nil || sp != ' ' {
		return nil, r.errorf("key: a space after the type")
	}
	return r.typedValue(typ, raw)
}

// token reads an escaped token up to a space or a line feed, and says which ended it.
func (r *Reader) token() (string, byte, error) {
	var b strings.Builder
	for {
		c, err := r.r.ReadByte()
		if err != nil {
			return "", 0, r.errorf("a token cut short")
		}
		switch c {
		case '\\':
			next, err := r.r.ReadByte()
			if err != nil {
				return "", 0, r.errorf("a backslash ends the file")
			}
			b.WriteByte(next)
		case ' ', '\n':
			return b.String(), c, nil
		default:
			b.WriteByte(c)
		}
	}
}

// typedValue reads a value of a type, up to and including its line feed.
func (r *Reader) typedValue(typ byte, raw bool) (any, error) {
	text, last, err := r.token()
	if err != nil {
		return nil, err
	}
	var v any
	switch typ {
	case 'Z':
		v, err = strconv.ParseBool(text)
	case 'I':
		v, err = strconv.ParseInt(text, 10, 64)
	case 'D':
		v, err = parseFloat(text)
	case 'S', 'B':
		if last != ' ' {
			return nil, r.errorf("a length and its data expected")
		}
		data, err := r.data(text)
		switch {
		case err != nil:
			return nil, err
		case typ == 'S':
			return string(data), nil
		case raw:
			return data, nil
		}
		return base64.StdEncoding.DecodeString(string(data))
	default:
		return nil, r.errorf("values of type %q are not supported by this stand-in of asrestore", typ)
	}
	if err != nil {
		return nil, r.errorf("value %q: %v", text, err)
	}
	if last != '\n' {
		return nil, r.errorf("a line feed after the value")
	}
	r.line++
	return v, nil
}

// data reads length raw bytes and the line feed after them.
func (r *Reader) data(length string) ([]byte, error) {
	n, err := strconv.ParseUint(length, 10, 32)
	if err != nil {
		return nil, r.errorf("length %q", length)
	}
	data := make([]byte, n)
	if _, err := io.ReadFull(r.r, data); err != nil {
		return nil, r.errorf("data cut short")
	}
	if lf, err := r.r.ReadByte(); err != nil || lf != '\n' {
		return nil, r.errorf("a line feed after the data")
	}
	r.line += bytes.Count(data, []byte{'\n'}) + 1
	return data, nil
}

func parseFloat(s string) (float64, error) {
	switch s {
	case "nan":
		return math.NaN(), nil
	case "+inf":
		return math.Inf(1), nil
	case "-inf":
		return math.Inf(-1), nil
	}
	return strconv.ParseFloat(s, 64)
}
