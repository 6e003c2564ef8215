package storage

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math/rand"
	"os"
	"path/filepath"
	"testing"

	"github.com/gregor-broker/gregor/vfs"
)

// lastSegmentPath returns the .log path of the active segment.
func lastSegmentPath(t testing.TB, env testEnv) string {
	bases := segmentFiles(t, env.fs, env.dir)
	return segmentPath(env.dir, bases[len(bases)-1], logSuffix)
}

func TestRecoveryTruncatesTornTailAtEveryByte(t *testing.T) {
	forEachFS(t, func(t *testing.T, env testEnv) {
		for _, clean := range []bool{false, true} {
			l := mustOpen(t, env.fs, env.dir, testConfig())
			var m model
			fillLog(t, l, &m, 30)
			m.append(t, l, batchSpec{records: 2, maxTs: 99999, valueSize: 4})
			if clean {
				if err := l.Close(); err != nil {
					t.Fatal(err)
				}
			} else {
				crash(l)
			}
			path := lastSegmentPath(t, env)
			full := readFile(t, env.fs, path)
			lastLen := len(m.batches[len(m.batches)-1].data)
			want := m
			want.batches = m.batches[:len(m.batches)-1]
			want.end = m.batches[len(m.batches)-1].first
			for cut := len(full) - lastLen; cut < len(full); cut++ {
				writeFile(t, env.fs, path, full[:cut])
				if clean {
					writeFile(t, env.fs, filepath.Join(env.dir, cleanShutdownName), nil)
				}
				l := mustOpen(t, env.fs, env.dir, testConfig())
				if got := l.Recovery().TruncatedBytes; got != int64(cut-(len(full)-lastLen)) {
					t.Fatalf("clean=%v cut at %d: TruncatedBytes = %d", clean, cut, got)
				}
				want.check(t, l)
				crash(l)
				// Recovery is idempotent: a second open finds the same end.
				l = mustOpen(t, env.fs, env.dir, testConfig())
				if l.EndOffset() != want.end || l.Recovery().TruncatedBytes != 0 {
					t.Fatalf("reopen: end %d, truncated %d", l.EndOffset(), l.Recovery().TruncatedBytes)
				}
				crash(l)
			}
			// Restore the full file and the log for the next round.
			writeFile(t, env.fs, path, full)
			l = mustOpen(t, env.fs, env.dir, testConfig())
			m.check(t, l)
			if err := l.Delete(); err != nil {
				t.Fatal(err)
			}
		}
	})
}

func TestRecoveryTruncatesZerosAndGarbageAfterLastBatch(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	garbage := make([]byte, 3000)
	rng.Read(garbage)
	// A plausible header with a bad CRC.
	fake := makeBatch(batchSpec{records: 2, maxTs: 1})
	fake[len(fake)-1] ^= 0xff
	for _, tc := range []struct {
		name string
		tail []byte
	}{
		{"zeros", make([]byte, 4096)},
		{"few zeros", make([]byte, 7)},
		{"random", garbage},
		{"bad crc batch", fake},
	} {
		t.Run(tc.name, func(t *testing.T) {
			forEachFS(t, func(t *testing.T, env testEnv) {
				l := mustOpen(t, env.fs, env.dir, testConfig())
				var m model
				fillLog(t, l, &m, 25)
				crash(l)
				path := lastSegmentPath(t, env)
				full := readFile(t, env.fs, path)
				tail := tc.tail
				if baseOf(tail) == 0 && len(tail) > batchHeaderSize && tail[offMagic] == 2 {
					tail = withOffset(tail, m.end) // only its CRC is wrong
				}
				// The inode grew but the data never arrived.
				writeFile(t, env.fs, path, append(bytes.Clone(full), tail...))
				l = mustOpen(t, env.fs, env.dir, testConfig())
				defer l.Close()
				if got := l.Recovery().TruncatedBytes; got != int64(len(tc.tail)) {
					t.Fatalf("TruncatedBytes = %d, want %d", got, len(tc.tail))
				}
				if got := fileSize(t, env.fs, path); got != int64(len(full)) {
					t.Fatalf("segment is %d bytes after recovery, want %d", got, len(full))
				}
				m.check(t, l)
				fillLog(t, l, &m, 5)
				m.check(t, l)
			})
		})
	}
}

