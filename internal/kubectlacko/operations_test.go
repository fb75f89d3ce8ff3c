package kubectlacko

import (
	"bytes"
	"crypto/rand"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	ackov1alpha1 "github.com/acko-io/acko/api/v1alpha1"
	"github.com/acko-io/acko/internal/validation"
)

func TestOperationIDIsTimeThenRandom(t *testing.T) {
	at := time.Date(2026, 11, 25, 19, 45, 12, 0, time.FixedZone("CET", 3600))
	id, err := newOperationID(at, bytes.NewReader([]byte{0, 35, 36, 251, 252, 255, 7, 100}))
	if err != nil {
		t.Fatal(err)
	}
	// UTC time; 252 and 255 are past the last whole multiple of 36 and dropped.
	if want := "261125-184512-0z0z7s"; id != want {
		t.Errorf("id %q, want %q", id, want)
	}
}

func TestOperationIDsAreValidAndDistinct(t *testing.T) {
	pattern := regexp.MustCompile(`^\d{6}-\d{6}-[0-9a-z]{6}$`)
	c := runningCluster()
	seen := map[string]bool{}
	const n = 10000
	for range n {
		// All in one second: only the random part tells them apart.
		id, err := newOperationID(fixedNow, rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		if len(id) != ackov1alpha1.MaxOperationIDLength || !pattern.MatchString(id) {
			t.Fatalf("id %q: want %d characters like 261125-104512-x7k2pq", id, ackov1alpha1.MaxOperationIDLength)
		}
		if len(seen) == 0 {
			c.Spec.Operations = []ackov1alpha1.OperationSpec{{Kind: ackov1alpha1.OperationWarmRestart, ID: id}}
			if errs := validation.ValidateSpec(c); len(errs) > 0 {
				t.Fatalf("the webhook's validator refuses generated id %q: %v", id, errs)
			}
		}
		seen[id] = true
	}
	// 36^6 random parts: by the birthday bound about 0.02 of a collision is expected among 10000 ids
	// (a run with one came up in CI); more than 3 would take a broken source of randomness.
	if n-len(seen) > 3 {
		t.Errorf("%d distinct ids out of %d drawn in one second", len(seen), n)
	}
}

func TestOperationIDFailsWithoutRandomness(t *testing.T) {
	_, err := newOperationID(fixedNow, iotest.ErrReader(errors.New("no entropy")))
	if err == nil || !strings.Contains(err.Error(), "generating an operation id: no entropy") {
		t.Errorf("error %v", err)
	}
}

func TestUsedIDsAreRefused(t *testing.T) {
	c, _, _ := pausedCluster() // last operation 261125-094500-k2x9qa ended; fix-pod-2 waits in the spec
	c.Status.FinishedOperations = append(c.Status.FinishedOperations, "old-one")
	for _, id := range []string{"261125-094500-k2x9qa", "fix-pod-2", "old-one"} {
		_, err := unusedID(c, id, true, time.Now)
		want := fmt.Sprintf("operation id %q was already used on aerospike/aerospike-3node and would never run again", id)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("id %s: error %v, want %q", id, err, want)
		}
	}
	if id, err := unusedID(c, "new-one", true, time.Now); err != nil || id != "new-one" {
		t.Errorf("an unused id: %q, %v", id, err)
	}
	id, err := unusedID(c, "", false, func() time.Time { return fixedNow })
	if err != nil || !strings.HasPrefix(id, "261125-100000-") {
		t.Errorf("a generated id: %q, %v", id, err)
	}
}

