package storage

import (
	"encoding/binary"
	"encoding/hex"
	"errors"
	"hash/crc32"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/gregor-broker/gregor/vfs"
)

// TestAbortedTxnEncodingIsKafkas pins the 34-byte entry against the layout
// of Kafka's AbortedTxn: version 0, producer id, first offset, last offset,
// last stable offset, big-endian.
func TestAbortedTxnEncodingIsKafkas(t *testing.T) {
	got := hex.EncodeToString(appendAbortedTxn(nil, AbortedTxn{ProducerID: 7, FirstOffset: 10, LastOffset: 20, LastStableOffset: 21}))
	want := "0000" + "0000000000000007" + "000000000000000a" + "0000000000000014" + "0000000000000015"
	if got != want {
		t.Fatalf("entry = %s, want %s", got, want)
	}
}

func TestDecodeTxnIndex(t *testing.T) {
	entry := func(version uint16, pid, first, last, lso int64) []byte {
		b := appendAbortedTxn(nil, AbortedTxn{ProducerID: pid, FirstOffset: first, LastOffset: last, LastStableOffset: lso})
		b[0], b[1] = byte(version>>8), byte(version)
		return b
	}
	join := func(parts ...[]byte) []byte { return slices.Concat(parts...) }
	for _, tc := range []struct {
		name      string
		b         []byte
		want      []AbortedTxn
		whole     int64
		corruptAt int64 // -1: not corrupt
	}{
		{"empty", nil, []AbortedTxn{}, 0, -1},
		{"two entries", join(entry(0, 1, 100, 105, 100), entry(0, 2, 101, 110, 106)),
			[]AbortedTxn{{1, 100, 105, 100}, {2, 101, 110, 106}}, 68, -1},
		{"torn last entry left to cut", join(entry(0, 1, 100, 105, 100), entry(0, 2, 101, 110, 106)[:20]),
			[]AbortedTxn{{1, 100, 105, 100}}, 34, -1},
		{"unknown version", join(entry(0, 1, 100, 105, 100), entry(1, 2, 101, 110, 106)), nil, 0, 34},
		{"ends below the segment", entry(0, 1, 50, 99, 50), nil, 0, 0},
		{"begins after it ends", entry(0, 1, 106, 105, 100), nil, 0, 0},
		{"last offsets not increasing", join(entry(0, 1, 100, 105, 100), entry(0, 2, 101, 105, 106)), nil, 0, 34},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, whole, err := decodeTxnIndex(tc.b, 100)
			var ce *CorruptError
			if tc.corruptAt >= 0 {
				if !errors.As(err, &ce) || ce.Position != tc.corruptAt {
					t.Fatalf("err = %v, want corruption at %d", err, tc.corruptAt)
				}
				return
			}
			if err != nil || whole != tc.whole || !slices.Equal(got, tc.want) {
				t.Fatalf("got %v, %d, %v; want %v, %d", got, whole, err, tc.want, tc.whole)
			}
		})
	}
}

// FuzzDecodeTxnIndex feeds arbitrary bytes as a .txnindex. Invariants: it
// never panics; it allocates at most one entry per 34 input bytes; on
// success the entries re-encode to exactly the whole bytes it reports,
// their last offsets increase and none ends below the base.
func FuzzDecodeTxnIndex(f *testing.F) {
	f.Add(appendAbortedTxn(nil, AbortedTxn{1, 5, 9, 5}), int64(0))
	f.Add(appendAbortedTxn(appendAbortedTxn(nil, AbortedTxn{1, 5, 9, 5}), AbortedTxn{2, 6, 12, 10})[:50], int64(3))
	f.Fuzz(func(t *testing.T, b []byte, base int64) {
		got, whole, err := decodeTxnIndex(b, base)
		if err != nil {
			return
		}
		if cap(got) > len(b)/abortedTxnSize {
			t.Fatalf("allocated %d entries for %d bytes", cap(got), len(b))
		}
		var enc []byte
		for i, a := range got {
			if a.LastOffset < base || (i > 0 && a.LastOffset <= got[i-1].LastOffset) {
				t.Fatalf("entry %d = %+v accepted", i, a)
			}
			enc = appendAbortedTxn(enc, a)
		}
		if int64(len(enc)) != whole || string(enc) != string(b[:whole]) {
			t.Fatalf("re-encoding differs")
		}
	})
}

// appendUntilRoll appends one-record batches until the log rolls, returning
// the offsets appended.
func appendUntilRoll(t *testing.T, l *Log) []int64 {
	t.Helper()
	var offs []int64
	base := l.ActiveSegmentBase()
	for l.ActiveSegmentBase() == base {
		first, _, err := l.Append(makeBatch(batchSpec{records: 1, maxTs: 1000, valueSize: 300}))
		if err != nil {
			t.Fatal(err)
		}
		offs = append(offs, first)
	}
	return offs
}

func appendOne(t *testing.T, l *Log) int64 {
	t.Helper()
	first, _, err := l.Append(makeBatch(batchSpec{records: 1, maxTs: 1000, valueSize: 10}))
	if err != nil {
		t.Fatal(err)
	}
	return first
}

