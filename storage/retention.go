package storage

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// deletedSuffix marks the files of a segment that left the log and waits
// for FileDeleteDelay before it is removed, Kafka's ".deleted". Open
// removes any it finds.
const deletedSuffix = ".deleted"

// RetentionPolicy is what DeleteOldSegments enforces, in Kafka's terms.
type RetentionPolicy struct {
	// Delete is cleanup.policy containing "delete": RetentionMs and
	// RetentionBytes apply. Without it only segments wholly below the log
	// start offset are deleted, as for a compacted topic in Kafka.
	Delete bool
	// RetentionMs is retention.ms: a segment whose largest timestamp is more
	// than this older than now is deleted. Negative means forever.
	RetentionMs int64
	// RetentionBytes is retention.bytes: the oldest segments are deleted
	// while the log is larger than this. Negative means unlimited.
	RetentionBytes int64
	// HighWatermark bounds deletion: a segment is deleted only if every
	// offset in it is below the high watermark, so that the log start never
	// passes it.
	HighWatermark int64
}

// RetentionResult reports what DeleteOldSegments did.
type RetentionResult struct {
	Segments  int   // segments deleted
	Bytes     int64 // their bytes of batches
	NewStart  int64 // the log start offset afterwards
	RolledLog bool  // the active segment was rolled so that it could go
}

// DeleteOldSegments deletes whole segments from the start of the log as
// Kafka's UnifiedLog.deleteOldSegments does: first those wholly below the
// log start offset (after DeleteRecords), then, with p.Delete, the oldest
// while the log exceeds p.RetentionBytes, then those whose largest
// timestamp (the file's modification time when no batch has one) is more
// than p.RetentionMs before nowMs. Each pass stops at the first segment it
// keeps, and never deletes a segment reaching the high watermark or an
// empty active segment. When every segment, the active one included, is to
// go, the active one is rolled first, as Kafka does, so that the log always
// keeps a segment at its end offset.
//
// The log start offset moves to the first remaining segment's base (never
// backwards: DeleteRecords may have moved it further) and is checkpointed
// before the segments leave the log. Their files are renamed to .deleted at
// once and removed after Config.FileDeleteDelay, so a reader that obtained
// a segment's file before may finish with it; reads issued afterwards below
// the new start get ErrOffsetOutOfRange.
func (l *Log) DeleteOldSegments(p RetentionPolicy, nowMs int64) (RetentionResult, error) {
	defer l.lockSegments()()
	var res RetentionResult
	if err := l.writable(); err != nil {
		return res, err
	}

	// Each pass is built when it runs: the size pass sees the log as the
	// passes before it left it.
	passes := []func() func(seg, next *segment) bool{
		func() func(seg, next *segment) bool {
			return func(_, next *segment) bool { return next != nil && next.base <= l.start.Load() }
		},
	}
	if p.Delete && p.RetentionBytes >= 0 {
		passes = append(passes, func() func(seg, next *segment) bool {
			var size int64
			for _, seg := range l.segments {
				size += seg.size
			}
			if size < p.RetentionBytes {
				return nil
			}
			diff := size - p.RetentionBytes
			return func(seg, _ *segment) bool {
				if diff-seg.size < 0 {
					return false
				}
				diff -= seg.size
				return true
			}
		})
	}
	if p.Delete && p.RetentionMs >= 0 {
		passes = append(passes, func() func(seg, next *segment) bool {
			return func(seg, _ *segment) bool { return nowMs-seg.largestTimestamp() > p.RetentionMs }
		})
	}
	for _, pass := range passes {
		breached := pass()
		if breached == nil {
			continue
		}
		if err := l.deleteWhile(p.HighWatermark, breached, &res); err != nil {
			return res, err
		}
	}
	res.NewStart = l.start.Load()
	return res, nil
}

// largestTimestamp is Kafka's LogSegment.largestTimestamp: the largest
// batch max timestamp, or the file's modification time when no batch has a
// timestamp.
func (s *segment) largestTimestamp() int64 {
	if s.maxTs >= 0 {
		return s.maxTs
	}
	fi, err := s.log.Stat()
	if err != nil {
		return 0 // unknown: old enough for any retention, as an empty file is
	}
	return fi.ModTime().UnixMilli()
}

// deleteWhile deletes segments from the oldest while breached holds, as
// Kafka's deletableSegments and deleteSegments. cleanMu, syncMu and
// appendMu held.
func (l *Log) deleteWhile(hw int64, breached func(seg, next *segment) bool, res *RetentionResult) error {
	n := 0
	for i, seg := range l.segments {
		var next *segment
		upper := l.end.Load()
		if i+1 < len(l.segments) {
			next = l.segments[i+1]
			upper = next.base
		}
		if next == nil && seg.size == 0 {
			break // an empty active segment is never deleted
		}
		if hw < upper || !breached(seg, next) {
			break
		}
		n++
	}
	if n == 0 {
		return nil
	}
	if n == len(l.segments) {
		// Kafka: the log must keep a segment; roll so that the new empty
		// one holds the end offset.
		if err := l.roll(); err != nil {
			return err
		}
		res.RolledLog = true
	}
	newStart := max(l.start.Load(), l.segments[n].base)
	if newStart != l.start.Load() {
		rp := max(l.checkpointedRP, 0)
		if err := writeCheckpoint(l.fsys, l.dir, checkpoint{logStart: newStart, recoveryPoint: rp}); err != nil {
			return err
		}
		l.checkpointedRP = rp
	}
	l.mu.Lock()
	dead := append([]*segment(nil), l.segments[:n]...)
	l.segments = append([]*segment(nil), l.segments[n:]...)
	l.start.Store(newStart)
	l.mu.Unlock()
	for _, seg := range dead {
		res.Segments++
		res.Bytes += seg.size
	}
	l.logger.Info("storage: deleted segments", "dir", l.dir, "segments", len(dead), "log_start_offset", newStart)
	return l.retire(dead)
}

