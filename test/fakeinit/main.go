// Command fakeinit is the local cluster's stand-in for the Aerospike image's PID 1
// (as-tini-static) and, invoked as `kill`, the shim that turns a pod's `kill -USR1 1` into a warm
// restart of the pod's simulated node. See package test/localcluster/fakeinit.
package main

import (
	"os"

	"github.com/acko-io/acko/test/localcluster/fakeinit"
)

func main() { os.Exit(fakeinit.Main()) }
