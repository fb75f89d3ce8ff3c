package conffile

import (
	"strings"

	"github.com/acko-io/acko/internal/config/params"
)

// InfoName says where the info protocol shows a setting, as a real 8.1.2.0 server answered
// (../shared/fixtures/aerospike-ce-8.1.2.0/dynamic): the request's context and id, the name
// get-config reports it under, and the name set-config takes.
type InfoName struct {
	// Context and ID select it: get-config:context=<Context>[;id=<ID>].
	Context, ID string
	// Get is its name in get-config's answer: "proto-fd-max", "heartbeat.interval",
	// "storage-engine.data-size".
	Get string
	// Set is its name in set-config: the same, except that a namespace's storage-engine parameters
	// are set without their "storage-engine." prefix. Empty where no live form is known.
	Set string
}

// InfoName returns where get-config reports the setting and how set-config names it. ok is false for
// what get-config does not report: logging (log/<id> does), mod-lua, sets, lists.
func (s Setting) InfoName() (InfoName, bool) {
	if s.Param == nil || s.Param.Type == params.StringList {
		return InfoName{}, false
	}
	path, name := s.Section.Path, s.Name
	switch {
	case path == ctxService:
		return InfoName{Context: ctxService, Get: name, Set: name}, true
	case strings.HasPrefix(path, "network.") && !strings.Contains(path, "[]"):
		sub := strings.TrimPrefix(path, "network.")
		return InfoName{Context: ctxNetwork, Get: sub + "." + name, Set: sub + "." + name}, true
	case path == ctxNamespace:
		return InfoName{Context: infoNamespace, ID: s.Section.Namespace, Get: name, Set: name}, true
	case strings.HasPrefix(path, "namespaces.[].storage-engine("):
		return InfoName{Context: infoNamespace, ID: s.Section.Namespace, Get: "storage-engine." + name, Set: name}, true
	case path == "namespaces.[].geo2dsphere-within":
		// Reported with a dot, set with a hyphen: a real 8.1.2.0 server took
		// set-config:context=namespace;id=test;geo2dsphere-within-max-cells=13 and reported
		// geo2dsphere-within.max-cells=13.
		return InfoName{Context: infoNamespace, ID: s.Section.Namespace, Get: "geo2dsphere-within." + name,
			Set: "geo2dsphere-within-" + name}, true
	}
	return InfoName{}, false
}
