package metadata

import (
	"bytes"
	"encoding/hex"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// goldenRecords is one record of each kind; their encoding is on disk in
// every WAL and snapshot, so it must never change by accident.
func goldenRecords() []Record {
	id := UUID{0x6b, 0x1e, 0x4a, 0x2f, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}
	return []Record{
		&ClusterRecord{ClusterID: "MkU3OEVBNTcwNTJENDM2Qk"},
		&RegisterBrokerRecord{BrokerID: 1, IncarnationID: UUID{9: 9}, BrokerEpoch: 12, Rack: "rack-a", Fenced: true,
			Endpoints: []Endpoint{{Name: "PLAINTEXT", Host: "broker1", Port: 9092, SecurityProtocol: 0}}},
		&UnfenceBrokerRecord{ID: 1, Epoch: 12},
		&FenceBrokerRecord{ID: 1, Epoch: 12},
		&TopicRecord{Name: "orders", TopicID: id},
		&PartitionRecord{PartitionID: 0, TopicID: id, Replicas: []int32{1, 2, 3}, ISR: []int32{1, 2}, Leader: 1, LeaderEpoch: 4, PartitionEpoch: 7},
		&PartitionChangeRecord{PartitionID: 0, TopicID: id, ISR: []int32{2}, Leader: 2},
		&PartitionChangeRecord{PartitionID: 0, TopicID: id, Leader: NoLeaderChange},
		&ConfigRecord{ResourceType: ResourceTopic, ResourceName: "orders", Name: "retention.ms", Value: str("86400000")},
		&ConfigRecord{ResourceType: ResourceBroker, ResourceName: "", Name: "log.retention.hours"},
		&RemoveTopicRecord{TopicID: id},
		// Version 1: a reassignment of [1 2 3] to [3 4 5], and its end.
		&PartitionRecord{PartitionID: 1, TopicID: id, Replicas: []int32{3, 4, 5, 1, 2}, ISR: []int32{1, 2, 3}, Leader: 1,
			LeaderEpoch: 2, PartitionEpoch: 3, Adding: []int32{4, 5}, Removing: []int32{1, 2}},
		&PartitionChangeRecord{PartitionID: 1, TopicID: id, Replicas: []int32{3, 4, 5, 1, 2}, Leader: NoLeaderChange,
			Adding: []int32{4, 5}, Removing: []int32{1, 2}},
		&PartitionChangeRecord{PartitionID: 1, TopicID: id, Replicas: []int32{3, 4, 5}, ISR: []int32{3, 4, 5}, Leader: 3,
			Adding: []int32{}, Removing: []int32{}},
		&UnregisterBrokerRecord{ID: 1, Epoch: 12},
		&FeatureLevelRecord{Name: "metadata.version", FeatureLevel: 12},
		&FeatureLevelRecord{Name: "group.version", FeatureLevel: 0},
	}
}

// TestVersion0PartitionRecordsStillDecode: the partition records of the
// release before reassignments (version 0, the first bytes of
// testdata/records.hex) decode to records without a reassignment.
func TestVersion0PartitionRecordsStillDecode(t *testing.T) {
	id := UUID{0x6b, 0x1e, 0x4a, 0x2f, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}
	v0 := []Record{
		&PartitionRecord{PartitionID: 0, TopicID: id, Replicas: []int32{1, 2, 3}, ISR: []int32{1, 2}, Leader: 1, LeaderEpoch: 4, PartitionEpoch: 7},
		&PartitionChangeRecord{PartitionID: 0, TopicID: id, ISR: []int32{2}, Leader: 2},
	}
	raw := AppendRecords(nil, v0)
	// The version byte of each record follows its length and type.
	if raw[2] != byte(TypePartition) || raw[3] != 0 {
		t.Fatalf("partition record not written at version 0: % x", raw[:4])
	}
	recs, err := DecodeRecords(raw)
	if err != nil {
		t.Fatal(err)
	}
	im := NewImage()
	im.Apply(1, &TopicRecord{Name: "orders", TopicID: id})
	for _, r := range recs {
		if err := im.Apply(2, r); err != nil {
			t.Fatal(err)
		}
	}
	p := im.Topics[id].Partitions[0]
	if p.Reassigning() || p.Adding != nil || p.Removing != nil || p.Leader != 2 {
		t.Fatalf("partition from version 0 records: %+v", p)
	}
	// A version this code does not know is refused.
	bad := slices.Clone(raw)
	bad[3] = 2
	if _, err := DecodeRecords(bad); !errors.Is(err, ErrMalformed) {
		t.Fatalf("version 2: %v", err)
	}
}

// TestRecordEncodingGolden compares the encoding of one record of each
// kind with testdata/records.hex (go test -update rewrites it) and decodes
// the golden bytes back.
func TestRecordEncodingGolden(t *testing.T) {
	raw := checkGolden(t, "records.hex", AppendRecords(nil, goldenRecords()))
	recs, err := DecodeRecords(raw)
	if err != nil || len(recs) != len(goldenRecords()) {
		t.Fatalf("golden bytes do not decode: %v", err)
	}
}

// checkGolden compares an encoding with the hex dump in testdata/name
// (go test -update rewrites it) and returns the golden bytes.
func checkGolden(t *testing.T, name string, got []byte) []byte {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, []byte(hex.Dump(got)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	raw := undump(t, string(want))
	if !bytes.Equal(got, raw) {
		t.Fatalf("encoding changed:\n got:\n%s\nwant:\n%s", hex.Dump(got), want)
	}
	return raw
}

// undump reads hex.Dump's output back into bytes.
func undump(t *testing.T, dump string) []byte {
	t.Helper()
	var out []byte
	for _, line := range strings.Split(dump, "\n") {
		if len(line) < 10 {
			continue
		}
		hexPart := line[10:]
		if i := strings.Index(hexPart, "|"); i >= 0 {
			hexPart = hexPart[:i]
		}
		b, err := hex.DecodeString(strings.ReplaceAll(strings.TrimSpace(hexPart), " ", ""))
		if err != nil {
			t.Fatalf("bad golden line %q: %v", line, err)
		}
		out = append(out, b...)
	}
	return out
}
