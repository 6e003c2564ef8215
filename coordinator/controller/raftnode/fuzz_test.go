package raftnode

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"testing"

	pb "go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"

	"github.com/gregor-broker/gregor/vfs"
)

// FuzzWALRecovery feeds arbitrary bytes to WAL recovery as a file's
// contents. Invariants: it never panics; it either refuses with ErrCorrupt
// or keeps a prefix of the input whose records decode, in which entries
// have consecutive indexes; opening the cut file again keeps all of it.
func FuzzWALRecovery(f *testing.F) {
	w := &wal{}
	w.appendRecord(recEntry, entry(1, 1, "a"))
	w.appendRecord(recEntry, entry(2, 1, "b"))
	w.appendRecord(recHardState, hardState(1, 1, 2))
	idx, term := uint64(1), uint64(1)
	w.appendRecord(recSnapshot, &pb.SnapshotMetadata{Index: &idx, Term: &term, ConfState: &pb.ConfState{}})
	w.appendRecord(recEntry, entry(1, 2, "c"))
	f.Add(bytes.Clone(w.buf))
	f.Add(w.buf[:len(w.buf)-3])
	f.Add([]byte{})
	f.Add([]byte{1, 0, 0, 0, 0, 0, 0, 0, 9})
	f.Fuzz(func(t *testing.T, data []byte) {
		rec, good, err := decodeWAL(data)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("error %v is not ErrCorrupt", err)
			}
			return
		}
		if good < 0 || good > int64(len(data)) {
			t.Fatalf("valid prefix %d of %d bytes", good, len(data))
		}
		for i := 1; i < len(rec.entries); i++ {
			if rec.entries[i].GetIndex() != rec.entries[i-1].GetIndex()+1 {
				t.Fatalf("entries not consecutive: %v", indexes(rec.entries))
			}
		}
		again, good2, err := decodeWAL(data[:good])
		if err != nil || good2 != good || len(again.entries) != len(rec.entries) {
			t.Fatalf("the recovered prefix does not recover to itself: %v %d %d", err, good2, good)
		}
		// Through a file too, where the tail is cut.
		fsys := vfs.NewMemFS()
		fsys.MkdirAll("/w", 0o755)
		writeWALFile(t, fsys, "/w", data)
		wl, _, err := openWAL(fsys, "/w")
		if err != nil {
			t.Fatalf("openWAL on bytes decodeWAL accepted: %v", err)
		}
		if wl.size != good {
			t.Fatalf("openWAL kept %d bytes, decodeWAL %d", wl.size, good)
		}
		wl.close()
	})
}

// FuzzSnapshotFile decodes arbitrary bytes as a snapshot file.
// Invariants: it never panics; damage is ErrCorrupt; what decodes encodes
// back to a file that decodes to the same snapshot.
func FuzzSnapshotFile(f *testing.F) {
	idx, term := uint64(9), uint64(2)
	b, _ := encodeSnapshotFile(&pb.Snapshot{Data: []byte("x"), Metadata: &pb.SnapshotMetadata{Index: &idx, Term: &term,
		ConfState: &pb.ConfState{Voters: []uint64{1, 2}}}})
	f.Add(b)
	f.Add(b[:snapHeaderSize])
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := decodeSnapshotFile(data)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("error %v is not ErrCorrupt", err)
			}
			return
		}
		again, err := encodeSnapshotFile(s)
		if err != nil {
			t.Fatal(err)
		}
		s2, err := decodeSnapshotFile(again)
		if err != nil || !proto.Equal(s, s2) {
			t.Fatalf("re-encoded snapshot differs: %v", err)
		}
	})
}

// FuzzFrame reads arbitrary bytes as a stream of transport frames.
// Invariants: it never panics; a frame longer than the limit is refused
// before its body is allocated; each decoded message re-encodes to a frame
// that decodes to the same message.
func FuzzFrame(f *testing.F) {
	to, from := uint64(2), uint64(1)
	fr, _ := appendFrame(nil, &pb.Message{Type: pb.MsgApp.Enum(), To: &to, From: &from, Entries: []*pb.Entry{entry(1, 1, "e")}})
	f.Add(fr)
	f.Add([]byte{0, 0, 0, 2, 8, 3})
	f.Add([]byte{0xff, 0xff, 0xff, 0xff})
	const limit = 1 << 16
	f.Fuzz(func(t *testing.T, data []byte) {
		r := bufio.NewReader(bytes.NewReader(data))
		var buf []byte
		for {
			m, b, err := readFrame(r, limit, buf)
			buf = b
			if cap(buf) > limit {
				t.Fatalf("allocated %d bytes, over the limit", cap(buf))
			}
			if err != nil {
				return
			}
			fr, err := appendFrame(nil, m)
			if err != nil {
				t.Fatal(err)
			}
			m2, _, err := readFrame(bytes.NewReader(fr), len(fr), nil)
			if err != nil || !proto.Equal(m, m2) {
				t.Fatalf("re-encoded frame differs: %v", err)
			}
		}
	})
}

// FuzzHello reads arbitrary bytes as a connection's hello frame.
// Invariants: it never panics; damage is errBadHello or a short read; a
// decoded hello re-encodes to the bytes it was read from.
func FuzzHello(f *testing.F) {
	f.Add(appendHello(nil, 2, "MkU3OEVBNTcwNTJENDM2Qk"))
	f.Add(appendHello(nil, 1, ""))
	v9 := appendHello(nil, 1, "x")
	v9[4+len(helloMagic)] = 9
	f.Add(v9)
	f.Add([]byte{0xff, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, data []byte) {
		r := bytes.NewReader(data)
		h, err := readHello(r)
		if err != nil {
			if !errors.Is(err, errBadHello) && !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) {
				t.Fatalf("error %v is neither errBadHello nor a short read", err)
			}
			return
		}
		read := data[:len(data)-r.Len()]
		if again := appendHello(nil, h.from, h.clusterID); !bytes.Equal(again, read) {
			t.Fatalf("hello %+v re-encodes to %x, read from %x", h, again, read)
		}
	})
}
