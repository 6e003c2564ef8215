package metadata

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
)

// ErrInconsistent marks a record that does not fit the image it is applied
// to (a change to an unknown partition, a fence at a stale epoch). The
// controller only writes records that fit, so this is a bug or a damaged
// log; every replica finds the same error at the same record, because
// applying is deterministic.
var ErrInconsistent = errors.New("metadata: record does not fit the image")

// Broker is a registered broker.
type Broker struct {
	ID            int32
	IncarnationID UUID
	Epoch         int64
	Endpoints     []Endpoint
	Rack          string
	Fenced        bool
}

// Partition is one partition's replica set and leadership. During a
// reassignment (KIP-455) Replicas is the target replicas followed by the
// ones being removed; Adding lists the target replicas not in the original
// set and Removing the original replicas not in the target (both nil when
// no reassignment is in progress).
type Partition struct {
	Replicas       []int32
	ISR            []int32
	Leader         int32
	LeaderEpoch    int32
	PartitionEpoch int32
	Adding         []int32
	Removing       []int32
}

// Reassigning reports whether a reassignment of p is in progress.
func (p *Partition) Reassigning() bool { return len(p.Adding) > 0 || len(p.Removing) > 0 }

// nonEmpty returns a copy of s, or nil when s is empty, so that "no
// reassignment" has one representation.
func nonEmpty(s []int32) []int32 {
	if len(s) == 0 {
		return nil
	}
	return slices.Clone(s)
}

// Topic is a topic and its partitions, by partition id.
type Topic struct {
	Name       string
	ID         UUID
	Partitions map[int32]*Partition
}

// ConfigResource names a config resource: a topic by name, or a broker by
// its id as a decimal string ("" is the cluster-wide broker default).
type ConfigResource struct {
	Type int8
	Name string
}

// Image is the cluster metadata as of a raft index: the state machine the
// replicated log builds. The controller publishes clones (Clone), which
// readers must treat as immutable.
//
// Brokers, topics, partitions and config maps are shared between an image
// and its clones, so Clone copies only the top-level maps: Apply never
// changes one of them in place but replaces it with a changed copy.
type Image struct {
	// Offset is the raft index of the last entry applied.
	Offset    uint64
	ClusterID string
	Brokers   map[int32]*Broker
	Topics    map[UUID]*Topic
	TopicIDs  map[string]UUID
	Configs   map[ConfigResource]map[string]string
	// ClientQuotas are the client quotas by entity (client_quotas.go).
	ClientQuotas map[ClientQuotaEntity]map[string]float64
	// ScramCredentials are the users' SCRAM credentials by user and
	// mechanism (scram.go).
	ScramCredentials map[string]map[int8]ScramCredential
	// Features are the finalized feature levels by feature name (Kafka's
	// FinalizedFeatures); a feature at level 0 is not finalized and not
	// in the map.
	Features map[string]int16
}

// NewImage returns an empty image.
func NewImage() *Image {
	return &Image{
		Brokers:  map[int32]*Broker{},
		Topics:   map[UUID]*Topic{},
		TopicIDs: map[string]UUID{},
		Configs:  map[ConfigResource]map[string]string{},
		Features: map[string]int16{},

		ClientQuotas:     map[ClientQuotaEntity]map[string]float64{},
		ScramCredentials: map[string]map[int8]ScramCredential{},
	}
}

// TopicByName returns the topic named name, or nil.
func (im *Image) TopicByName(name string) *Topic {
	id, ok := im.TopicIDs[name]
	if !ok {
		return nil
	}
	return im.Topics[id]
}

