//go:build unix

package storage

import (
	"fmt"
	"syscall"

	"github.com/gregor-broker/gregor/vfs"
)

// canMap reports whether index files of f can be memory-mapped, and the
// descriptor to map. *os.File (OSFS) can, and so can a file that wraps one
// and says so with Unwrap (a FaultFS file over OSFS); MemFS files cannot
// and keep their entries in the heap.
func canMap(f vfs.File) (uintptr, bool) {
	switch f := f.(type) {
	case interface{ Fd() uintptr }:
		return f.Fd(), true
	case interface{ Unwrap() vfs.File }:
		return canMap(f.Unwrap())
	}
	return 0, false
}

// mapFile maps the first size bytes of the file behind fd read-only and
// shared, so that writes made with pwrite are seen through the mapping (the
// page cache is one). size must be positive.
func mapFile(fd uintptr, size int) ([]byte, error) {
	b, err := syscall.Mmap(int(fd), 0, size, syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("storage: mmap index: %w", err)
	}
	return b, nil
}

func unmapFile(b []byte) error {
	if err := syscall.Munmap(b); err != nil {
		return fmt.Errorf("storage: munmap index: %w", err)
	}
	return nil
}
