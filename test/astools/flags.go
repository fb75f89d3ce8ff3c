package astools

import (
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// parser reads the tools' options as their getopt_long loops do (src/backup_config.c,
// src/restore_config.c): a bad value stops the tool with its own message, an unknown option or a
// missing value with getopt's words and "Run with --help ...". Either is exit 1 (EXIT_FAILURE).
type parser struct {
	fs      *flag.FlagSet
	invalid []string // the tool's messages for the first bad value
}

func newParser(name string) *parser {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	return &parser{fs: fs}
}

func (p *parser) each(names []string, f func(string)) {
	for _, n := range names {
		f(n)
	}
}

func (p *parser) str(ptr *string, names ...string) {
	p.each(names, func(n string) { p.fs.StringVar(ptr, n, "", "") })
}

func (p *parser) boolean(ptr *bool, names ...string) {
	p.each(names, func(n string) { p.fs.BoolVar(ptr, n, false, "") })
}

// check registers an option whose value fn checks: it returns the tool's message for a bad one.
func (p *parser) check(fn func(string) string, names ...string) {
	p.checkLines(func(v string) []string {
		if msg := fn(v); msg != "" {
			return []string{msg}
		}
		return nil
	}, names...)
}

// checkLines is check for a value whose refusal is several error lines.
func (p *parser) checkLines(fn func(string) []string, names ...string) {
	p.each(names, func(n string) {
		p.fs.Func(n, "", func(v string) error {
			if msgs := fn(v); msgs != nil {
				if p.invalid == nil {
					p.invalid = msgs
				}
				return fmt.Errorf("%s", msgs[len(msgs)-1])
			}
			return nil
		})
	})
}

// number is an integer option within [lo, hi] as better_atoi (strtol, the whole string) reads it;
// invalid is the tool's message, with %s for the value.
func (p *parser) number(ptr *int64, def, lo, hi int64, invalid string, names ...string) {
	*ptr = def
	p.check(func(v string) string {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < lo || n > hi {
			return fmt.Sprintf(invalid, v)
		}
		*ptr = n
		return ""
	}, names...)
}

// parse reads args; false when the tool stops (what it says is written).
func (p *parser) parse(args []string, log *toolLog, stderr io.Writer) bool {
	err := p.fs.Parse(args)
	switch {
	case p.invalid != nil:
		for _, msg := range p.invalid {
			log.err("%s", msg)
		}
	case err != nil:
		name := p.fs.Name()
		if f, ok := strings.CutPrefix(err.Error(), "flag provided but not defined: -"); ok {
			_, _ = fmt.Fprintf(stderr, "%s: unrecognized option '%s'\n", name, dashes(f))
		} else if f, ok := strings.CutPrefix(err.Error(), "flag needs an argument: -"); ok {
			_, _ = fmt.Fprintf(stderr, "%s: option '%s' requires an argument\n", name, dashes(f))
		}
		_, _ = fmt.Fprintln(stderr, "Run with --help for usage information and flag options")
	case p.fs.NArg() > 0:
		log.err("Unexpected trailing argument %s", p.fs.Arg(0))
	default:
		return true
	}
	return false
}

func dashes(name string) string {
	if len(name) == 1 {
		return "-" + name
	}
	return "--" + name
}
