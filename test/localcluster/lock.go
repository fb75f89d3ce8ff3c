package localcluster

import (
	"os"
	"path/filepath"
	"syscall"
)

// LockE2E takes the machine-wide lock of the e2e ports (engineers share machines, and several
// checkouts of the repository use the same ports), calling waiting first when another run holds
// it. The lock lasts as long as the returned file stays open (a dropped *os.File closes it).
func LockE2E(waiting func(path string)) (*os.File, error) {
	f, err := os.OpenFile(filepath.Join(os.TempDir(), "acko-e2e.lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	fd := int(f.Fd())
	if syscall.Flock(fd, syscall.LOCK_EX|syscall.LOCK_NB) != nil {
		waiting(f.Name())
		if err := syscall.Flock(fd, syscall.LOCK_EX); err != nil {
			_ = f.Close()
			return nil, err
		}
	}
	return f, nil
}
