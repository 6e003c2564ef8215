package storage

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/gregor-broker/gregor/vfs"
)

// batchSpec describes a test batch: records records whose timestamps rise
// by one to maxTs, each with a value of valueSize bytes.
type batchSpec struct {
	records   int
	maxTs     int64
	valueSize int
}

// makeBatch builds a real Kafka v2 record batch (uncompressed, CreateTime)
// with base offset 0 and a correct CRC-32C.
func makeBatch(s batchSpec) []byte {
	if s.records < 1 {
		s.records = 1
	}
	baseTs := s.maxTs - int64(s.records-1)
	b := make([]byte, batchHeaderSize, batchHeaderSize+s.records*(s.valueSize+16))
	for i := 0; i < s.records; i++ {
		var rec []byte
		rec = append(rec, 0) // attributes
		rec = binary.AppendVarint(rec, int64(i))
		rec = binary.AppendVarint(rec, int64(i))
		rec = binary.AppendVarint(rec, -1) // null key
		rec = binary.AppendVarint(rec, int64(s.valueSize))
		for j := 0; j < s.valueSize; j++ {
			rec = append(rec, byte('a'+(i+j)%26))
		}
		rec = binary.AppendVarint(rec, 0) // no headers
		b = binary.AppendVarint(b, int64(len(rec)))
		b = append(b, rec...)
	}
	be := binary.BigEndian
	be.PutUint64(b[0:], 0)
	be.PutUint32(b[8:], uint32(len(b)-batchLengthOverhead))
	be.PutUint32(b[12:], 0) // partition leader epoch
	b[16] = 2
	be.PutUint16(b[21:], 0) // attributes
	be.PutUint32(b[23:], uint32(s.records-1))
	be.PutUint64(b[27:], uint64(baseTs))
	be.PutUint64(b[35:], uint64(s.maxTs))
	be.PutUint64(b[43:], ^uint64(0)) // producer id -1
	be.PutUint16(b[51:], ^uint16(0))
	be.PutUint32(b[53:], ^uint32(0))
	be.PutUint32(b[57:], uint32(s.records))
	be.PutUint32(b[17:], crc32.Checksum(b[21:], crc32.MakeTable(crc32.Castagnoli)))
	return b
}

// withOffset returns a copy of batch with its base offset set.
func withOffset(batch []byte, off int64) []byte {
	c := bytes.Clone(batch)
	binary.BigEndian.PutUint64(c, uint64(off))
	return c
}

// testEnv is one FS to run a behaviour test against.
type testEnv struct {
	name string
	fs   vfs.FS
	mem  *vfs.MemFS // nil for OSFS
	dir  string
}

// forEachFS runs body against the real file system and against MemFS.
func forEachFS(t *testing.T, body func(t *testing.T, env testEnv)) {
	t.Helper()
	t.Run("os", func(t *testing.T) {
		body(t, testEnv{name: "os", fs: vfs.OSFS{}, dir: filepath.Join(t.TempDir(), "topic-0")})
	})
	t.Run("mem", func(t *testing.T) {
		m := vfs.NewMemFS()
		body(t, testEnv{name: "mem", fs: m, mem: m, dir: "/data/topic-0"})
	})
}

// quietLogger drops recovery reports so test output stays readable.
var quietLogger = slog.New(slog.NewTextHandler(io.Discard, nil))

// testConfig is a small configuration that rolls and indexes often.
func testConfig() Config {
	return Config{SegmentBytes: 4096, IndexIntervalBytes: 256, SegmentIndexBytes: 1 << 10, Logger: quietLogger}
}

func mustOpen(t testing.TB, fsys vfs.FS, dir string, cfg Config) *Log {
	t.Helper()
	l, err := Open(fsys, dir, cfg)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	return l
}

// model is what a test expects the log to hold.
type model struct {
	batches []modelBatch // in offset order
	start   int64
	end     int64
}

type modelBatch struct {
	first, last int64
	maxTs       int64
	data        []byte // with the assigned base offset
}

func (m *model) append(t testing.TB, l *Log, specs ...batchSpec) {
	t.Helper()
	var unit []byte
	var parts [][]byte
	for _, s := range specs {
		b := makeBatch(s)
		parts = append(parts, b)
		unit = append(unit, b...)
	}
	first, last, err := l.Append(unit)
	if err != nil {
		t.Fatalf("Append: %v", err)
	}
	if first != m.end {
		t.Fatalf("Append first = %d, want %d", first, m.end)
	}
	off := first
	for i, b := range parts {
		n := int64(specs[i].records)
		m.batches = append(m.batches, modelBatch{first: off, last: off + n - 1, maxTs: specs[i].maxTs, data: withOffset(b, off)})
		off += n
	}
	if last != off-1 {
		t.Fatalf("Append last = %d, want %d", last, off-1)
	}
	m.end = off
}

