package astools

import (
	"fmt"
	"strings"
	"time"
	"unicode"
)

// parseDateTime is parse_date_time of aerospike-tools-backup's src/utils.c, as asbackup
// --modified-after reads its value: "YYYY-MM-DD_HH:MM:SS", "YYYY-MM-DD" (midnight) or "HH:MM:SS"
// (today), told apart by length, read with sscanf and in the tool's local time zone (mktime, so out of
// range fields roll over), as nanoseconds since the epoch. errs are the err() lines it writes on a bad
// value (its caller adds "Invalid date and time string").
func parseDateTime(s string, now time.Time, loc *time.Location) (nanos int64, errs []string) {
	local := now.In(loc)
	year, month, day := local.Date()
	var hour, minute, sec int
	var got []int
	switch len(s) {
	case 10:
		got = scanf(s, "%4d-%2d-%2d")
		if len(got) != 3 || got[0] < 1900 {
			return 0, []string{"Date format error in " + s}
		}
		year, day, hour, minute, sec = got[0], got[2], 0, 0, 0
		month = time.Month(got[1])
	case 8:
		got = scanf(s, "%2d:%2d:%2d")
		if len(got) != 3 {
			return 0, []string{"Time format error in " + s}
		}
		hour, minute, sec = got[0], got[1], got[2]
	case 19:
		got = scanf(s, "%4d-%2d-%2d_%2d:%2d:%2d")
		if len(got) != 6 || got[0] < 1900 {
			return 0, []string{"Date/time format error in " + s}
		}
		year, day, hour, minute, sec = got[0], got[2], got[3], got[4], got[5]
		month = time.Month(got[1])
	default:
		return 0, []string{}
	}
	return time.Date(year, month, day, hour, minute, sec, 0, loc).Unix() * int64(time.Second), nil
}

// scanf reads s as sscanf does with a format of %Nd conversions and literal characters: the numbers
// converted before the first mismatch.
func scanf(s, format string) []int {
	var out []int
	for i := 0; i < len(format); i++ {
		if format[i] != '%' {
			if s == "" || s[0] != format[i] {
				return out
			}
			s = s[1:]
			continue
		}
		width := int(format[i+1] - '0')
		i += 2 // the width and the 'd'
		s = strings.TrimLeftFunc(s, unicode.IsSpace)
		n, rest, ok := scanInt(s, width)
		if !ok {
			return out
		}
		out, s = append(out, n), rest
	}
	return out
}

// scanInt is one %Nd: an optional sign and digits, at most width characters, at least one digit.
func scanInt(s string, width int) (int, string, bool) {
	i, neg := 0, false
	if s != "" && (s[0] == '+' || s[0] == '-') {
		neg, i = s[0] == '-', 1
	}
	n, digits := 0, 0
	for ; i < len(s) && i < width && s[i] >= '0' && s[i] <= '9'; i++ {
		n, digits = n*10+int(s[i]-'0'), digits+1
	}
	if digits == 0 {
		return 0, s, false
	}
	if neg {
		n = -n
	}
	return n, s[i:], true
}

// toolZone is the tool's local time zone: its TZ, or UTC (a container's default) when unset or unknown
// (glibc falls back to UTC then).
func toolZone(env func(string) string) *time.Location {
	if tz := env("TZ"); tz != "" {
		if loc, err := time.LoadLocation(strings.TrimPrefix(tz, ":")); err == nil {
			return loc
		}
	}
	return time.UTC
}

// modifiedAfter checks --modified-after as backup_config_init does: its value's err() lines, then
// "Invalid date and time string".
func modifiedAfter(v string, env func(string) string, nanos *int64) []string {
	n, errs := parseDateTime(v, time.Now(), toolZone(env))
	if errs != nil {
		return append(errs, fmt.Sprintf("Invalid date and time string %s", v))
	}
	*nanos = n
	return nil
}
