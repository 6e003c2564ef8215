package storage

import (
	"errors"
	"fmt"
)

// lockSegments takes cleanMu, syncMu and appendMu, in the lock order, for a
// call that removes or replaces segments, and returns what releases them:
// defer l.lockSegments()().
func (l *Log) lockSegments() (unlock func()) {
	l.cleanMu.Lock()
	l.syncMu.Lock()
	l.appendMu.Lock()
	return func() {
		l.appendMu.Unlock()
		l.syncMu.Unlock()
		l.cleanMu.Unlock()
	}
}

// SetStartOffset moves the log start offset forward to offset (the
// DeleteRecords API and retention): reads below it fail with
// ErrOffsetOutOfRange from then on, and segments wholly below it are
// deleted. The active segment is never deleted. The new start offset is
// durable (checkpointed) when it returns. An offset at or below the current
// start is a no-op, as in Kafka; one above EndOffset is ErrOffsetOutOfRange.
// offset may fall inside a batch: reads at it return that whole batch.
func (l *Log) SetStartOffset(offset int64) error {
	defer l.lockSegments()()
	if err := l.writable(); err != nil {
		return err
	}
	if offset <= l.start.Load() {
		return nil
	}
	if end := l.end.Load(); offset > end {
		return fmt.Errorf("%w: start offset %d past the end %d", ErrOffsetOutOfRange, offset, end)
	}
	// Keep the checkpointed recovery point; 0 when there was none means
	// "scan everything", as no checkpoint did.
	rp := max(l.checkpointedRP, 0)
	if err := writeCheckpoint(l.fsys, l.dir, checkpoint{logStart: offset, recoveryPoint: rp}); err != nil {
		return err
	}
	l.checkpointedRP = rp
	if err := l.epochs.truncateFromStart(offset); err != nil {
		return err
	}
	l.mu.Lock()
	l.start.Store(offset)
	n := 0
	for n < len(l.segments)-1 && l.segments[n+1].base <= offset {
		n++
	}
	dead := l.segments[:n:n]
	l.segments = append([]*segment(nil), l.segments[n:]...)
	l.mu.Unlock()

	// No read issued from now on reaches the dead segments; a crash before
	// they are gone leaves files that Open deletes, being below the start.
	return l.retire(dead)
}

// TruncateTo removes every batch whose last offset is >= offset, for a
// replica whose log diverged from the leader's (Kafka's
// UnifiedLog.truncateTo). A batch straddling offset goes whole, as in
// Kafka's LogSegment.truncateTo, so EndOffset afterwards is that batch's
// base offset (<= offset); followers truncate at batch boundaries. Where
// offsets skip (a compacted leader's batches, kept by AppendReplicated) it
// is the offset after the last batch kept, which Open derives too (Kafka
// sets the end to offset itself, and its recovery then to what ours is). The
// segments above the new end are deleted and the one holding it is cut:
// its log file at the batch boundary, its offset and time index entries
// past it, its transaction index entries of transactions ending past it;
// it becomes the active segment (indexes preallocated again) with its max
// timestamp recomputed. Leader-epoch entries starting at or past the new
// end and producer snapshots past it are removed; the recovery point (the
// DurableOffset) and the cleaner's first dirty offset are clamped to it.
//
// offset >= EndOffset() removes no data, but, as Kafka does, still drops
// leader-epoch entries starting at or past EndOffset (an epoch a leader
// assigned at its log end and never wrote in). offset < StartOffset() is
// TruncateFullyAndStartAt(offset). When the cut leaves nothing at or above
// the start offset (offset fell in the batch the start offset is in), the
// start moves down to the new end, the log being empty there. A negative
// offset is ErrOffsetOutOfRange.
//
// It waits for a cleaning round in progress, as retention does (the lock
// order is in the package doc). Everything it changes is durable when it
// returns, and a crash at any point leaves files that Open recovers as a
// prefix of the log before the call: the recovery point is lowered in the
// checkpoint first (so Open scans the cut segment), segments are deleted
// last first and the directory synced before the cut, the cut segment is
// fsynced before the leader-epoch checkpoint shrinks, and Open drops the
// epoch entries and snapshots past whatever end it finds. An I/O error
// after the first deletion fails the Log (ErrFailed); reopening recovers.
func (l *Log) TruncateTo(offset int64) error {
	defer l.lockSegments()()
	if err := l.writable(); err != nil {
		return err
	}
	if offset < 0 {
		return fmt.Errorf("%w: truncate to negative offset %d", ErrOffsetOutOfRange, offset)
	}
	if end := l.end.Load(); offset >= end {
		return l.epochs.truncateFromEnd(end)
	}
	if offset < l.start.Load() {
		return l.truncateFully(offset)
	}
	return l.truncateTo(offset)
}

