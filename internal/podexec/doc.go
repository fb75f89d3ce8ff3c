// Package podexec changes a running pod's Aerospike container through exec: it copies the rack's
// current config into the pod's own copy, and sends the WarmRestart signal.
//
// A WarmRestart restarts asd in place: the pod keeps its UID, IP and volumes. That only works when PID 1
// is the image's tini started with `-r SIGUSR1` (as-tini-static -r SIGUSR1 -t SIGTERM), which turns
// SIGUSR1 into "stop the child with SIGTERM, then start it again". A plain asd aborts on SIGUSR1, so the
// signal is sent only after /proc/1/cmdline proves PID 1 is such a tini.
//
// Both steps run through the API server's pods/exec subresource (WebSocket, falling back to SPDY). Stdin
// is never attached and results are judged from what the command printed and from the exec error, never
// from an exit code alone: some runtimes (kwok) do not pass exit codes through.
//
// The WebSocket exec of Kubernetes 1.37 is a GET on pods/exec; the SPDY fallback is a POST (create).
//
// +kubebuilder:rbac:groups="",resources=pods/exec,verbs=create;get
package podexec
