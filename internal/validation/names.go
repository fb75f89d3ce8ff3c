package validation

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	ackov1alpha1 "github.com/acko-io/acko/api/v1alpha1"
)

// MaxStatefulSetNameLength is the longest StatefulSet name whose pods Kubernetes can create: each pod
// carries the label controller-revision-hash=<StatefulSet>-<hash of up to 10 characters>, and a label
// value has at most 63 characters.
const MaxStatefulSetNameLength = validation.LabelValueMaxLength - 11

var namePath = field.NewPath("metadata", "name")

// validateNames refuses a cluster whose children could not exist under Kubernetes' name rules: its
// StatefulSets (one per rack), pods (DNS labels: they are the pods' hostnames), Services (DNS-1035
// labels) and the pods' DNS names in the mesh seeds, <pod>.<cluster>-headless.<namespace>.svc.<domain>
// (at most 253 characters). Names are immutable, so only a new cluster can break them.
func validateNames(c *ackov1alpha1.AerospikeCluster, clusterDomain string) field.ErrorList {
	var errs field.ErrorList
	invalid := func(detail string) {
		errs = append(errs, field.Invalid(namePath, c.Name, detail))
	}
	plan := c.RackPlan()
	last := plan[len(plan)-1]
	if sts := c.StatefulSetName(last.ID); len(sts) > MaxStatefulSetNameLength {
		invalid(fmt.Sprintf("too long: its StatefulSet %s would have %d characters, Kubernetes allows at most %d "+
			"(a pod's controller-revision-hash label adds the revision to the name, within 63); use a name of at "+
			"most %d characters", sts, len(sts), MaxStatefulSetNameLength, MaxStatefulSetNameLength-(len(sts)-len(c.Name))))
	}
	pod := c.PodName(last.ID, max(last.Size-1, 0))
	if msgs := validation.IsDNS1123Label(pod); len(msgs) > 0 {
		invalid(fmt.Sprintf("its pods' names (e.g. %s) are their hostnames and must be DNS labels: %s",
			pod, strings.Join(msgs, "; ")))
	}
	for _, svc := range []string{c.ClientServiceName(), c.HeadlessServiceName()} {
		if msgs := validation.IsDNS1035Label(svc); len(msgs) > 0 {
			invalid(fmt.Sprintf("its Service %s must have a DNS-1035 label name: %s", svc, strings.Join(msgs, "; ")))
		}
	}
	if fqdn := c.PodDNSName(pod, clusterDomain); len(fqdn) > validation.DNS1123SubdomainMaxLength {
		invalid(fmt.Sprintf("too long: its pods' DNS names in the mesh seeds (e.g. %s) would have %d characters, "+
			"DNS allows at most %d", fqdn, len(fqdn), validation.DNS1123SubdomainMaxLength))
	}
	return errs
}
