package storage

import (
	"bytes"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gregor-broker/gregor/vfs"
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
		fsys := vfs.NewMemFS()
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

// FuzzIndexLookup builds an offset index and a time index from arbitrary
// bytes (each pair of bytes is the gaps to the next entry), writes them to a
// real file and looks them up through its memory mapping. It checks that
// every lookup equals a linear scan of the entries, for targets before,
// between, on and after every entry.
func FuzzIndexLookup(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte{1, 1})
	f.Add([]byte{0, 0, 3, 9, 255, 255, 1, 2, 7, 7})
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, gaps []byte) {
		const base = 1000
		var idx, tim []byte
		var offs, poss, tss []int64
		off, pos, ts := int64(base), int64(0), int64(-1)
		for i := 0; i+1 < len(gaps) && i < 2*4096; i += 2 {
			off += int64(gaps[i]) + 1
			pos += int64(gaps[i+1]) + 1
			ts += int64(gaps[i+1]) + 1
			idx = appendOffsetEntry(idx, base, off, pos)
			tim = appendTimeEntry(tim, base, ts, off)
			offs, poss, tss = append(offs, off), append(poss, pos), append(tss, ts)
		}
		oi, ti := newOffsetIndex(base), newTimeIndex(base)
		for _, x := range []struct {
			x    *indexFile
			b    []byte
			name string
		}{{&oi.indexFile, idx, "fuzz.index"}, {&ti.indexFile, tim, "fuzz.timeindex"}} {
			f, err := vfs.OSFS{}.OpenFile(filepath.Join(dir, x.name), os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			x.x.f = f
			if err := x.x.rebuild(x.b); err != nil {
				t.Fatal(err)
			}
			if err := x.x.ensure(); err != nil {
				t.Fatal(err)
			}
			defer x.x.release()
		}
		for i := -1; i <= len(offs); i++ {
			var targets []int64
			if i < 0 {
				targets = []int64{base - 1, base}
			} else if i < len(offs) {
				targets = []int64{offs[i] - 1, offs[i], offs[i] + 1}
			} else {
				targets = []int64{off + 1, math.MaxInt64}
			}
			for _, target := range targets {
				wantOff, wantPos := int64(base), int64(0)
				for j := range offs {
					if offs[j] <= target {
						wantOff, wantPos = offs[j], poss[j]
					}
				}
				if gotOff, gotPos := oi.lookup(target); gotOff != wantOff || gotPos != wantPos {
					t.Fatalf("offset lookup(%d) = (%d, %d), want (%d, %d)", target, gotOff, gotPos, wantOff, wantPos)
				}
				// Timestamps rise with offsets here, so the same targets
				// probe the time index.
				wantTs, wantTOff := int64(noTimestamp), int64(base)
				for j := range tss {
					if tss[j] <= target-base {
						wantTs, wantTOff = tss[j], offs[j]
					}
				}
				if gotTs, gotOff := ti.lookup(target - base); gotTs != wantTs || gotOff != wantTOff {
					t.Fatalf("time lookup(%d) = (%d, %d), want (%d, %d)", target-base, gotTs, gotOff, wantTs, wantTOff)
				}
			}
		}
	})
}

