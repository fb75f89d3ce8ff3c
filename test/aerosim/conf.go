package aerosim

import (
	"fmt"
	"strconv"
	"strings"
)

// heartbeatPort is the mesh port of a node whose config does not set one, and of every simple node.
const heartbeatPort = 3002

// nodeConfig is what the simulator takes from a node's aerospike.conf: who it clusters with.
type nodeConfig struct {
	clusterName string
	hbPort      int
	seeds       []seedAddr
}

type seedAddr struct {
	host string
	port int
}

// readConfig reads the cluster-name and the mesh seeds of an aerospike.conf, the way asd's config
// parser walks it: one item per line, "{" opening a context and "}" closing it, "#" starting a
// comment.
func readConfig(text string) (nodeConfig, error) {
	conf := nodeConfig{hbPort: heartbeatPort}
	var path []string
	for i, raw := range strings.Split(text, "\n") {
		line, _, _ := strings.Cut(raw, "#")
		fields := strings.Fields(line)
		switch {
		case len(fields) == 0:
			continue
		case fields[len(fields)-1] == "{":
			path = append(path, fields[0])
			continue
		case fields[0] == "}":
			if len(path) == 0 {
				return conf, fmt.Errorf("line %d :: unexpected '}'", i+1)
			}
			path = path[:len(path)-1]
			continue
		}
		if err := conf.item(strings.Join(path, "."), fields); err != nil {
			return conf, fmt.Errorf("line %d :: %w", i+1, err)
		}
	}
	if len(path) > 0 {
		return conf, fmt.Errorf("missing '}' at the end of context %s", path[len(path)-1])
	}
	if conf.clusterName == "" {
		return conf, fmt.Errorf("must configure 'cluster-name'")
	}
	return conf, nil
}

func (c *nodeConfig) item(context string, fields []string) error {
	switch context + "." + fields[0] {
	case "service.cluster-name":
		if len(fields) != 2 {
			return fmt.Errorf("cluster-name needs one value")
		}
		c.clusterName = fields[1]
	case "network.heartbeat.port":
		port, err := parsePort(fields)
		if err != nil {
			return err
		}
		c.hbPort = port
	case "network.heartbeat.mesh-seed-address-port":
		port, err := parsePort(fields[1:])
		if err != nil || len(fields) != 3 {
			return fmt.Errorf("mesh-seed-address-port needs a host and a port")
		}
		c.seeds = append(c.seeds, seedAddr{host: fields[1], port: port})
	}
	return nil
}

func parsePort(fields []string) (int, error) {
	if len(fields) != 2 {
		return 0, fmt.Errorf("%s needs one value", fields[0])
	}
	port, err := strconv.Atoi(fields[1])
	if err != nil || port < 1 || port > 65535 {
		return 0, fmt.Errorf("%s must be a port number", fields[0])
	}
	return port, nil
}