// TestTxnIndexCollectsAcrossSegmentsAndSurvivesRestart indexes aborted
// transactions in two segments, checks Kafka's collect rule (overlap with
// the fetch range, stop once an entry's last stable offset reaches its
// end), and that a clean restart and a crash both load them again.
func TestTxnIndexCollectsAcrossSegmentsAndSurvivesRestart(t *testing.T) {
	forEachFS(t, func(t *testing.T, env testEnv) {
		l := mustOpen(t, env.fs, env.dir, testConfig())
		for range 3 {
			appendOne(t, l)
		}
		a1 := AbortedTxn{ProducerID: 1, FirstOffset: 0, LastOffset: 2, LastStableOffset: 0}
		if err := l.AppendAbortedTxn(a1); err != nil {
			t.Fatal(err)
		}
		offs := appendUntilRoll(t, l) // the active segment now starts at offs[len-1]
		m := appendOne(t, l)
		a2 := AbortedTxn{ProducerID: 2, FirstOffset: 1, LastOffset: m, LastStableOffset: m}
		if err := l.AppendAbortedTxn(a2); err != nil {
			t.Fatal(err)
		}
		if got := filepath.Join(env.dir, "00000000000000000000.txnindex"); fileSize(t, env.fs, got) != abortedTxnSize {
			t.Fatalf("%s holds %d bytes", got, fileSize(t, env.fs, got))
		}
		check := func(l *Log) {
			t.Helper()
			for _, tc := range []struct {
				from, upTo int64
				want       []AbortedTxn
			}{
				{0, 1, []AbortedTxn{a1}},             // a1 ends at the range: stop there
				{0, m + 1, []AbortedTxn{a1, a2}},     // both overlap
				{3, m, []AbortedTxn{a2}},             // a1 ended before 3
				{m + 1, m + 2, nil},                  // nothing after
				{offs[0], offs[1], []AbortedTxn{a2}}, // a2 spans from offset 1
			} {
				if got := l.AbortedTxns(tc.from, tc.upTo); !slices.Equal(got, tc.want) {
					t.Errorf("AbortedTxns(%d, %d) = %v, want %v", tc.from, tc.upTo, got, tc.want)
				}
			}
		}
		check(l)
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		l = mustOpen(t, env.fs, env.dir, testConfig())
		check(l)
		if err := l.Sync(); err != nil {
			t.Fatal(err)
		}
		crash(l)
		l = mustOpen(t, env.fs, env.dir, testConfig())
		defer l.Close()
		check(l)
	})
}

func TestAppendAbortedTxnRefusals(t *testing.T) {
	l := mustOpen(t, vfs.NewMemFS(), "/d/t-0", testConfig())
	defer l.Close()
	for range 5 {
		appendOne(t, l)
	}
	if err := l.AppendAbortedTxn(AbortedTxn{ProducerID: 1, FirstOffset: 0, LastOffset: 5}); !errors.Is(err, ErrOffsetOutOfRange) {
		t.Fatalf("marker at the log end: %v", err)
	}
	if err := l.AppendAbortedTxn(AbortedTxn{ProducerID: 1, FirstOffset: 3, LastOffset: 2}); !errors.Is(err, ErrOffsetOutOfRange) {
		t.Fatalf("first after last: %v", err)
	}
	for range 2 { // the same entry twice is indexed once
		if err := l.AppendAbortedTxn(AbortedTxn{ProducerID: 1, FirstOffset: 0, LastOffset: 3}); err != nil {
			t.Fatal(err)
		}
	}
	if got := l.AbortedTxns(0, 5); len(got) != 1 {
		t.Fatalf("indexed %v", got)
	}
	if err := l.AppendAbortedTxn(AbortedTxn{ProducerID: 2, FirstOffset: 1, LastOffset: 3}); !errors.Is(err, errTxnIndexOrder) {
		t.Fatalf("same last offset twice: %v", err)
	}
}

// TestTxnIndexFollowsTruncationAndRetention: truncating the log drops the
// transactions whose marker it removed; retention deletes a segment's
// .txnindex with it.
func TestTxnIndexFollowsTruncationAndRetention(t *testing.T) {
	forEachFS(t, func(t *testing.T, env testEnv) {
		l := mustOpen(t, env.fs, env.dir, testConfig())
		defer l.Close()
		for range 6 {
			appendOne(t, l)
		}
		a := []AbortedTxn{{1, 0, 2, 0}, {2, 1, 4, 3}}
		for _, x := range a {
			if err := l.AppendAbortedTxn(x); err != nil {
				t.Fatal(err)
			}
		}
		if err := l.TruncateTo(4); err != nil {
			t.Fatal(err)
		}
		if got := l.AbortedTxns(0, 10); !slices.Equal(got, a[:1]) {
			t.Fatalf("after truncation to 4: %v", got)
		}
		path := filepath.Join(env.dir, "00000000000000000000.txnindex")
		if n := fileSize(t, env.fs, path); n != abortedTxnSize {
			t.Fatalf("%s holds %d bytes after truncation", path, n)
		}
		appendUntilRoll(t, l)
		res, err := l.DeleteOldSegments(RetentionPolicy{Delete: true, RetentionMs: -1, RetentionBytes: 1, HighWatermark: l.EndOffset()}, 2000)
		if err != nil || res.Segments == 0 {
			t.Fatalf("retention: %+v, %v", res, err)
		}
		if _, err := env.fs.Stat(path); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("%s after its segment was deleted: %v", path, err)
		}
		if got := l.AbortedTxns(0, l.EndOffset()); got != nil {
			t.Fatalf("aborted transactions after retention: %v", got)
		}
	})
}

