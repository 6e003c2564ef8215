package storage

import (
	"bytes"
	"encoding/binary"
	"math"
	"slices"
	"testing"

	"pgregory.net/rapid"

	"github.com/gregor-broker/gregor/vfs"
)

// replicaModel is what the property test expects a log to hold: its
// batches in offset order (with their offsets and epochs stamped), the
// start and end offsets, and the leader-epoch entries.
type replicaModel struct {
	batches    []modelBatch
	start, end int64
	epochs     []EpochEntry
}

// add records whole batches appended at their stamped offsets, starting
// the epochs newer than the latest as the log does.
func (m *replicaModel) add(unit []byte, maxTs []int64) {
	for p, i := 0, 0; p < len(unit); i++ {
		h, _ := parseHeader(unit[p:])
		b := bytes.Clone(unit[p : p+int(h.size)])
		epoch := int32(binary.BigEndian.Uint32(b[offPartitionLeaderEpoch:]))
		if n := len(m.epochs); epoch >= 0 && (n == 0 || epoch > m.epochs[n-1].Epoch) {
			m.assign(epoch, h.baseOffset)
		}
		m.batches = append(m.batches, modelBatch{first: h.baseOffset, last: h.lastOffset(), maxTs: maxTs[i], data: b})
		m.end = h.nextOffset()
		p += int(h.size)
	}
}

// assign adds a newer epoch starting at start, after removing the entries
// it contradicts (those starting at or after start), as Kafka's
// LeaderEpochFileCache.assign.
func (m *replicaModel) assign(epoch int32, start int64) {
	for n := len(m.epochs); n > 0 && m.epochs[n-1].StartOffset >= start; n-- {
		m.epochs = m.epochs[:n-1]
	}
	m.epochs = append(m.epochs, EpochEntry{epoch, start})
}

// truncateTo is TruncateTo's rule: batches ending at or past offset go
// (a straddling one whole) and the log then ends after the last batch
// kept; epochs starting at or past the new end go too; below the start it
// is a full truncation.
func (m *replicaModel) truncateTo(offset int64) {
	if offset < m.start {
		*m = replicaModel{start: offset, end: offset}
		return
	}
	if offset < m.end {
		i := slices.IndexFunc(m.batches, func(b modelBatch) bool { return b.last >= offset })
		m.batches = m.batches[:i]
		m.end = m.start // the first segment's base, in this test
		if i > 0 {
			m.end = m.batches[i-1].last + 1
		}
		m.start = min(m.start, m.end)
	}
	m.epochs, _ = epochsBelow(m.epochs, m.end)
}

// endOffsetForEpoch is Kafka's endOffsetFor by its definition: the largest
// epoch <= epoch and where the next one starts (the log end for the
// latest); the first start offset for an epoch below all; undefined for
// -1, no entries, or an epoch above all.
func (m *replicaModel) endOffsetForEpoch(epoch int32) (int32, int64) {
	n := len(m.epochs)
	switch {
	case epoch == UndefinedEpoch || n == 0 || epoch > m.epochs[n-1].Epoch:
		return UndefinedEpoch, UndefinedEpochOffset
	case epoch == m.epochs[n-1].Epoch:
		return epoch, m.end
	case epoch < m.epochs[0].Epoch:
		return epoch, m.epochs[0].StartOffset
	}
	k := 0
	for k+1 < n && m.epochs[k+1].Epoch <= epoch {
		k++
	}
	return m.epochs[k].Epoch, m.epochs[k+1].StartOffset
}

// check compares l with the model: offsets, every batch read alone and all
// together, the epochs and EndOffsetForEpoch for every epoch around them,
// and BatchAtTimestamp and MaxTimestampBatch for timestamps around the
// batches'.
func (m *replicaModel) check(rt *rapid.T, l *Log, step string) {
	if l.StartOffset() != m.start || l.EndOffset() != m.end {
		rt.Fatalf("%s: log [%d, %d), model [%d, %d)", step, l.StartOffset(), l.EndOffset(), m.start, m.end)
	}
	var all []byte
	for _, b := range m.batches {
		all = append(all, b.data...)
		for _, off := range []int64{b.first, b.last} {
			got, err := l.Read(off, 1, math.MaxInt64)
			if err != nil || !bytes.Equal(got, b.data) {
				rt.Fatalf("%s: Read(%d) = batch at %d, %v; want the batch %d..%d", step, off, baseOf(got), err, b.first, b.last)
			}
		}
	}
	got, err := l.Read(m.start, len(all)+1, math.MaxInt64)
	if err != nil || !bytes.Equal(got, all) {
		rt.Fatalf("%s: Read of the whole log: %d bytes, %v; want %d", step, len(got), err, len(all))
	}
	if got := l.Epochs(); !slices.Equal(got, m.epochs) && len(got)+len(m.epochs) > 0 {
		rt.Fatalf("%s: epochs %v, want %v", step, got, m.epochs)
	}
	for e := int32(-1); e <= 12; e++ {
		ge, go_ := l.EndOffsetForEpoch(e)
		we, wo := m.endOffsetForEpoch(e)
		if ge != we || go_ != wo {
			rt.Fatalf("%s: EndOffsetForEpoch(%d) = %d, %d; want %d, %d (epochs %v)", step, e, ge, go_, we, wo, m.epochs)
		}
	}
	for ts := int64(95); ts <= 125; ts += 3 {
		got, found, err := l.BatchAtTimestamp(ts)
		var want []byte
		for _, b := range m.batches {
			if b.maxTs >= ts {
				want = b.data
				break
			}
		}
		if err != nil || found != (want != nil) || !bytes.Equal(got, want) {
			rt.Fatalf("%s: BatchAtTimestamp(%d) = batch at %d (found %v), %v; want the one at %d", step, ts, baseOf(got), found, err, baseOf(want))
		}
	}
	var best *modelBatch
	for i := range m.batches {
		if b := &m.batches[i]; best == nil || b.maxTs > best.maxTs {
			best = b
		}
	}
	got, found, err := l.MaxTimestampBatch()
	if err != nil || found != (best != nil) || best != nil && !bytes.Equal(got, best.data) {
		rt.Fatalf("%s: MaxTimestampBatch = batch at %d (found %v), %v", step, baseOf(got), found, err)
	}
	l.mu.RLock()
	defer l.mu.RUnlock()
	for i := 1; i < len(l.segments); i++ {
		if l.segments[i-1].end != l.segments[i].base {
			rt.Fatalf("%s: segment %d ends at %d, the next starts at %d", step, l.segments[i-1].base, l.segments[i-1].end, l.segments[i].base)
		}
	}
}

