package raftnode

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"

	pb "go.etcd.io/raft/v3/raftpb"

	"github.com/gregor-broker/gregor/vfs"
)

func entry(index, term uint64, data string) *pb.Entry {
	return &pb.Entry{Index: &index, Term: &term, Type: pb.EntryNormal.Enum(), Data: []byte(data)}
}

func hardState(term, vote, commit uint64) *pb.HardState {
	return &pb.HardState{Term: &term, Vote: &vote, Commit: &commit}
}

func indexes(ents []*pb.Entry) []uint64 {
	var v []uint64
	for _, e := range ents {
		v = append(v, e.GetIndex())
	}
	return v
}

func walBytes(t *testing.T, fsys vfs.FS, dir string) []byte {
	t.Helper()
	w, _, err := openWAL(fsys, dir)
	if err != nil {
		t.Fatal(err)
	}
	defer w.close()
	b := make([]byte, w.size)
	if _, err := w.f.ReadAt(b, 0); err != nil {
		t.Fatal(err)
	}
	return b
}

func writeWALFile(t *testing.T, fsys vfs.FS, dir string, b []byte) {
	t.Helper()
	f, err := fsys.OpenFile(filepath.Join(dir, walName(0)), os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt(b, 0); err != nil {
		t.Fatal(err)
	}
	f.Close()
}

func TestWALRecoversEntriesAndHardState(t *testing.T) {
	fsys, dir := vfs.NewMemFS(), "/m"
	w, rec, err := openWAL(fsys, dir)
	if err != nil || len(rec.entries) != 0 || rec.hardState != nil {
		t.Fatalf("fresh WAL: %v %+v", err, rec)
	}
	if err := w.save(hardState(1, 1, 0), []*pb.Entry{entry(1, 1, "a"), entry(2, 1, "b"), entry(3, 1, "c")}, true); err != nil {
		t.Fatal(err)
	}
	// A new leader overwrites the uncommitted suffix from index 2.
	if err := w.save(hardState(2, 2, 1), []*pb.Entry{entry(2, 2, "B")}, true); err != nil {
		t.Fatal(err)
	}
	w.close()
	_, rec, err = openWAL(fsys, dir)
	if err != nil {
		t.Fatal(err)
	}
	if got := indexes(rec.entries); len(got) != 2 || got[0] != 1 || got[1] != 2 {
		t.Fatalf("entries %v, want [1 2]", got)
	}
	if string(rec.entries[1].GetData()) != "B" || rec.hardState.GetTerm() != 2 || rec.hardState.GetCommit() != 1 {
		t.Fatalf("recovered %v %v", rec.entries[1], rec.hardState)
	}
}

func TestWALRecoveryCutsTornTail(t *testing.T) {
	fsys, dir := vfs.NewMemFS(), "/m"
	w, _, _ := openWAL(fsys, dir)
	if err := w.save(hardState(1, 1, 2), []*pb.Entry{entry(1, 1, "a"), entry(2, 1, "b")}, true); err != nil {
		t.Fatal(err)
	}
	good := w.size
	if err := w.save(nil, []*pb.Entry{entry(3, 1, "ccccccccc")}, true); err != nil {
		t.Fatal(err)
	}
	w.close()
	full := walBytes(t, fsys, dir)
	cases := map[string][]byte{
		"short header":     full[:good+3],
		"short body":       full[:len(full)-2],
		"bad crc on last":  append(bytes.Clone(full[:len(full)-1]), full[len(full)-1]^0xff),
		"zeros after":      append(bytes.Clone(full[:good]), make([]byte, 64)...),
		"huge length last": append(bytes.Clone(full[:good]), 0xff, 0xff, 0xff, 0x7f, 1, 2, 3, 4),
	}
	for name, b := range cases {
		t.Run(name, func(t *testing.T) {
			writeWALFile(t, fsys, dir, b)
			w, rec, err := openWAL(fsys, dir)
			if err != nil {
				t.Fatalf("openWAL: %v", err)
			}
			defer w.close()
			if got := indexes(rec.entries); len(got) != 2 {
				t.Fatalf("entries %v, want [1 2]", got)
			}
			if w.size != good {
				t.Fatalf("WAL size %d after recovery, want %d", w.size, good)
			}
			st, _ := w.f.Stat()
			if st.Size() != good {
				t.Fatalf("file not cut: %d bytes, want %d", st.Size(), good)
			}
		})
	}
}

func TestWALRecoveryRefusesDamageBeforeTheTail(t *testing.T) {
	fsys, dir := vfs.NewMemFS(), "/m"
	w, _, _ := openWAL(fsys, dir)
	if err := w.save(nil, []*pb.Entry{entry(1, 1, "aaaa")}, true); err != nil {
		t.Fatal(err)
	}
	first := w.size
	if err := w.save(hardState(1, 1, 1), []*pb.Entry{entry(2, 1, "b")}, true); err != nil {
		t.Fatal(err)
	}
	w.close()
	full := walBytes(t, fsys, dir)
	flip := bytes.Clone(full)
	flip[first-1] ^= 0x01 // inside the first record's payload
	gap := bytes.Clone(full[:first])
	w2 := &wal{}
	w2.appendRecord(recEntry, entry(5, 1, "gap"))
	gap = append(gap, w2.buf...)
	gap = append(gap, full[first:]...)
	for name, b := range map[string][]byte{"crc in the middle": flip, "gap in indexes": gap} {
		t.Run(name, func(t *testing.T) {
			writeWALFile(t, fsys, dir, b)
			_, _, err := openWAL(fsys, dir)
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("openWAL = %v, want ErrCorrupt", err)
			}
		})
	}
}

