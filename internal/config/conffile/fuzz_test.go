package conffile

import (
	"fmt"
	"testing"

	"github.com/acko-io/acko/internal/config/params"
)

// FuzzCheck: no text panics the parser or the check, and the answers are deterministic.
func FuzzCheck(f *testing.F) {
	f.Add(minimal, uint8(3))
	f.Add("service {\n\tproto-fd-max 1K # x\n}\nnamespace a {\n\tstorage-engine pmem {\n\t}\n}\n", uint8(0))
	f.Add("logging {\n\tconsole {\n\t\tcontext any info\n\t}\n}\nnetwork {\n\tinfo {\n\t}\n}\n", uint8(1))
	f.Fuzz(func(t *testing.T, text string, version uint8) {
		file, err := Parse(text)
		if err != nil {
			return
		}
		tables := params.Tables()
		tb := tables[int(version)%len(tables)]
		a, b := Check(file, tb), Check(file, tb)
		if fmt.Sprint(a) != fmt.Sprint(b) {
			t.Fatalf("Check is not deterministic: %v vs %v", a, b)
		}
		for _, s := range Settings(file, tb) {
			_ = s.ServerValue()
			_, _ = s.InfoName()
		}
	})
}
