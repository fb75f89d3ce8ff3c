package validation

import (
	"fmt"
	"regexp"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"

	ackov1alpha1 "github.com/acko-io/acko/api/v1alpha1"
	"github.com/acko-io/acko/internal/config"
)

// maxRackID is the CRD's maximum rack id; 0 is the implicit rack of a single-rack cluster.
const maxRackID = 1000000

func validateSize(size int32) field.ErrorList {
	if size >= 1 && size <= ackov1alpha1.MaxClusterSize {
		return nil
	}
	return field.ErrorList{field.Invalid(specPath.Child("size"), size,
		fmt.Sprintf("must be between 1 and %d: Aerospike Community Edition allows at most %d nodes",
			ackov1alpha1.MaxClusterSize, ackov1alpha1.MaxClusterSize))}
}

func validateImage(image string) field.ErrorList {
	path := specPath.Child("image")
	switch {
	case strings.TrimSpace(image) == "":
		return field.ErrorList{field.Required(path, "an Aerospike Community Edition server image, e.g. aerospike:ce-8.1.1.1")}
	case enterpriseImage(image):
		return field.ErrorList{field.Invalid(path, image, "Aerospike Enterprise images are not supported: "+
			"ACKO runs Aerospike Community Edition (CE) only; use a CE image such as aerospike:ce-8.1.1.1")}
	}
	return nil
}

// imageVersionViolations refuses a server version older than every parameter table ACKO has.
func imageVersionViolations(c *ackov1alpha1.AerospikeCluster) field.ErrorList {
	if strings.TrimSpace(c.Spec.Image) == "" || enterpriseImage(c.Spec.Image) {
		return nil // validateImage says why
	}
	if _, _, err := config.TableFor(c.Spec.Image); err != nil {
		return field.ErrorList{field.Invalid(specPath.Child("image"), c.Spec.Image, "Aerospike "+err.Error())}
	}
	return nil
}

// imageWarnings: aerospikeConfig is checked against the newest table when the image's version is not
// known from its tag or is newer than every table.
func imageWarnings(c *ackov1alpha1.AerospikeCluster) []string {
	if strings.TrimSpace(c.Spec.Image) == "" || enterpriseImage(c.Spec.Image) {
		return nil
	}
	if _, note, _ := config.TableFor(c.Spec.Image); note != "" {
		return []string{"spec.image: " + note}
	}
	return nil
}

// eeTag matches the edition prefix of the official image's tags (ee-8.1.1.1, as ce-8.1.1.1 for CE).
var eeTag = regexp.MustCompile(`(^|[-_.])ee-`)

// enterpriseImage reports whether ref names an Enterprise build: the aerospike-server-enterprise
// (or -federal) repository, or an ee- tag of the official image.
func enterpriseImage(ref string) bool {
	repo, tag := splitImage(strings.ToLower(ref))
	name := repo[strings.LastIndex(repo, "/")+1:]
	if strings.Contains(name, "enterprise") || strings.Contains(name, "federal") {
		return true
	}
	return eeTag.MatchString(tag)
}

// splitImage splits an image reference into repository and tag, dropping any digest. The colon of a
// registry port (localhost:5000/aerospike) is not a tag.
func splitImage(ref string) (repo, tag string) {
	ref, _, _ = strings.Cut(ref, "@")
	slash := strings.LastIndex(ref, "/")
	if colon := strings.LastIndex(ref, ":"); colon > slash {
		return ref[:colon], ref[colon+1:]
	}
	return ref, ""
}

func validateBatchSize(batch *int32) field.ErrorList {
	if batch == nil || *batch >= 1 {
		return nil
	}
	return field.ErrorList{field.Invalid(specPath.Child("rollingUpdateBatchSize"), *batch,
		"must be at least 1 (the number of pods a rolling update restarts at once)")}
}

// validateDisruptionBudget refuses a cap above what the replication factor allows (config.MaxDown): a
// drain could then take down every copy of a partition; and a cap on a budget asked away.
func validateDisruptionBudget(c *ackov1alpha1.AerospikeCluster) field.ErrorList {
	b := c.Spec.DisruptionBudget
	if b == nil || b.MaxUnavailable == nil {
		return nil
	}
	path := specPath.Child("disruptionBudget", "maxUnavailable")
	limit := config.MaxDown(c)
	switch n := *b.MaxUnavailable; {
	case b.Disabled:
		return field.ErrorList{field.Invalid(path, n,
			"a cap needs a budget: spec.disruptionBudget.disabled is true; set one of the two")}
	case n < 1:
		return field.ErrorList{field.Invalid(path, n,
			"must be at least 1: a budget that allows no disruption blocks every drain and the operator's own restarts")}
	case int(n) > limit:
		return field.ErrorList{field.Invalid(path, n, fmt.Sprintf(
			"must be at most %d: the replication factor allows only %d pod(s) down at once (the smallest "+
				"replication-factor is %d, counting no more copies than nodes); more would let a drain take "+
				"every copy of a partition", limit, limit, config.ReplicationFactor(c)))}
	}
	return nil
}

func validateRacks(rc *ackov1alpha1.RackConfig) field.ErrorList {
	if rc == nil {
		return nil
	}
	path := specPath.Child("rackConfig", "racks")
	if len(rc.Racks) == 0 {
		return field.ErrorList{field.Required(path,
			"at least one rack; remove rackConfig for a single-rack cluster")}
	}
	var errs field.ErrorList
	seen := make(map[int32]bool, len(rc.Racks))
	for i, r := range rc.Racks {
		idPath := path.Index(i).Child("id")
		switch {
		case r.ID < 1 || r.ID > maxRackID:
			errs = append(errs, field.Invalid(idPath, r.ID, fmt.Sprintf("must be between 1 and %d", maxRackID)))
		case seen[r.ID]:
			errs = append(errs, field.Duplicate(idPath, r.ID))
		}
		seen[r.ID] = true
	}
	return errs
}
