package params

import (
	"fmt"
	"math"
	"math/bits"
	"slices"
	"strconv"
	"strings"
)

// How asd's configuration parser (as/src/base/cfg.c, cfg_u64/cfg_u32/cfg_seconds/cfg_bool and cf_str.c)
// reads a value, as far as the tables cannot tell:
//   - an integer is unsigned decimal digits with an optional binary multiplier suffix K, M, G, T or P
//     (case-insensitive: 4G is 4294967296); no sign, no fraction;
//   - a duration (the parameters in secondsParams) is unsigned digits with an optional unit s, m, h or d
//     and no size suffix (1d is 86400 seconds);
//   - an integer whose table minimum is negative (a set's default-read-touch-ttl-pct, -1 to 100) is plain
//     signed decimal (cf_strtol_i32): no suffix;
//   - a few integers must be a power of two (powerOfTwoParams);
//   - a boolean is true or false, in any case (8.x no longer takes yes or no);
//   - an allowed value (enum) matches exactly, case included;
//   - a node-id is a hexadecimal number (cfg_x64).
//
// Where asd is laxer than this (a bare suffix "K" reads as 0, digits that overflow wrap around), the
// value is refused: no such value is meant, and the operator never renders one.

// secondsParams are read with cfg_seconds: a number of seconds with an optional unit.
var secondsParams = map[string]bool{
	"service.migrate-fill-delay":             true,
	"service.tls-refresh-period":             true,
	"namespaces.[].default-ttl":              true,
	"namespaces.[].mrt-duration":             true,
	"namespaces.[].nsup-hist-period":         true,
	"namespaces.[].nsup-period":              true,
	"namespaces.[].tomb-raider-eligible-age": true,
	"namespaces.[].tomb-raider-period":       true,
	"namespaces.[].xdr-bin-tombstone-ttl":    true,
	"namespaces.[].xdr-tomb-raider-period":   true,
	"namespaces.[].sets.[].default-ttl":      true,
	"security.privilege-refresh-period":      true,
	"security.session-ttl":                   true,
	"security.ldap.polling-period":           true,
}

// powerOfTwoParams are read with cfg_u32_power_of_2 or cfg_u64_power_of_2.
var powerOfTwoParams = map[string]bool{
	"namespaces.[].index-stage-size":      true,
	"namespaces.[].sindex-stage-size":     true,
	"namespaces.[].partition-tree-sprigs": true,
}

// compiledMax are asd CE's compiled-in limits on parameters whose table bound is higher: it reads
// replication-factor with cfg_u32(&line, 1, AS_CLUSTER_SZ) (8; the table's bound is Enterprise
// Edition's), and index-stage-size with cfg_u64_power_of_2(&line, CF_ARENAX_MIN_STAGE_SIZE,
// CF_ARENAX_MAX_STAGE_SIZE): at most 1 GiB, where the tables say 16G (a real 8.1.2.0 server refused
// more at start).
var compiledMax = map[string]int64{
	"namespaces.[].replication-factor": 8,
	"service.min-cluster-size":         8,
	"namespaces.[].index-stage-size":   1 << 30,
}

// Bounds are the integer bounds Community Edition applies: the table's, capped by its compiled-in
// limits. nil is no bound.
func (p *Param) Bounds() (lo, hi *int64) {
	lo, hi = p.Min, p.Max
	if limit, ok := compiledMax[p.Path]; ok && (hi == nil || limit < *hi) {
		hi = &limit
	}
	return lo, hi
}

// hexParams are read with cfg_x64: a 64-bit hexadecimal number other than 0.
var hexParams = map[string]bool{"service.node-id": true}

// Seconds reports a duration parameter: a number of seconds, optionally with a unit (s, m, h, d).
func (p *Param) Seconds() bool { return secondsParams[p.Path] }

// PowerOfTwo reports an integer that must be an exact power of two.
func (p *Param) PowerOfTwo() bool {
	return powerOfTwoParams[p.Path] || strings.HasSuffix(p.Path, ".flush-size") && strings.Contains(p.Path, "storage-engine(")
}

// The booleans as aerospike.conf and the tables write them.
const (
	textTrue  = "true"
	textFalse = "false"
)

// ValueErrorKind says which rule a value breaks.
type ValueErrorKind int

// Kinds of value errors.
const (
	// NoValue: the parameter is given without a value.
	NoValue ValueErrorKind = iota
	// NotAnInteger: not an integer (or a duration) in the server's syntax.
	NotAnInteger
	// OutOfRange: an integer outside the table's bounds, or not a power of two where one is needed.
	OutOfRange
	// NotABoolean: neither true nor false.
	NotABoolean
	// NotAllowed: not one of the allowed values.
	NotAllowed
)

