package metadata

import (
	"errors"
	"reflect"
	"testing"

	"pgregory.net/rapid"
)

func str(s string) *string { return &s }

var (
	topicA = UUID{1}
	topicB = UUID{2}
)

func TestApplyBuildsTheImage(t *testing.T) {
	im := NewImage()
	steps := []struct {
		name  string
		index uint64
		rec   Record
		err   error
		check func(t *testing.T, im *Image)
	}{
		{"cluster", 1, &ClusterRecord{ClusterID: "c1"}, nil, func(t *testing.T, im *Image) {
			if im.ClusterID != "c1" {
				t.Fatal(im.ClusterID)
			}
		}},
		{"register takes the entry index as epoch", 7, &RegisterBrokerRecord{BrokerID: 1, BrokerEpoch: -1, Rack: "r1", Fenced: true,
			Endpoints: []Endpoint{{Name: "PLAINTEXT", Host: "h", Port: 9092}}}, nil, func(t *testing.T, im *Image) {
			if b := im.Brokers[1]; b.Epoch != 7 || !b.Fenced || b.Rack != "r1" {
				t.Fatalf("%+v", b)
			}
		}},
		{"unfence at a stale epoch", 8, &UnfenceBrokerRecord{ID: 1, Epoch: 6}, ErrInconsistent, nil},
		{"unfence", 8, &UnfenceBrokerRecord{ID: 1, Epoch: 7}, nil, func(t *testing.T, im *Image) {
			if im.Brokers[1].Fenced {
				t.Fatal("still fenced")
			}
		}},
		{"topic", 9, &TopicRecord{Name: "a", TopicID: topicA}, nil, nil},
		{"same name again", 10, &TopicRecord{Name: "a", TopicID: topicB}, ErrInconsistent, nil},
		{"partition", 11, &PartitionRecord{PartitionID: 0, TopicID: topicA, Replicas: []int32{1, 2}, ISR: []int32{1, 2}, Leader: 1}, nil, nil},
		{"partition of unknown topic", 12, &PartitionRecord{TopicID: topicB}, ErrInconsistent, nil},
		{"isr shrink keeps leader and leader epoch", 13, &PartitionChangeRecord{TopicID: topicA, ISR: []int32{1}, Leader: NoLeaderChange}, nil,
			func(t *testing.T, im *Image) {
				p := im.Topics[topicA].Partitions[0]
				if p.LeaderEpoch != 0 || p.PartitionEpoch != 1 || !reflect.DeepEqual(p.ISR, []int32{1}) {
					t.Fatalf("%+v", p)
				}
			}},
		{"leader change bumps both epochs", 14, &PartitionChangeRecord{TopicID: topicA, Leader: 2, ISR: []int32{2}}, nil,
			func(t *testing.T, im *Image) {
				p := im.Topics[topicA].Partitions[0]
				if p.Leader != 2 || p.LeaderEpoch != 1 || p.PartitionEpoch != 2 {
					t.Fatalf("%+v", p)
				}
			}},
		{"a reassignment starts", 14, &PartitionChangeRecord{TopicID: topicA, Leader: NoLeaderChange, Replicas: []int32{3, 1, 2},
			Adding: []int32{3}, Removing: []int32{1}}, nil,
			func(t *testing.T, im *Image) {
				p := im.Topics[topicA].Partitions[0]
				if !p.Reassigning() || !reflect.DeepEqual(p.Adding, []int32{3}) || !reflect.DeepEqual(p.Removing, []int32{1}) || p.LeaderEpoch != 1 {
					t.Fatalf("%+v", p)
				}
			}},
		{"nil adding and removing leave them", 14, &PartitionChangeRecord{TopicID: topicA, Leader: NoLeaderChange, ISR: []int32{2, 3}}, nil,
			func(t *testing.T, im *Image) {
				if p := im.Topics[topicA].Partitions[0]; !p.Reassigning() {
					t.Fatalf("%+v", p)
				}
			}},
		{"empty adding and removing end it", 14, &PartitionChangeRecord{TopicID: topicA, Leader: 3, Replicas: []int32{3, 2},
			Adding: []int32{}, Removing: []int32{}}, nil,
			func(t *testing.T, im *Image) {
				p := im.Topics[topicA].Partitions[0]
				if p.Reassigning() || p.Adding != nil || p.Removing != nil || p.Leader != 3 {
					t.Fatalf("%+v", p)
				}
			}},
		{"change to unknown partition", 15, &PartitionChangeRecord{TopicID: topicA, PartitionID: 5, Leader: NoLeaderChange}, ErrInconsistent, nil},
		{"topic config", 16, &ConfigRecord{ResourceType: ResourceTopic, ResourceName: "a", Name: "retention.ms", Value: str("1")}, nil, nil},
		{"remove topic drops its configs", 17, &RemoveTopicRecord{TopicID: topicA}, nil, func(t *testing.T, im *Image) {
			if im.TopicByName("a") != nil || len(im.Configs) != 0 {
				t.Fatalf("%+v %+v", im.Topics, im.Configs)
			}
		}},
		{"remove unknown topic", 18, &RemoveTopicRecord{TopicID: topicA}, ErrInconsistent, nil},
		{"fence", 19, &FenceBrokerRecord{ID: 1, Epoch: 7}, nil, func(t *testing.T, im *Image) {
			if !im.Brokers[1].Fenced {
				t.Fatal("not fenced")
			}
		}},
		{"delete a config that is not set", 20, &ConfigRecord{ResourceType: ResourceBroker, ResourceName: "1", Name: "x"}, nil, nil},
		{"unregister at another epoch", 21, &UnregisterBrokerRecord{ID: 1, Epoch: 8}, ErrInconsistent, nil},
		{"unregister", 22, &UnregisterBrokerRecord{ID: 1, Epoch: 7}, nil, func(t *testing.T, im *Image) {
			if im.Brokers[1] != nil {
				t.Fatal("still registered")
			}
		}},
		{"unregister an unknown broker", 23, &UnregisterBrokerRecord{ID: 1, Epoch: 7}, ErrInconsistent, nil},
		{"finalize a feature", 24, &FeatureLevelRecord{Name: FeatureMetadataVersion, FeatureLevel: 12}, nil, func(t *testing.T, im *Image) {
			if im.Features[FeatureMetadataVersion] != 12 || len(im.Features) != 1 {
				t.Fatalf("%v", im.Features)
			}
		}},
		{"change its level", 25, &FeatureLevelRecord{Name: FeatureMetadataVersion, FeatureLevel: 13}, nil, func(t *testing.T, im *Image) {
			if im.Features[FeatureMetadataVersion] != 13 {
				t.Fatalf("%v", im.Features)
			}
		}},
		{"a second feature", 26, &FeatureLevelRecord{Name: FeatureGroupVersion, FeatureLevel: 1}, nil, nil},
		{"level 0 unfinalizes it", 27, &FeatureLevelRecord{Name: FeatureGroupVersion, FeatureLevel: 0}, nil, func(t *testing.T, im *Image) {
			if _, ok := im.Features[FeatureGroupVersion]; ok || len(im.Features) != 1 {
				t.Fatalf("%v", im.Features)
			}
		}},
		{"level 0 of a feature not finalized", 28, &FeatureLevelRecord{Name: FeatureShareVersion}, nil, func(t *testing.T, im *Image) {
			if len(im.Features) != 1 {
				t.Fatalf("%v", im.Features)
			}
		}},
		{"a negative level", 29, &FeatureLevelRecord{Name: FeatureGroupVersion, FeatureLevel: -1}, ErrInconsistent, nil},
		{"a feature without a name", 30, &FeatureLevelRecord{FeatureLevel: 1}, ErrInconsistent, nil},
	}
	for _, s := range steps {
		before := im.Clone()
		err := im.Apply(s.index, s.rec)
		if !errors.Is(err, s.err) || (s.err == nil && err != nil) {
			t.Fatalf("%s: Apply = %v, want %v", s.name, err, s.err)
		}
		if err != nil && !reflect.DeepEqual(before, im) {
			t.Fatalf("%s: a refused record changed the image", s.name)
		}
		if s.check != nil {
			s.check(t, im)
		}
	}
}

