package storage

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"reflect"
	"testing"

	"github.com/gregor-broker/gregor/vfs"
)

func sampleSnapshot() []ProducerSnapshotEntry {
	return []ProducerSnapshotEntry{
		{ProducerID: 7, Epoch: 2, LastTimestamp: 1005, CoordinatorEpoch: -1, CurrentTxnFirstOffset: -1, Batches: []ProducerBatchMeta{
			{LastSequence: 4, LastOffset: 14, OffsetDelta: 4, Timestamp: 1000},
			{LastSequence: 9, LastOffset: 24, OffsetDelta: 4, Timestamp: 1005},
		}},
		{ProducerID: 1 << 40, Epoch: 0, LastTimestamp: 3, CoordinatorEpoch: 5, CurrentTxnFirstOffset: 30, Batches: []ProducerBatchMeta{
			{LastSequence: 0, LastOffset: 30, OffsetDelta: 0, Timestamp: 3},
		}},
		{ProducerID: 9, Epoch: 1, LastTimestamp: 77, CoordinatorEpoch: -1, CurrentTxnFirstOffset: -1}, // no batches
	}
}

// TestProducerSnapshotIsKafkasFormat checks the bytes against Kafka's
// ProducerSnapshot v1 layout field by field, and that decoding gives the
// entries back with every retained batch.
func TestProducerSnapshotIsKafkasFormat(t *testing.T) {
	entries := sampleSnapshot()
	b := encodeProducerSnapshot(entries)
	if len(b) != 10+4*46 {
		t.Fatalf("%d bytes, want 10 + 4 entries of 46", len(b))
	}
	be := binary.BigEndian
	if be.Uint16(b) != 1 || be.Uint32(b[6:]) != 4 {
		t.Fatalf("version %d, count %d", be.Uint16(b), be.Uint32(b[6:]))
	}
	if crc := crc32.Checksum(b[6:], crc32.MakeTable(crc32.Castagnoli)); be.Uint32(b[2:]) != crc {
		t.Fatal("CRC is not CRC-32C of the bytes after it")
	}
	// The second entry: producer 7's last batch, which is what Kafka keeps.
	e := b[10+46:]
	if int64(be.Uint64(e)) != 7 || int16(be.Uint16(e[8:])) != 2 || int32(be.Uint32(e[10:])) != 9 ||
		int64(be.Uint64(e[14:])) != 24 || int32(be.Uint32(e[22:])) != 4 || int64(be.Uint64(e[26:])) != 1005 ||
		int32(be.Uint32(e[34:])) != -1 || int64(be.Uint64(e[38:])) != -1 {
		t.Fatalf("entry bytes %x", e[:46])
	}
	got, err := decodeProducerSnapshot(b)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, entries) {
		t.Fatalf("decoded %+v\nwant %+v", got, entries)
	}
	for _, bad := range [][]byte{
		nil, b[:9], b[:len(b)-1],
		append(bytes.Clone(b[:len(b)-46]), 0), // count disagrees with the length
	} {
		if _, err := decodeProducerSnapshot(bad); !errors.Is(err, errCorruptSnapshot) {
			t.Errorf("%d bytes decoded: %v", len(bad), err)
		}
	}
	flipped := bytes.Clone(b)
	flipped[40] ^= 1
	if _, err := decodeProducerSnapshot(flipped); !errors.Is(err, errCorruptSnapshot) {
		t.Errorf("flipped bit not detected: %v", err)
	}
	v2 := bytes.Clone(b)
	v2[1] = 2
	if _, err := decodeProducerSnapshot(v2); !errors.Is(err, errCorruptSnapshot) {
		t.Errorf("unknown version accepted: %v", err)
	}
}

