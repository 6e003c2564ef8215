package storage

import (
	"context"
	"crypto/md5"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/gregor-broker/gregor/vfs"
)

// Log compaction, Kafka's LogCleaner for one log: keep the latest record of
// every key, never changing an offset.
//
// A cleaning round covers the log from its start up to the first
// uncleanable offset (the active segment's base, the last stable offset,
// or the first segment newer than min.compaction.lag.ms). It builds a map
// key -> latest offset over the dirty section (from the cleaner checkpoint
// on), then rewrites every segment below the round's end, in groups that
// fit one segment, keeping a record only if it is the latest of its key.
// Tombstones are kept until delete.retention.ms after the cleaning that
// first saw them: that cleaning stamps the batch with a delete horizon
// (KIP-534) and a later one drops them once it has passed.
//
// Crash safety, as Kafka's replaceSegments: a group's output is written to
// <base>.log.cleaned (and its indexes), fsynced, renamed to .swap (the
// commit point; the .log is renamed last), then the old segments are
// renamed to .deleted and the .swap files to their final names. Open
// removes .cleaned files and completes a swap it finds (cleaner_swap.go).

const (
	cleanedSuffix             = ".cleaned"
	swapSuffix                = ".swap"
	cleanerCheckpointName     = "gregor.cleaner-checkpoint"
	cleanerCheckpointTempName = cleanerCheckpointName + vfs.TempSuffix

	offAttributes    = 21
	offBaseTimestamp = 27
	offProducerID    = 43
	offProducerEpoch = 51
	offRecordCount   = 57

	attrTransactional = 0x10
	attrControl       = 0x20
	attrDeleteHorizon = 0x40
	attrTimestampType = 0x08

	// defaultMaxMapEntries bounds the keys one cleaning round indexes when
	// CompactionPolicy.MaxMapEntries is 0: Kafka's 128 MiB dedupe buffer
	// holds about this many 24-byte entries at its 0.9 load factor.
	defaultMaxMapEntries = 5_000_000
)

// RecordCodec is how the cleaner sees inside record batches. storage knows
// batch headers only; the broker supplies an implementation built on its
// record-batch codec (decompression, record decoding, re-encoding).
type RecordCodec interface {
	// Records calls fn with every record of batch (one whole v2 batch from
	// this log) in order: its absolute offset, its key (nil for a null key)
	// and whether its value is null, until fn returns false. The key is
	// valid only during the call.
	Records(batch []byte, fn func(offset int64, key []byte, nullValue bool) bool) error
	// Rebuild appends to dst a v2 batch holding the records of batch whose
	// offsets keep accepts (at least one), as Kafka's
	// MemoryRecords.filterTo builds a retained batch: the same base offset
	// and last offset delta, codec, timestamp type, producer id and epoch,
	// base sequence, transactional and control flags and leader epoch; the
	// records keep their offsets, keys, values, headers and timestamps. A
	// deleteHorizonMs >= 0 sets the delete-horizon attribute with the base
	// timestamp holding it; otherwise the base timestamp is the first
	// retained record's.
	Rebuild(dst, batch []byte, keep func(offset int64) bool, deleteHorizonMs int64) ([]byte, error)
}

// ProducerLastBatch is what the cleaner must keep of an active producer
// (Kafka's LastRecord): the last offset of its last data batch, or -1 when
// its last entry is a transaction marker, then kept if it has Epoch.
type ProducerLastBatch struct {
	LastDataOffset int64
	Epoch          int16
}

// AbortedTxn is an aborted transaction as the transaction index lists it
// (Kafka's AbortedTxn): its producer, the offsets of its first data batch
// and of its abort marker, and the last stable offset when the marker was
// written.
type AbortedTxn struct {
	ProducerID       int64
	FirstOffset      int64
	LastOffset       int64
	LastStableOffset int64
}