func TestRecoveryTruncatesGarbageAppendedAfterCleanClose(t *testing.T) {
	forEachFS(t, func(t *testing.T, env testEnv) {
		l := mustOpen(t, env.fs, env.dir, testConfig())
		var m model
		fillLog(t, l, &m, 25)
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		path := lastSegmentPath(t, env)
		writeFile(t, env.fs, path, append(readFile(t, env.fs, path), make([]byte, 100)...))
		l = mustOpen(t, env.fs, env.dir, testConfig())
		defer l.Close()
		if l.Recovery().TruncatedBytes != 100 {
			t.Fatalf("Recovery = %+v", l.Recovery())
		}
		m.check(t, l)
	})
}

// TestRecoveryRebuildsMissingOrCorruptIndex damages the index files of a
// middle segment and of the last one after a clean shutdown: Kafka's
// sanity check and more catch each, and the segment's indexes are rebuilt
// byte for byte.
func TestRecoveryRebuildsMissingOrCorruptIndex(t *testing.T) {
	damage := []struct {
		name   string
		suffix string
		mutate func([]byte) []byte // nil deletes the file
	}{
		{"offset index deleted", indexSuffix, nil},
		{"time index deleted", timeIndexSuffix, nil},
		{"offset index emptied", indexSuffix, func([]byte) []byte { return nil }},
		{"offset index partial entry", indexSuffix, func(b []byte) []byte { return b[:len(b)-3] }},
		{"offset index zero-filled tail", indexSuffix, func(b []byte) []byte { return append(b, make([]byte, 80)...) }},
		{"offset index entry shifted", indexSuffix, func(b []byte) []byte {
			b = bytes.Clone(b)
			b[len(b)-1]++ // last entry's position off by one
			return b
		}},
		{"offset index points past the log", indexSuffix, func(b []byte) []byte {
			b = bytes.Clone(b)
			binary.BigEndian.PutUint32(b[len(b)-4:], 1<<30)
			return b
		}},
		{"offset index entries out of order", indexSuffix, func(b []byte) []byte {
			b = bytes.Clone(b)
			e0, e1 := bytes.Clone(b[:offsetEntrySize]), bytes.Clone(b[offsetEntrySize:2*offsetEntrySize])
			copy(b, e1)
			copy(b[offsetEntrySize:], e0)
			return b
		}},
		{"offset index preallocated and never trimmed", indexSuffix, func(b []byte) []byte {
			return append(bytes.Clone(b), make([]byte, testConfig().SegmentIndexBytes-len(b))...)
		}},
		{"time index preallocated and never trimmed", timeIndexSuffix, func(b []byte) []byte {
			return append(bytes.Clone(b), make([]byte, testConfig().SegmentIndexBytes/timeEntrySize*timeEntrySize-len(b))...)
		}},
		{"time index entries out of order", timeIndexSuffix, func(b []byte) []byte {
			b = bytes.Clone(b)
			e0, e1 := bytes.Clone(b[:timeEntrySize]), bytes.Clone(b[timeEntrySize:2*timeEntrySize])
			copy(b, e1)
			copy(b[timeEntrySize:], e0)
			return b
		}},
		{"time index points past the segment", timeIndexSuffix, func(b []byte) []byte {
			b = bytes.Clone(b)
			binary.BigEndian.PutUint32(b[len(b)-4:], 1<<30)
			return b
		}},
		{"time index garbage", timeIndexSuffix, func(b []byte) []byte { return bytes.Repeat([]byte{0xab}, len(b)) }},
		{"time index missing its final entry", timeIndexSuffix, func(b []byte) []byte { return b[:len(b)-timeEntrySize] }},
	}
	for _, d := range damage {
		t.Run(d.name, func(t *testing.T) {
			forEachFS(t, func(t *testing.T, env testEnv) {
				l := mustOpen(t, env.fs, env.dir, testConfig())
				var m model
				fillLog(t, l, &m, 60)
				// Give the active segment a few index entries too.
				for i := 0; l.active().offsets.entries() < 3 || l.active().times.entries() < 2; i++ {
					m.append(t, l, batchSpec{records: 2, maxTs: int64(5000 + i), valueSize: 90})
				}
				if err := l.Close(); err != nil {
					t.Fatal(err)
				}
				bases := segmentFiles(t, env.fs, env.dir)
				for _, base := range []int64{bases[1], bases[len(bases)-1]} {
					path := segmentPath(env.dir, base, d.suffix)
					orig := readFile(t, env.fs, path)
					if len(orig) < 2*timeEntrySize {
						t.Fatalf("segment %d: %s has too few entries to damage; fill more", base, d.suffix)
					}
					if d.mutate == nil {
						if err := env.fs.Remove(path); err != nil {
							t.Fatal(err)
						}
					} else {
						writeFile(t, env.fs, path, d.mutate(orig))
					}
					l := mustOpen(t, env.fs, env.dir, testConfig())
					if l.Recovery().SegmentsScanned != 1 {
						t.Fatalf("segment %d: Recovery = %+v, want one segment rebuilt", base, l.Recovery())
					}
					m.check(t, l)
					if err := l.Close(); err != nil {
						t.Fatal(err)
					}
					if got := readFile(t, env.fs, path); !bytes.Equal(got, orig) {
						t.Fatalf("segment %d: rebuilt %s differs from the original", base, d.suffix)
					}
				}
			})
		})
	}
}

