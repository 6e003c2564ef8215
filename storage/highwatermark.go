package storage

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"github.com/gregor-broker/gregor/vfs"
)

// The high-watermark checkpoint: the partition's high watermark as the
// broker last saw it, so that a restarted replica does not show consumers
// less than it did (Kafka keeps it per log directory in
// replication-offset-checkpoint, written every
// replica.high.watermark.checkpoint.interval.ms and at shutdown). Storage
// keeps it per partition, text, replaced atomically:
//
//	0                       version
//	high-watermark 1234
const (
	highWatermarkName     = "high-watermark.checkpoint"
	highWatermarkTempName = highWatermarkName + vfs.TempSuffix
	highWatermarkVersion  = "0"
	highWatermarkKey      = "high-watermark "
	// maxHighWatermarkFileBytes bounds what Open reads: the file is two
	// short lines.
	maxHighWatermarkFileBytes = 64
)

// formatHighWatermark renders the checkpoint file.
func formatHighWatermark(hw int64) []byte {
	return fmt.Appendf(nil, "%s\n%s%d\n", highWatermarkVersion, highWatermarkKey, hw)
}

// parseHighWatermark decodes a checkpoint file exactly as
// formatHighWatermark writes it (the last newline may be missing): the
// version line "0", then "high-watermark" and a non-negative decimal
// int64. Anything else is an error describing the damage.
func parseHighWatermark(b []byte) (int64, error) {
	version, rest, ok := bytes.Cut(b, []byte{'\n'})
	if !ok || string(version) != highWatermarkVersion {
		return 0, fmt.Errorf("unknown version line %q", version)
	}
	line, tail, _ := bytes.Cut(rest, []byte{'\n'})
	if len(tail) > 0 {
		return 0, errors.New("data after the high-watermark line")
	}
	digits, ok := bytes.CutPrefix(line, []byte(highWatermarkKey))
	if !ok {
		return 0, fmt.Errorf("malformed line %q", line)
	}
	// ParseInt accepts a sign and leading zeros; only the digits the
	// writer writes are ours.
	if len(digits) == 0 || digits[0] < '0' || digits[0] > '9' || digits[0] == '0' && len(digits) > 1 {
		return 0, fmt.Errorf("malformed high watermark %q", digits)
	}
	hw, err := strconv.ParseInt(string(digits), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("malformed high watermark %q", digits)
	}
	return hw, nil
}

// WriteHighWatermark checkpoints the partition's high watermark: written to
// a temporary file, fsynced, renamed over high-watermark.checkpoint and the
// directory fsynced, so a crash leaves the old value or the new one. It is
// durable when WriteHighWatermark returns, and HighWatermarkCheckpoint
// returns it from then on. hw must not be negative (ErrOffsetOutOfRange);
// it is not checked against the log, whose end may move meanwhile (the
// value read back at Open is clamped to the log). Concurrent calls are
// serialized; it holds none of the locks appends, reads and truncations
// take while it writes and fsyncs, so it never makes them wait for the
// disk. Close and Delete wait for a write in progress; after them it
// returns ErrClosed. A failed write leaves the previous checkpoint, and
// does not fail the Log.
func (l *Log) WriteHighWatermark(hw int64) error {
	if hw < 0 {
		return fmt.Errorf("%w: negative high watermark %d", ErrOffsetOutOfRange, hw)
	}
	l.hwMu.Lock()
	defer l.hwMu.Unlock()
	l.mu.RLock()
	closed := l.closed
	l.mu.RUnlock()
	if closed {
		return ErrClosed
	}
	if err := vfs.WriteFileAtomic(l.fsys, filepath.Join(l.dir, highWatermarkName), formatHighWatermark(hw), 0o644); err != nil {
		return fmt.Errorf("storage: write high-watermark checkpoint: %w", err)
	}
	l.hw.Store(hw)
	return nil
}

// HighWatermarkCheckpoint returns the high watermark last checkpointed:
// the value of the latest WriteHighWatermark, or, before any, the one Open
// read from the file, clamped to [StartOffset, EndOffset] of the recovered
// log as Kafka's UnifiedLog.updateHighWatermark clamps the checkpointed
// value it loads. ok is false when there is none (no file, or a damaged
// one, which Open reports with a warning and otherwise ignores).
func (l *Log) HighWatermarkCheckpoint() (hw int64, ok bool) {
	hw = l.hw.Load()
	return hw, hw >= 0
}

// loadHighWatermark reads the checkpoint at Open, once the log's offsets
// are known, and removes a temporary file a crash left. A damaged file is
// logged and treated as absent: the broker then starts from the log start
// offset, as Kafka does without a checkpoint entry, and the next write
// replaces it.
func (l *Log) loadHighWatermark() error {
	l.hw.Store(-1)
	if err := l.fsys.Remove(filepath.Join(l.dir, highWatermarkTempName)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("storage: remove %s: %w", highWatermarkTempName, err)
	}
	path := filepath.Join(l.dir, highWatermarkName)
	b, err := readSmallFile(l.fsys, path, maxHighWatermarkFileBytes)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return nil
	case errors.Is(err, ErrCorrupt):
	case err != nil:
		return err
	}
	var hw int64
	if err == nil {
		hw, err = parseHighWatermark(b)
	}
	if err != nil {
		l.logger.Warn("storage: ignoring damaged high-watermark checkpoint", "file", path, "err", err)
		return nil
	}
	l.hw.Store(min(max(hw, l.start.Load()), l.end.Load()))
	return nil
}