// CompactionPolicy is a compacted topic's settings and the broker state a
// cleaning needs.
type CompactionPolicy struct {
	Codec RecordCodec
	// MinCleanableRatio is min.cleanable.dirty.ratio.
	MinCleanableRatio float64
	// MinCompactionLagMs and MaxCompactionLagMs are min.compaction.lag.ms
	// and max.compaction.lag.ms.
	MinCompactionLagMs, MaxCompactionLagMs int64
	// DeleteRetentionMs is delete.retention.ms.
	DeleteRetentionMs int64
	// LastStableOffset: nothing at or above it is cleaned.
	LastStableOffset int64
	// Producers is Kafka's lastRecordsOfActiveProducers, by producer id.
	Producers map[int64]ProducerLastBatch
	// AbortedTxns lists the aborted transactions overlapping [from, to);
	// nil while the log has no transaction index.
	AbortedTxns func(from, to int64) []AbortedTxn
	// MaxMapEntries bounds the keys one round indexes (0: about 5 million,
	// what Kafka's default 128 MiB log.cleaner.dedupe.buffer.size holds); a
	// round that fills it cleans up to the last offset it indexed and
	// leaves the rest for the next.
	MaxMapEntries int
}

// Cleanability is how dirty a compacted log is (Kafka's LogToClean).
type Cleanability struct {
	FirstDirty       int64 // the cleaner checkpoint, within the log
	FirstUncleanable int64 // the round's end: nothing from here on is touched
	CleanBytes       int64 // bytes of segments below FirstDirty
	CleanableBytes   int64 // bytes of segments in [FirstDirty, FirstUncleanable)
	// CompactionDelayMs is how long the oldest dirty record has waited past
	// max.compaction.lag.ms; > 0 forces a cleaning whatever the ratio.
	CompactionDelayMs int64
}

// Ratio is the dirty share, CleanableBytes over all bytes considered.
func (c Cleanability) Ratio() float64 {
	total := c.CleanBytes + c.CleanableBytes
	if total == 0 {
		return 0
	}
	return float64(c.CleanableBytes) / float64(total)
}

// Due reports whether Kafka's cleaner would pick the log: dirty above
// minRatio, or past max.compaction.lag.ms with something to clean.
func (c Cleanability) Due(minRatio float64) bool {
	return c.CleanableBytes > 0 && (c.CompactionDelayMs > 0 || c.Ratio() > minRatio)
}

// CleanResult reports a cleaning round.
type CleanResult struct {
	FirstDirty, NewFirstDirty int64
	SegmentsIn, SegmentsOut   int
	BytesIn, BytesOut         int64
	RecordsRead, Retained     int
}

// Cleanable computes how dirty the log is under p at nowMs (Kafka's
// LogCleanerManager.cleanableOffsets and LogToClean).
func (l *Log) Cleanable(p CompactionPolicy, nowMs int64) (Cleanability, error) {
	l.cleanMu.Lock()
	defer l.cleanMu.Unlock()
	return l.cleanable(p, nowMs)
}

// cleanable: cleanMu held.
func (l *Log) cleanable(p CompactionPolicy, nowMs int64) (Cleanability, error) {
	var c Cleanability
	if err := l.loadFirstDirty(); err != nil {
		return c, err
	}
	l.mu.RLock()
	defer l.mu.RUnlock()
	if l.closed {
		return c, ErrClosed
	}
	start, end := l.start.Load(), l.end.Load()
	c.FirstDirty = l.firstDirty
	if c.FirstDirty < start || c.FirstDirty > end {
		c.FirstDirty = start
	}
	closedSegs := l.segments[:len(l.segments)-1]
	c.FirstUncleanable = min(p.LastStableOffset, l.active().base)
	var earliestDirtyTs int64 = math.MaxInt64
	for i, seg := range closedSegs {
		upper := l.segments[i+1].base
		if upper <= c.FirstDirty {
			continue
		}
		if p.MinCompactionLagMs > 0 && seg.largestTimestamp() > nowMs-p.MinCompactionLagMs {
			c.FirstUncleanable = min(c.FirstUncleanable, seg.base)
		}
		if p.MaxCompactionLagMs > 0 && p.MaxCompactionLagMs < math.MaxInt64 && seg.size > 0 {
			var scratch [batchHeaderSize]byte
			h, err := seg.readHeader(0, scratch[:])
			if err != nil {
				return c, err
			}
			if h.maxTimestamp > 0 {
				earliestDirtyTs = min(earliestDirtyTs, h.maxTimestamp)
			}
		}
	}
	c.FirstUncleanable = max(c.FirstUncleanable, c.FirstDirty)
	for i, seg := range l.segments {
		upper := end
		if i+1 < len(l.segments) {
			upper = l.segments[i+1].base
		}
		switch {
		case upper <= start:
		case seg.base < c.FirstDirty:
			c.CleanBytes += seg.size
		case seg.base < c.FirstUncleanable:
			c.CleanableBytes += seg.size
		}
	}
	if earliestDirtyTs != math.MaxInt64 {
		c.CompactionDelayMs = max(0, nowMs-earliestDirtyTs-p.MaxCompactionLagMs)
	}
	return c, nil
}

