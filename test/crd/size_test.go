package crd

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/acko-io/acko/test/testenv"
)

// kubectl apply stores the whole object in an annotation limited to 256 KiB.
func TestCRDFitsPlainKubectlApply(t *testing.T) {
	const limit = 256 * 1024
	path := filepath.Join(testenv.RepoRoot(), "config", "crd", "bases", "acko.io_aerospikeclusters.yaml")
	info, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if info.Size() >= limit {
		t.Fatalf("CRD is %d bytes; kubectl apply needs it under %d", info.Size(), limit)
	}
}