// FuzzOpenWithDamagedIndexes opens a valid log whose second segment's index
// files are replaced by arbitrary bytes, after a clean shutdown (so only
// the cheap checks in load stand between the bytes and the lookups), and
// checks that:
//   - Open never panics and never fails: index files are checked, and
//     rebuilt from the log when they fail the checks;
//   - reads and timestamp lookups never panic, whatever entries passed;
//   - when the files were rebuilt, or the bytes are the real ones, every
//     batch and every timestamp lookup answers exactly. (Entries in the
//     middle of an index that is otherwise consistent are trusted, as
//     Kafka trusts its indexes after a clean shutdown; a forged one could
//     misdirect a lookup, so exact answers are not asserted then.)
func FuzzOpenWithDamagedIndexes(f *testing.F) {
	fsys := vfs.NewMemFS()
	l := mustOpen(f, fsys, "/p-0", testConfig())
	var m model
	fillLog(f, l, &m, 40)
	if err := l.Close(); err != nil {
		f.Fatal(err)
	}
	bases := segmentFiles(f, fsys, "/p-0")
	idxPath, timPath := segmentPath("/p-0", bases[1], indexSuffix), segmentPath("/p-0", bases[1], timeIndexSuffix)
	idx, tim := readFile(f, fsys, idxPath), readFile(f, fsys, timPath)
	f.Add(idx, tim)
	f.Add(append(bytes.Clone(idx), make([]byte, 16)...), tim)
	f.Add(idx[:len(idx)-1], make([]byte, 24))
	f.Add([]byte{}, []byte{})
	f.Fuzz(func(t *testing.T, idxBytes, timBytes []byte) {
		fs := vfs.NewMemFS()
		if err := fs.MkdirAll("/p-0", 0o755); err != nil {
			t.Fatal(err)
		}
		for _, base := range bases {
			for _, suffix := range []string{logSuffix, indexSuffix, timeIndexSuffix} {
				p := segmentPath("/p-0", base, suffix)
				writeFile(t, fs, p, readFile(t, fsys, p))
			}
		}
		for _, name := range []string{checkpointName, cleanShutdownName} {
			writeFile(t, fs, filepath.Join("/p-0", name), readFile(t, fsys, filepath.Join("/p-0", name)))
		}
		writeFile(t, fs, idxPath, idxBytes)
		writeFile(t, fs, timPath, timBytes)
		l, err := Open(fs, "/p-0", testConfig())
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		defer l.Close()
		if l.Recovery().SegmentsScanned > 0 || bytes.Equal(idxBytes, idx) && bytes.Equal(timBytes, tim) {
			m.check(t, l)
			var probes []int64
			for ts := int64(990); ts < 1050; ts++ {
				probes = append(probes, ts)
			}
			checkTimestamps(t, l, &m, probes)
			return
		}
		for off := l.StartOffset(); off < l.EndOffset(); off++ {
			l.Read(off, 1, l.EndOffset())
		}
		for ts := int64(990); ts < 1050; ts++ {
			l.BatchAtTimestamp(ts)
		}
		l.MaxTimestampBatch()
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
		fsys := vfs.NewMemFS()
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

// FuzzHighWatermarkCheckpoint feeds arbitrary bytes to the
// high-watermark checkpoint decoder and to Open, and checks:
//   - neither panics, and Open never fails because of the file: a damaged
//     one is ignored (HighWatermarkCheckpoint ok=false);
//   - a decoded value is non-negative and formats back to the input (with
//     its final newline), so the decoder accepts only what the writer
//     writes;
//   - Open's value is the decoded one clamped to the (empty) log.
func FuzzHighWatermarkCheckpoint(f *testing.F) {
	f.Add(formatHighWatermark(0))
	f.Add(formatHighWatermark(1234))
	f.Add(formatHighWatermark(math.MaxInt64))
	f.Add([]byte("0\nhigh-watermark 12"))
	f.Add([]byte("0\nhigh-watermark -1\n"))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		hw, err := parseHighWatermark(data)
		if err == nil {
			if hw < 0 {
				t.Fatalf("decoded a negative high watermark %d", hw)
			}
			want := formatHighWatermark(hw)
			if !bytes.Equal(data, want) && !bytes.Equal(append(bytes.Clone(data), '\n'), want) {
				t.Fatalf("%q decodes to %d, which formats as %q", data, hw, want)
			}
		}
		fsys := vfs.NewMemFS()
		if err := fsys.MkdirAll("/p-0", 0o755); err != nil {
			t.Fatal(err)
		}
		writeFile(t, fsys, "/p-0/"+highWatermarkName, data)
		l, oerr := Open(fsys, "/p-0", testConfig())
		if oerr != nil {
			t.Fatalf("Open: %v", oerr)
		}
		defer l.Close()
		got, ok := l.HighWatermarkCheckpoint()
		if ok != (err == nil && len(data) <= maxHighWatermarkFileBytes) || ok && got != 0 {
			t.Fatalf("HighWatermarkCheckpoint = %d, %v; decoder said %d, %v", got, ok, hw, err)
		}
	})
}
