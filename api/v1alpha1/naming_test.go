package v1alpha1

import (
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
)

func namedCluster(name string, size int32, racks ...int32) *AerospikeCluster {
	c := &AerospikeCluster{ObjectMeta: metav1.ObjectMeta{Namespace: "db", Name: name}, Spec: AerospikeClusterSpec{Size: size}}
	if len(racks) > 0 {
		c.Spec.RackConfig = &RackConfig{}
		for _, id := range racks {
			c.Spec.RackConfig.Racks = append(c.Spec.RackConfig.Racks, Rack{ID: id})
		}
	}
	return c
}

func TestDerivedNames(t *testing.T) {
	for _, tc := range []struct {
		name                       string
		c                          *AerospikeCluster
		sts, cm, firstPod, lastPod string
		pods                       int
	}{
		{"single rack", namedCluster("aero", 3), "aero", "aero-config", "aero-0", "aero-2", 3},
		{"a listed rack uses the rack layout", namedCluster("aero", 2, 7), "aero-7", "aero-7-config", "aero-7-0", "aero-7-1", 2},
		{"multi-rack", namedCluster("aero", 5, 1, 2), "aero-1", "aero-1-config", "aero-1-0", "aero-2-1", 5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			plan := tc.c.RackPlan()
			pods := tc.c.DesiredPodNames()
			if got := tc.c.StatefulSetName(plan[0].ID); got != tc.sts {
				t.Errorf("StatefulSet %q, want %q", got, tc.sts)
			}
			if got := tc.c.ConfigMapName(plan[0].ID); got != tc.cm {
				t.Errorf("ConfigMap %q, want %q", got, tc.cm)
			}
			if len(pods) != tc.pods || pods[0] != tc.firstPod || pods[len(pods)-1] != tc.lastPod {
				t.Errorf("pods %v, want %d from %s to %s", pods, tc.pods, tc.firstPod, tc.lastPod)
			}
			for _, p := range pods {
				rack, ordinal, ok := tc.c.ParsePodName(p)
				if !ok || tc.c.PodName(rack, ordinal) != p {
					t.Errorf("ParsePodName(%q) = %d, %d, %v: not the name's rack and ordinal", p, rack, ordinal, ok)
				}
			}
			if got := tc.c.PodDNSName(tc.firstPod, DefaultClusterDomain); got !=
				tc.firstPod+".aero-headless.db.svc.cluster.local" {
				t.Errorf("PodDNSName %q", got)
			}
		})
	}
	if _, _, ok := namedCluster("aero", 3).ParsePodName("aerox-1"); ok {
		t.Error("a pod of another cluster parsed as this cluster's")
	}
}

// Rolling restarts go through racks in order and, within a rack, from the highest ordinal down.
func TestComparePods(t *testing.T) {
	c := namedCluster("aero", 6, 2, 10)
	pods := []string{"aero-10-0", "aero-2-1", "stray", "aero-10-2", "aero-2-0"}
	slices.SortFunc(pods, func(a, b string) int { return c.ComparePods(a, b, true) })
	if want := []string{"aero-2-1", "aero-2-0", "aero-10-2", "aero-10-0", "stray"}; !slices.Equal(pods, want) {
		t.Errorf("restart order %v, want %v", pods, want)
	}
}

// The longest single-rack name whose children all fit Kubernetes' limits: 52 characters, because each pod
// carries controller-revision-hash=<StatefulSet>-<hash of up to 10 characters>, a label value of at most 63.
// (The webhook refuses longer names with that reason: internal/validation/names.go.)
func TestLongestNameFits(t *testing.T) {
	const longest = 52
	c := namedCluster(strings.Repeat("a", longest), 100)
	sts := c.StatefulSetName(0)
	revisionHash := sts + "-" + strings.Repeat("f", 10)
	checks := map[string][]string{
		"StatefulSet":              validation.IsDNS1123Subdomain(sts),
		"controller-revision-hash": validation.IsValidLabelValue(revisionHash),
		"last pod":                 validation.IsDNS1123Label(c.PodName(0, 99)),
		"ConfigMap":                validation.IsDNS1123Subdomain(c.ConfigMapName(0)),
		"client Service":           validation.IsDNS1035Label(c.ClientServiceName()),
		"headless Service":         validation.IsDNS1035Label(c.HeadlessServiceName()),
		"seed FQDN":                validation.IsDNS1123Subdomain(c.PodDNSName(c.PodName(0, 99), DefaultClusterDomain)),
	}
	for what, msgs := range checks {
		if len(msgs) > 0 {
			t.Errorf("%s of a %d-character name: %v", what, longest, msgs)
		}
	}
	// One more character breaks the revision label (and so the StatefulSet's pods).
	c = namedCluster(strings.Repeat("a", longest+1), 3)
	if len(validation.IsValidLabelValue(c.StatefulSetName(0)+"-"+strings.Repeat("f", 10))) == 0 {
		t.Errorf("a %d-character name still fits the controller-revision-hash label", longest+1)
	}
}