// truncateTo is TruncateTo for StartOffset <= offset < EndOffset;
// lockSegments held.
func (l *Log) truncateTo(offset int64) error {
	k := l.segmentFor(offset)
	seg := l.segments[k]
	wasActive := k == len(l.segments)-1
	if err := seg.loadIndexes(); err != nil {
		return err
	}
	var scratch [batchHeaderSize]byte
	pos, h, found, err := seg.locate(offset, scratch[:])
	if err != nil {
		return err
	}
	newEnd := seg.end
	if found {
		// h.baseOffset, unless a gap precedes the batch (AppendReplicated
		// of a compacted leader's batches): the end is where the batches
		// kept end, as Open will find it.
		if newEnd, err = seg.endBefore(pos, h.baseOffset); err != nil {
			return err
		}
	} else {
		pos = seg.size
	}
	start := l.start.Load()
	newStart := min(start, newEnd)

	// 1. What describes the log is lowered first, durably: the cleaner's
	// first dirty offset, and the recovery point, so that from here on a
	// crash makes Open CRC-scan the segment being cut (and cut whatever
	// torn state it finds). The start offset stays until the data is gone:
	// lowering it first would show deleted records again after a crash.
	if err := l.clampFirstDirty(newEnd); err != nil {
		return err
	}
	if rp := min(l.recoveryPoint, newEnd); rp < l.checkpointedRP {
		if err := writeCheckpoint(l.fsys, l.dir, checkpoint{logStart: start, recoveryPoint: rp}); err != nil {
			return err
		}
		l.checkpointedRP = rp
	}
	l.setRecoveryPoint(min(l.recoveryPoint, newEnd))

	// 2. The data, under mu: from here on memory says the log ends at
	// newEnd; if the files cannot be made to agree the log is failed, and
	// reopening recovers. Later segments go first, last first, and their
	// removal is made durable before the cut, so that no crash leaves a
	// cut segment followed by a later one (Open refuses that gap).
	if err := l.cutSegments(k, seg, pos, newEnd, newStart, wasActive); err != nil {
		return err
	}
	if err := seg.sync(); err != nil {
		return l.fail(err)
	}

	// 3. The sidecars that Open trims to the log anyway.
	if err := l.epochs.truncateFromEnd(newEnd); err != nil {
		return l.fail(err)
	}
	if err := l.removeSnapshotsAbove(newEnd); err != nil {
		return l.fail(err)
	}
	if newStart != start {
		// Before this a crash leaves a checkpointed start past the end, and
		// Open empties the log there.
		rp := max(l.checkpointedRP, 0) // -1 (no checkpoint yet) means "scan everything", as 0 does
		if err := writeCheckpoint(l.fsys, l.dir, checkpoint{logStart: newStart, recoveryPoint: rp}); err != nil {
			return l.fail(err)
		}
		l.checkpointedRP = rp
	}
	return nil
}

// endBefore returns the offset after the last batch before pos, the
// segment's base when there is none: where the segment ends when cut at
// pos. It is next, the base offset of the batch at pos, unless offsets
// skip before that batch. It walks headers from the index entry below
// next.
func (s *segment) endBefore(pos, next int64) (int64, error) {
	_, p := s.offsets.lookup(next - 1)
	end := s.base
	var scratch [batchHeaderSize]byte
	for p < pos {
		h, err := s.readHeader(p, scratch[:])
		if err != nil {
			return 0, err
		}
		end = h.nextOffset()
		p += h.size
	}
	return end, nil
}

// cutSegments publishes the truncated log (segments after k gone, seg cut
// at pos, ending at newEnd) and makes the files agree; lockSegments held.
func (l *Log) cutSegments(k int, seg *segment, pos, newEnd, newStart int64, wasActive bool) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	dead := l.segments[k+1:]
	l.segments = l.segments[: k+1 : k+1]
	l.end.Store(newEnd)
	l.start.Store(newStart)
	for i := len(dead) - 1; i >= 0; i-- {
		if err := dead[i].remove(l.fsys, l.dir); err != nil {
			return l.fail(err)
		}
	}
	if len(dead) > 0 {
		if err := l.fsys.SyncDir(l.dir); err != nil {
			return l.fail(fmt.Errorf("storage: sync %s: %w", l.dir, err))
		}
	}
	idxN, timN := seg.offsets.truncatedEntries(newEnd), seg.times.truncatedEntries(newEnd)
	if err := errors.Join(seg.log.Truncate(pos), seg.offsets.truncateEntries(idxN), seg.times.truncateEntries(timN)); err != nil {
		return l.fail(fmt.Errorf("storage: truncate %s: %w", seg.path, err))
	}
	seg.size, seg.end = pos, newEnd
	if err := seg.txns.truncateTo(newEnd); err != nil {
		return l.fail(err)
	}
	if !wasActive {
		// As Kafka's LogSegment.truncateTo: the segment is active again,
		// its indexes preallocated again.
		if err := seg.activate(l.cfg); err != nil {
			return l.fail(err)
		}
	}
	if err := seg.recomputeMaxTimestamp(); err != nil {
		return l.fail(err)
	}
	if err := seg.resetRoll(l.cfg, !wasActive); err != nil {
		return l.fail(err)
	}
	return nil
}

