package aerosim

import (
	"net"
	"strconv"
	"strings"

	"github.com/acko-io/acko/internal/config/conffile"
)

// How a node's asd presents itself, as asd 8.1 works it out when it starts (as/src/base/cfg.c,
// as_config_post_process; cf/src/socket.c, cf_node_id_get; as/src/fabric/service_list.c):
//
//   - its node id is the config's service node-id; without one, the fabric port in the top 16 bits
//     and the MAC address of the pod's interface (eth0, or the one node-id-interface names) in the
//     low 48, its first octet lowest. A recreated pod has a new MAC address, so a new node id; a
//     restart in place keeps it;
//   - it advertises to clients its access addresses (network service access-address, each an IP, a
//     host name that resolves, kept as the name, or an interface name) at access-port, and its
//     alternate ones (alternate-access-address) at alternate-access-port; without access addresses,
//     the address it binds (the pod's IP), and without ports, the service port.

// fabricPort is the fabric port of a node without a config, as in the fixtures' clusters.
const fabricPort = 3001

// defaultPort is the port asd's peers lists leave out of an address (service_list.c DEFAULT_PORT),
// whatever the nodes' service port.
const defaultPort = "3000"

// asd's refusals of an identity at start (cfg.c, as_config_post_process), logged as CRITICAL (config)
// with no line; its quotes as they are.
var (
	errNodeIDAndInterface = conffile.Problem{Msg: "may not configure both 'node-id' and ''node-id-interface"}
	errNoNodeID           = conffile.Problem{Msg: "could not get node id"}
)

// identity is how a running asd presents itself: its node id, the fabric endpoint its heartbeats
// carry, and the client service addresses ("host:port") it advertises. The others keep what they
// learnt of it while it is down, as asd's peers do.
type identity struct {
	nodeID   string // as asd prints it (%lX)
	fabric   string
	std, alt []string
}

// clearStd answers service-clear-std and fills this node's entry of peers-clear-std.
func (id identity) clearStd() string { return strings.Join(id.std, ",") }

// clearAlt answers service-clear-alt and fills this node's entry of peers-clear-alt.
func (id identity) clearAlt() string { return strings.Join(id.alt, ",") }

// serv answers the deprecated service and fills services: the IPv4 and name addresses.
func (id identity) serv() string { return strings.Join(legacy(id.std), ";") }

// servAlt fills services-alternate: the first IPv4 or name alternate address only.
func (id identity) servAlt() string {
	if alt := legacy(id.alt); len(alt) > 0 {
		return alt[0]
	}
	return ""
}

// legacy keeps the addresses asd lists in its deprecated commands: not IPv6 ones.
func legacy(addrs []string) []string {
	var out []string
	for _, a := range addrs {
		if !strings.HasPrefix(a, "[") {
			out = append(out, a)
		}
	}
	return out
}

// withoutDefaultPort strips ":3000" off each address of a peers entry (service_list.c strip_suff).
func withoutDefaultPort(list string) string {
	addrs := strings.Split(list, ",")
	for i, a := range addrs {
		addrs[i] = strings.TrimSuffix(a, ":"+defaultPort)
	}
	return strings.Join(addrs, ",")
}

// parseNodeID reads a node id as asd reads node-id (cfg_x64(&line, 1, UINT64_MAX)): hexadecimal,
// 64 bits, not 0.
func parseNodeID(text string) (uint64, bool) {
	id, err := strconv.ParseUint(text, 16, 64)
	return id, err == nil && id != 0
}

// formatNodeID prints a node id as asd does (%lX): uppercase, no leading zeros.
func formatNodeID(id uint64) string { return strings.ToUpper(strconv.FormatUint(id, 16)) }

// podMAC is the MAC address of a new pod's interface, another for every node added: a
// random-looking, locally administered unicast address, as the kernel gives a veth.
func podMAC(instance uint64) uint64 {
	return mix(instance)&(1<<48-1)&^0x01 | 0x02
}

// podHost is what asd finds on its pod besides its config: the pod's interface (eth0) and the
// cluster's DNS. port is the service port it binds: the simulator's nodes all listen on
// Options.Port, whatever their file says.
type podHost struct {
	ip       string
	mac      uint64
	port     int
	override uint64 // NodeSpec.NodeID: the id asd would derive from the interface
	resolves func(host string) bool
}

// identity works the node's identity out of its settings (none for a node without a config).
func (h podHost) identity(settings []conffile.Setting) (identity, error) {
	v := map[string][]string{}
	for _, s := range settings {
		v[s.Section.Path+"."+s.Name] = s.Values
	}
	first := func(key string) string {
		if vals := v[key]; len(vals) > 0 {
			return vals[0]
		}
		return ""
	}
	fabric, _ := strconv.Atoi(first("network.fabric.port"))
	if fabric == 0 {
		fabric = fabricPort
	}
	id, err := h.nodeID(first("service.node-id"), first("service.node-id-interface"), fabric)
	if err != nil {
		return identity{}, err
	}
	port := h.port
	if p := first("network.service.access-port"); p != "" {
		port, _ = strconv.Atoi(p)
	}
	altPort := port
	if p := first("network.service.alternate-access-port"); p != "" {
		altPort, _ = strconv.Atoi(p)
	}
	stdAddrs := v["network.service.access-addresses"]
	if len(stdAddrs) == 0 {
		stdAddrs = []string{h.ip}
	}
	std, err := h.access(stdAddrs, port)
	if err != nil {
		return identity{}, err
	}
	alt, err := h.access(v["network.service.alternate-access-addresses"], altPort)
	if err != nil {
		return identity{}, err
	}
	return identity{nodeID: formatNodeID(id), fabric: net.JoinHostPort(h.ip, strconv.Itoa(fabric)), std: std,
		alt: alt}, nil
}

// nodeID is the configured node-id, else the id of the interface node-id-interface names (the pod
// has eth0 and lo, whose MAC address is all zeros), else eth0's. The config was checked: a node-id
// is valid hex.
func (h podHost) nodeID(configured, iface string, fabric int) (uint64, error) {
	switch {
	case configured != "" && iface != "":
		return 0, errNodeIDAndInterface
	case configured != "":
		id, _ := parseNodeID(configured)
		return id, nil
	}
	mac := h.mac
	switch iface {
	case "", "eth0":
	case "lo":
		mac = 0
	default:
		return 0, errNoNodeID
	}
	if h.override != 0 {
		return h.override, nil
	}
	return uint64(fabric)<<48 | mac, nil
}

// access is asd's addrs_to_access: each address as "host:port", a host name kept as the name (it must
// resolve), an interface name as its address; "any" or a name that does not resolve stops asd.
func (h podHost) access(addrs []string, port int) ([]string, error) {
	out := make([]string, 0, len(addrs))
	for _, a := range addrs {
		host := a
		switch ip := net.ParseIP(a); {
		case a == "eth0":
			host = h.ip
		case a == "lo":
			host = "127.0.0.1"
		case ip != nil && !ip.IsUnspecified():
			host = ip.String()
		case a == "any" || ip != nil || !h.resolves(a):
			return nil, conffile.Problem{Msg: "Invalid access address: " + a}
		}
		out = append(out, net.JoinHostPort(host, strconv.Itoa(port)))
	}
	return out, nil
}
