package storage

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"path/filepath"
	"testing"
	"time"

	"github.com/gregor-broker/gregor/vfs"
)

// shapeOf is the BatchShape a leader's validation learns of b.
func shapeOf(t testing.TB, b []byte) BatchShape {
	t.Helper()
	h, reason := parseHeader(b)
	if reason != "" {
		t.Fatal(reason)
	}
	return BatchShape{LastOffsetDelta: h.lastOffsetDelta, MaxTimestamp: h.maxTimestamp}
}

// dirContents maps each file of dir to its bytes.
func dirContents(t testing.TB, fsys vfs.FS, dir string) map[string][]byte {
	t.Helper()
	entries, err := fsys.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{}
	for _, e := range entries {
		files[e.Name()] = readFile(t, fsys, filepath.Join(dir, e.Name()))
	}
	return files
}

func sameFiles(t testing.TB, when string, got, want map[string][]byte) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d files, want %d", when, len(got), len(want))
	}
	for name, w := range want {
		if g, ok := got[name]; !ok || !bytes.Equal(g, w) {
			t.Fatalf("%s: %s differs (present %v, %d bytes, want %d)", when, name, ok, len(g), len(w))
		}
	}
}

// AppendValidated, given the shape of each batch, leaves the log exactly as
// Append leaves it: offsets, segments and rolls, offset and time indexes,
// leader epochs and the state reads use, before and after a close.
func TestAppendValidatedStoresWhatAppendStores(t *testing.T) {
	now := time.UnixMilli(1_000_000)
	cfg := testConfig()
	cfg.SegmentMs, cfg.Now = 5_000, func() time.Time { return now }
	fsys := vfs.NewMemFS()
	byAppend := mustOpen(t, fsys, "/append", cfg)
	byShape := mustOpen(t, fsys, "/shape", cfg)
	epoch := int32(-1)
	for i := range 300 {
		ts := int64(1_000_000 + 37*i - 400*(i%5)) // rising, with steps back
		if i%11 == 0 {
			ts = noTimestamp
		}
		b := makeBatch(batchSpec{records: 1 + i%7, maxTs: ts, valueSize: 10 + (i*53)%300})
		if i%40 == 3 {
			epoch++
		}
		binary.BigEndian.PutUint32(b[offPartitionLeaderEpoch:], uint32(epoch)) // outside the CRC
		c := bytes.Clone(b)
		f1, l1, err1 := byAppend.Append(b)
		f2, l2, err2 := byShape.AppendValidated(c, shapeOf(t, c))
		if err1 != nil || err2 != nil || f1 != f2 || l1 != l2 {
			t.Fatalf("batch %d: Append (%d, %d, %v), AppendValidated (%d, %d, %v)", i, f1, l1, err1, f2, l2, err2)
		}
		if !bytes.Equal(b, c) {
			t.Fatalf("batch %d: the batches were stamped differently", i)
		}
	}
	if byAppend.SegmentCount() < 3 {
		t.Fatalf("only %d segments: the test means to roll", byAppend.SegmentCount())
	}
	for _, ts := range []int64{0, 1_000_500, 1_004_000, 1_100_000} {
		b1, ok1, err1 := byAppend.BatchAtTimestamp(ts)
		b2, ok2, err2 := byShape.BatchAtTimestamp(ts)
		if err1 != nil || err2 != nil || ok1 != ok2 || !bytes.Equal(b1, b2) {
			t.Fatalf("BatchAtTimestamp(%d) differs: %v %v / %v %v", ts, ok1, err1, ok2, err2)
		}
	}
	m1, _, err1 := byAppend.MaxTimestampBatch()
	m2, _, err2 := byShape.MaxTimestampBatch()
	if err1 != nil || err2 != nil || !bytes.Equal(m1, m2) {
		t.Fatalf("MaxTimestampBatch differs: %v / %v", err1, err2)
	}
	if byAppend.EndOffset() != byShape.EndOffset() || byAppend.Size() != byShape.Size() {
		t.Fatalf("end %d size %d, want end %d size %d", byShape.EndOffset(), byShape.Size(), byAppend.EndOffset(), byAppend.Size())
	}
	sameFiles(t, "open", dirContents(t, fsys, "/shape"), dirContents(t, fsys, "/append"))
	if err := errors.Join(byAppend.Close(), byShape.Close()); err != nil {
		t.Fatal(err)
	}
	sameFiles(t, "closed", dirContents(t, fsys, "/shape"), dirContents(t, fsys, "/append"))
}

