package config

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// scalarString renders a configuration value: bools as true/false, integers as they are, strings verbatim.
// ok is false for anything that is not a scalar.
func scalarString(v any) (s string, ok bool) {
	switch t := v.(type) {
	case string:
		return t, true
	case bool:
		return strconv.FormatBool(t), true
	case float64:
		if t == math.Trunc(t) && math.Abs(t) < 1<<53 {
			return strconv.FormatInt(int64(t), 10), true
		}
		return strconv.FormatFloat(t, 'f', -1, 64), true
	case float32:
		return scalarString(float64(t))
	}
	if n, isInt := intValue(v); isInt {
		return strconv.FormatInt(n, 10), true
	}
	return "", false
}

// intValue reads an integer of any Go integer type, or a float64 without a fraction (JSON numbers decoded
// without UseNumber).
func intValue(v any) (int64, bool) {
	switch t := v.(type) {
	case int:
		return int64(t), true
	case int32:
		return int64(t), true
	case int64:
		return t, true
	case uint32:
		return int64(t), true
	case float64:
		if t == math.Trunc(t) && math.Abs(t) < 1<<53 {
			return int64(t), true
		}
	}
	return 0, false
}

// sizeUnits are Aerospike's size suffixes (binary multiples, case-insensitive).
var sizeUnits = map[byte]int64{'K': 1 << 10, 'M': 1 << 20, 'G': 1 << 30, 'T': 1 << 40, 'P': 1 << 50}

// sizeText writes a size in the largest unit that divides it: 536870912 is "512M".
func sizeText(n int64) string {
	for _, u := range []byte("PTGMK") {
		if mult := sizeUnits[u]; n >= mult && n%mult == 0 {
			return fmt.Sprintf("%d%c", n/mult, u)
		}
	}
	return strconv.FormatInt(n, 10)
}

// parseSize reads an Aerospike size: a number of bytes, or a string such as "512M" or "4G".
func parseSize(v any) (int64, bool) {
	if n, ok := intValue(v); ok {
		return n, n >= 0
	}
	s, ok := v.(string)
	if !ok || s == "" {
		return 0, false
	}
	mult := int64(1)
	if unit, isUnit := sizeUnits[strings.ToUpper(s[len(s)-1:])[0]]; isUnit {
		mult, s = unit, s[:len(s)-1]
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 || n > math.MaxInt64/mult {
		return 0, false
	}
	return n * mult, true
}
