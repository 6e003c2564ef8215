package metadata

import (
	"bytes"
	"encoding/hex"
	"flag"
	"os"
	"path/filepath"
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
	}
}

// TestRecordEncodingGolden compares the encoding of one record of each
// kind with testdata/records.hex (go test -update rewrites it) and decodes
// the golden bytes back.
func TestRecordEncodingGolden(t *testing.T) {
	got := AppendRecords(nil, goldenRecords())
	path := filepath.Join("testdata", "records.hex")
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
	recs, err := DecodeRecords(raw)
	if err != nil || len(recs) != len(goldenRecords()) {
		t.Fatalf("golden bytes do not decode: %v", err)
	}
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