// genRecords draws a sequence of records that mostly fit each other.
func genRecords(t *rapid.T) []Record {
	ids := []UUID{topicA, topicB, {3}}
	n := rapid.IntRange(0, 40).Draw(t, "n")
	var recs []Record
	isr := rapid.SliceOfN(rapid.Int32Range(0, 4), 0, 4)
	for range n {
		id := ids[rapid.IntRange(0, 2).Draw(t, "topic")]
		var r Record
		switch rapid.IntRange(0, 9).Draw(t, "kind") {
		case 0:
			r = &ClusterRecord{ClusterID: rapid.StringN(0, 8, -1).Draw(t, "cluster")}
		case 1:
			r = &RegisterBrokerRecord{BrokerID: rapid.Int32Range(0, 4).Draw(t, "broker"), BrokerEpoch: rapid.Int64Range(-1, 5).Draw(t, "epoch"),
				IncarnationID: UUID{byte(rapid.IntRange(0, 9).Draw(t, "inc"))}, Rack: rapid.SampledFrom([]string{"", "r1", "r2"}).Draw(t, "rack"),
				Fenced:    rapid.Bool().Draw(t, "fenced"),
				Endpoints: []Endpoint{{Name: "PLAINTEXT", Host: "h", Port: rapid.Int32Range(1, 65535).Draw(t, "port"), SecurityProtocol: 0}}}
		case 2:
			r = &FenceBrokerRecord{ID: rapid.Int32Range(0, 4).Draw(t, "broker"), Epoch: rapid.Int64Range(0, 40).Draw(t, "epoch")}
		case 3:
			r = &UnfenceBrokerRecord{ID: rapid.Int32Range(0, 4).Draw(t, "broker"), Epoch: rapid.Int64Range(0, 40).Draw(t, "epoch")}
		case 4:
			r = &TopicRecord{Name: rapid.SampledFrom([]string{"a", "b", "c"}).Draw(t, "name"), TopicID: id}
		case 5:
			pr := &PartitionRecord{TopicID: id, PartitionID: rapid.Int32Range(0, 3).Draw(t, "p"), Replicas: isr.Draw(t, "replicas"),
				ISR: isr.Draw(t, "isr"), Leader: rapid.Int32Range(-1, 4).Draw(t, "leader"), LeaderEpoch: rapid.Int32Range(0, 9).Draw(t, "le")}
			if rapid.Bool().Draw(t, "reassigning?") {
				pr.Adding, pr.Removing = isr.Draw(t, "adding"), isr.Draw(t, "removing")
			}
			r = pr
		case 6:
			c := &PartitionChangeRecord{TopicID: id, PartitionID: rapid.Int32Range(0, 3).Draw(t, "p"), Leader: rapid.Int32Range(-2, 4).Draw(t, "leader")}
			if rapid.Bool().Draw(t, "isr?") {
				c.ISR = isr.Draw(t, "isr")
			}
			if rapid.Bool().Draw(t, "reassignment?") {
				c.Adding, c.Removing = isr.Draw(t, "adding"), isr.Draw(t, "removing")
			}
			r = c
		case 7:
			c := &ConfigRecord{ResourceType: rapid.SampledFrom([]int8{ResourceTopic, ResourceBroker}).Draw(t, "rt"),
				ResourceName: rapid.SampledFrom([]string{"a", "b", "1"}).Draw(t, "rn"), Name: rapid.SampledFrom([]string{"x", "y"}).Draw(t, "k")}
			if rapid.Bool().Draw(t, "set") {
				c.Value = str(rapid.StringN(0, 5, -1).Draw(t, "v"))
			}
			r = c
		case 8:
			r = &RemoveTopicRecord{TopicID: id}
		case 9:
			r = &FeatureLevelRecord{Name: rapid.SampledFrom([]string{"", FeatureMetadataVersion, FeatureGroupVersion}).Draw(t, "feature"),
				FeatureLevel: rapid.Int16Range(-1, 3).Draw(t, "level")}
		}
		recs = append(recs, r)
	}
	return recs
}