// Apply applies one record carried by the raft entry at index. It changes
// nothing when it returns an error (ErrInconsistent).
func (im *Image) Apply(index uint64, r Record) error {
	switch r := r.(type) {
	case *ClusterRecord:
		im.ClusterID = r.ClusterID
	case *FeatureLevelRecord:
		if r.Name == "" || r.FeatureLevel < 0 {
			return fmt.Errorf("%w: feature %q at level %d", ErrInconsistent, r.Name, r.FeatureLevel)
		}
		if r.FeatureLevel == 0 {
			delete(im.Features, r.Name)
		} else {
			im.Features[r.Name] = r.FeatureLevel
		}
	case *RegisterBrokerRecord:
		epoch := r.BrokerEpoch
		if epoch == -1 {
			epoch = int64(index)
		}
		im.Brokers[r.BrokerID] = &Broker{ID: r.BrokerID, IncarnationID: r.IncarnationID, Epoch: epoch,
			Endpoints: slices.Clone(r.Endpoints), Rack: r.Rack, Fenced: r.Fenced}
	case *UnregisterBrokerRecord:
		if _, err := im.brokerAt(r.ID, r.Epoch); err != nil {
			return err
		}
		delete(im.Brokers, r.ID)
	case *FenceBrokerRecord:
		b, err := im.brokerAt(r.ID, r.Epoch)
		if err != nil {
			return err
		}
		nb := *b
		nb.Fenced = true
		im.Brokers[r.ID] = &nb
	case *UnfenceBrokerRecord:
		b, err := im.brokerAt(r.ID, r.Epoch)
		if err != nil {
			return err
		}
		nb := *b
		nb.Fenced = false
		im.Brokers[r.ID] = &nb
	case *TopicRecord:
		if _, ok := im.TopicIDs[r.Name]; ok {
			return fmt.Errorf("%w: topic %q exists", ErrInconsistent, r.Name)
		}
		if _, ok := im.Topics[r.TopicID]; ok || r.TopicID.IsZero() {
			return fmt.Errorf("%w: topic id %s is taken or zero", ErrInconsistent, r.TopicID)
		}
		im.Topics[r.TopicID] = &Topic{Name: r.Name, ID: r.TopicID, Partitions: map[int32]*Partition{}}
		im.TopicIDs[r.Name] = r.TopicID
	case *PartitionRecord:
		t := im.Topics[r.TopicID]
		if t == nil || r.PartitionID < 0 {
			return fmt.Errorf("%w: partition %d of unknown topic %s", ErrInconsistent, r.PartitionID, r.TopicID)
		}
		im.setPartition(t, r.PartitionID, &Partition{Replicas: slices.Clone(r.Replicas), ISR: slices.Clone(r.ISR),
			Leader: r.Leader, LeaderEpoch: r.LeaderEpoch, PartitionEpoch: r.PartitionEpoch,
			Adding: nonEmpty(r.Adding), Removing: nonEmpty(r.Removing)})
	case *PartitionChangeRecord:
		t := im.Topics[r.TopicID]
		if t == nil || t.Partitions[r.PartitionID] == nil {
			return fmt.Errorf("%w: change to unknown partition %s-%d", ErrInconsistent, r.TopicID, r.PartitionID)
		}
		p := *t.Partitions[r.PartitionID]
		if r.ISR != nil {
			p.ISR = slices.Clone(r.ISR)
		}
		if r.Replicas != nil {
			p.Replicas = slices.Clone(r.Replicas)
		}
		if r.Adding != nil {
			p.Adding = nonEmpty(r.Adding)
		}
		if r.Removing != nil {
			p.Removing = nonEmpty(r.Removing)
		}
		if r.Leader != NoLeaderChange {
			// As Kafka's PartitionRegistration.merge: any leader given,
			// even the current one, starts a new leader epoch.
			p.Leader = r.Leader
			p.LeaderEpoch++
		}
		p.PartitionEpoch++
		im.setPartition(t, r.PartitionID, &p)
	case *ConfigRecord:
		res := ConfigResource{Type: r.ResourceType, Name: r.ResourceName}
		m := maps.Clone(im.Configs[res])
		if m == nil {
			m = map[string]string{}
		}
		if r.Value == nil {
			delete(m, r.Name)
		} else {
			m[r.Name] = *r.Value
		}
		if len(m) == 0 {
			delete(im.Configs, res)
		} else {
			im.Configs[res] = m
		}
	case *RemoveTopicRecord:
		t := im.Topics[r.TopicID]
		if t == nil {
			return fmt.Errorf("%w: removal of unknown topic %s", ErrInconsistent, r.TopicID)
		}
		delete(im.Topics, r.TopicID)
		delete(im.TopicIDs, t.Name)
		delete(im.Configs, ConfigResource{Type: ResourceTopic, Name: t.Name})
	case *ClientQuotaRecord:
		return im.applyClientQuota(r)
	case *UserScramCredentialRecord:
		return im.applyUserScramCredential(r)
	case *RemoveUserScramCredentialRecord:
		return im.applyRemoveUserScramCredential(r)
	default:
		return fmt.Errorf("%w: record type %T", ErrInconsistent, r)
	}
	return nil
}

// setPartition replaces topic t with a copy whose partition pid is p.
func (im *Image) setPartition(t *Topic, pid int32, p *Partition) {
	nt := *t
	nt.Partitions = maps.Clone(t.Partitions)
	nt.Partitions[pid] = p
	im.Topics[t.ID] = &nt
}

func (im *Image) brokerAt(id int32, epoch int64) (*Broker, error) {
	b := im.Brokers[id]
	if b == nil || b.Epoch != epoch {
		return nil, fmt.Errorf("%w: broker %d at epoch %d is not registered", ErrInconsistent, id, epoch)
	}
	return b, nil
}

// Clone returns a copy of im that later Applies to im do not change. It
// copies the top-level maps only; what they point to is shared and never
// changed in place.
func (im *Image) Clone() *Image {
	return &Image{
		Offset:    im.Offset,
		ClusterID: im.ClusterID,
		Brokers:   maps.Clone(im.Brokers),
		Topics:    maps.Clone(im.Topics),
		TopicIDs:  maps.Clone(im.TopicIDs),
		Configs:   maps.Clone(im.Configs),
		Features:  maps.Clone(im.Features),

		ClientQuotas:     maps.Clone(im.ClientQuotas),
		ScramCredentials: maps.Clone(im.ScramCredentials),
	}
}