// Clean runs one cleaning round under p at nowMs, whether or not the log is
// due (the broker's cleaner checks Cleanable first). It reads closed
// segments while appends go on; retention, DeleteRecords and truncation
// wait for it. ctx is checked between batches: a cancelled round leaves
// the log as it was, except for groups already swapped in.
func (l *Log) Clean(ctx context.Context, p CompactionPolicy, nowMs int64) (CleanResult, error) {
	l.cleanMu.Lock()
	defer l.cleanMu.Unlock()
	var res CleanResult
	if p.Codec == nil {
		return res, errors.New("storage: clean: no record codec")
	}
	c, err := l.cleanable(p, nowMs)
	if err != nil {
		return res, err
	}
	res.FirstDirty, res.NewFirstDirty = c.FirstDirty, c.FirstDirty
	// With nothing dirty the round still rewrites the clean section, which
	// removes tombstones whose delete horizon has passed.
	l.mu.RLock()
	segs := append([]*segment(nil), l.segments[:len(l.segments)-1]...)
	nextBase := make([]int64, len(segs))
	for i := range segs {
		nextBase[i] = l.segments[i+1].base
	}
	start := l.start.Load()
	l.mu.RUnlock()

	// The settings are read once: SetConfig may change them meanwhile
	// (under appendMu, which the round does not hold).
	l.appendMu.Lock()
	cfg := l.cfg
	l.appendMu.Unlock()
	cl := &cleaner{log: l, cfg: cfg, p: p, now: nowMs, ctx: ctx, fuo: c.FirstUncleanable}
	endOffset, err := cl.buildOffsetMap(segs, nextBase, c.FirstDirty)
	if err != nil {
		return res, err
	}
	endOffset = max(endOffset, c.FirstDirty)
	var cleanable []*segment
	for i, seg := range segs {
		if nextBase[i] <= start {
			continue // below the log start: retention deletes it
		}
		if seg.base >= endOffset {
			break
		}
		cleanable = append(cleanable, seg)
	}
	cl.txn = newTxnTracker(nil)
	if p.AbortedTxns != nil && len(cleanable) > 0 {
		cl.txn = newTxnTracker(p.AbortedTxns(cleanable[0].base, endOffset))
	}
	for _, group := range groupSegments(cfg, cleanable, c.FirstUncleanable) {
		last := slices.Index(segs, group[len(group)-1])
		cl.groupEnd = nextBase[last]
		if err := cl.cleanGroup(group, &res); err != nil {
			return res, err
		}
	}
	if err := l.writeFirstDirty(endOffset); err != nil {
		return res, err
	}
	res.NewFirstDirty = endOffset
	res.RecordsRead, res.Retained = cl.read, cl.retained
	l.logger.Info("storage: cleaned log", "dir", l.dir, "first_dirty", res.FirstDirty, "new_first_dirty", endOffset,
		"segments_in", res.SegmentsIn, "segments_out", res.SegmentsOut, "bytes_in", res.BytesIn, "bytes_out", res.BytesOut)
	return res, nil
}

// groupSegments is Kafka's groupSegmentsBySize: consecutive segments whose
// bytes and index entries fit one segment (cfg's segment.bytes and
// segment.index.bytes) and whose offsets fit its 32-bit relative offsets.
// The segments are closed: their entry counts no longer change.
func groupSegments(cfg Config, segs []*segment, firstUncleanable int64) [][]*segment {
	indexBytes := func(s *segment) (idx, tim int) {
		return s.offsets.entries() * offsetEntrySize, s.times.entries() * timeEntrySize
	}
	var groups [][]*segment
	for len(segs) > 0 {
		g := []*segment{segs[0]}
		size := segs[0].size
		idx, tim := indexBytes(segs[0])
		segs = segs[1:]
		for len(segs) > 0 {
			s := segs[0]
			lastOffset := firstUncleanable - 1
			if len(segs) > 1 {
				lastOffset = segs[1].base - 1
			}
			sIdx, sTim := indexBytes(s)
			if size+s.size > cfg.SegmentBytes ||
				idx+sIdx > cfg.SegmentIndexBytes ||
				tim+sTim > cfg.SegmentIndexBytes-timeEntrySize ||
				(s.size > 0 && lastOffset-g[0].base > math.MaxInt32) {
				break
			}
			g = append(g, s)
			size += s.size
			idx, tim = idx+sIdx, tim+sTim
			segs = segs[1:]
		}
		groups = append(groups, g)
	}
	return groups
}