// batchDamage is hand-made damage to a .log file: mutate returns the
// damaged bytes and the position of the first damaged byte.
type batchDamage struct {
	name   string
	mutate func(b []byte) ([]byte, int64)
}

// batchStartsIn returns the positions of the batches of a valid .log file.
func batchStartsIn(b []byte) []int64 {
	var starts []int64
	for pos := int64(0); pos < int64(len(b)); {
		h, _ := parseHeader(b[pos:])
		starts = append(starts, pos)
		pos += h.size
	}
	return starts
}

var batchDamages = []batchDamage{
	{"flipped record bit", func(b []byte) ([]byte, int64) {
		// A bit inside the records of a batch past the middle, which only
		// the CRC covers.
		starts := batchStartsIn(b)
		pos := starts[len(starts)/2] + batchHeaderSize + 2
		b[pos] ^= 1
		return b, pos
	}},
	{"flipped length bit", func(b []byte) ([]byte, int64) { b[offBatchLength+3] ^= 4; return b, offBatchLength + 3 }},
	{"truncated batch", func(b []byte) ([]byte, int64) { return b[:len(b)-10], int64(len(b) - 10) }},
	{"zeroed middle", func(b []byte) ([]byte, int64) { clear(b[len(b)/3 : len(b)/2]); return b, int64(len(b) / 3) }},
}