func TestAppendValidatedRefusesWhatItCannotStore(t *testing.T) {
	l := mustOpen(t, vfs.NewMemFS(), "/log", testConfig())
	defer l.Close()
	b := makeBatch(batchSpec{records: 3, maxTs: 10})
	for _, tc := range []struct {
		name  string
		batch []byte
		shape BatchShape
	}{
		{"empty", nil, BatchShape{}},
		{"shorter than a header", b[:batchHeaderSize-1], shapeOf(t, b)},
		{"negative last offset delta", b, BatchShape{LastOffsetDelta: -1, MaxTimestamp: 10}},
	} {
		if _, _, err := l.AppendValidated(bytes.Clone(tc.batch), tc.shape); !errors.Is(err, ErrInvalidBatch) {
			t.Errorf("%s: %v, want ErrInvalidBatch", tc.name, err)
		}
	}
	if err := l.TruncateFullyAndStartAt(math.MaxInt64 - 2); err != nil {
		t.Fatal(err)
	}
	if _, _, err := l.AppendValidated(bytes.Clone(b), shapeOf(t, b)); !errors.Is(err, ErrInvalidBatch) {
		t.Errorf("offsets past MaxInt64: %v, want ErrInvalidBatch", err)
	}
	if _, _, err := l.Append(bytes.Clone(b)); !errors.Is(err, ErrInvalidBatch) {
		t.Errorf("Append, offsets past MaxInt64: %v, want ErrInvalidBatch", err)
	}
	if l.EndOffset() != math.MaxInt64-2 || l.Size() != 0 {
		t.Fatalf("a refused append changed the log: end %d, size %d", l.EndOffset(), l.Size())
	}
}

// FuzzAppendValidated appends the batches data describes (three bytes a
// batch: records, timestamp step, value size; a high bit of the first bumps
// the leader epoch) through Append and through AppendValidated, with an
// index interval and segment size taken from the first two bytes, and
// wants the same offsets and files.
func FuzzAppendValidated(f *testing.F) {
	f.Add([]byte{3, 40, 1, 200, 5, 0x85, 1, 90, 2, 250, 7, 3, 0, 9})
	f.Add([]byte{0, 0, 0x80, 0x80, 0x80, 1, 1, 1})
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) < 2 || len(data) > 600 {
			return
		}
		cfg := testConfig()
		cfg.IndexIntervalBytes = int(data[0]) * 8
		cfg.SegmentBytes = 512 + int64(data[1])*64
		cfg.SegmentMs, cfg.Now = 3_000, func() time.Time { return time.UnixMilli(50_000) }
		fsys := vfs.NewMemFS()
		byAppend := mustOpen(t, fsys, "/append", cfg)
		byShape := mustOpen(t, fsys, "/shape", cfg)
		ts, epoch := int64(40_000), int32(0)
		for p := 2; p+3 <= len(data); p += 3 {
			if data[p]&0x80 != 0 {
				epoch++
			}
			ts += int64(int8(data[p+1])) * 20
			maxTs := ts
			if data[p+1] == 0 {
				maxTs = noTimestamp
			}
			b := makeBatch(batchSpec{records: 1 + int(data[p]&0x0f), maxTs: maxTs, valueSize: int(data[p+2])})
			binary.BigEndian.PutUint32(b[offPartitionLeaderEpoch:], uint32(epoch))
			c := bytes.Clone(b)
			f1, l1, err1 := byAppend.Append(b)
			f2, l2, err2 := byShape.AppendValidated(c, shapeOf(t, c))
			if err1 != nil || err2 != nil || f1 != f2 || l1 != l2 || !bytes.Equal(b, c) {
				t.Fatalf("batch at %d: Append (%d, %d, %v), AppendValidated (%d, %d, %v)", p, f1, l1, err1, f2, l2, err2)
			}
		}
		sameFiles(t, "open", dirContents(t, fsys, "/shape"), dirContents(t, fsys, "/append"))
		if err := errors.Join(byAppend.Close(), byShape.Close()); err != nil {
			t.Fatal(err)
		}
		sameFiles(t, "closed", dirContents(t, fsys, "/shape"), dirContents(t, fsys, "/append"))
	})
}