// cleaner is one cleaning round.
type cleaner struct {
	log *Log
	cfg Config // the log's settings when the round began
	p   CompactionPolicy
	now int64
	ctx context.Context
	fuo int64 // first uncleanable offset: the round's upper bound
	// groupEnd is the base offset of the segment after the group being
	// cleaned.
	groupEnd int64
	txn      *txnTracker
	keys     map[[md5.Size]byte]int64
	// latest is the largest offset indexed: records above it are kept.
	latest         int64
	read, retained int
	buf, out       []byte
}

// header is the part of a batch header the cleaner reads beyond
// batchHeader.
type cleanerHeader struct {
	batchHeader
	attrs       uint16
	baseTs      int64
	producerID  int64
	epoch       int16
	recordCount int32
}

func parseCleanerHeader(b []byte) cleanerHeader {
	h, _ := parseHeader(b)
	be := binary.BigEndian
	return cleanerHeader{
		batchHeader: h,
		attrs:       be.Uint16(b[offAttributes:]),
		baseTs:      int64(be.Uint64(b[offBaseTimestamp:])),
		producerID:  int64(be.Uint64(b[offProducerID:])),
		epoch:       int16(be.Uint16(b[offProducerEpoch:])),
		recordCount: int32(be.Uint32(b[offRecordCount:])),
	}
}

func (h cleanerHeader) control() bool       { return h.attrs&attrControl != 0 }
func (h cleanerHeader) transactional() bool { return h.attrs&attrTransactional != 0 }

// deleteHorizon returns the batch's delete horizon, if it has one.
func (h cleanerHeader) deleteHorizon() (int64, bool) {
	return h.baseTs, h.attrs&attrDeleteHorizon != 0
}

// forEachBatch calls fn with every whole batch of seg, in a buffer reused
// between calls.
func (cl *cleaner) forEachBatch(seg *segment, fn func(b []byte) error) error {
	var scratch [batchHeaderSize]byte
	for pos := int64(0); pos < seg.size; {
		if err := cl.ctx.Err(); err != nil {
			return err
		}
		if cl.log.cleanAbort.Load() {
			return ErrClosed // Close or Delete waits for the round to stop
		}
		h, err := seg.readHeader(pos, scratch[:])
		if err != nil {
			return err
		}
		if int64(cap(cl.buf)) < h.size {
			cl.buf = make([]byte, h.size)
		}
		b := cl.buf[:h.size]
		if _, err := seg.log.ReadAt(b, pos); err != nil {
			return fmt.Errorf("storage: clean: read %s at %d: %w", seg.path, pos, err)
		}
		if !crcValid(b) {
			return seg.corrupt(pos, "CRC-32C mismatch while cleaning")
		}
		if err := fn(b); err != nil {
			return err
		}
		pos += h.size
	}
	return nil
}

