package storage

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// completeSwap finishes a cleaner swap interrupted by a crash (Kafka's
// LogLoader, for .swap files). name is a <base>.log.swap file: the cleaned
// segment replacing the segments whose base offsets lie in [base, its end
// offset). It was fsynced before it was renamed to .swap, so it is whole.
// The segments it replaces are removed, it takes its final name, and its
// indexes are removed so that Open rebuilds them by scanning it.
func (l *Log) completeSwap(name string) error {
	fsys, dir := l.fsys, l.dir
	baseName := strings.TrimSuffix(name, swapSuffix)
	base, _, ok := parseSegmentName(baseName)
	if !ok {
		l.logger.Warn("storage: removing a stray swap file", "file", filepath.Join(dir, name))
		return fsys.Remove(filepath.Join(dir, name))
	}
	f, err := fsys.OpenFile(filepath.Join(dir, name), os.O_RDONLY, 0)
	if err != nil {
		return fmt.Errorf("storage: open %s: %w", name, err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return fmt.Errorf("storage: stat %s: %w", name, err)
	}
	res, err := scanSegment(f, fi.Size(), base, l.cfg.IndexIntervalBytes)
	f.Close()
	if err != nil {
		return fmt.Errorf("storage: scan %s: %w", name, err)
	}
	if res.valid != fi.Size() {
		return &CorruptError{Path: filepath.Join(dir, name), Position: res.valid, Reason: "swap segment: " + res.reason}
	}
	end := max(res.end, base+1)
	entries, err := fsys.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("storage: list %s: %w", dir, err)
	}
	for _, e := range entries {
		b, _, ok := parseSegmentName(e.Name())
		if !ok || b < base || b >= end {
			continue
		}
		if err := fsys.Remove(filepath.Join(dir, e.Name())); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("storage: complete swap: %w", err)
		}
	}
	if err := fsys.Rename(filepath.Join(dir, name), filepath.Join(dir, baseName)); err != nil {
		return fmt.Errorf("storage: complete swap: %w", err)
	}
	l.logger.Warn("storage: completed an interrupted cleaner swap", "segment", filepath.Join(dir, baseName), "replaced_below", end)
	return nil
}