// retire renames the files of segments that no reader can reach any more
// to .deleted and schedules their removal after FileDeleteDelay (Kafka's
// asynchronous delete). syncMu held, so no Sync is using their files; a
// crash before the removal leaves .deleted files that Open removes.
func (l *Log) retire(dead []*segment) error {
	var errs []error
	for _, seg := range dead {
		for _, suffix := range []string{logSuffix, indexSuffix, timeIndexSuffix, txnIndexSuffix} {
			from := segmentPath(l.dir, seg.base, suffix)
			if err := l.fsys.Rename(from, from+deletedSuffix); err != nil && !errors.Is(err, os.ErrNotExist) {
				errs = append(errs, fmt.Errorf("storage: retire segment %d: %w", seg.base, err))
			}
		}
	}
	if err := errors.Join(errs...); err != nil {
		// The segments are out of the log; files left under their own names
		// are below the start offset, and Open removes them.
		return l.fail(err)
	}
	return l.scheduleRemoval(dead)
}

// scheduleRemoval removes retired segments (files renamed to .deleted)
// after FileDeleteDelay, or now if it is 0 or the log is closed.
func (l *Log) scheduleRemoval(dead []*segment) error {
	l.deleteMu.Lock()
	defer l.deleteMu.Unlock()
	if l.cfg.FileDeleteDelay <= 0 || l.deletesDone {
		for _, seg := range dead {
			l.removeRetired(seg)
		}
		return nil
	}
	for _, seg := range dead {
		seg := seg
		l.pendingDeletes[seg] = time.AfterFunc(l.cfg.FileDeleteDelay, func() {
			l.deleteMu.Lock()
			defer l.deleteMu.Unlock()
			if _, ok := l.pendingDeletes[seg]; ok {
				delete(l.pendingDeletes, seg)
				l.removeRetired(seg)
			}
		})
	}
	return nil
}

// removeRetired closes a retired segment's files and removes them; deleteMu
// held. Failures are logged: the files are already out of the log, and Open
// removes .deleted files.
func (l *Log) removeRetired(seg *segment) {
	if err := seg.closeFiles(); err != nil {
		l.logger.Warn("storage: closing a deleted segment", "dir", l.dir, "err", err)
	}
	for _, suffix := range []string{logSuffix, indexSuffix, timeIndexSuffix, txnIndexSuffix} {
		name := segmentPath(l.dir, seg.base, suffix) + deletedSuffix
		if err := l.fsys.Remove(name); err != nil && !errors.Is(err, os.ErrNotExist) {
			l.logger.Warn("storage: removing a deleted segment file", "file", name, "err", err)
		}
	}
}

// finishRetiredDeletes removes every retired segment now and makes later
// retirements immediate; Close and Delete call it.
func (l *Log) finishRetiredDeletes() {
	l.deleteMu.Lock()
	defer l.deleteMu.Unlock()
	l.deletesDone = true
	for seg, t := range l.pendingDeletes {
		t.Stop()
		delete(l.pendingDeletes, seg)
		l.removeRetired(seg)
	}
}

// PendingDeletes returns how many retired segments still wait for
// FileDeleteDelay before their files are removed.
func (l *Log) PendingDeletes() int {
	l.deleteMu.Lock()
	defer l.deleteMu.Unlock()
	return len(l.pendingDeletes)
}

// finishInterruptedOperations runs first in Open: it removes .deleted files
// and a cleaner's unfinished .cleaned files, and completes a cleaner swap
// that was committed (.swap files) but not finished.
func (l *Log) finishInterruptedOperations() error {
	entries, err := l.fsys.ReadDir(l.dir)
	if err != nil {
		return fmt.Errorf("storage: list %s: %w", l.dir, err)
	}
	var swaps []string
	for _, e := range entries {
		name := e.Name()
		switch {
		case e.IsDir():
		case strings.HasSuffix(name, deletedSuffix), strings.HasSuffix(name, cleanedSuffix),
			name == cleanerCheckpointTempName:
			if err := l.fsys.Remove(filepath.Join(l.dir, name)); err != nil {
				return fmt.Errorf("storage: remove %s: %w", name, err)
			}
		case strings.HasSuffix(name, logSuffix+swapSuffix):
			swaps = append(swaps, name)
		}
	}
	for _, name := range swaps {
		if err := l.completeSwap(name); err != nil {
			return err
		}
	}
	// Index .swap files without their .log.swap are leftovers: indexes are
	// rebuilt from the log when missing.
	if entries, err = l.fsys.ReadDir(l.dir); err != nil {
		return fmt.Errorf("storage: list %s: %w", l.dir, err)
	}
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), swapSuffix) {
			if err := l.fsys.Remove(filepath.Join(l.dir, e.Name())); err != nil {
				return fmt.Errorf("storage: remove %s: %w", e.Name(), err)
			}
		}
	}
	if len(swaps) > 0 {
		if err := l.fsys.SyncDir(l.dir); err != nil {
			return fmt.Errorf("storage: sync %s: %w", l.dir, err)
		}
	}
	return nil
}