// buildOffsetMap is Kafka's buildOffsetMap: key -> latest offset over the
// dirty section from firstDirty to cl.fuo, skipping control batches and
// aborted transactions. Keys are held as their MD5 digest, as Kafka's
// SkimpyOffsetMap holds them, so the map's memory does not depend on key
// sizes (two keys colliding would lose the older one's latest record, the
// risk Kafka takes too). When the map is full it stops, as Kafka does, even
// inside a batch; the round then ends after the last offset indexed and
// records above it are kept. It returns the round's end offset.
func (cl *cleaner) buildOffsetMap(segs []*segment, nextBase []int64, firstDirty int64) (int64, error) {
	maxEntries := cl.p.MaxMapEntries
	if maxEntries <= 0 {
		maxEntries = defaultMaxMapEntries
	}
	cl.keys = map[[md5.Size]byte]int64{}
	cl.latest = firstDirty - 1
	txn := newTxnTracker(nil)
	if cl.p.AbortedTxns != nil {
		txn = newTxnTracker(cl.p.AbortedTxns(firstDirty, cl.fuo))
	}
	full := false
	for i, seg := range segs {
		if nextBase[i] <= firstDirty {
			continue
		}
		if seg.base >= cl.fuo || full {
			break
		}
		err := cl.forEachBatch(seg, func(b []byte) error {
			h := parseCleanerHeader(b)
			if h.baseOffset >= cl.fuo || full {
				return nil
			}
			if h.control() {
				_, err := txn.onControlBatch(h, b, cl.p.Codec)
				return err
			}
			if !txn.onBatch(h) { // an aborted batch's records never count
				err := cl.p.Codec.Records(b, func(off int64, key []byte, _ bool) bool {
					if key == nil || off < firstDirty || off >= cl.fuo {
						return true
					}
					digest := md5.Sum(key)
					if _, ok := cl.keys[digest]; !ok && len(cl.keys) >= maxEntries {
						full = true
						return false
					}
					cl.keys[digest] = off
					cl.latest = max(cl.latest, off)
					return true
				})
				if err != nil {
					return err
				}
			}
			if !full && h.lastOffset() >= firstDirty {
				cl.latest = max(cl.latest, min(h.lastOffset(), cl.fuo-1))
			}
			return nil
		})
		if err != nil {
			return 0, err
		}
	}
	if full {
		return cl.latest + 1, nil
	}
	return cl.fuo, nil
}

// cleanGroup rewrites one group of segments into one and swaps it in.
func (cl *cleaner) cleanGroup(group []*segment, res *CleanResult) (err error) {
	l := cl.log
	base := group[0].base
	out := newSegment(l.dir, base, cl.cfg)
	files := map[string]*vfs.File{logSuffix: &out.log, indexSuffix: &out.idxFile, timeIndexSuffix: &out.timeFile}
	for suffix, f := range files {
		if *f, err = l.fsys.OpenFile(segmentPath(l.dir, base, suffix)+cleanedSuffix, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644); err != nil {
			out.closeFiles()
			cl.removeFiles(base, cleanedSuffix)
			return fmt.Errorf("storage: clean: %w", err)
		}
	}
	committed := false
	defer func() {
		if !committed {
			out.closeFiles()
			cl.removeFiles(base, cleanedSuffix)
			cl.removeFiles(base, swapSuffix)
		}
	}()

	// Reads may outlive the segment once it is swapped in (slice.go), as for
	// every segment opened by openFiles.
	out.log = newSharedFile(out.log)
	out.offsets.f, out.times.f = out.idxFile, out.timeFile
	w := segmentWriter{seg: out, interval: int64(cl.cfg.IndexIntervalBytes), lastTimeTs: noTimestamp}
	// An aborted transaction stays indexed while its abort marker stays in
	// the log: the marker's offset is the entry's last offset.
	txnPath := out.txns.path
	out.txns.path += cleanedSuffix
	var keptMarkers map[int64]bool
	for _, seg := range group {
		res.SegmentsIn++
		res.BytesIn += seg.size
		err := cl.forEachBatch(seg, func(b []byte) error {
			kept, err := cl.filterBatch(b)
			if err != nil {
				return err
			}
			if kept == nil {
				return nil
			}
			if len(seg.txns.entries) > 0 && parseCleanerHeader(kept).control() {
				if keptMarkers == nil {
					keptMarkers = map[int64]bool{}
				}
				keptMarkers[parseCleanerHeader(kept).lastOffset()] = true
			}
			return w.append(kept)
		})
		if err != nil {
			return err
		}
		for _, a := range seg.txns.entries {
			if keptMarkers[a.LastOffset] {
				if err := out.txns.append(l.fsys, a); err != nil {
					return err
				}
			}
		}
	}
	if err := w.finish(); err != nil {
		return err
	}
	if err := out.txns.sync(); err != nil {
		return err
	}
	res.SegmentsOut++
	res.BytesOut += out.size

	// Commit: indexes first, the log last, so that a .log.swap is always
	// complete (Open removes index .swap files without one).
	suffixes := []string{indexSuffix, timeIndexSuffix, logSuffix}
	if out.txns.f != nil {
		suffixes = []string{indexSuffix, timeIndexSuffix, txnIndexSuffix, logSuffix}
	}
	for _, suffix := range suffixes {
		from := segmentPath(l.dir, base, suffix) + cleanedSuffix
		if err := l.fsys.Rename(from, segmentPath(l.dir, base, suffix)+swapSuffix); err != nil {
			return fmt.Errorf("storage: clean: %w", err)
		}
	}
	out.txns.path = txnPath
	if err := l.fsys.SyncDir(l.dir); err != nil {
		return fmt.Errorf("storage: clean: sync %s: %w", l.dir, err)
	}
	committed = true
	return l.replaceSegments(out, group)
}

