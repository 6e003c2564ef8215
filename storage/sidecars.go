package storage

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/gregor-broker/gregor/vfs"
)

// openSidecars brings the files kept beside the segments in line with the
// recovered log, once Open has loaded the segments and set the start and
// end offsets: each segment's aborted-transaction index is cut to its
// batches, the leader-epoch checkpoint (epoch.go) is loaded and
// truncated to the log, and producer snapshots past the log end, which
// describe batches the log lost to a truncation or a torn tail, are
// deleted, as are temporary snapshot files a crash left.
func (l *Log) openSidecars() error {
	if err := l.openEpochs(); err != nil {
		return err
	}
	// Aborted transactions whose markers a recovery cut took off the log
	// are no longer in it.
	for _, seg := range l.segments {
		if err := seg.txns.truncateTo(seg.end); err != nil {
			return err
		}
	}
	entries, err := l.fsys.ReadDir(l.dir)
	if err != nil {
		return fmt.Errorf("storage: list %s: %w", l.dir, err)
	}
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), snapshotSuffix+vfs.TempSuffix) {
			if err := l.fsys.Remove(filepath.Join(l.dir, e.Name())); err != nil && !errors.Is(err, os.ErrNotExist) {
				return fmt.Errorf("storage: remove %s: %w", e.Name(), err)
			}
		}
	}
	return l.removeSnapshotsAbove(l.end.Load())
}
