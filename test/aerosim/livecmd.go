package aerosim

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/acko-io/acko/internal/config/conffile"
	"github.com/acko-io/acko/internal/config/params"
)

// pair is one name=value of an info command's parameters.
type pair struct{ name, value string }

func parsePairs(text string) []pair {
	var out []pair
	if text == "" {
		return out
	}
	for item := range strings.SplitSeq(text, ";") {
		k, v, _ := strings.Cut(item, "=")
		out = append(out, pair{k, v})
	}
	return out
}

// take removes the pair of that name and returns its value.
func take(pairs *[]pair, name string) (string, bool) {
	for i, p := range *pairs {
		if p.name == name {
			*pairs = append((*pairs)[:i:i], (*pairs)[i+1:]...)
			return p.value, true
		}
	}
	return "", false
}

// getConfig answers get-config[:context=<context>[;id=<namespace>]]; without a context, the service
// and network lists.
func (c *liveConfig) getConfig(text string) string {
	pairs := parsePairs(text)
	context, ok := take(&pairs, "context")
	if !ok {
		return c.contexts[ctxService].String() + ";" + c.contexts[ctxNetwork].String()
	}
	list, errAnswer := c.context(context, &pairs)
	if errAnswer != "" {
		return errAnswer
	}
	return list.String()
}

// context finds the list a request's context (and namespace id) names, or asd's refusal.
func (c *liveConfig) context(context string, pairs *[]pair) (*kvList, string) {
	switch context {
	case ctxService, ctxNetwork:
		return c.contexts[context], ""
	case ctxNamespace:
		id, ok := take(pairs, "id")
		if !ok {
			return nil, errMissingID
		}
		list, ok := c.contexts[namespaceKey(id)]
		if !ok {
			return nil, errNoNamespace
		}
		return list, ""
	}
	return nil, errInvalidContext
}

// liveOnServer are parameters the tables call static that a real 8.1.2.0 server nevertheless changed
// through set-config (dynamic/set-namespace-test-replication-factor-3.txt).
var liveOnServer = map[string]bool{"namespaces.[].replication-factor": true}

// setConfigLooser are namespace parameters asd's set-config parses more loosely than its config file
// (as/src/base/cfg_info.c at 8.1.2.0, and a real server took them): evict-tenths-pct with atoi, no
// check at all ("x1" sets 0); defrag-lwm-pct and flush-max-ms with cf_str_atoi, no bound (100 and 1001
// are taken live, though the file allows 1-99 and 0-1000).
var setConfigLooser = map[string]func(string) (string, error){
	"evict-tenths-pct": func(v string) (string, error) {
		return strconv.FormatUint(uint64(uint32(atoi(v))), 10), nil //nolint:gosec // C's int to uint32
	},
	"defrag-lwm-pct": unboundedInt,
	"flush-max-ms":   unboundedInt,
}

// unboundedInt takes a non-negative decimal of int32 range (cf_str_atoi's unit suffixes and negative
// values are refused: stricter than asd, never kinder).
func unboundedInt(v string) (string, error) {
	n, err := strconv.ParseInt(v, 10, 32)
	if err != nil || n < 0 {
		return "", fmt.Errorf("not a non-negative integer: %q", v)
	}
	return strconv.FormatInt(n, 10), nil
}

// atoi is C's: leading spaces, a sign and the digits that follow, 0 when there are none; an int.
func atoi(v string) int32 {
	v = strings.TrimLeft(v, " \t\n\v\f\r")
	neg := strings.HasPrefix(v, "-")
	if neg || strings.HasPrefix(v, "+") {
		v = v[1:]
	}
	var n int32
	for _, c := range v {
		if c < '0' || c > '9' {
			break
		}
		n = n*10 + c - '0'
	}
	if neg {
		return -n
	}
	return n
}

// geoWithin is the namespace sub-context whose parameters set-config names with a hyphen.
const geoWithin = "geo2dsphere-within"

// change is a validated set-config parameter: the name get-config shows it under, and its value in
// the server's units. ignored: Community Edition answers ok and keeps its default.
type change struct {
	name, value string
	ignored     bool
}

// setConfig answers set-config:context=<context>[;id=<namespace>];<name>=<value>[;...]: every
// parameter must exist in the table, be dynamic and take the value (in a namespace, storage-engine
// parameters without their prefix), or none is applied and the answer is asd's one generic error.
// changedName reports a new cluster-name; warning is the line asd logs when it refuses a value.
func (c *liveConfig) setConfig(text string) (answer string, changedName bool, warning string) {
	pairs := parsePairs(text)
	context, ok := take(&pairs, "context")
	if !ok {
		return errMissingContext, false, ""
	}
	list, errAnswer := c.context(context, &pairs)
	if errAnswer != "" {
		return errAnswer, false, ""
	}
	if len(pairs) == 0 {
		return errInvalidSetConfig, false, ""
	}
	namespace := ""
	if context == ctxNamespace {
		namespace = c.namespaceOf(list)
	}
	changes, ok, warning := c.changes(context, namespace, pairs)
	if !ok || !ttlAllowed(list, changes) || context == ctxService && !c.histogramScaleAllowed(changes) {
		return errInvalidSetConfig, false, warning
	}
	for _, ch := range changes {
		if ch.ignored {
			continue
		}
		changedName = changedName || (context == ctxService && ch.name == "cluster-name" && list.vals[ch.name] != ch.value)
		list.set(ch.name, ch.value)
	}
	return answerOK, changedName, ""
}