// removeFiles removes base's three segment files with suffix appended,
// best effort (Open removes what is left).
func (cl *cleaner) removeFiles(base int64, suffix string) {
	for _, s := range []string{logSuffix, indexSuffix, timeIndexSuffix, txnIndexSuffix} {
		cl.log.fsys.Remove(segmentPath(cl.log.dir, base, s) + suffix)
	}
}

// replaceSegments swaps the committed cleaned segment (its files named
// .swap) in for old, Kafka's replaceSegments. Once the .swap files exist a
// crash is completed by Open, so a failure here fails the log, and
// reopening finishes the swap.
func (l *Log) replaceSegments(cleaned *segment, old []*segment) error {
	l.syncMu.Lock()
	defer l.syncMu.Unlock()
	l.appendMu.Lock()
	defer l.appendMu.Unlock()
	if err := l.writable(); err != nil {
		cleaned.closeFiles()
		return err
	}
	l.mu.Lock()
	i := slices.Index(l.segments, old[0])
	if i < 0 || i+len(old) >= len(l.segments) || l.segments[i+len(old)-1] != old[len(old)-1] {
		l.mu.Unlock()
		cleaned.closeFiles()
		return l.fail(errors.New("storage: clean: the segments cleaned are no longer in the log"))
	}
	var errs []error
	for _, seg := range old {
		for _, suffix := range []string{logSuffix, indexSuffix, timeIndexSuffix, txnIndexSuffix} {
			from := segmentPath(l.dir, seg.base, suffix)
			if err := l.fsys.Rename(from, from+deletedSuffix); err != nil && !errors.Is(err, os.ErrNotExist) {
				errs = append(errs, err)
			}
		}
	}
	swapped := []string{logSuffix, indexSuffix, timeIndexSuffix}
	if cleaned.txns.f != nil {
		swapped = append(swapped, txnIndexSuffix)
	}
	for _, suffix := range swapped {
		to := segmentPath(l.dir, cleaned.base, suffix)
		if err := l.fsys.Rename(to+swapSuffix, to); err != nil {
			errs = append(errs, err)
		}
	}
	segs := make([]*segment, 0, len(l.segments)-len(old)+1)
	segs = append(segs, l.segments[:i]...)
	segs = append(segs, cleaned)
	segs = append(segs, l.segments[i+len(old):]...)
	l.segments = segs
	l.mu.Unlock()
	if err := errors.Join(errs...); err != nil {
		return l.fail(fmt.Errorf("storage: clean: swap: %w", err))
	}
	if err := l.fsys.SyncDir(l.dir); err != nil {
		return l.fail(fmt.Errorf("storage: clean: sync %s: %w", l.dir, err))
	}
	return l.scheduleRemoval(old)
}

