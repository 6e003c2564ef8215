//go:build !unix

package storage

import (
	"errors"

	"github.com/gregor-broker/gregor/vfs"
)

// canMap reports false: without mmap every index keeps its entries in the
// heap, as on MemFS.
func canMap(vfs.File) (uintptr, bool) { return 0, false }

func mapFile(uintptr, int) ([]byte, error) { return nil, errors.New("storage: mmap not supported") }

func unmapFile([]byte) error { return nil }
