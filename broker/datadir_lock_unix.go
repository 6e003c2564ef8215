//go:build unix

package broker

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// dataDirLockFile is the file in the data dir whose lock says a broker
// uses the directory, as Kafka keeps a .lock in each log dir.
const dataDirLockFile = ".lock"

// lockDataDir takes an exclusive lock on dir's lock file, held until
// unlockDataDir: a second broker on the same directory, in another process
// or in this one, is refused before it reads or writes anything there.
// flock(2) locks belong to the open file, so a second open in the same
// process conflicts too; the lock goes with the process, so a broker killed
// leaves no stale lock behind.
func lockDataDir(dir string) (*os.File, error) {
	path := filepath.Join(dir, dataDirLockFile)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("broker: opening the data dir's lock file: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("broker: the data dir %s is in use by another broker (it holds the lock on %s)", dir, path)
		}
		return nil, fmt.Errorf("broker: locking %s: %w", path, err)
	}
	return f, nil
}

// unlockDataDir releases the lock lockDataDir took.
func unlockDataDir(f *os.File) {
	if f != nil {
		f.Close() // closing the only descriptor releases the flock
	}
}