// filterBatch applies Kafka's cleaner rules (LogCleaner.cleanInto's
// RecordFilter and MemoryRecords.filterTo) to one batch and returns the
// bytes to keep: the batch itself, a rebuilt batch, an empty batch, or nil
// to drop it. The result may alias cl.buf or cl.out.
func (cl *cleaner) filterBatch(b []byte) ([]byte, error) {
	h := parseCleanerHeader(b)
	var canDiscard bool
	var err error
	if h.control() {
		if canDiscard, err = cl.txn.onControlBatch(h, b, cl.p.Codec); err != nil {
			return nil, err
		}
	} else {
		canDiscard = cl.txn.onBatch(h)
	}
	horizon, hasHorizon := h.deleteHorizon()
	discardRecords := canDiscard
	if h.control() {
		discardRecords = canDiscard && hasHorizon && horizon <= cl.now
	}
	retainEmpty := false
	if last, ok := cl.p.Producers[h.producerID]; h.producerID >= 0 && ok {
		if last.LastDataOffset >= 0 {
			retainEmpty = h.lastOffset() == last.LastDataOffset
		} else {
			retainEmpty = h.control() && h.epoch == last.Epoch
		}
	}
	if h.nextOffset() == cl.fuo || h.nextOffset() == cl.groupEnd {
		// Kafka keeps the round's last batch so that the last offset is not
		// lost. Gregor also keeps each segment group's last batch, so that
		// segments stay contiguous (each ends where the next begins) and
		// recovery can still tell a missing segment from a cleaned one.
		retainEmpty = true
	}
	if !retainEmpty && discardRecords {
		return nil, nil
	}
	markerForEmptyTxn := canDiscard && h.control()

	var kept, total int
	tombstones := false
	keep := func(offset int64, key []byte, nullValue bool) bool {
		switch {
		case discardRecords:
			return false
		case h.control():
			return true
		case offset > cl.latest:
			return true
		case key == nil:
			return false
		}
		if latest, ok := cl.keys[md5.Sum(key)]; ok && offset < latest {
			return false
		}
		return !nullValue || !hasHorizon || cl.now < horizon
	}
	keepSet := map[int64]bool{}
	err = cl.p.Codec.Records(b, func(offset int64, key []byte, nullValue bool) bool {
		total++
		if keep(offset, key, nullValue) {
			kept++
			keepSet[offset] = true
			if nullValue {
				tombstones = true
			}
		}
		return true
	})
	if err != nil {
		return nil, fmt.Errorf("storage: clean: batch at offset %d: %w", h.baseOffset, err)
	}
	cl.read += total
	cl.retained += kept
	if kept == 0 {
		if !retainEmpty {
			return nil, nil
		}
		cl.out = appendEmptyBatch(cl.out[:0], b)
		return cl.out, nil
	}
	needHorizon := (tombstones || markerForEmptyTxn) && !hasHorizon
	if kept == total && !needHorizon {
		return b, nil
	}
	newHorizon := int64(-1)
	switch {
	case needHorizon:
		newHorizon = cl.now + cl.p.DeleteRetentionMs
	case hasHorizon:
		newHorizon = horizon
	}
	cl.out, err = cl.p.Codec.Rebuild(cl.out[:0], b, func(offset int64) bool { return keepSet[offset] }, newHorizon)
	if err != nil {
		return nil, fmt.Errorf("storage: clean: rebuild batch at offset %d: %w", h.baseOffset, err)
	}
	if nh, reason := parseHeader(cl.out); reason != "" || nh.size != int64(len(cl.out)) ||
		nh.baseOffset != h.baseOffset || nh.lastOffset() != h.lastOffset() || !crcValid(cl.out) {
		return nil, fmt.Errorf("storage: clean: the codec rebuilt batch %d wrongly", h.baseOffset)
	}
	return cl.out, nil
}

// appendEmptyBatch appends the header-only batch Kafka keeps for a batch
// emptied by cleaning that must stay (DefaultRecordBatch.writeEmptyHeader):
// same offsets, producer, sequence, leader epoch, timestamp type,
// transactional and control flags; no codec, no records, no base
// timestamp, the original max timestamp.
func appendEmptyBatch(dst, b []byte) []byte {
	start := len(dst)
	dst = append(dst, b[:batchHeaderSize]...)
	e := dst[start:]
	be := binary.BigEndian
	be.PutUint32(e[offBatchLength:], batchHeaderSize-batchLengthOverhead)
	attrs := be.Uint16(b[offAttributes:]) & (attrTimestampType | attrTransactional | attrControl)
	be.PutUint16(e[offAttributes:], attrs)
	be.PutUint64(e[offBaseTimestamp:], math.MaxUint64) // -1: no timestamp
	be.PutUint32(e[offRecordCount:], 0)
	be.PutUint32(e[offCRC:], crc32.Checksum(e[crcStart:], castagnoli))
	return dst
}

// segmentWriter writes batches to a new segment and builds its indexes
// with the rule Append and recovery use. The segment is not yet in the
// log, so nothing else reads it.
type segmentWriter struct {
	seg                    *segment
	interval               int64
	lastIdxPos, lastTimeTs int64
	idx, tim               []byte // the index entries, written by finish
	pending                []byte
	pendingPos             int64
}

const segmentWriterBuffer = 1 << 20