// TestOpenCutsTornTxnIndexAndEntriesPastTheLog: a torn last entry is cut at
// open, an entry whose marker the log no longer holds is dropped, and an
// entry of an unknown version refuses to open.
func TestOpenCutsTornTxnIndexAndEntriesPastTheLog(t *testing.T) {
	fsys := vfs.NewMemFS()
	dir := "/d/t-0"
	l := mustOpen(t, fsys, dir, testConfig())
	for range 4 {
		appendOne(t, l)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "00000000000000000000.txnindex")
	good := AbortedTxn{1, 0, 2, 0}
	past := AbortedTxn{2, 1, 9, 3}
	writeFile(t, fsys, path, appendAbortedTxn(appendAbortedTxn(nil, good), past)[:abortedTxnSize+7])
	l = mustOpen(t, fsys, dir, testConfig())
	if got := l.AbortedTxns(0, 10); !slices.Equal(got, []AbortedTxn{good}) {
		t.Fatalf("torn tail: %v", got)
	}
	l.Close()
	if n := fileSize(t, fsys, path); n != abortedTxnSize {
		t.Fatalf("torn tail not cut: %d bytes", n)
	}
	writeFile(t, fsys, path, appendAbortedTxn(appendAbortedTxn(nil, good), past))
	l = mustOpen(t, fsys, dir, testConfig())
	if got := l.AbortedTxns(0, 10); !slices.Equal(got, []AbortedTxn{good}) {
		t.Fatalf("entry past the log end: %v", got)
	}
	l.Close()
	bad := appendAbortedTxn(nil, good)
	bad[1] = 9
	writeFile(t, fsys, path, bad)
	var ce *CorruptError
	if _, err := Open(fsys, dir, testConfig()); !errors.As(err, &ce) {
		t.Fatalf("open with a version-9 entry: %v", err)
	}
}

// TestCrashRecoveryEmptiesTxnIndexesOfSegmentsWithMarkers: after a crash,
// an unflushed segment holding a control batch has its .txnindex emptied
// and RecoveryStats.TxnIndexRebuildFrom names it, for the broker's replay
// to index its aborts again; after a clean close nothing is emptied.
func TestCrashRecoveryEmptiesTxnIndexesOfSegmentsWithMarkers(t *testing.T) {
	for _, clean := range []bool{true, false} {
		t.Run(map[bool]string{true: "clean", false: "crash"}[clean], func(t *testing.T) {
			fsys, dir := vfs.NewMemFS(), "/d/t-0"
			l := mustOpen(t, fsys, dir, testConfig())
			appendOne(t, l)
			for _, control := range []bool{false, true} {
				_, b := txnBatch(0, 7, true, control)
				binary.BigEndian.PutUint32(b[offCRC:], crc32.Checksum(b[crcStart:], castagnoli))
				if _, _, err := l.Append(b); err != nil {
					t.Fatal(err)
				}
			}
			a := AbortedTxn{ProducerID: 7, FirstOffset: 1, LastOffset: 2, LastStableOffset: 3}
			if err := l.AppendAbortedTxn(a); err != nil {
				t.Fatal(err)
			}
			// Durable, but the active segment is recovered after a crash
			// all the same, and its index rebuilt.
			if err := l.Sync(); err != nil {
				t.Fatal(err)
			}
			if clean {
				if err := l.Close(); err != nil {
					t.Fatal(err)
				}
			} else {
				crash(l)
			}
			l = mustOpen(t, fsys, dir, testConfig())
			defer l.Close()
			want, wantFrom := []AbortedTxn{a}, int64(-1)
			if !clean {
				want, wantFrom = nil, 0
			}
			if got := l.AbortedTxns(0, 3); !slices.Equal(got, want) || l.Recovery().TxnIndexRebuildFrom != wantFrom {
				t.Fatalf("aborted %v, rebuild from %d; want %v, %d", got, l.Recovery().TxnIndexRebuildFrom, want, wantFrom)
			}
			if err := l.AppendAbortedTxn(a); err != nil { // the replay's re-indexing
				t.Fatal(err)
			}
			if got := l.AbortedTxns(0, 3); !slices.Equal(got, []AbortedTxn{a}) {
				t.Fatalf("after re-indexing: %v", got)
			}
		})
	}
}
