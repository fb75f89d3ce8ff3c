package scale

import (
	"bufio"
	"bytes"
	"strconv"
	"strings"
)

// counters sums the samples of the Prometheus text exposition in body whose metric is name and
// whose labels include every pair of match, grouped by the value of label by ("" groups all).
func counters(body []byte, name string, match map[string]string, by string) map[string]float64 {
	out := map[string]float64{}
	scan := bufio.NewScanner(bytes.NewReader(body))
	scan.Buffer(make([]byte, 0, 64*1024), 1024*1024)
	for scan.Scan() {
		line := scan.Text()
		if !strings.HasPrefix(line, name+"{") && !strings.HasPrefix(line, name+" ") {
			continue
		}
		labels, value, ok := splitSample(strings.TrimPrefix(line, name))
		if !ok || !matches(labels, match) {
			continue
		}
		out[labels[by]] += value
	}
	return out
}

// splitSample splits `{a="x",b="y"} 12` into its labels and value (label values hold no quotes
// or commas in the metrics read here).
func splitSample(s string) (map[string]string, float64, bool) {
	labels := map[string]string{}
	if strings.HasPrefix(s, "{") {
		end := strings.Index(s, "}")
		if end < 0 {
			return nil, 0, false
		}
		for _, pair := range strings.Split(s[1:end], ",") {
			k, v, ok := strings.Cut(pair, "=")
			if ok {
				labels[k] = strings.Trim(v, `"`)
			}
		}
		s = s[end+1:]
	}
	fields := strings.Fields(s)
	if len(fields) == 0 {
		return nil, 0, false
	}
	v, err := strconv.ParseFloat(fields[0], 64)
	return labels, v, err == nil
}

func matches(labels, match map[string]string) bool {
	for k, v := range match {
		if labels[k] != v {
			return false
		}
	}
	return true
}

// diff is after minus before, per key.
func diff(after, before map[string]float64) map[string]float64 {
	out := map[string]float64{}
	for k, v := range after {
		out[k] = v - before[k]
	}
	return out
}

// writeMethods are the HTTP methods of a write to the API server.
var writeMethods = []string{"POST", "PUT", "PATCH", "DELETE"}

func sumOf(m map[string]float64, keys ...string) float64 {
	total := 0.0
	for _, k := range keys {
		total += m[k]
	}
	return total
}