func TestWALCompactionReplacesTheFile(t *testing.T) {
	fsys, dir := vfs.NewMemFS(), "/m"
	w, _, _ := openWAL(fsys, dir)
	var ents []*pb.Entry
	for i := uint64(1); i <= 10; i++ {
		ents = append(ents, entry(i, 1, "x"))
	}
	if err := w.save(hardState(1, 1, 10), ents, true); err != nil {
		t.Fatal(err)
	}
	idx, term := uint64(8), uint64(1)
	meta := &pb.SnapshotMetadata{Index: &idx, Term: &term, ConfState: &pb.ConfState{Voters: []uint64{1}}}
	if err := w.compact(meta, hardState(1, 1, 10), ents[6:]); err != nil {
		t.Fatal(err)
	}
	if err := w.save(nil, []*pb.Entry{entry(11, 1, "y")}, true); err != nil {
		t.Fatal(err)
	}
	w.close()
	des, _ := fsys.ReadDir(dir)
	if len(des) != 1 || des[0].Name() != walName(8) {
		t.Fatalf("files after compaction: %v", des)
	}
	_, rec, err := openWAL(fsys, dir)
	if err != nil {
		t.Fatal(err)
	}
	if rec.snapshot.GetIndex() != 8 || len(rec.entries) != 5 || rec.entries[4].GetIndex() != 11 {
		t.Fatalf("recovered snapshot %v entries %v", rec.snapshot, indexes(rec.entries))
	}
}

func TestSnapshotFileRoundTripAndDamage(t *testing.T) {
	idx, term := uint64(42), uint64(3)
	s := &pb.Snapshot{Data: []byte("state"), Metadata: &pb.SnapshotMetadata{Index: &idx, Term: &term,
		ConfState: &pb.ConfState{Voters: []uint64{1, 2, 3}}}}
	b, err := encodeSnapshotFile(s)
	if err != nil {
		t.Fatal(err)
	}
	got, err := decodeSnapshotFile(b)
	if err != nil || got.GetMetadata().GetIndex() != 42 || string(got.GetData()) != "state" {
		t.Fatalf("round trip: %v %v", got, err)
	}
	damaged := map[string][]byte{
		"empty":     nil,
		"magic":     append([]byte("XXXXXXXX"), b[8:]...),
		"truncated": b[:len(b)-1],
		"flipped":   append(bytes.Clone(b[:len(b)-1]), b[len(b)-1]^1),
		"longer":    append(bytes.Clone(b), 0),
	}
	for name, d := range damaged {
		if _, err := decodeSnapshotFile(d); !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: err = %v, want ErrCorrupt", name, err)
		}
	}
	// Saving keeps the newest two.
	fsys := vfs.NewMemFS()
	fsys.MkdirAll("/s", 0o755)
	for i := uint64(1); i <= 4; i++ {
		idx := i * 10
		s.Metadata.Index = &idx
		if err := saveSnapshot(fsys, "/s", s); err != nil {
			t.Fatal(err)
		}
	}
	names, _ := snapshotNames(fsys, "/s")
	if len(names) != 2 || names[1] != snapName(40) {
		t.Fatalf("kept %v", names)
	}
	loaded, err := loadSnapshot(fsys, "/s")
	if err != nil || loaded.GetMetadata().GetIndex() != 40 {
		t.Fatalf("load: %v %v", loaded, err)
	}
}

