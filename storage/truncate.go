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

// Truncate removes every batch holding an offset at or above offset, for
// replicas that diverged from the leader. A batch that straddles offset is
// removed whole, so EndOffset afterwards is that batch's base offset (<=
// offset); callers truncate at batch boundaries. offset >= EndOffset is a
// no-op. offset below the first segment's base is TruncateFully(offset),
// as in Kafka; otherwise, if the log start is above the new end it moves
// down to it.
//
// The lowered recovery point is checkpointed first, so a crash part way
// leaves a state the next Open recovers by scanning.
func (l *Log) Truncate(offset int64) error {
	defer l.lockSegments()()
	if err := l.writable(); err != nil {
		return err
	}
	if offset < 0 {
		return fmt.Errorf("%w: truncate to negative offset %d", ErrOffsetOutOfRange, offset)
	}
	if offset >= l.end.Load() {
		return nil
	}
	if offset < l.segments[0].base {
		return l.truncateFully(offset)
	}
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
		newEnd = h.baseOffset
	} else {
		pos = seg.size
	}
	newStart := min(l.start.Load(), newEnd)
	if rp := min(l.recoveryPoint, newEnd); rp < l.checkpointedRP || newStart != l.start.Load() {
		if err := writeCheckpoint(l.fsys, l.dir, checkpoint{logStart: newStart, recoveryPoint: rp}); err != nil {
			return err
		}
		l.checkpointedRP = rp
	}
	l.setRecoveryPoint(min(l.recoveryPoint, newEnd))
	if err := l.epochs.truncateFromEnd(newEnd); err != nil {
		return err
	}
	if err := l.removeSnapshotsAbove(newEnd); err != nil {
		return err
	}

	l.mu.Lock()
	defer l.mu.Unlock()
	dead := l.segments[k+1:]
	l.segments = l.segments[: k+1 : k+1]
	l.end.Store(newEnd)
	l.start.Store(newStart)
	// From here on memory says the log ends at newEnd; if the files cannot
	// be made to agree the log is failed, and reopening recovers.
	for i := len(dead) - 1; i >= 0; i-- {
		if err := dead[i].remove(l.fsys, l.dir); err != nil {
			return l.fail(err)
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

// TruncateFully removes all data and restarts the log empty at offset:
// StartOffset and EndOffset both become offset. It is Kafka's
// truncateFullyAndStartAt, for a follower whose fetch offset fell below the
// leader's log start. Durable when it returns.
func (l *Log) TruncateFully(offset int64) error {
	defer l.lockSegments()()
	if err := l.writable(); err != nil {
		return err
	}
	if offset < 0 {
		return fmt.Errorf("%w: negative start offset %d", ErrOffsetOutOfRange, offset)
	}
	return l.truncateFully(offset)
}

// truncateFully: syncMu and appendMu held.
func (l *Log) truncateFully(offset int64) error {
	if err := writeCheckpoint(l.fsys, l.dir, checkpoint{logStart: offset, recoveryPoint: offset}); err != nil {
		return err
	}
	l.setRecoveryPoint(offset)
	l.checkpointedRP = offset
	if err := l.epochs.clear(); err != nil {
		return err
	}
	if err := l.removeSnapshots(func(int64) bool { return true }); err != nil {
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	dead := l.segments
	for i := len(dead) - 1; i >= 0; i-- {
		if err := dead[i].remove(l.fsys, l.dir); err != nil {
			l.segments = dead[:i+1]
			return l.fail(err)
		}
	}
	ns := newSegment(l.dir, offset, l.cfg)
	if _, err := ns.openFiles(l.fsys, l.dir, true); err != nil {
		ns.remove(l.fsys, l.dir)
		l.segments = nil
		return l.fail(err)
	}
	if err := ns.activate(l.cfg); err != nil {
		ns.remove(l.fsys, l.dir)
		l.segments = nil
		return l.fail(err)
	}
	if err := l.fsys.SyncDir(l.dir); err != nil {
		l.segments = []*segment{ns}
		return l.fail(fmt.Errorf("storage: sync %s: %w", l.dir, err))
	}
	l.segments = []*segment{ns}
	l.start.Store(offset)
	l.end.Store(offset)
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