// TestRecoveryCutsUnflushedSegmentAtFirstInvalidBatch damages a segment
// written since the last flush, in the middle of the log and in the last
// segment: as Kafka's LogLoader.recoverLog, recovery keeps the batches
// before the first invalid one, cuts the segment there and deletes every
// later segment.
func TestRecoveryCutsUnflushedSegmentAtFirstInvalidBatch(t *testing.T) {
	for _, d := range batchDamages {
		for _, where := range []string{"middle", "last"} {
			t.Run(d.name+"/"+where, func(t *testing.T) {
				forEachFS(t, func(t *testing.T, env testEnv) {
					l := mustOpen(t, env.fs, env.dir, testConfig())
					var m model
					fillLog(t, l, &m, 60)
					crash(l) // unclean and never synced: every segment is unflushed
					bases := segmentFiles(t, env.fs, env.dir)
					k := 1
					if where == "last" {
						k = len(bases) - 1
					}
					path := segmentPath(env.dir, bases[k], logSuffix)
					orig := readFile(t, env.fs, path)
					damaged, at := d.mutate(bytes.Clone(orig))
					writeFile(t, env.fs, path, damaged)
					// The cut falls at the start of the batch holding the damage.
					cutPos := int64(0)
					for _, p := range batchStartsIn(orig) {
						if p <= at {
							cutPos = p
						}
					}
					wantEnd := bases[k]
					if cutPos > 0 {
						h, _ := parseHeader(orig[cutPos:])
						wantEnd = h.baseOffset
					}

					l, err := Open(env.fs, env.dir, testConfig())
					if err != nil {
						t.Fatalf("Open: %v", err)
					}
					defer l.Close()
					r := l.Recovery()
					if r.TruncatedBytes != int64(len(damaged))-cutPos || r.SegmentsDeleted != len(bases)-1-k {
						t.Fatalf("Recovery = %+v, want %d bytes cut and %d segments deleted", r, int64(len(damaged))-cutPos, len(bases)-1-k)
					}
					if got := segmentFiles(t, env.fs, env.dir); len(got) != k+1 {
						t.Fatalf("segments %v after recovery, want the first %d of %v", got, k+1, bases)
					}
					for _, base := range bases[k+1:] {
						for _, suffix := range []string{logSuffix, indexSuffix, timeIndexSuffix} {
							if _, err := env.fs.Stat(segmentPath(env.dir, base, suffix)); !errors.Is(err, os.ErrNotExist) {
								t.Fatalf("segment %d's %s survived: %v", base, suffix, err)
							}
						}
					}
					m.truncate(wantEnd)
					m.check(t, l)
					fillLog(t, l, &m, 10)
					m.check(t, l)
				})
			})
		}
	}
}

// TestRecoveryRefusesDamagedFlushedSegment damages a segment below the
// recovery point (fsynced, so the damage is not a lost write) that is not
// the last: the cheap checks see it, and Open refuses with ErrCorrupt and
// changes nothing on disk, rather than cut the log. (Kafka would not look:
// it sanity-checks nothing below the recovery point.)
func TestRecoveryRefusesDamagedFlushedSegment(t *testing.T) {
	for _, d := range []batchDamage{batchDamages[2]} {
		for _, shutdown := range []string{"clean", "synced crash"} {
			t.Run(d.name+"/"+shutdown, func(t *testing.T) {
				forEachFS(t, func(t *testing.T, env testEnv) {
					l := mustOpen(t, env.fs, env.dir, testConfig())
					var m model
					fillLog(t, l, &m, 60)
					if shutdown == "clean" {
						if err := l.Close(); err != nil {
							t.Fatal(err)
						}
					} else {
						if err := l.Sync(); err != nil {
							t.Fatal(err)
						}
						fillLog(t, l, &m, 1)
						crash(l)
					}
					bases := segmentFiles(t, env.fs, env.dir)
					path := segmentPath(env.dir, bases[1], logSuffix)
					damaged, _ := d.mutate(readFile(t, env.fs, path))
					writeFile(t, env.fs, path, damaged)
					_, err := Open(env.fs, env.dir, testConfig())
					var ce *CorruptError
					if !errors.Is(err, ErrCorrupt) || !errors.As(err, &ce) || ce.Path != path {
						t.Fatalf("Open = %v, want a CorruptError for %s", err, path)
					}
					if got := segmentFiles(t, env.fs, env.dir); len(got) != len(bases) {
						t.Fatalf("segments %v after a refused open, want %v", got, bases)
					}
				})
			})
		}
	}
}

func TestRecoveryRefusesMissingMiddleSegment(t *testing.T) {
	forEachFS(t, func(t *testing.T, env testEnv) {
		l := mustOpen(t, env.fs, env.dir, testConfig())
		var m model
		fillLog(t, l, &m, 60)
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		bases := segmentFiles(t, env.fs, env.dir)
		for _, suffix := range []string{logSuffix, indexSuffix, timeIndexSuffix} {
			if err := env.fs.Remove(segmentPath(env.dir, bases[2], suffix)); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := Open(env.fs, env.dir, testConfig()); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("Open with a hole in the log = %v, want ErrCorrupt", err)
		}
	})
}

