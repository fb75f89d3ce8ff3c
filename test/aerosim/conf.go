package aerosim

// heartbeatPort is the mesh port of a node whose config does not set one, and of every simple node.
const heartbeatPort = 3002

// nodeConfig is who a node clusters with, from its config.
type nodeConfig struct {
	clusterName string
	hbPort      int
	seeds       []seedAddr
}

type seedAddr struct {
	host string
	port int
}
