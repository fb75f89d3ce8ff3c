package resources

import (
	"slices"
	"testing"

	"k8s.io/pod-security-admission/api"
	"k8s.io/pod-security-admission/policy"

	"github.com/acko-io/acko/test/testcluster"
)

// The restricted sample's pods, as the builders make them, meet the baseline Pod Security Standard and
// fail the restricted one on runAsNonRoot alone (the exception docs/scheduling.md explains), checked with
// the policy package the API server's PodSecurity admission runs.
func TestRestrictedSamplePodSecurity(t *testing.T) {
	c, err := testcluster.SampleNamed("acko_v1alpha1_aerospikecluster_restricted.yaml")
	if err != nil {
		t.Fatal(err)
	}
	eval, err := policy.NewEvaluator(policy.DefaultChecks(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, rack := range c.RackPlan() {
		tmpl := StatefulSet(c, rack, "h").Spec.Template
		forbidden := func(level api.Level) []string {
			return policy.AggregateCheckResults(eval.EvaluatePod(api.LevelVersion{Level: level, Version: api.LatestVersion()},
				&tmpl.ObjectMeta, &tmpl.Spec)).ForbiddenReasons
		}
		if got := forbidden(api.LevelBaseline); len(got) > 0 {
			t.Errorf("rack %d: baseline forbids %v", rack.ID, got)
		}
		if got := forbidden(api.LevelRestricted); !slices.Equal(got, []string{"runAsNonRoot != true"}) {
			t.Errorf("rack %d: restricted forbids %v, want only runAsNonRoot != true", rack.ID, got)
		}
	}
}