// TestSnapshotRebuildsTheSameImage: for any sequence of records, the
// image's snapshot decodes to an equal image, and applying is
// deterministic (two images fed the same records are equal).
func TestSnapshotRebuildsTheSameImage(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		recs := genRecords(t)
		a, b := NewImage(), NewImage()
		// A clone taken half way must not see what is applied after it.
		var half *Image
		var halfBytes []byte
		for i, r := range recs {
			if i == len(recs)/2 {
				half = a.Clone()
				halfBytes = EncodeSnapshot(half)
			}
			errA := a.Apply(uint64(i+1), r)
			errB := b.Apply(uint64(i+1), r)
			if (errA == nil) != (errB == nil) {
				t.Fatalf("apply is not deterministic at %d", i)
			}
		}
		if half != nil && string(EncodeSnapshot(half)) != string(halfBytes) {
			t.Fatal("applying records changed an earlier clone")
		}
		a.Offset, b.Offset = uint64(len(recs)), uint64(len(recs))
		if !reflect.DeepEqual(a, b) {
			t.Fatal("same records, different images")
		}
		got, err := DecodeSnapshot(EncodeSnapshot(a))
		if err != nil {
			t.Fatalf("DecodeSnapshot: %v", err)
		}
		if !reflect.DeepEqual(got, a) {
			t.Fatalf("snapshot image differs:\n got %+v\nwant %+v", got, a)
		}
		if !reflect.DeepEqual(a.Clone(), a) {
			t.Fatal("Clone differs")
		}
	})
}