// ValueError is a value the server refuses. Error is a short reason for a validation message
// ("must be an integer from 1024 to 2147483647"); ServerMessage is what asd logs for it after
// "line N :: ".
type ValueError struct {
	Param *Param
	Text  string
	Kind  ValueErrorKind
	// Value is the number read, for OutOfRange.
	Value  int64
	reason string
	server string
}

func (e *ValueError) Error() string { return e.reason }

// ServerMessage is asd's wording of the refusal, e.g. "proto-fd-max must be >= 1024 and <= 2147483647, not 100".
func (e *ValueError) ServerMessage() string { return e.server }

// CheckText checks a value as aerospike.conf spells it (one line's value) against the parameter's
// type, bounds and allowed values, the way asd reads it when it starts.
func (p *Param) CheckText(text string) error {
	_, err := p.parse(text)
	return err
}

// ServerValue is the value as the running server reports it (get-config): integers in plain units
// ("1G" is "1073741824", "1d" is "86400"), booleans as true or false, anything else as written.
func (p *Param) ServerValue(text string) (string, error) {
	return p.parse(text)
}

func (p *Param) parse(text string) (string, error) {
	name := p.Name()
	if text == "" {
		return "", p.valueError(text, NoValue, "must have a value", name+" must have a value specified")
	}
	switch p.Type {
	case Integer:
		n, err := p.parseInteger(text)
		if err != nil {
			return "", err
		}
		return strconv.FormatInt(n, 10), nil
	case Boolean:
		if lower := strings.ToLower(text); lower == textTrue || lower == textFalse {
			return lower, nil
		}
		return "", p.valueError(text, NotABoolean, "must be true or false",
			fmt.Sprintf("%s must be true or false or yes or no, not %s", name, text))
	}
	if hexParams[p.Path] {
		// asd reads it with strtoul(..., 16), which takes a 0x prefix, then checks the range.
		digits := strings.TrimPrefix(strings.TrimPrefix(text, "0x"), "0X")
		n, err := strconv.ParseUint(digits, 16, 64)
		if err != nil || strings.HasPrefix(digits, "+") {
			return "", p.valueError(text, NotAnInteger, "must be a hexadecimal number from 1 to ffffffffffffffff",
				fmt.Sprintf("%s must be a 64-bit hex number, not %s", name, text))
		}
		if n == 0 {
			return "", p.valueError(text, OutOfRange, "must be a hexadecimal number from 1 to ffffffffffffffff",
				fmt.Sprintf("%s must be >= 1 and <= ffffffffffffffff, not 0", name))
		}
		return text, nil
	}
	if len(p.Enum) > 0 && !slices.Contains(p.Enum, text) {
		return "", p.valueError(text, NotAllowed, "must be one of "+strings.Join(p.Enum, ", "),
			fmt.Sprintf("%s has unknown value '%s'", name, text))
	}
	return text, nil
}

func (p *Param) valueError(text string, kind ValueErrorKind, reason, server string) *ValueError {
	return &ValueError{Param: p, Text: text, Kind: kind, reason: reason, server: server}
}

func (p *Param) parseInteger(text string) (int64, error) {
	var n int64
	var ok bool
	switch {
	case p.Seconds():
		n, ok = parseSeconds(text)
	case p.Min != nil && *p.Min < 0:
		v, err := strconv.ParseInt(text, 10, 32)
		n, ok = v, err == nil
	default:
		n, ok = parseUnsigned(text)
	}
	if !ok {
		return 0, p.valueError(text, NotAnInteger, p.integerReason(), p.syntaxMessage(text))
	}
	lo, hi := p.Bounds()
	if lo != nil && n < *lo || hi != nil && n > *hi || p.PowerOfTwo() && bits.OnesCount64(uint64(n)) != 1 {
		e := p.valueError(text, OutOfRange, p.integerReason(), p.rangeMessage(n))
		e.Value = n
		return 0, e
	}
	return n, nil
}

func (p *Param) syntaxMessage(text string) string {
	switch {
	case p.Seconds():
		return fmt.Sprintf("%s must be a small enough unsigned number with time unit (s, m, h, or d), not %s",
			p.Name(), text)
	case p.Min != nil && *p.Min < 0:
		return fmt.Sprintf("%s must be a number, not %s", p.Name(), text)
	}
	return fmt.Sprintf("%s must be an unsigned number, not %s", p.Name(), text)
}