// truncate applies Log.Truncate's rule to the model.
func (m *model) truncate(offset int64) {
	if offset >= m.end {
		return
	}
	for i, b := range m.batches {
		if b.last >= offset {
			m.batches = m.batches[:i]
			m.end = b.first
			m.start = min(m.start, m.end)
			return
		}
	}
}

// visible returns the batches a reader can get: those ending at or after
// the start offset.
func (m *model) visible() []modelBatch {
	for i, b := range m.batches {
		if b.last >= m.start {
			return m.batches[i:]
		}
	}
	return nil
}

// check verifies l against the model: offsets, and every visible batch read
// alone and all of them read together.
func (m *model) check(t testing.TB, l *Log) {
	t.Helper()
	if got := l.EndOffset(); got != m.end {
		t.Fatalf("EndOffset = %d, want %d", got, m.end)
	}
	if got := l.StartOffset(); got != m.start {
		t.Fatalf("StartOffset = %d, want %d", got, m.start)
	}
	var all []byte
	for _, b := range m.visible() {
		off := max(b.first, m.start)
		got, err := l.Read(off, 1, m.end)
		if err != nil {
			t.Fatalf("Read(%d): %v", off, err)
		}
		if !bytes.Equal(got, b.data) {
			t.Fatalf("Read(%d) = %d bytes (base %d), want batch %d..%d", off, len(got), baseOf(got), b.first, b.last)
		}
		all = append(all, b.data...)
	}
	if m.start < m.end {
		got, err := l.Read(m.start, len(all), m.end)
		if err != nil {
			t.Fatalf("Read all: %v", err)
		}
		if !bytes.Equal(got, all) {
			t.Fatalf("Read all = %d bytes, want %d", len(got), len(all))
		}
		if got := sliceBytes(t, l, m.start, len(all), m.end); !bytes.Equal(got, all) {
			t.Fatalf("ReadSlice all = %d bytes, want %d", len(got), len(all))
		}
	}
}

func baseOf(b []byte) int64 {
	if len(b) < 8 {
		return -1
	}
	return int64(binary.BigEndian.Uint64(b))
}

// crash abandons l as a killed process would: no sync, no checkpoint, no
// clean-shutdown marker. The files stay as written.
func crash(l *Log) {
	l.syncMu.Lock()
	defer l.syncMu.Unlock()
	l.appendMu.Lock()
	defer l.appendMu.Unlock()
	l.mu.Lock()
	defer l.mu.Unlock()
	l.closed = true
	for _, s := range l.segments {
		s.closeFiles()
	}
}

// segmentFiles lists the base offsets of the .log files in dir.
func segmentFiles(t testing.TB, fsys vfs.FS, dir string) []int64 {
	t.Helper()
	entries, err := fsys.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var bases []int64
	for _, e := range entries {
		if base, suffix, ok := parseSegmentName(e.Name()); ok && suffix == logSuffix {
			bases = append(bases, base)
		}
	}
	return bases
}

// readFile and writeFile go through the FS so tests can damage files on
// either implementation.
func readFile(t testing.TB, fsys vfs.FS, path string) []byte {
	t.Helper()
	f, err := fsys.OpenFile(path, os.O_RDONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	b := make([]byte, fi.Size())
	if _, err := f.ReadAt(b, 0); err != nil && err != io.EOF {
		t.Fatal(err)
	}
	return b
}

func writeFile(t testing.TB, fsys vfs.FS, path string, b []byte) {
	t.Helper()
	f, err := fsys.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt(b, 0); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

func fileSize(t testing.TB, fsys vfs.FS, path string) int64 {
	t.Helper()
	fi, err := fsys.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}

// memFileOf returns a read-only File holding b.
func memFileOf(t testing.TB, b []byte) vfs.File {
	t.Helper()
	m := vfs.NewMemFS()
	writeFile(t, m, "/f", b)
	f, err := m.OpenFile("/f", os.O_RDONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// fillIndex makes x read the entries b from the heap, as on MemFS.
func fillIndex(x *indexFile, b []byte) {
	x.n, x.data = len(b)/x.entrySize, b
	x.ready.Store(true)
}
