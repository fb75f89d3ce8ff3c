package localcluster

import (
	"os"

	"github.com/acko-io/acko/test/proc"
)

// LockE2E takes the machine-wide lock of an e2e instance's ports (engineers share machines, and
// several checkouts of the repository use the same ports), calling waiting first when another run
// holds it. The lock lasts as long as the returned file stays open (a dropped *os.File closes it).
func LockE2E(instance int, waiting func(path string)) (*os.File, error) {
	return proc.Lock("acko-"+e2eName(instance)+".lock", waiting)
}
