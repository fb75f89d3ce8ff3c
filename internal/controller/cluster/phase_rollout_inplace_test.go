package cluster

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/acko-io/acko/internal/aerospike"
)

// A replication-factor change goes to every node at once: it starts only when the pods of its batch run
// and every running node answers with a fresh reading; a pod whose asd does not run is left out.
func TestEveryNodeAnswers(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(st *clusterState)
		batch  []string
		why    string
		pods   []string
	}{
		{"every node answers", func(*clusterState) {}, []string{"aero-0", "aero-1", "aero-2"}, "",
			[]string{"aero-0", "aero-1", "aero-2"}},
		{"a crash-looping pod outside the batch is left out", func(st *clusterState) {
			st.members = slices.DeleteFunc(st.members, func(m string) bool { return m == "aero-1" })
		}, []string{"aero-0"}, "", []string{"aero-0", "aero-2"}},
		{"a pod of the batch does not run", func(st *clusterState) {
			st.members = slices.DeleteFunc(st.members, func(m string) bool { return m == "aero-1" })
		}, []string{"aero-0", "aero-1"}, "aero-1 does not run", nil},
		{"a running node has no reading yet", func(st *clusterState) { delete(st.health.Nodes, "aero-2") },
			[]string{"aero-0"}, "no reading of aero-2 yet", nil},
		{"a running node is silent", func(st *clusterState) {
			n := st.health.Nodes["aero-1"]
			n.Err = fmt.Errorf("%w: i/o timeout", aerospike.ErrUnreachable)
			st.health.Nodes["aero-1"] = n
		}, []string{"aero-0"}, "aero-1: does not answer: " + aerospike.ErrUnreachable.Error() + ": i/o timeout", nil},
		{"a running node answered with an error", func(st *clusterState) {
			n := st.health.Nodes["aero-1"]
			n.Err = errors.New("statistics: parse error")
			st.health.Nodes["aero-1"] = n
		}, []string{"aero-0"}, "aero-1: statistics: parse error", nil},
		{"a reading is older than a take-down may use", func(st *clusterState) {
			n := st.health.Nodes["aero-2"]
			n.ReadAt = st.now.Add(-aerospike.MaxReadingAge - time.Second)
			st.health.Nodes["aero-2"] = n
		}, []string{"aero-0"}, "aero-2: last reading is 6s old", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := settledState()
			tc.change(st)
			pods, why := st.everyNodeAnswers(tc.batch)
			var names []string
			for _, p := range pods {
				names = append(names, p.Name)
			}
			if why != tc.why || !slices.Equal(names, tc.pods) {
				t.Errorf("everyNodeAnswers(%v) = %v, %q; want %v, %q", tc.batch, names, why, tc.pods, tc.why)
			}
		})
	}
}