// rangeMessage is asd's wording of a value out of bounds (cfg_u32, cfg_u64, cfg_seconds, power of 2).
func (p *Param) rangeMessage(n int64) string {
	name := p.Name()
	lo, hi := int64(0), int64(math.MaxInt64)
	minimum, maximum := p.Bounds()
	if minimum != nil {
		lo = *minimum
	}
	if maximum != nil {
		hi = *maximum
	}
	if p.PowerOfTwo() && n >= lo && n <= hi {
		return fmt.Sprintf("%s must be an exact power of 2, not %d", name, n)
	}
	unit := ""
	if p.Seconds() {
		unit = " seconds"
	}
	high := strconv.FormatInt(hi, 10)
	if hi == math.MaxInt64 {
		high = strconv.FormatUint(math.MaxUint64, 10) // the tables' 2^64-1, kept as MaxInt64
	}
	if lo == 0 {
		return fmt.Sprintf("%s must be <= %s%s, not %d%s", name, high, unit, n, unit)
	}
	return fmt.Sprintf("%s must be >= %d%s and <= %s%s, not %d%s", name, lo, unit, high, unit, n, unit)
}

// integerReason says which integers the parameter takes, e.g. "must be an integer from 1024 to
// 2147483647" or "must be a number of seconds from 0 to 315360000 (a unit s, m, h or d may follow)".
func (p *Param) integerReason() string {
	what, sizes := "an integer", true
	if p.Seconds() {
		what, sizes = "a number of seconds", false
	}
	if p.PowerOfTwo() {
		what = "a power of 2"
	}
	var r string
	lo, hi := p.Bounds()
	switch {
	case lo != nil && hi != nil && *hi != math.MaxInt64:
		r = fmt.Sprintf("must be %s from %s to %s", what, boundText(*lo, sizes), boundText(*hi, sizes))
	case lo != nil:
		r = fmt.Sprintf("must be %s of at least %s", what, boundText(*lo, sizes))
	case hi != nil:
		r = fmt.Sprintf("must be %s of at most %s", what, boundText(*hi, sizes))
	default:
		r = "must be " + what
	}
	if p.Seconds() {
		r += " (a unit s, m, h or d may follow)"
	}
	return r
}

// sizeUnits are the binary multipliers asd reads after an integer, largest first.
var sizeUnits = []struct {
	suffix byte
	mult   int64
}{{'P', 1 << 50}, {'T', 1 << 40}, {'G', 1 << 30}, {'M', 1 << 20}, {'K', 1 << 10}}

// boundText writes a bound in plain digits and, for a whole number of mebibytes or more, in asd's
// size notation too: "536870912 (512M)".
func boundText(n int64, sizes bool) string {
	s := strconv.FormatInt(n, 10)
	if !sizes || n < 1<<20 {
		return s
	}
	for _, u := range sizeUnits {
		if n%u.mult == 0 {
			return fmt.Sprintf("%s (%d%c)", s, n/u.mult, u.suffix)
		}
	}
	return s
}

// parseUnsigned reads digits with an optional binary suffix (cf_str_atoi_u64), refusing overflow.
func parseUnsigned(s string) (int64, bool) {
	mult := int64(1)
	for _, u := range sizeUnits {
		if last := s[len(s)-1]; last == u.suffix || last == u.suffix+('a'-'A') {
			mult, s = u.mult, s[:len(s)-1]
			break
		}
	}
	return scaled(s, mult)
}

// parseSeconds reads digits with an optional unit s, m, h or d (cf_str_atoi_seconds); the result
// fits 32 bits, as asd's.
func parseSeconds(s string) (int64, bool) {
	mult := int64(1)
	switch s[len(s)-1] {
	case 's', 'S':
		s = s[:len(s)-1]
	case 'm', 'M':
		mult, s = 60, s[:len(s)-1]
	case 'h', 'H':
		mult, s = 3600, s[:len(s)-1]
	case 'd', 'D':
		mult, s = 86400, s[:len(s)-1]
	}
	n, ok := scaled(s, mult)
	return n, ok && n <= math.MaxUint32
}

func scaled(digits string, mult int64) (int64, bool) {
	if digits == "" || strings.Trim(digits, "0123456789") != "" {
		return 0, false
	}
	n, err := strconv.ParseInt(digits, 10, 64)
	if err != nil || n > math.MaxInt64/mult {
		return 0, false
	}
	return n * mult, true
}