func TestRecoveryRemovesLeftovers(t *testing.T) {
	forEachFS(t, func(t *testing.T, env testEnv) {
		l := mustOpen(t, env.fs, env.dir, testConfig())
		var m model
		fillLog(t, l, &m, 10)
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		orphan := segmentPath(env.dir, 999999, indexSuffix)
		writeFile(t, env.fs, orphan, make([]byte, 16))
		tmp := filepath.Join(env.dir, checkpointTempName)
		writeFile(t, env.fs, tmp, []byte("junk"))
		other := filepath.Join(env.dir, "leader-epoch-checkpoint")
		writeFile(t, env.fs, other, []byte("0\n0\n"))
		l = mustOpen(t, env.fs, env.dir, testConfig())
		defer l.Close()
		for _, p := range []string{orphan, tmp, filepath.Join(env.dir, cleanShutdownName)} {
			if _, err := env.fs.Stat(p); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("%s still exists (%v)", p, err)
			}
		}
		if _, err := env.fs.Stat(other); err != nil {
			t.Errorf("unrelated file removed: %v", err)
		}
		m.check(t, l)
	})
}

func TestRecoveryRefusesUnreadableCheckpoint(t *testing.T) {
	fsys := vfs.NewMemFS()
	l := mustOpen(t, fsys, "/p-0", testConfig())
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	writeFile(t, fsys, "/p-0/"+checkpointName, []byte("0\nlog-start-offset x\n"))
	if _, err := Open(fsys, "/p-0", testConfig()); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("Open = %v, want ErrCorrupt", err)
	}
}

// TestCrashLosesOnlyUnsyncedData simulates power loss with MemFS: what was
// appended before a Sync survives, what came after is lost, and the log
// opens.
func TestCrashLosesOnlyUnsyncedData(t *testing.T) {
	mem := vfs.NewMemFS()
	l := mustOpen(t, mem, "/p-0", testConfig())
	var m model
	fillLog(t, l, &m, 40)
	if err := l.Sync(); err != nil {
		t.Fatal(err)
	}
	synced := m
	synced.batches = append([]modelBatch(nil), m.batches...)
	// At most one roll after the Sync, so no unsynced segment is followed
	// by another (that would be refused; see Open).
	m.append(t, l, batchSpec{records: 2, maxTs: 5, valueSize: 20})
	m.append(t, l, batchSpec{records: 3, maxTs: 6, valueSize: 20})
	lost := mem.CrashClone()
	crash(l)

	l = mustOpen(t, lost, "/p-0", testConfig())
	defer l.Close()
	synced.check(t, l)
	if r := l.Recovery(); r.CleanShutdown || r.SegmentsScanned == 0 {
		t.Fatalf("Recovery = %+v", r)
	}
	synced.append(t, l, batchSpec{records: 1, maxTs: 7})
	synced.check(t, l)
}

// TestRollSyncsTheSegmentItLeaves simulates power loss after several rolls
// and no Sync: every segment that was rolled away from was synced first,
// so the log opens with all of them and loses at most the active segment's
// unsynced tail (without that sync an earlier segment could lose its tail
// while a later one kept data, and Open would refuse the log). The
// directory is synced before the power loss, as a file system may commit
// the new names on its own, so that only file contents are at stake.
func TestRollSyncsTheSegmentItLeaves(t *testing.T) {
	mem := vfs.NewMemFS()
	l := mustOpen(t, mem, "/p-0", testConfig())
	var m model
	fillLog(t, l, &m, 120)
	activeBase := l.active().base
	if activeBase == 0 {
		t.Fatal("the log never rolled; the test needs several segments")
	}
	if err := mem.SyncDir("/p-0"); err != nil {
		t.Fatal(err)
	}
	lost := mem.CrashClone()
	crash(l)

	l, err := Open(lost, "/p-0", testConfig())
	if err != nil {
		t.Fatalf("Open after power loss: %v", err)
	}
	defer l.Close()
	if got := l.EndOffset(); got < activeBase {
		t.Fatalf("end offset %d after power loss, but everything below %d was in rolled segments", got, activeBase)
	}
}
