package aerosim

import (
	"fmt"
	"maps"
	"net"
	"slices"
	"strings"
)

// resolver is the simulator's DNS: names to addresses, each lookup of a name with several
// addresses rotating them, like DNS round-robin.
type resolver struct {
	records map[string][]string
	turns   map[string]int
}

func newResolver() resolver { return resolver{records: map[string][]string{}, turns: map[string]int{}} }

func dnsName(host string) string { return strings.ToLower(strings.TrimSuffix(host, ".")) }

// lookup returns the addresses of host (an IP stands for itself), nil if it does not resolve.
func (r *resolver) lookup(host string) []string {
	if net.ParseIP(host) != nil {
		return []string{host}
	}
	name := dnsName(host)
	addrs := r.records[name]
	if len(addrs) == 0 {
		return nil
	}
	k := r.turns[name] % len(addrs)
	r.turns[name]++
	return append(slices.Clone(addrs[k:]), addrs[:k]...)
}

// resolves: host is an IP or a name with addresses (a check that does not turn the rotation).
func (r *resolver) resolves(host string) bool {
	return net.ParseIP(host) != nil || len(r.records[dnsName(host)]) > 0
}

// SetDNS replaces the simulator's DNS table (name → IPv4 addresses); the nodes retry the seeds
// that did not resolve yet. The first lookup of a name after its addresses changed answers them
// in the order given, each later one starts one address further.
func (s *Sim) SetDNS(records map[string][]string) error {
	table := make(map[string][]string, len(records))
	for name, addrs := range records {
		for _, a := range addrs {
			if ip := net.ParseIP(a); ip == nil || ip.To4() == nil {
				return fmt.Errorf("%w: %s: %q is not an IPv4 address", ErrInvalid, name, a)
			}
		}
		table[dnsName(name)] = slices.Clone(addrs)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrClosed
	}
	now := s.advance()
	for name := range s.dns.turns {
		if !slices.Equal(s.dns.records[name], table[name]) {
			delete(s.dns.turns, name)
		}
	}
	s.dns.records = table
	s.settle(now)
	return nil
}

// DNS returns the simulator's DNS table.
func (s *Sim) DNS() map[string][]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string][]string, len(s.dns.records))
	for name, addrs := range s.dns.records {
		out[name] = slices.Clone(addrs)
	}
	return out
}

// Partitions returns the mesh cut: groups of node names that hear only each other.
func (s *Sim) Partitions() [][]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out [][]string
	for _, name := range slices.Sorted(maps.Keys(s.groups)) {
		g := s.groups[name]
		for len(out) <= g {
			out = append(out, nil)
		}
		out[g] = append(out[g], name)
	}
	return out
}

// SetPartitions cuts the mesh between groups of nodes (by name): a node of one group no longer
// hears the nodes of another, and after DropDelay each side drops the other. Nodes in no group
// hear everyone. Nil heals the mesh: the sides merge again.
func (s *Sim) SetPartitions(groups [][]string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrClosed
	}
	now := s.advance()
	cut := map[string]int{}
	for i, g := range groups {
		for _, name := range g {
			if _, ok := s.nodes[name]; !ok {
				return fmt.Errorf("%w: %q", ErrNotFound, name)
			}
			if _, dup := cut[name]; dup {
				return fmt.Errorf("%w: node %q is in two groups", ErrInvalid, name)
			}
			cut[name] = i
		}
	}
	if len(cut) == 0 {
		cut = nil
	}
	s.groups = cut
	s.settle(now)
	return nil
}

// cut: a and b are in different groups of the mesh cut.
func (s *Sim) cut(a, b *node) bool {
	ga, okA := s.groups[a.spec.Name]
	gb, okB := s.groups[b.spec.Name]
	return okA && okB && ga != gb
}
