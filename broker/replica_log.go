package broker

// The storage calls replication makes, in one place. repl-storage delivers
// Log.AppendReplicated, TruncateTo, TruncateFullyAndStartAt and the high
// watermark checkpoint; until its branch is merged these stand in for them
// with the storage calls that exist (Append keeps the leader's offsets when
// the batches are contiguous from the log end; Truncate and TruncateFully).

import (
	"fmt"

	"github.com/gregor-broker/gregor/protocol/batch"
	"github.com/gregor-broker/gregor/storage"
)

// appendReplicated appends batches copied from the leader, keeping their
// offsets.
func appendReplicated(l *storage.Log, batches []byte) (first, last int64, err error) {
	next := l.EndOffset()
	for p := 0; p < len(batches); {
		h, err := batch.ParseHeader(batches[p:])
		if err != nil {
			return -1, -1, fmt.Errorf("%w: %w", storage.ErrInvalidBatch, err)
		}
		if h.BaseOffset != next {
			return -1, -1, fmt.Errorf("%w: batch at offset %d where %d was expected", storage.ErrInvalidBatch, h.BaseOffset, next)
		}
		next = h.LastOffset() + 1
		p += 12 + int(h.BatchLength)
	}
	return l.Append(batches)
}

func truncateTo(l *storage.Log, offset int64) error { return l.Truncate(offset) }

func truncateFullyAndStartAt(l *storage.Log, offset int64) error { return l.TruncateFully(offset) }

func writeHighWatermark(l *storage.Log, hw int64) error { return nil }

func highWatermarkCheckpoint(l *storage.Log) (int64, bool) { return 0, false }