// TestReplicaOperationsMatchModel runs random sequences of Append,
// AppendReplicated (with and without gaps), AssignEpoch, TruncateTo,
// TruncateFullyAndStartAt, Sync and clean or crashed reopens, and after
// every step checks reads, the offsets, Epochs, EndOffsetForEpoch and the
// timestamp lookups against a model that is just the list of batches.
func TestReplicaOperationsMatchModel(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		cfg := testConfig()
		cfg.SegmentBytes = rapid.Int64Range(300, 3000).Draw(rt, "segmentBytes")
		cfg.IndexIntervalBytes = rapid.IntRange(0, 400).Draw(rt, "indexInterval")
		cfg.SegmentIndexBytes = rapid.IntRange(24, 240).Draw(rt, "segmentIndexBytes")
		fsys := vfs.NewMemFS()
		l, err := Open(fsys, "/p-0", cfg)
		if err != nil {
			rt.Fatal(err)
		}
		defer func() { l.Delete() }()
		var m replicaModel
		latest := func() int32 {
			if n := len(m.epochs); n > 0 {
				return m.epochs[n-1].Epoch
			}
			return 0
		}
		// unit builds 1 to 3 batches stamped with epochs at or above the
		// latest, based at from and, with gaps, skipping offsets between
		// them as a compacted leader's do.
		unit := func(from int64, gaps bool) ([]byte, []int64) {
			var u []byte
			var ts []int64
			epoch := latest()
			for i := rapid.IntRange(1, 3).Draw(rt, "batches"); i > 0; i-- {
				if gaps {
					from += rapid.Int64Range(0, 3).Draw(rt, "gap")
				}
				epoch += int32(rapid.IntRange(0, 1).Draw(rt, "epochStep"))
				s := batchSpec{records: rapid.IntRange(1, 5).Draw(rt, "records"),
					maxTs: rapid.Int64Range(100, 120).Draw(rt, "maxTs"), valueSize: rapid.IntRange(0, 120).Draw(rt, "valueSize")}
				b := withOffset(makeBatch(s), from)
				binary.BigEndian.PutUint32(b[offPartitionLeaderEpoch:], uint32(epoch))
				u = append(u, b...)
				ts = append(ts, s.maxTs)
				from += int64(s.records)
			}
			return u, ts
		}
		for step := 0; step < 40; step++ {
			var name string
			switch op := rapid.IntRange(0, 11).Draw(rt, "op"); {
			case op < 3:
				u, ts := unit(0, false)
				if _, _, err := l.Append(u); err != nil {
					rt.Fatalf("Append: %v", err)
				}
				// Append rewrote u's base offsets in place.
				m.add(u, ts)
				name = "Append"
			case op < 6:
				u, ts := unit(m.end, rapid.Bool().Draw(rt, "gaps"))
				first, last, err := l.AppendReplicated(u)
				if err != nil || first != baseOf(u) {
					rt.Fatalf("AppendReplicated: %d, %d, %v", first, last, err)
				}
				m.add(u, ts)
				name = "AppendReplicated"
			case op < 7:
				e := latest() + 1
				if err := l.AssignEpoch(e, m.end); err != nil {
					rt.Fatal(err)
				}
				m.assign(e, m.end)
				name = "AssignEpoch"
			case op < 9:
				off := rapid.Int64Range(max(0, m.start-3), m.end+3).Draw(rt, "truncateTo")
				if err := l.TruncateTo(off); err != nil {
					rt.Fatalf("TruncateTo(%d): %v", off, err)
				}
				m.truncateTo(off)
				name = "TruncateTo"
			case op < 10:
				off := rapid.Int64Range(0, m.end+20).Draw(rt, "truncateFullyAndStartAt")
				if err := l.TruncateFullyAndStartAt(off); err != nil {
					rt.Fatalf("TruncateFullyAndStartAt(%d): %v", off, err)
				}
				m = replicaModel{start: off, end: off}
				name = "TruncateFullyAndStartAt"
			case op < 11:
				if err := l.Sync(); err != nil {
					rt.Fatal(err)
				}
				name = "Sync"
			default:
				if rapid.Bool().Draw(rt, "clean") {
					if err := l.Close(); err != nil {
						rt.Fatal(err)
					}
					name = "Close and Open"
				} else {
					crash(l)
					name = "crash and Open"
				}
				if l, err = Open(fsys, "/p-0", cfg); err != nil {
					rt.Fatalf("Open: %v", err)
				}
				// Open drops an epoch that starts at the end with no data.
				m.epochs, _ = epochsBelow(m.epochs, m.end)
			}
			m.check(rt, l, name)
		}
	})
}