func TestWALWriteFailureStopsTheNodeWithoutPanicking(t *testing.T) {
	fsys := vfs.NewFaultFS(vfs.NewMemFS(), nil)
	c := &testCluster{t: t, voters: map[int32]string{}, dirs: map[int32]string{1: "/m"}, nodes: map[int32]*Node{}, sms: map[int32]*listSM{}}
	c.voters[1] = "127.0.0.1:0"
	c.tune = func(cfg *Config) { cfg.FS = fsys }
	c.start(1, nil)
	defer c.nodes[1].Close()
	c.propose("ok")
	fsys.Arm(vfs.FailAfter(0, vfs.ErrInjected, vfs.OpWrite, vfs.OpSync))
	c.nodes[1].Propose(t.Context(), []byte("fails"))
	select {
	case <-c.nodes[1].Done():
	case <-t.Context().Done():
	}
	waitFor(t, "the node to stop on the write failure", func() bool { return c.nodes[1].Err() != nil })
}

func TestParseVoters(t *testing.T) {
	good := map[string]map[int32]string{
		"1@localhost:9093":                  {1: "localhost:9093"},
		"0@a:1,1@b:2, 2@[::1]:3":            {0: "a:1", 1: "b:2", 2: "[::1]:3"},
		"3@controller-3.example.com:19093,": {3: "controller-3.example.com:19093"},
	}
	for in, want := range good {
		got, err := ParseVoters(in)
		if err != nil || len(got) != len(want) {
			t.Errorf("ParseVoters(%q) = %v, %v", in, got, err)
			continue
		}
		for id, addr := range want {
			if got[id] != addr {
				t.Errorf("ParseVoters(%q)[%d] = %q, want %q", in, id, got[id], addr)
			}
		}
	}
	for _, in := range []string{"", "1", "1@", "1@host", "x@h:1", "-1@h:1", "1@h:1,1@h:2", "1@:9093", "1@h:0", "1@h:99999", "4294967296@h:1"} {
		if _, err := ParseVoters(in); err == nil {
			t.Errorf("ParseVoters(%q) accepted", in)
		}
	}
}

// TestTornWALWriteIsCutAtRestart: a write torn half way stops the node;
// started again on the same files, it cuts the torn record and comes back
// with everything it had acknowledged, and goes on.
func TestTornWALWriteIsCutAtRestart(t *testing.T) {
	mem := vfs.NewMemFS()
	fsys := vfs.NewFaultFS(mem, nil)
	c := &testCluster{t: t, voters: map[int32]string{1: "127.0.0.1:0"}, dirs: map[int32]string{1: "/m"},
		nodes: map[int32]*Node{}, sms: map[int32]*listSM{}, tune: func(cfg *Config) { cfg.FS = fsys }}
	c.start(1, nil)
	want := items("kept", 5)
	for _, it := range want {
		c.propose(it)
	}
	fsys.Arm(vfs.TornWriteAfter(0, 11))
	c.nodes[1].Propose(t.Context(), []byte("torn"))
	waitFor(t, "the node to stop on the torn write", func() bool { return c.nodes[1].Err() != nil })
	c.stop(1)
	fsys.Arm(nil)
	c.start(1, nil)
	c.propose("after")
	got := c.sms[1].list()
	if !slices.Equal(got, append(want, "after")) {
		t.Fatalf("after restart: %v", got)
	}
}