// Records returns records that rebuild im from an empty image, in a
// deterministic order: the content of a snapshot.
func (im *Image) Records() []Record {
	var recs []Record
	if im.ClusterID != "" {
		recs = append(recs, &ClusterRecord{ClusterID: im.ClusterID})
	}
	for _, name := range slices.Sorted(maps.Keys(im.Features)) {
		recs = append(recs, &FeatureLevelRecord{Name: name, FeatureLevel: im.Features[name]})
	}
	for _, id := range sortedKeys(im.Brokers) {
		b := im.Brokers[id]
		recs = append(recs, &RegisterBrokerRecord{BrokerID: b.ID, IncarnationID: b.IncarnationID, BrokerEpoch: b.Epoch,
			Endpoints: slices.Clone(b.Endpoints), Rack: b.Rack, Fenced: b.Fenced})
	}
	names := make([]string, 0, len(im.TopicIDs))
	for n := range im.TopicIDs {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		t := im.Topics[im.TopicIDs[n]]
		recs = append(recs, &TopicRecord{Name: t.Name, TopicID: t.ID})
		for _, pid := range sortedKeys(t.Partitions) {
			p := t.Partitions[pid]
			recs = append(recs, &PartitionRecord{PartitionID: pid, TopicID: t.ID, Replicas: slices.Clone(p.Replicas),
				ISR: slices.Clone(p.ISR), Leader: p.Leader, LeaderEpoch: p.LeaderEpoch, PartitionEpoch: p.PartitionEpoch,
				Adding: slices.Clone(p.Adding), Removing: slices.Clone(p.Removing)})
		}
	}
	res := make([]ConfigResource, 0, len(im.Configs))
	for r := range im.Configs {
		res = append(res, r)
	}
	sort.Slice(res, func(i, j int) bool {
		if res[i].Type != res[j].Type {
			return res[i].Type < res[j].Type
		}
		return res[i].Name < res[j].Name
	})
	for _, r := range res {
		m := im.Configs[r]
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			v := m[k]
			recs = append(recs, &ConfigRecord{ResourceType: r.Type, ResourceName: r.Name, Name: k, Value: &v})
		}
	}
	recs = append(recs, im.clientQuotaRecords()...)
	recs = append(recs, im.scramRecords()...)
	return recs
}

func sortedKeys[V any](m map[int32]V) []int32 {
	keys := make([]int32, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// snapshotMagic opens an encoded image; its last byte is the version.
var snapshotMagic = []byte("GMDI\x00")

// EncodeSnapshot encodes im: a magic, the offset, and im.Records().
func EncodeSnapshot(im *Image) []byte {
	e := encoder{b: append([]byte(nil), snapshotMagic...)}
	e.uvarint(im.Offset)
	return AppendRecords(e.b, im.Records())
}

// DecodeSnapshot rebuilds an image from EncodeSnapshot's bytes. Damaged
// bytes are ErrMalformed; records that do not fit are ErrInconsistent.
func DecodeSnapshot(b []byte) (*Image, error) {
	if len(b) < len(snapshotMagic) || string(b[:len(snapshotMagic)]) != string(snapshotMagic) {
		return nil, fmt.Errorf("%w: not a metadata snapshot", ErrMalformed)
	}
	d := decoder{b: b[len(snapshotMagic):]}
	offset := d.uvarint()
	if d.err != nil {
		return nil, d.err
	}
	recs, err := DecodeRecords(d.b)
	if err != nil {
		return nil, err
	}
	im := NewImage()
	for _, r := range recs {
		if err := im.Apply(offset, r); err != nil {
			return nil, err
		}
	}
	im.Offset = offset
	return im, nil
}

// Batch is the payload of one raft entry: the records of one controller
// operation, applied together, and who proposed it, so that the proposer
// can match the applied entry to its waiting caller.
type Batch struct {
	Proposer uint64 // raft node id of the proposing controller
	Seq      uint64 // the proposer's sequence number for the operation
	Records  []Record
}

// EncodeBatch encodes b.
func EncodeBatch(b Batch) []byte {
	e := encoder{}
	e.uvarint(b.Proposer)
	e.uvarint(b.Seq)
	return AppendRecords(e.b, b.Records)
}

// DecodeBatch decodes EncodeBatch's bytes; damage is ErrMalformed.
func DecodeBatch(p []byte) (Batch, error) {
	d := decoder{b: p}
	b := Batch{Proposer: d.uvarint(), Seq: d.uvarint()}
	if d.err != nil {
		return Batch{}, d.err
	}
	recs, err := DecodeRecords(d.b)
	if err != nil {
		return Batch{}, err
	}
	b.Records = recs
	return b, nil
}