// TestRecordsRoundTrip: every record encodes and decodes to itself, and
// a batch keeps its proposer and sequence.
func TestRecordsRoundTrip(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		recs := genRecords(t)
		b := Batch{Proposer: rapid.Uint64().Draw(t, "proposer"), Seq: rapid.Uint64().Draw(t, "seq"), Records: recs}
		got, err := DecodeBatch(EncodeBatch(b))
		if err != nil {
			t.Fatal(err)
		}
		if got.Proposer != b.Proposer || got.Seq != b.Seq || len(got.Records) != len(recs) {
			t.Fatalf("batch %+v", got)
		}
		for i := range recs {
			if !reflect.DeepEqual(normalize(got.Records[i]), normalize(recs[i])) {
				t.Fatalf("record %d: got %+v want %+v", i, got.Records[i], recs[i])
			}
		}
	})
}

// normalize maps empty non-nullable slices to nil, which the encoding does
// not tell apart.
func normalize(r Record) Record {
	if p, ok := r.(*PartitionRecord); ok {
		c := *p
		if len(c.Replicas) == 0 {
			c.Replicas = nil
		}
		if len(c.ISR) == 0 {
			c.ISR = nil
		}
		if len(c.Adding) == 0 {
			c.Adding = nil
		}
		if len(c.Removing) == 0 {
			c.Removing = nil
		}
		return &c
	}
	return r
}

func TestDecodeRefusesDamage(t *testing.T) {
	good := AppendRecords(nil, []Record{&TopicRecord{Name: "a", TopicID: topicA}})
	cases := map[string][]byte{
		"empty":             {},
		"count past end":    {5},
		"length past end":   {1, 40, 2},
		"unknown type":      AppendRecords(nil, nil)[:0:0],
		"trailing bytes":    append(append([]byte{}, good...), 0),
		"unknown version":   {1, 3, 2, 1, 0},
		"short uuid":        good[:len(good)-1],
		"huge array length": {1, 6, 3, 0, 0, 0xff, 0xff, 0xff},
		// A feature level past int16: name "m", level 40000 (zig-zag varint).
		"feature level out of range": {1, 7, byte(TypeFeatureLevel), 0, 1, 'm', 0x80, 0xf1, 0x04},
	}
	cases["unknown type"] = []byte{1, 2, 99, 0}
	for name, b := range cases {
		if _, err := DecodeRecords(b); !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: err = %v, want ErrMalformed", name, err)
		}
	}
	if _, err := DecodeSnapshot([]byte("nope")); !errors.Is(err, ErrMalformed) {
		t.Errorf("DecodeSnapshot of junk: %v", err)
	}
}

// TestBootstrapFeatures: the records a new log starts with finalize
// exactly the features Gregor bootstraps above level 0, metadata.version
// first, and every bootstrap level is within the supported range.
func TestBootstrapFeatures(t *testing.T) {
	recs := BootstrapFeatures()
	if f, ok := recs[0].(*FeatureLevelRecord); !ok || f.Name != FeatureMetadataVersion || f.FeatureLevel != MetadataVersion {
		t.Fatalf("first bootstrap record %+v, want metadata.version %d", recs[0], MetadataVersion)
	}
	im := NewImage()
	for _, r := range recs {
		if err := im.Apply(1, r); err != nil {
			t.Fatal(err)
		}
	}
	want := map[string]int16{FeatureMetadataVersion: MetadataVersion, FeatureGroupVersion: 1, FeatureTransactionVersion: 2}
	if !reflect.DeepEqual(im.Features, want) {
		t.Fatalf("bootstrap features %v, want %v", im.Features, want)
	}
	for i, f := range Features {
		if i > 0 && Features[i-1].Name >= f.Name {
			t.Errorf("Features not in name order at %q", f.Name)
		}
		if f.Min > f.Max || (f.Bootstrap != 0 && (f.Bootstrap < f.Min || f.Bootstrap > f.Max)) {
			t.Errorf("%s: bootstrap level %d outside the supported %d-%d", f.Name, f.Bootstrap, f.Min, f.Max)
		}
	}
}
