package config

import (
	"fmt"
	"strconv"
	"strings"
)

// Defaults asd and the renderer use for the heartbeat and fabric values the cross-checks read.
const (
	defaultConnectTimeoutMs = 500
	defaultRWRecvThreads    = 16
	defaultRWRecvPools      = 1
	keyConnectTimeout       = "connect-timeout-ms"
	keyInterval             = "interval"
	keyTimeout              = "timeout"
	keyChannelRWRecvThreads = "channel-rw-recv-threads"
	keyChannelRWRecvPools   = "channel-rw-recv-pools"
	keyHeartbeat            = "heartbeat"
	keyFabric               = "fabric"
)

// networkStanzas are the network stanzas of the table's version, in aerospike.conf's usual order: 8.0
// has info where 8.1 has admin.
func (k *checker) networkStanzas() []string {
	out := []string{keyService, keyFabric, keyHeartbeat}
	for _, s := range []string{keyAdmin, keyInfo} {
		if k.t.IsContext(keyNetwork + "." + s) {
			out = append(out, s)
		}
	}
	return out
}

func (k *checker) checkNetwork(rel []any, v any) {
	m, ok := k.object(-1, rel, v)
	if !ok {
		return
	}
	stanzas := k.networkStanzas()
	for _, key := range sortedKeys(m) {
		switch {
		case key == keyTLS:
			k.forbidden(-1, at(rel, key), enterpriseOnly("TLS"))
		case key == keyInfo && !k.t.IsContext("network.info"):
			k.forbidden(-1, at(rel, key), fmt.Sprintf("network.info no longer exists in Aerospike 8.1: "+
				"port %d is the admin stanza, which the operator renders", AdminPort))
		case key == keyAdmin && !k.t.IsContext("network.admin"):
			k.serverForbidden(-1, at(rel, key), fmt.Sprintf("network.admin does not exist in Aerospike %s: "+
				"port %d is the info stanza, which the operator renders", k.t.Version, AdminPort))
		case k.t.IsContext(keyNetwork + "." + key):
			k.walk(-1, at(rel, key), keyNetwork+"."+key, m[key], networkRules)
		default:
			k.forbidden(-1, at(rel, key), "unknown network stanza: supported are "+strings.Join(stanzas, ", "))
		}
	}
	k.checkHeartbeatTiming(at(rel, keyHeartbeat), asMap(m[keyHeartbeat]))
	k.checkFabricThreads(at(rel, keyFabric), asMap(m[keyFabric]))
}

// checkHeartbeatTiming: asd refuses a connect timeout longer than a third of the time a node may stay
// silent (interval × timeout).
func (k *checker) checkHeartbeatTiming(rel []any, hb map[string]any) {
	interval, setInterval := k.intSetting("network.heartbeat", hb, keyInterval, HeartbeatInterval)
	timeout, setTimeout := k.intSetting("network.heartbeat", hb, keyTimeout, HeartbeatTimeout)
	connect, setConnect := k.intSetting("network.heartbeat", hb, keyConnectTimeout, defaultConnectTimeoutMs)
	if connect <= interval*timeout/3 {
		return
	}
	key, value := keyConnectTimeout, hb[keyConnectTimeout]
	switch {
	case setConnect:
	case setInterval:
		key, value = keyInterval, hb[keyInterval]
	case setTimeout:
		key, value = keyTimeout, hb[keyTimeout]
	}
	k.serverInvalid(-1, at(rel, key), value, fmt.Sprintf("connect-timeout-ms (%d) must be at most interval × "+
		"timeout / 3 (%d × %d / 3 = %d): Aerospike refuses to start otherwise", connect, interval, timeout,
		interval*timeout/3))
}

// checkFabricThreads: asd refuses receive threads that do not divide evenly into the pools.
func (k *checker) checkFabricThreads(rel []any, fabric map[string]any) {
	threads, setThreads := k.intSetting("network.fabric", fabric, keyChannelRWRecvThreads, defaultRWRecvThreads)
	pools, _ := k.intSetting("network.fabric", fabric, keyChannelRWRecvPools, defaultRWRecvPools)
	if pools == 0 || threads%pools == 0 {
		return
	}
	key := keyChannelRWRecvPools
	if setThreads {
		key = keyChannelRWRecvThreads
	}
	k.serverInvalid(-1, at(rel, key), fabric[key], fmt.Sprintf("channel-rw-recv-threads (%d) must be a multiple "+
		"of channel-rw-recv-pools (%d): Aerospike refuses to start otherwise", threads, pools))
}

// intSetting reads an integer parameter of a stanza in the server's units; def when it is absent or
// not a valid value (reported on its own).
func (k *checker) intSetting(ctx string, m map[string]any, key string, def int64) (n int64, set bool) {
	v, present := m[key]
	p, known := k.t.Lookup(ctx + "." + key)
	if !present || !known {
		return def, false
	}
	text, _ := scalarString(v)
	sv, err := p.ServerValue(text)
	if err != nil {
		return def, false
	}
	n, err = strconv.ParseInt(sv, 10, 64)
	if err != nil {
		return def, false
	}
	return n, true
}