func TestOperationsWithKeepsAnOperationThatHasNotStarted(t *testing.T) {
	warm := ackov1alpha1.OperationSpec{Kind: ackov1alpha1.OperationWarmRestart, ID: "new"}
	paused, _, _ := pausedCluster()
	if got := operationsWith(paused, warm); len(got) != 2 || got[0].ID != "fix-pod-2" || got[1].ID != "new" {
		t.Errorf("waiting operation dropped or reordered: %+v", got)
	}
	// A finished operation in the spec is replaced.
	done := runningCluster()
	done.Spec.Operations = []ackov1alpha1.OperationSpec{{Kind: ackov1alpha1.OperationWarmRestart, ID: "261125-094500-k2x9qa"}}
	if got := operationsWith(done, warm); len(got) != 1 || got[0].ID != "new" {
		t.Errorf("finished operation kept: %+v", got)
	}
	// The operation in progress is not kept: the server refuses the change with the seed's message.
	running := inProgressCluster()
	running.Spec.Operations = []ackov1alpha1.OperationSpec{{Kind: ackov1alpha1.OperationWarmRestart, ID: "held"}}
	if got := operationsWith(running, warm); len(got) != 1 || got[0].ID != "new" {
		t.Errorf("operation in progress kept: %+v", got)
	}
}

func TestOperationPatchCarriesTheResourceVersion(t *testing.T) {
	data, err := operationPatch("42", []ackov1alpha1.OperationSpec{{Kind: ackov1alpha1.OperationPodRestart, ID: "x",
		PodList: []string{"a-0"}}})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"metadata":{"resourceVersion":"42"},"spec":{"operations":[{"kind":"PodRestart","id":"x","podList":["a-0"]}]}}`
	if string(data) != want {
		t.Errorf("patch %s, want %s", data, want)
	}
}

func TestRefusalShowsTheServerMessageAndWhatStandsInTheWay(t *testing.T) {
	server := apierrors.NewInvalid(schema.GroupKind{Group: "acko.io", Kind: "AerospikeCluster"}, "cache",
		field.ErrorList{field.Invalid(field.NewPath("spec", "operations"), "object", validation.MsgOperationsInFlight)})
	err := refusal(server, inProgressCluster(), "new")
	want := `the server refused operation new: AerospikeCluster.acko.io "cache" is invalid: spec.operations: ` +
		`Invalid value: "object": cannot modify operations while InProgress` + "\n" +
		`operation held (WarmRestart) is InProgress: 1/3 pods done, 0 failed, restarting cache-1; ` +
		`wait until it ends (kubectl acko status cache -n aerospike)`
	if err.Error() != want {
		t.Errorf("got\n%s\nwant\n%s", err, want)
	}
	if !apierrors.IsInvalid(err) {
		t.Error("the server's error is not kept")
	}

	paused, _, _ := pausedCluster()
	err = refusal(errors.New(validation.MsgOnlyOneOperation), paused, "new")
	if !strings.Contains(err.Error(), "only one operation allowed\nspec.operations already holds operation fix-pod-2 "+
		"(PodRestart), which has not started yet") {
		t.Errorf("got %v", err)
	}
}

func TestExplainedErrors(t *testing.T) {
	notFound := apierrors.NewNotFound(schema.GroupResource{Group: "acko.io", Resource: "aerospikeclusters"}, "nope")
	err := explain(notFound, "prod", "nope")
	want := `AerospikeCluster "nope" not found in namespace "prod" (kubectl acko list -n prod lists them; ` +
		`-A lists every namespace)`
	if err == nil || err.Error() != want {
		t.Errorf("missing cluster: %v", err)
	}
	noMatch := &meta.NoKindMatchError{GroupKind: schema.GroupKind{Group: "acko.io", Kind: "AerospikeCluster"},
		SearchedVersions: []string{"v1alpha1"}}
	if err := explain(noMatch, "prod", "x"); !errors.Is(err, errNoCRD) {
		t.Errorf("no CRD: %v", err)
	}
	if !strings.Contains(errNoCRD.Error(), "is ACKO installed?") {
		t.Errorf("no CRD: %v", errNoCRD)
	}
	other := errors.New("connection refused")
	if err := explain(other, "prod", "x"); !errors.Is(err, other) {
		t.Errorf("other errors pass: %v", err)
	}
}
