package storage

import (
	"bytes"
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