// TestProducerSnapshotsLifecycle writes snapshots as rolls would, keeps
// the last two, skips and deletes a corrupt latest one, and drops those
// past the end when the log is truncated or reopened after a crash.
func TestProducerSnapshotsLifecycle(t *testing.T) {
	forEachFS(t, func(t *testing.T, env testEnv) {
		l := mustOpen(t, env.fs, env.dir, testConfig())
		defer func() { l.Delete() }()
		var m model
		for range 30 {
			m.append(t, l, batchSpec{records: 2, maxTs: 1, valueSize: 100})
		}
		entries := sampleSnapshot()
		for _, off := range []int64{10, 20, 40, 50} {
			if err := l.WriteProducerSnapshot(off, entries); err != nil {
				t.Fatal(err)
			}
		}
		if offs, _ := l.listSnapshots(); !reflect.DeepEqual(offs, []int64{40, 50}) {
			t.Fatalf("snapshots kept %v, want the last two", offs)
		}
		if err := l.WriteProducerSnapshot(l.EndOffset()+1, entries); !errors.Is(err, ErrOffsetOutOfRange) {
			t.Fatalf("snapshot past the end: %v", err)
		}
		off, got, found, err := l.LatestProducerSnapshot()
		if err != nil || !found || off != 50 || !reflect.DeepEqual(got, entries) {
			t.Fatalf("latest = %d %v %v %v", off, found, err, got)
		}

		// A corrupt latest snapshot is deleted and the older one used.
		path := snapshotPath(env.dir, 50)
		b := readFile(t, env.fs, path)
		b[len(b)-1] ^= 0xff
		writeFile(t, env.fs, path, b)
		if off, _, found, err := l.LatestProducerSnapshot(); err != nil || !found || off != 40 {
			t.Fatalf("after corruption: %d %v %v", off, found, err)
		}
		if _, err := env.fs.Stat(path); err == nil {
			t.Fatal("corrupt snapshot not deleted")
		}

		// Truncation below a snapshot removes it.
		if err := l.WriteProducerSnapshot(50, entries); err != nil {
			t.Fatal(err)
		}
		if err := l.TruncateTo(44); err != nil {
			t.Fatal(err)
		}
		if offs, _ := l.listSnapshots(); !reflect.DeepEqual(offs, []int64{40}) {
			t.Fatalf("snapshots after truncation %v", offs)
		}
		if err := l.TruncateFullyAndStartAt(100); err != nil {
			t.Fatal(err)
		}
		if offs, _ := l.listSnapshots(); len(offs) != 0 {
			t.Fatalf("snapshots after TruncateFully %v", offs)
		}
	})
}

// TestSnapshotPastRecoveredEndIsDiscarded: after a power loss the log
// keeps only what was synced, and a snapshot taken after that (durable by
// itself) describes lost batches; Open deletes it, and a temporary
// snapshot file a crash left behind.
func TestSnapshotPastRecoveredEndIsDiscarded(t *testing.T) {
	fsys := vfs.NewMemFS()
	l := mustOpen(t, fsys, "/d/t-0", testConfig())
	var m model
	for range 5 {
		m.append(t, l, batchSpec{records: 2, maxTs: 1, valueSize: 10})
	}
	if err := l.Sync(); err != nil {
		t.Fatal(err)
	}
	if err := l.WriteProducerSnapshot(10, sampleSnapshot()); err != nil {
		t.Fatal(err)
	}
	for range 5 {
		m.append(t, l, batchSpec{records: 2, maxTs: 1, valueSize: 10})
	}
	if err := l.WriteProducerSnapshot(20, sampleSnapshot()); err != nil {
		t.Fatal(err)
	}
	crashed := fsys.CrashClone()
	writeFile(t, crashed, snapshotPath("/d/t-0", 20)+".tmp", []byte{1, 2})
	l2 := mustOpen(t, crashed, "/d/t-0", testConfig())
	defer l2.Close()
	if l2.EndOffset() != 10 {
		t.Fatalf("recovered end %d, want 10", l2.EndOffset())
	}
	if offs, _ := l2.listSnapshots(); !reflect.DeepEqual(offs, []int64{10}) {
		t.Fatalf("snapshots after recovery %v, want [10]", offs)
	}
	if _, err := crashed.Stat(snapshotPath("/d/t-0", 20) + ".tmp"); err == nil {
		t.Fatal("temporary snapshot left")
	}
	if off, _, found, err := l2.LatestProducerSnapshot(); err != nil || !found || off != 10 {
		t.Fatalf("latest after recovery: %d %v %v", off, found, err)
	}
}

// FuzzDecodeProducerSnapshot decodes arbitrary bytes as a snapshot.
// Invariants: never panics; never allocates beyond what the input holds
// (entries are counted against the length before any is built); what
// decodes re-encodes to a snapshot that decodes to the same entries.
func FuzzDecodeProducerSnapshot(f *testing.F) {
	f.Add(encodeProducerSnapshot(sampleSnapshot()))
	f.Add(encodeProducerSnapshot(nil))
	f.Add([]byte{0, 1, 0, 0, 0, 0, 0x7f, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, b []byte) {
		entries, err := decodeProducerSnapshot(b)
		if err != nil {
			return
		}
		again, err := decodeProducerSnapshot(encodeProducerSnapshot(entries))
		if err != nil {
			t.Fatal(err)
		}
		if len(again) != len(entries) {
			t.Fatalf("%d entries re-decoded as %d", len(entries), len(again))
		}
		for i := range entries {
			a, e := again[i], entries[i]
			if a.ProducerID != e.ProducerID || a.Epoch != e.Epoch || len(a.Batches) != len(e.Batches) {
				t.Fatalf("entry %d: %+v re-decoded as %+v", i, e, a)
			}
		}
	})
}