func (w *segmentWriter) append(b []byte) error {
	s := w.seg
	h, _ := parseHeader(b)
	if h.maxTimestamp > s.maxTs {
		s.maxTs, s.maxTsOffset = h.maxTimestamp, h.lastOffset()
	}
	if s.size-w.lastIdxPos > w.interval {
		w.idx = appendOffsetEntry(w.idx, s.base, h.lastOffset(), s.size)
		w.lastIdxPos = s.size
		if s.maxTs > w.lastTimeTs {
			w.tim = appendTimeEntry(w.tim, s.base, s.maxTs, s.maxTsOffset)
			w.lastTimeTs = s.maxTs
		}
	}
	if len(w.pending) == 0 {
		w.pendingPos = s.size
	}
	w.pending = append(w.pending, b...)
	s.size += h.size
	s.end = h.nextOffset()
	if len(w.pending) >= segmentWriterBuffer {
		return w.flush()
	}
	return nil
}

func (w *segmentWriter) flush() error {
	if len(w.pending) == 0 {
		return nil
	}
	if err := writeFull(w.seg.log, w.pending, w.pendingPos); err != nil {
		return fmt.Errorf("storage: clean: write %s: %w", w.seg.path, err)
	}
	w.pending = w.pending[:0]
	return nil
}

// finish writes what is buffered and the index files, and fsyncs the three
// files. The segment is never active: its index files hold exactly their
// entries (trimmed, not preallocated, as Kafka's cleaner leaves them), the
// time index ending with the segment's max timestamp as an inactive
// segment's does, and they are mapped on the first lookup once the segment
// is in the log.
func (w *segmentWriter) finish() error {
	if err := w.flush(); err != nil {
		return err
	}
	s := w.seg
	if s.maxTs > w.lastTimeTs {
		w.tim = appendTimeEntry(w.tim, s.base, s.maxTs, s.maxTsOffset)
		w.lastTimeTs = s.maxTs
	}
	if err := s.offsets.rebuild(w.idx); err != nil {
		return fmt.Errorf("storage: clean: write index: %w", err)
	}
	if err := s.times.rebuild(w.tim); err != nil {
		return fmt.Errorf("storage: clean: write time index: %w", err)
	}
	return s.sync()
}

// loadFirstDirty reads the cleaner checkpoint once; cleanMu held.
func (l *Log) loadFirstDirty() error {
	if l.firstDirty >= 0 {
		return nil
	}
	path := filepath.Join(l.dir, cleanerCheckpointName)
	f, err := l.fsys.OpenFile(path, os.O_RDONLY, 0)
	if errors.Is(err, os.ErrNotExist) {
		l.firstDirty = 0
		return nil
	}
	if err != nil {
		return fmt.Errorf("storage: open cleaner checkpoint: %w", err)
	}
	defer f.Close()
	var buf [64]byte
	n, _ := f.ReadAt(buf[:], 0)
	var version string
	var off int64
	if _, err := fmt.Sscanf(strings.TrimSpace(string(buf[:n])), "%s\nfirst-dirty-offset %d", &version, &off); err != nil ||
		version != checkpointVersion || off < 0 {
		// Losing it costs a full cleaning, never data: start over.
		l.logger.Warn("storage: cleaner checkpoint unreadable, cleaning from the start", "file", path)
		off = 0
	}
	l.firstDirty = off
	return nil
}

// writeFirstDirty replaces the cleaner checkpoint durably
// (vfs.WriteFileAtomic, through cleanerCheckpointTempName); cleanMu held.
func (l *Log) writeFirstDirty(off int64) error {
	text := fmt.Sprintf("%s\nfirst-dirty-offset %d\n", checkpointVersion, off)
	if err := vfs.WriteFileAtomic(l.fsys, filepath.Join(l.dir, cleanerCheckpointName), []byte(text), 0o644); err != nil {
		return fmt.Errorf("storage: write cleaner checkpoint: %w", err)
	}
	l.firstDirty = off
	return nil
}

// FirstDirtyOffset returns where the next cleaning round starts: the
// cleaner checkpoint (offsets below it have been cleaned at least once), or
// the log start offset when the checkpoint lies outside the log, as Kafka's
// cleanableOffsets resets it (below the start after retention, past the
// end after recovery cut the log).
func (l *Log) FirstDirtyOffset() (int64, error) {
	l.cleanMu.Lock()
	defer l.cleanMu.Unlock()
	if err := l.loadFirstDirty(); err != nil {
		return 0, err
	}
	if start := l.start.Load(); l.firstDirty < start || l.firstDirty > l.end.Load() {
		return start, nil
	}
	return l.firstDirty, nil
}
