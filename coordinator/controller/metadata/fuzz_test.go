package metadata

import (
	"bytes"
	"errors"
	"testing"
)

// FuzzDecode feeds arbitrary bytes to the decoders of bytes read from the
// raft log and from snapshots: DecodeBatch and DecodeSnapshot.
// Invariants: they never panic; failures are ErrMalformed (or
// ErrInconsistent for a snapshot whose records do not fit); what decodes
// re-encodes to bytes that decode to the same thing; applying decoded
// records to an image never panics.
func FuzzDecode(f *testing.F) {
	im := NewImage()
	for i, r := range []Record{
		&ClusterRecord{ClusterID: "c"},
		&FeatureLevelRecord{Name: FeatureMetadataVersion, FeatureLevel: MetadataVersion},
		&FeatureLevelRecord{Name: FeatureTransactionVersion, FeatureLevel: 2},
		&RegisterBrokerRecord{BrokerID: 1, BrokerEpoch: -1, Endpoints: []Endpoint{{Name: "PLAINTEXT", Host: "h", Port: 1}}},
		&TopicRecord{Name: "t", TopicID: topicA},
		&PartitionRecord{TopicID: topicA, Replicas: []int32{1}, ISR: []int32{1}, Leader: 1},
		&PartitionChangeRecord{TopicID: topicA, Leader: NoLeader, ISR: []int32{1}},
		&ConfigRecord{ResourceType: ResourceTopic, ResourceName: "t", Name: "k", Value: str("v")},
		&PartitionRecord{TopicID: topicA, PartitionID: 1, Replicas: []int32{2, 1}, ISR: []int32{1}, Leader: 1, Adding: []int32{2}, Removing: []int32{1}},
		&PartitionChangeRecord{TopicID: topicA, PartitionID: 1, Leader: NoLeaderChange, Replicas: []int32{2}, Adding: []int32{}, Removing: []int32{}},
		scramSet("alice", 1, 4096),
		scramSet("alice", 2, 8192),
		&RemoveUserScramCredentialRecord{Name: "alice", Mechanism: 1},
	} {
		im.Apply(uint64(i+1), r)
	}
	f.Add(EncodeSnapshot(im))
	f.Add(EncodeBatch(Batch{Proposer: 2, Seq: 9, Records: im.Records()}))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		if b, err := DecodeBatch(data); err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("DecodeBatch: %v is not ErrMalformed", err)
			}
		} else {
			b2, err := DecodeBatch(EncodeBatch(b))
			if err != nil || b2.Proposer != b.Proposer || b2.Seq != b.Seq || len(b2.Records) != len(b.Records) {
				t.Fatalf("batch does not round-trip: %v", err)
			}
			img := NewImage()
			for i, r := range b.Records {
				img.Apply(uint64(i+1), r)
			}
		}
		img, err := DecodeSnapshot(data)
		if err != nil {
			if !errors.Is(err, ErrMalformed) && !errors.Is(err, ErrInconsistent) {
				t.Fatalf("DecodeSnapshot: %v", err)
			}
			return
		}
		// Compared by encoding: a client quota of NaN is not DeepEqual to
		// itself.
		snap := EncodeSnapshot(img)
		again, err := DecodeSnapshot(snap)
		if err != nil || !bytes.Equal(EncodeSnapshot(again), snap) {
			t.Fatalf("snapshot does not round-trip: %v", err)
		}
	})
}