// changes validates every parameter of a set-config; false when one is refused (with the line asd
// logs, if any).
func (c *liveConfig) changes(context, namespace string, pairs []pair) ([]change, bool, string) {
	changes := make([]change, 0, len(pairs))
	for _, p := range pairs {
		ch, ok := c.validate(context, namespace, p)
		if !ok {
			return nil, false, ""
		}
		if warning := c.overFdLimit(context, ch); warning != "" {
			return nil, false, warning
		}
		changes = append(changes, ch)
	}
	return changes, true, ""
}

// overFdLimit is as_service_set_proto_fd_max's refusal of a proto-fd-max above the open-file limit.
func (c *liveConfig) overFdLimit(context string, ch change) string {
	if context != ctxService || ch.name != protoFdMax {
		return ""
	}
	if v, _ := strconv.ParseInt(ch.value, 10, 64); v > c.fdLimit {
		return fmt.Sprintf("WARNING (service): can't set proto-fd-max %d > system limit %d", v, c.fdLimit)
	}
	return ""
}

func (c *liveConfig) namespaceOf(list *kvList) string {
	for _, ns := range c.namespaces {
		if c.contexts[namespaceKey(ns)] == list {
			return ns
		}
	}
	return ""
}

// validate resolves a set-config parameter to the table and checks its value.
func (c *liveConfig) validate(context, namespace string, p pair) (change, bool) {
	path, name := context+"."+p.name, p.name
	if context == ctxNamespace {
		if strings.Contains(p.name, ".") {
			return change{}, false // a namespace's sub-context parameters are set with a hyphen
		}
		path = "namespaces.[]." + p.name
		if sub, ok := strings.CutPrefix(p.name, geoWithin+"-"); ok {
			// set as geo2dsphere-within-max-cells, reported as geo2dsphere-within.max-cells
			path, name = "namespaces.[]."+geoWithin+"."+sub, geoWithin+"."+sub
		}
	}
	param, ok := c.table.Lookup(path)
	if !ok && context == ctxNamespace && !strings.Contains(p.name, ".") {
		path = "namespaces.[].storage-engine(type=" + c.engines[namespace] + ")." + p.name
		param, ok = c.table.Lookup(path)
		name = "storage-engine." + p.name
	}
	live := ok && (param.Dynamic || liveOnServer[param.Path])
	if !live || param.EnterpriseOnly || param.Type == params.StringList {
		return change{}, false
	}
	value, err := param.ServerValue(p.value)
	if loose, ok := setConfigLooser[strings.TrimPrefix(name, "storage-engine.")]; ok && context == ctxNamespace {
		value, err = loose(p.value)
	}
	if err != nil {
		return change{}, false
	}
	_, ignored := conffile.IgnoredInCE(param.Path)
	return change{name: name, value: value, ignored: ignored}, true
}

// histogramScaleAllowed: a real 8.1.2.0 server refused set-config of microsecond-histograms while any
// enable-benchmarks-* (of the service, a namespace or its storage-engine) was on.
func (c *liveConfig) histogramScaleAllowed(changes []change) bool {
	if !slices.ContainsFunc(changes, func(ch change) bool { return ch.name == "microsecond-histograms" }) {
		return true
	}
	for _, kv := range c.contexts {
		for name, v := range kv.vals {
			if strings.Contains(name, "enable-benchmarks-") && v == on {
				return false
			}
		}
	}
	return true
}

// ttlAllowed is asd's rule that a namespace's default-ttl needs nsup-period > 0 (unless
// allow-ttl-without-nsup), against the values the request leaves.
func ttlAllowed(list *kvList, changes []change) bool {
	after := func(name string) string {
		v := list.vals[name]
		for _, ch := range changes {
			if ch.name == name {
				v = ch.value
			}
		}
		return v
	}
	for _, ch := range changes {
		if ch.name == "default-ttl" && ch.value != "0" && after("nsup-period") == "0" &&
			after("allow-ttl-without-nsup") != on {
			return false
		}
	}
	return true
}

// logs answers "logs": the sinks by id.
func (c *liveConfig) logs() string {
	items := make([]string, len(c.sinks))
	for i, s := range c.sinks {
		items[i] = strconv.Itoa(i) + ":" + s.name
	}
	return strings.Join(items, ";")
}

// logLevels answers "log/<id>": every context's level in that sink.
func (c *liveConfig) logLevels(contexts []string, id string) string {
	i, err := strconv.Atoi(id)
	if err != nil || i < 0 || i >= len(c.sinks) {
		return errBadSinkID
	}
	items := make([]string, len(contexts))
	for k, ctx := range contexts {
		items[k] = ctx + ":" + c.sinks[i].levels[k]
	}
	return strings.Join(items, ";")
}

// logSet answers log-set:id=<sink>;<context>=<level>[;...], all or nothing.
func (c *liveConfig) logSet(contexts []string, text string) string {
	pairs := parsePairs(text)
	id, ok := take(&pairs, "id")
	i, err := strconv.Atoi(id)
	if !ok || err != nil || i < 0 || i >= len(c.sinks) || len(pairs) == 0 {
		return errInvalidLogSet
	}
	levels := append([]string(nil), c.sinks[i].levels...)
	for _, p := range pairs {
		if !setLevel(contexts, levels, p.name, p.value) {
			return errInvalidLogSet
		}
	}
	c.sinks[i].levels = levels
	return answerOK
}
