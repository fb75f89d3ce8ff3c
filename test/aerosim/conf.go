package aerosim

import (
	"fmt"
	"strings"
)

// MeshConf is an aerospike.conf with what the operator renders that clustering reads: a cluster-name,
// mesh seeds (heartbeat port 3002), and namespace test in memory with replication-factor 2. For tests
// that need nodes of a named cluster.
func MeshConf(clusterName string, seeds ...string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "service {\n\tcluster-name %s\n}\nnetwork {\n\tservice {\n\t\tport 3000\n\t}\n"+
		"\tfabric {\n\t\tport 3001\n\t}\n\theartbeat {\n\t\tmode mesh\n\t\tport 3002\n", clusterName)
	for _, s := range seeds {
		fmt.Fprintf(&b, "\t\tmesh-seed-address-port %s 3002\n", s)
	}
	b.WriteString("\t}\n}\nnamespace test {\n\treplication-factor 2\n\tstorage-engine memory {\n\t\tdata-size 1G\n\t}\n}\n")
	return b.String()
}

// heartbeatPort is the mesh port of a node whose config does not set one, and of every simple node.
const heartbeatPort = 3002

// nodeConfig is who a node clusters with, and who it is, from its config.
type nodeConfig struct {
	clusterName string
	hbPort      int
	seeds       []seedAddr
	ident       identity
}

type seedAddr struct {
	host string
	port int
}
