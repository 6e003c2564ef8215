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

// snapMagic opens a snapshot file; its last byte is the format version:
// 2, whose snapshot data starts with the learners' addresses
// (encodeSnapshotData). Version 1 files, written before learners existed,
// hold the state machine's bytes alone and are read as having no learners.
var (
	snapMagic   = []byte("GRGRSNP\x02")
	snapMagicV1 = []byte("GRGRSNP\x01")
)

const (
	snapHeaderSize = 8 + 4 + 8 // magic, CRC-32C of the payload, payload length
	// maxSnapshotBytes bounds a snapshot file; a larger one is damage.
	maxSnapshotBytes = 1 << 30
	// snapshotsKept is how many snapshot files stay after a new one is saved.
	snapshotsKept = 2
)

func snapName(index uint64) string { return fmt.Sprintf("snap-%020d.snap", index) }

func parseSnapName(name string) (uint64, bool) {
	if !strings.HasPrefix(name, "snap-") || !strings.HasSuffix(name, ".snap") {
		return 0, false
	}
	v, err := strconv.ParseUint(strings.TrimSuffix(strings.TrimPrefix(name, "snap-"), ".snap"), 10, 64)
	return v, err == nil
}

// encodeSnapshotFile is the bytes of a snapshot file: the magic, the CRC-32C
// and length of the payload, and the payload, a marshalled raftpb.Snapshot
// (the state machine's bytes and the raft metadata: index, term, voters).
func encodeSnapshotFile(s *pb.Snapshot) ([]byte, error) {
	payload, err := proto.Marshal(s)
	if err != nil {
		return nil, fmt.Errorf("raftnode: encode snapshot: %w", err)
	}
	b := make([]byte, snapHeaderSize, snapHeaderSize+len(payload))
	copy(b, snapMagic)
	binary.LittleEndian.PutUint32(b[8:], crc32.Checksum(payload, castagnoli))
	binary.LittleEndian.PutUint64(b[12:], uint64(len(payload)))
	return append(b, payload...), nil
}

// decodeSnapshotFile decodes encodeSnapshotFile's bytes. Any damage is
// ErrCorrupt; it never panics.
func decodeSnapshotFile(b []byte) (*pb.Snapshot, error) {
	if len(b) < snapHeaderSize || (string(b[:8]) != string(snapMagic) && string(b[:8]) != string(snapMagicV1)) {
		return nil, fmt.Errorf("%w: not a snapshot file", ErrCorrupt)
	}
	n := binary.LittleEndian.Uint64(b[12:])
	if n != uint64(len(b)-snapHeaderSize) {
		return nil, fmt.Errorf("%w: snapshot length %d, file holds %d", ErrCorrupt, n, len(b)-snapHeaderSize)
	}
	payload := b[snapHeaderSize:]
	if crc32.Checksum(payload, castagnoli) != binary.LittleEndian.Uint32(b[8:]) {
		return nil, fmt.Errorf("%w: snapshot fails its CRC", ErrCorrupt)
	}
	s := &pb.Snapshot{}
	if err := proto.Unmarshal(payload, s); err != nil {
		return nil, fmt.Errorf("%w: snapshot: %v", ErrCorrupt, err)
	}
	if s.GetMetadata().GetIndex() == 0 {
		return nil, fmt.Errorf("%w: snapshot at index 0", ErrCorrupt)
	}
	if string(b[:8]) == string(snapMagicV1) {
		s.Data = encodeSnapshotData(nil, s.GetData())
	}
	return s, nil
}

// saveSnapshot writes s to dir atomically (vfs.WriteFileAtomic: temporary
// file, fsync, rename, fsync of the directory) and removes all but the
// newest snapshotsKept.
func saveSnapshot(fsys vfs.FS, dir string, s *pb.Snapshot) error {
	b, err := encodeSnapshotFile(s)
	if err != nil {
		return err
	}
	name := filepath.Join(dir, snapName(s.GetMetadata().GetIndex()))
	if err := vfs.WriteFileAtomic(fsys, name, b, 0o644); err != nil {
		return fmt.Errorf("raftnode: write snapshot: %w", err)
	}
	names, err := snapshotNames(fsys, dir)
	if err != nil {
		return err
	}
	for len(names) > snapshotsKept {
		if err := fsys.Remove(filepath.Join(dir, names[0])); err != nil {
			return fmt.Errorf("raftnode: remove old snapshot: %w", err)
		}
		names = names[1:]
	}
	return nil
}

// snapshotNames lists dir's snapshot files, oldest first.
func snapshotNames(fsys vfs.FS, dir string) ([]string, error) {
	des, err := fsys.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("raftnode: list %s: %w", dir, err)
	}
	var names []string
	for _, de := range des {
		if _, ok := parseSnapName(de.Name()); ok {
			names = append(names, de.Name())
		}
	}
	sort.Strings(names)
	return names, nil
}

// loadSnapshot returns the newest snapshot in dir that decodes, or nil when
// there is none. A damaged newer file is skipped for an older one (the WAL
// check that follows refuses the pair if the WAL no longer reaches back to
// it).
func loadSnapshot(fsys vfs.FS, dir string) (*pb.Snapshot, error) {
	names, err := snapshotNames(fsys, dir)
	if err != nil {
		return nil, err
	}
	var firstErr error
	for i := len(names) - 1; i >= 0; i-- {
		s, err := readSnapshotFile(fsys, filepath.Join(dir, names[i]))
		if err == nil {
			return s, nil
		}
		if firstErr == nil {
			firstErr = err
		}
	}
	if firstErr != nil {
		return nil, fmt.Errorf("raftnode: no readable snapshot: %w", firstErr)
	}
	return nil, nil
}

func readSnapshotFile(fsys vfs.FS, name string) (*pb.Snapshot, error) {
	f, err := fsys.OpenFile(name, os.O_RDONLY, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if st.Size() > maxSnapshotBytes {
		return nil, fmt.Errorf("%w: snapshot %s of %d bytes is over the limit", ErrCorrupt, name, st.Size())
	}
	b := make([]byte, st.Size())
	if _, err := f.ReadAt(b, 0); err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	s, err := decodeSnapshotFile(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Base(name), err)
	}
	return s, nil
}
