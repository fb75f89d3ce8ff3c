// Package aerospike reads Aerospike node health over the info protocol for the operator.
//
// Calls go through single-node connections of aerospike-client-go v7 (no cluster-tending client:
// the operator must see each pod on its own, even when the cluster is split). The Prober polls
// each AerospikeCluster in the background and wakes the reconciler only when the answer changes,
// so Reconcile reads a cache and never waits on the network.
package aerospike
