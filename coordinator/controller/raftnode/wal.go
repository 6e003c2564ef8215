package raftnode

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	pb "go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"

	"github.com/gregor-broker/gregor/vfs"
)

// The WAL's record types.
const (
	recEntry     byte = 1 // a raftpb.Entry
	recHardState byte = 2 // a raftpb.HardState
	recSnapshot  byte = 3 // a raftpb.SnapshotMetadata: the snapshot the file starts after
)

const (
	walHeaderSize = 8 // length uint32, CRC-32C uint32
	// maxWALRecord bounds one record; a length above it is damage.
	maxWALRecord = 64 << 20
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Sentinel errors of the package.
var (
	// ErrCorrupt: stored raft state is damaged where recovery must not
	// repair it (not at the tail of the WAL).
	ErrCorrupt = errors.New("raftnode: raft state on disk is corrupt")
	// ErrStopped: the node is closed.
	ErrStopped = errors.New("raftnode: node is stopped")
)

// wal is the write-ahead log of one raft node: one file,
// wal-<snapshot index>.log, of records that each carry a length, a CRC-32C
// and a type (see doc.go). A compaction writes a whole new file and
// renames it in place before the old one is removed, so exactly one file
// is current once recovery has run.
type wal struct {
	fs   vfs.FS
	dir  string
	name string
	f    vfs.File
	size int64
	buf  []byte
}

// recoveredWAL is what a WAL held at start.
type recoveredWAL struct {
	snapshot  *pb.SnapshotMetadata // nil when the WAL starts at the beginning
	hardState *pb.HardState        // nil when none was written
	entries   []*pb.Entry
}

func walName(snapIndex uint64) string { return fmt.Sprintf("wal-%020d.log", snapIndex) }

func parseWALName(name string) (uint64, bool) {
	if !strings.HasPrefix(name, "wal-") || !strings.HasSuffix(name, ".log") {
		return 0, false
	}
	v, err := strconv.ParseUint(strings.TrimSuffix(strings.TrimPrefix(name, "wal-"), ".log"), 10, 64)
	return v, err == nil
}

// openWAL opens or creates the WAL in dir and recovers it: a torn tail is
// cut; damage before the tail is ErrCorrupt.
func openWAL(fsys vfs.FS, dir string) (*wal, *recoveredWAL, error) {
	if err := fsys.MkdirAll(dir, 0o755); err != nil {
		return nil, nil, fmt.Errorf("raftnode: create %s: %w", dir, err)
	}
	des, err := fsys.ReadDir(dir)
	if err != nil {
		return nil, nil, fmt.Errorf("raftnode: list %s: %w", dir, err)
	}
	var names []string
	for _, de := range des {
		if strings.HasSuffix(de.Name(), vfs.TempSuffix) {
			if err := fsys.Remove(filepath.Join(dir, de.Name())); err != nil {
				return nil, nil, fmt.Errorf("raftnode: remove %s: %w", de.Name(), err)
			}
			continue
		}
		if _, ok := parseWALName(de.Name()); ok {
			names = append(names, de.Name())
		}
	}
	sort.Strings(names) // fixed-width numbers: sorted by snapshot index
	w := &wal{fs: fsys, dir: dir}
	if len(names) == 0 {
		w.name = walName(0)
		f, err := fsys.OpenFile(filepath.Join(dir, w.name), os.O_RDWR|os.O_CREATE, 0o644)
		if err != nil {
			return nil, nil, fmt.Errorf("raftnode: create WAL: %w", err)
		}
		w.f = f
		if err := fsys.SyncDir(dir); err != nil {
			f.Close()
			return nil, nil, fmt.Errorf("raftnode: sync %s: %w", dir, err)
		}
		return w, &recoveredWAL{}, nil
	}
	// A compaction that crashed before removing the older files left them;
	// the newest is complete (it was renamed into place whole).
	for _, old := range names[:len(names)-1] {
		if err := fsys.Remove(filepath.Join(dir, old)); err != nil {
			return nil, nil, fmt.Errorf("raftnode: remove old WAL %s: %w", old, err)
		}
	}
	w.name = names[len(names)-1]
	f, err := fsys.OpenFile(filepath.Join(dir, w.name), os.O_RDWR, 0o644)
	if err != nil {
		return nil, nil, fmt.Errorf("raftnode: open WAL: %w", err)
	}
	rec, good, err := readWAL(f)
	if err != nil {
		f.Close()
		return nil, nil, fmt.Errorf("raftnode: WAL %s: %w", w.name, err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	if st.Size() != good {
		if err := f.Truncate(good); err != nil {
			f.Close()
			return nil, nil, fmt.Errorf("raftnode: cut torn WAL tail: %w", err)
		}
		if err := f.Sync(); err != nil {
			f.Close()
			return nil, nil, fmt.Errorf("raftnode: sync WAL: %w", err)
		}
	}
	w.f, w.size = f, good
	return w, rec, nil
}

// readWAL scans a WAL file. It returns what the valid records hold and the
// length of the valid prefix. A record that runs past the end, or whose CRC
// fails when it is the last, is a torn write; damage with more bytes after
// it is ErrCorrupt. It never allocates more than the file's size.
func readWAL(f vfs.File) (*recoveredWAL, int64, error) {
	st, err := f.Stat()
	if err != nil {
		return nil, 0, err
	}
	size := st.Size()
	data := make([]byte, size)
	if _, err := f.ReadAt(data, 0); err != nil && !errors.Is(err, io.EOF) {
		return nil, 0, err
	}
	return decodeWAL(data)
}

// decodeWAL is readWAL on bytes in memory.
func decodeWAL(data []byte) (*recoveredWAL, int64, error) {
	rec := &recoveredWAL{}
	var off int64
	size := int64(len(data))
	for off < size {
		rest := data[off:]
		if len(rest) < walHeaderSize {
			break // torn header
		}
		n := int64(binary.LittleEndian.Uint32(rest[0:4]))
		sum := binary.LittleEndian.Uint32(rest[4:8])
		if n == 0 || n > maxWALRecord {
			if allZero(rest) {
				break // a tail of zeros: space the file system allocated, never written
			}
			if walHeaderSize+n > int64(len(rest)) {
				break // a torn length
			}
			return nil, 0, fmt.Errorf("%w: record at %d has length %d", ErrCorrupt, off, n)
		}
		if walHeaderSize+n > int64(len(rest)) {
			break // torn body
		}
		body := rest[walHeaderSize : walHeaderSize+n]
		last := off+walHeaderSize+n == size
		if crc32.Checksum(body, castagnoli) != sum {
			if last {
				break
			}
			return nil, 0, fmt.Errorf("%w: record at %d fails its CRC", ErrCorrupt, off)
		}
		if err := rec.add(body[0], body[1:]); err != nil {
			return nil, 0, fmt.Errorf("%w: record at %d: %v", ErrCorrupt, off, err)
		}
		off += walHeaderSize + n
	}
	return rec, off, nil
}

func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

// add applies one record to what recovery has found: an entry at index i
// replaces every entry at i or after, as raft requires.
func (r *recoveredWAL) add(typ byte, payload []byte) error {
	switch typ {
	case recEntry:
		e := &pb.Entry{}
		if err := proto.Unmarshal(payload, e); err != nil {
			return err
		}
		i := e.GetIndex()
		if len(r.entries) > 0 {
			first := r.entries[0].GetIndex()
			last := r.entries[len(r.entries)-1].GetIndex()
			switch {
			case i > last+1:
				return fmt.Errorf("entry %d after %d leaves a gap", i, last)
			case i < first:
				r.entries = r.entries[:0]
			case i <= last:
				r.entries = r.entries[:i-first]
			}
		}
		r.entries = append(r.entries, e)
	case recHardState:
		hs := &pb.HardState{}
		if err := proto.Unmarshal(payload, hs); err != nil {
			return err
		}
		r.hardState = hs
	case recSnapshot:
		m := &pb.SnapshotMetadata{}
		if err := proto.Unmarshal(payload, m); err != nil {
			return err
		}
		r.snapshot = m
	default:
		return fmt.Errorf("unknown record type %d", typ)
	}
	return nil
}

func (w *wal) appendRecord(typ byte, m proto.Message) error {
	start := len(w.buf)
	w.buf = append(w.buf, make([]byte, walHeaderSize+1)...)
	w.buf[start+walHeaderSize] = typ
	var err error
	w.buf, err = proto.MarshalOptions{}.MarshalAppend(w.buf, m)
	if err != nil {
		return fmt.Errorf("raftnode: encode WAL record: %w", err)
	}
	body := w.buf[start+walHeaderSize:]
	if len(body) > maxWALRecord {
		return fmt.Errorf("raftnode: WAL record of %d bytes is over the limit of %d", len(body), maxWALRecord)
	}
	binary.LittleEndian.PutUint32(w.buf[start:], uint32(len(body)))
	binary.LittleEndian.PutUint32(w.buf[start+4:], crc32.Checksum(body, castagnoli))
	return nil
}

// save appends entries, then the hard state, and fsyncs when sync is set.
// When it returns nil with sync set, both are durable.
func (w *wal) save(hs *pb.HardState, ents []*pb.Entry, sync bool) error {
	w.buf = w.buf[:0]
	for _, e := range ents {
		if err := w.appendRecord(recEntry, e); err != nil {
			return err
		}
	}
	if hs != nil {
		if err := w.appendRecord(recHardState, hs); err != nil {
			return err
		}
	}
	if len(w.buf) == 0 {
		return nil
	}
	if _, err := w.f.WriteAt(w.buf, w.size); err != nil {
		return fmt.Errorf("raftnode: write WAL: %w", err)
	}
	w.size += int64(len(w.buf))
	if sync {
		if err := w.f.Sync(); err != nil {
			return fmt.Errorf("raftnode: sync WAL: %w", err)
		}
	}
	return nil
}

// compact replaces the WAL with a new file that starts after the snapshot
// meta describes and holds hs and ents (the entries kept after the
// compaction point). The new file is put in place with vfs.WriteFileAtomic
// (written and synced under a temporary name, renamed, the directory
// synced) and opened for the appends that follow; only then is the old
// file removed.
func (w *wal) compact(meta *pb.SnapshotMetadata, hs *pb.HardState, ents []*pb.Entry) error {
	w.buf = w.buf[:0]
	if err := w.appendRecord(recSnapshot, meta); err != nil {
		return err
	}
	for _, e := range ents {
		if err := w.appendRecord(recEntry, e); err != nil {
			return err
		}
	}
	if hs != nil {
		if err := w.appendRecord(recHardState, hs); err != nil {
			return err
		}
	}
	name := walName(meta.GetIndex())
	if name == w.name {
		return nil // already compacted at this index
	}
	path := filepath.Join(w.dir, name)
	if err := vfs.WriteFileAtomic(w.fs, path, w.buf, 0o644); err != nil {
		return fmt.Errorf("raftnode: write WAL: %w", err)
	}
	f, err := w.fs.OpenFile(path, os.O_RDWR, 0o644)
	if err != nil {
		return fmt.Errorf("raftnode: open WAL: %w", err)
	}
	old, oldName := w.f, w.name
	w.f, w.name, w.size = f, name, int64(len(w.buf))
	old.Close()
	if err := w.fs.Remove(filepath.Join(w.dir, oldName)); err != nil {
		return fmt.Errorf("raftnode: remove old WAL: %w", err)
	}
	return nil
}

func (w *wal) close() error { return w.f.Close() }