// clampFirstDirty lowers the cleaner checkpoint to off when it lies past
// it (Kafka's LogCleaner.maybeTruncateCheckpoint): offsets that are
// appended again after a truncation have not been cleaned. A log without a
// cleaner checkpoint gets none. cleanMu held.
func (l *Log) clampFirstDirty(off int64) error {
	if err := l.loadFirstDirty(); err != nil {
		return err
	}
	if l.firstDirty <= off {
		return nil
	}
	return l.writeFirstDirty(off)
}

// resetRoll sets the time-based roll state of a segment that becomes (or
// stays) active after a truncation or an Open, as Kafka's LogSegment does:
// an empty segment counts as created now, with no first timestamp; one
// with data takes its first batch's max timestamp, read from disk when
// reload is set (Kafka's loadFirstBatchTimestamp), or keeps what it had.
func (s *segment) resetRoll(cfg Config, reload bool) error {
	if s.size == 0 {
		s.created, s.rollTs = cfg.nowMs(), noTimestamp
		return nil
	}
	if !reload {
		return nil
	}
	var scratch [batchHeaderSize]byte
	h, err := s.readHeader(0, scratch[:])
	if err != nil {
		return err
	}
	s.rollTs = h.maxTimestamp
	return nil
}

// TruncateFullyAndStartAt removes every segment and leaves an empty log
// whose start and end offsets are both offset (Kafka's
// truncateFullyAndStartAt), for a follower whose fetch offset fell below
// the leader's log start or a replica that must start over. Producer
// snapshots and leader-epoch entries all go; the recovery point and the
// cleaner's first dirty offset become (at most) offset. It waits for a
// cleaning round in progress. Durable when it returns.
//
// A crash part way leaves a prefix of the old log, possibly empty: the
// snapshots and the leader-epoch checkpoint are removed first (Open
// rebuilds the epochs from the batches left, the broker replays producer
// state from the log), then the segments, last first, and only then is
// the new start checkpointed; an Open that finds no segment starts an
// empty log at the checkpointed start, the old one or offset.
func (l *Log) TruncateFullyAndStartAt(offset int64) error {
	defer l.lockSegments()()
	if err := l.writable(); err != nil {
		return err
	}
	if offset < 0 {
		return fmt.Errorf("%w: negative start offset %d", ErrOffsetOutOfRange, offset)
	}
	return l.truncateFully(offset)
}

// truncateFully is TruncateFullyAndStartAt; lockSegments held.
func (l *Log) truncateFully(offset int64) error {
	if err := l.clampFirstDirty(offset); err != nil {
		return err
	}
	if err := l.removeSnapshots(func(int64) bool { return true }); err != nil {
		return err
	}
	if err := l.epochs.remove(); err != nil {
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	// From here on a failure fails the log; the segments left stay
	// readable until it is reopened.
	dead := l.segments
	for i := len(dead) - 1; i >= 0; i-- {
		if err := dead[i].remove(l.fsys, l.dir); err != nil {
			l.segments = dead[:i+1]
			return l.fail(err)
		}
	}
	if err := l.fsys.SyncDir(l.dir); err != nil {
		return l.fail(fmt.Errorf("storage: sync %s: %w", l.dir, err))
	}
	if err := writeCheckpoint(l.fsys, l.dir, checkpoint{logStart: offset, recoveryPoint: offset}); err != nil {
		return l.fail(err)
	}
	l.setRecoveryPoint(offset)
	l.checkpointedRP = offset
	ns := newSegment(l.dir, offset, l.cfg)
	_, err := ns.openFiles(l.fsys, l.dir, true)
	if err == nil {
		err = ns.activate(l.cfg)
	}
	if err == nil {
		err = l.fsys.SyncDir(l.dir)
	}
	// The new segment is published even on failure, so that reads find a
	// log (an empty one) until the failed Log is reopened.
	l.segments = []*segment{ns}
	l.start.Store(offset)
	l.end.Store(offset)
	if err != nil {
		return l.fail(fmt.Errorf("storage: create segment %d: %w", offset, err))
	}
	// The empty leader-epoch checkpoint, now that no batch is left.
	if err := l.epochs.flush(); err != nil {
		return l.fail(err)
	}
	return nil
}

// recomputeMaxTimestamp is Kafka's readLargestTimestamp after a
// truncation: the time index's last entry, then the batches after the
// position the offset index gives for it.
func (s *segment) recomputeMaxTimestamp() error {
	ts, off := s.times.last()
	if s.times.entries() == 0 {
		ts, off = noTimestamp, -1
	}
	_, pos := s.offsets.lookup(max(off, s.base))
	var scratch [batchHeaderSize]byte
	for pos < s.size {
		h, err := s.readHeader(pos, scratch[:])
		if err != nil {
			return err
		}
		if h.maxTimestamp > ts {
			ts, off = h.maxTimestamp, h.lastOffset()
		}
		pos += h.size
	}
	s.maxTs, s.maxTsOffset = ts, off
	return nil
}
