package storage

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

// FuzzRecover opens a log whose only segment holds arbitrary bytes, after
// an unclean shutdown, and checks:
//   - Open never panics and never fails: a single segment is the last one,
//     so any damage is a torn tail to cut;
//   - it never allocates more than the file holds (scanSegment reads in
//     bounded windows and only as far as the file goes);
//   - the valid prefix is kept byte for byte and the segment is cut right
//     after it;
//   - every batch in it reads back;
//   - re-opening gives the same end offset and truncates nothing more.
func FuzzRecover(f *testing.F) {
	var seed []byte
	for i := 0; i < 5; i++ {
		b := makeBatch(batchSpec{records: 1 + i, maxTs: int64(i * 10), valueSize: 7 * i})
		seed = append(seed, withOffset(b, int64(i*(i+1)/2))...)
	}
	f.Add(seed)
	f.Add(seed[:len(seed)-3])
	f.Add(append(bytes.Clone(seed), make([]byte, 64)...))
	f.Add([]byte{})
	f.Add(make([]byte, 61))
	f.Fuzz(func(t *testing.T, data []byte) {
		fsys := NewMemFS()
		if err := fsys.MkdirAll("/p-0", 0o755); err != nil {
			t.Fatal(err)
		}
		writeFile(t, fsys, segmentPath("/p-0", 0, logSuffix), data)
		l, err := Open(fsys, "/p-0", testConfig())
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		end := l.EndOffset()
		kept := readFile(t, fsys, segmentPath("/p-0", 0, logSuffix))
		if !bytes.HasPrefix(data, kept) {
			t.Fatal("recovery changed the bytes it kept")
		}
		res, err := scanSegment(memFileOf(t, data), int64(len(data)), 0, 256)
		if err != nil || res.valid != int64(len(kept)) || res.end != end {
			t.Fatalf("kept %d bytes up to offset %d; the valid prefix is %d bytes up to %d", len(kept), end, res.valid, res.end)
		}
		if end > 0 {
			got, err := l.Read(0, len(kept), end)
			if err != nil || !bytes.Equal(got, kept) {
				t.Fatalf("Read of the kept prefix: %d bytes, %v", len(got), err)
			}
		}
		crash(l)
		l, err = Open(fsys, "/p-0", testConfig())
		if err != nil {
			t.Fatalf("second Open: %v", err)
		}
		if l.EndOffset() != end || l.Recovery().TruncatedBytes != 0 {
			t.Fatalf("second Open: end %d (was %d), truncated %d", l.EndOffset(), end, l.Recovery().TruncatedBytes)
		}
		l.Close()
	})
}

// FuzzSwapRecovery opens a log whose cleaner swap was interrupted, the
// .log.swap file holding arbitrary bytes beside two ordinary segments, and
// checks:
//   - Open never panics;
//   - it either refuses with ErrCorrupt (a swap file is fsynced whole
//     before it is named .swap, so damage in it is not a torn tail) or
//     completes the swap, leaving no .swap file, with the swap's batches
//     in place of the segments it covers.
func FuzzSwapRecovery(f *testing.F) {
	b0 := withOffset(makeBatch(batchSpec{records: 3, maxTs: 10, valueSize: 5}), 0)
	b1 := withOffset(makeBatch(batchSpec{records: 2, maxTs: 20, valueSize: 5}), 3)
	f.Add(b0)
	f.Add(append(bytes.Clone(b0), b1...))
	f.Add(b0[:40])
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		fsys := NewMemFS()
		if err := fsys.MkdirAll("/p-0", 0o755); err != nil {
			t.Fatal(err)
		}
		writeFile(t, fsys, segmentPath("/p-0", 0, logSuffix), b0)
		writeFile(t, fsys, segmentPath("/p-0", 3, logSuffix), b1)
		writeFile(t, fsys, segmentPath("/p-0", 0, logSuffix)+swapSuffix, data)
		l, err := Open(fsys, "/p-0", testConfig())
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("Open: %v, want success or ErrCorrupt", err)
			}
			return
		}
		defer l.Close()
		entries, _ := fsys.ReadDir("/p-0")
		for _, e := range entries {
			if strings.HasSuffix(e.Name(), swapSuffix) {
				t.Fatalf("%s left after Open", e.Name())
			}
		}
		if l.EndOffset() > 0 {
			if _, err := l.Read(l.StartOffset(), 1<<20, l.EndOffset()); err != nil {
				t.Fatalf("Read after the swap: %v", err)
			}
		}
	})
}
