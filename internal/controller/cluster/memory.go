package cluster

import (
	"maps"
	"slices"
	"sync"

	"k8s.io/apimachinery/pkg/types"
)

// perCluster is what the operator keeps in memory for each cluster, by key: nothing in it is needed
// after a restart (it is read or asked again), and a cluster's entries go with the cluster (forget).
type perCluster[K comparable, V any] struct {
	mu sync.Mutex
	m  map[types.NamespacedName]map[K]V
}

func (p *perCluster[K, V]) get(cluster types.NamespacedName, k K) (V, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	v, ok := p.m[cluster][k]
	return v, ok
}

func (p *perCluster[K, V]) set(cluster types.NamespacedName, k K, v V) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.m == nil {
		p.m = map[types.NamespacedName]map[K]V{}
	}
	if p.m[cluster] == nil {
		p.m[cluster] = map[K]V{}
	}
	p.m[cluster][k] = v
}

func (p *perCluster[K, V]) remove(cluster types.NamespacedName, k K) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.m[cluster], k)
}

// retain keeps only the cluster's entries whose key keep accepts.
func (p *perCluster[K, V]) retain(cluster types.NamespacedName, keep func(K) bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for k := range p.m[cluster] {
		if !keep(k) {
			delete(p.m[cluster], k)
		}
	}
}

// forget drops everything kept for a cluster that is gone.
func (p *perCluster[K, V]) forget(cluster types.NamespacedName) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.m, cluster)
}

// keys are the cluster's entries' keys.
func (p *perCluster[K, V]) keys(cluster types.NamespacedName) []K {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Collect(maps.Keys(p.m[cluster]))
}
