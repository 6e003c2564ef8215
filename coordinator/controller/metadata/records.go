package metadata

import (
	"encoding/base64"
	"fmt"
)

// UUID is a 16-byte id, as Kafka's Uuid (topic ids, incarnation ids).
type UUID [16]byte

// String is Kafka's form of a Uuid: URL-safe base64 without padding.
func (u UUID) String() string { return base64.RawURLEncoding.EncodeToString(u[:]) }

// IsZero reports whether u is Kafka's ZERO_UUID.
func (u UUID) IsZero() bool { return u == UUID{} }

// RecordType numbers a record kind. Where Kafka has the record, the number
// is its apiKey in metadata/src/main/resources/common/metadata.
type RecordType uint16

// The record kinds. Numbers follow Kafka's metadata record apiKeys; the
// cluster record is ours (Kafka keeps the cluster id in meta.properties).
const (
	TypeRegisterBroker            RecordType = 0
	TypeUnregisterBroker          RecordType = 1
	TypeTopic                     RecordType = 2
	TypePartition                 RecordType = 3
	TypeConfig                    RecordType = 4
	TypePartitionChange           RecordType = 5
	TypeFenceBroker               RecordType = 7
	TypeUnfenceBroker             RecordType = 8
	TypeRemoveTopic               RecordType = 9
	TypeFeatureLevel              RecordType = 12
	TypeUserScramCredential       RecordType = 11
	TypeClientQuota               RecordType = 14
	TypeRemoveUserScramCredential RecordType = 22
	TypeCluster                   RecordType = 100
)

// Record is one metadata record. Each kind has versions in this encoding: a
// newer version appends fields to the older one's, and a decoder refuses
// versions it does not know. A record is written at the oldest version that
// holds its fields, so records that need nothing new keep their old bytes
// (and stay readable by a node of the previous release).
type Record interface {
	Type() RecordType
	encode(e *encoder)
}

// versioned is a Record kind with versions beyond 0; version says which one
// the record is written at.
type versioned interface {
	version() uint64
}

// ResourceType of a ConfigRecord, Kafka's ConfigResource.Type codes.
const (
	ResourceTopic  int8 = 2
	ResourceBroker int8 = 4
)

// NoLeader is a partition leader of -1: no replica leads.
const NoLeader int32 = -1

// NoLeaderChange is PartitionChangeRecord.Leader's -2: the leader did not
// change.
const NoLeaderChange int32 = -2

// Endpoint is one listener a broker advertises.
type Endpoint struct {
	Name             string
	Host             string
	Port             int32
	SecurityProtocol int16
}

// RegisterBrokerRecord registers (or re-registers) a broker, as Kafka's.
// A BrokerEpoch of -1 is assigned on apply: the raft index of the entry that
// carries the record, as Kafka uses the record's offset. Snapshots carry the
// assigned epoch.
type RegisterBrokerRecord struct {
	BrokerID      int32
	IncarnationID UUID
	BrokerEpoch   int64
	Endpoints     []Endpoint
	Rack          string // "" when the broker has none
	Fenced        bool
}

// UnregisterBrokerRecord removes a broker's registration at the given
// epoch (Kafka's UnregisterBrokerRecord, UnregisterBroker's record).
type UnregisterBrokerRecord struct {
	ID    int32
	Epoch int64
}

// FenceBrokerRecord fences a broker at the given epoch.
type FenceBrokerRecord struct {
	ID    int32
	Epoch int64
}

// UnfenceBrokerRecord unfences a broker at the given epoch.
type UnfenceBrokerRecord struct {
	ID    int32
	Epoch int64
}

// TopicRecord creates a topic.
type TopicRecord struct {
	Name    string
	TopicID UUID
}

// PartitionRecord creates a partition (or replaces it whole). Adding and
// Removing are the replicas an ongoing reassignment adds and removes, as
// Kafka's addingReplicas and removingReplicas (version 1; empty when no
// reassignment is in progress, which version 0 means).
type PartitionRecord struct {
	PartitionID    int32
	TopicID        UUID
	Replicas       []int32
	ISR            []int32
	Leader         int32
	LeaderEpoch    int32
	PartitionEpoch int32
	Adding         []int32
	Removing       []int32
}

// PartitionChangeRecord changes a partition. Nil slices and a Leader of
// NoLeaderChange mean "unchanged" (an empty, non-nil Adding or Removing
// clears it). Applying it bumps the partition epoch, and the leader epoch
// whenever Leader is given (even the same leader), as Kafka's
// PartitionRegistration.merge does. Adding and Removing are version 1.
type PartitionChangeRecord struct {
	PartitionID int32
	TopicID     UUID
	ISR         []int32
	Leader      int32
	Replicas    []int32
	Adding      []int32
	Removing    []int32
}

// ConfigRecord sets (Value non-nil) or deletes (nil) one config of a
// resource.
type ConfigRecord struct {
	ResourceType int8
	ResourceName string
	Name         string
	Value        *string
}

// RemoveTopicRecord deletes a topic and its partitions and configs.
type RemoveTopicRecord struct {
	TopicID UUID
}

// ClusterRecord names the cluster. The first controller leader writes it
// when the log has none.
type ClusterRecord struct {
	ClusterID string
}

// FeatureLevelRecord finalizes a feature at a level, as Kafka's
// FeatureLevelRecord: level 0 removes the feature from the finalized set
// (Kafka's FeatureControlManager does the same on replay).
type FeatureLevelRecord struct {
	Name         string
	FeatureLevel int16
}

func (*RegisterBrokerRecord) Type() RecordType   { return TypeRegisterBroker }
func (*UnregisterBrokerRecord) Type() RecordType { return TypeUnregisterBroker }
func (*FenceBrokerRecord) Type() RecordType      { return TypeFenceBroker }
func (*UnfenceBrokerRecord) Type() RecordType    { return TypeUnfenceBroker }
func (*TopicRecord) Type() RecordType            { return TypeTopic }
func (*PartitionRecord) Type() RecordType        { return TypePartition }
func (*PartitionChangeRecord) Type() RecordType  { return TypePartitionChange }
func (*ConfigRecord) Type() RecordType           { return TypeConfig }
func (*RemoveTopicRecord) Type() RecordType      { return TypeRemoveTopic }
func (*ClusterRecord) Type() RecordType          { return TypeCluster }
func (*FeatureLevelRecord) Type() RecordType     { return TypeFeatureLevel }

func (r *RegisterBrokerRecord) encode(e *encoder) {
	e.int32(r.BrokerID)
	e.uuid(r.IncarnationID)
	e.varint(r.BrokerEpoch)
	e.uvarint(uint64(len(r.Endpoints)))
	for _, ep := range r.Endpoints {
		e.string(ep.Name)
		e.string(ep.Host)
		e.int32(ep.Port)
		e.varint(int64(ep.SecurityProtocol))
	}
	e.string(r.Rack)
	e.bool(r.Fenced)
}

func (r *UnregisterBrokerRecord) encode(e *encoder) { e.int32(r.ID); e.varint(r.Epoch) }
func (r *FenceBrokerRecord) encode(e *encoder)      { e.int32(r.ID); e.varint(r.Epoch) }
func (r *UnfenceBrokerRecord) encode(e *encoder)    { e.int32(r.ID); e.varint(r.Epoch) }
func (r *TopicRecord) encode(e *encoder)            { e.string(r.Name); e.uuid(r.TopicID) }
func (r *RemoveTopicRecord) encode(e *encoder)      { e.uuid(r.TopicID) }
func (r *ClusterRecord) encode(e *encoder)          { e.string(r.ClusterID) }
func (r *FeatureLevelRecord) encode(e *encoder)     { e.string(r.Name); e.varint(int64(r.FeatureLevel)) }

func (r *PartitionRecord) version() uint64 {
	if len(r.Adding) > 0 || len(r.Removing) > 0 {
		return 1
	}
	return 0
}

func (r *PartitionRecord) encode(e *encoder) {
	e.int32(r.PartitionID)
	e.uuid(r.TopicID)
	e.int32s(r.Replicas)
	e.int32s(r.ISR)
	e.int32(r.Leader)
	e.int32(r.LeaderEpoch)
	e.int32(r.PartitionEpoch)
	if r.version() >= 1 {
		e.int32s(r.Adding)
		e.int32s(r.Removing)
	}
}

func (r *PartitionChangeRecord) version() uint64 {
	if r.Adding != nil || r.Removing != nil {
		return 1
	}
	return 0
}

func (r *PartitionChangeRecord) encode(e *encoder) {
	e.int32(r.PartitionID)
	e.uuid(r.TopicID)
	e.nullableInt32s(r.ISR)
	e.int32(r.Leader)
	e.nullableInt32s(r.Replicas)
	if r.version() >= 1 {
		e.nullableInt32s(r.Adding)
		e.nullableInt32s(r.Removing)
	}
}

func (r *ConfigRecord) encode(e *encoder) {
	e.varint(int64(r.ResourceType))
	e.string(r.ResourceName)
	e.string(r.Name)
	e.nullableString(r.Value)
}

// AppendRecords appends the encoding of recs to b: a uvarint count, then
// for each record a uvarint length and that many bytes of type, version
// and fields.
func AppendRecords(b []byte, recs []Record) []byte {
	e := encoder{b: b}
	e.uvarint(uint64(len(recs)))
	var body encoder
	for _, r := range recs {
		body.b = body.b[:0]
		body.uvarint(uint64(r.Type()))
		var version uint64
		if v, ok := r.(versioned); ok {
			version = v.version()
		}
		body.uvarint(version)
		r.encode(&body)
		e.uvarint(uint64(len(body.b)))
		e.b = append(e.b, body.b...)
	}
	return e.b
}

// DecodeRecords decodes what AppendRecords wrote. It never panics and
// allocates no more than the input's length allows; any damage, an unknown
// record type or version, or bytes left over are ErrMalformed.
func DecodeRecords(b []byte) ([]Record, error) {
	d := decoder{b: b}
	n := d.length(d.uvarint(), 1)
	recs := make([]Record, 0, n)
	for i := 0; i < n && d.err == nil; i++ {
		size := d.length(d.uvarint(), 1)
		body := d.bytes(size)
		if d.err != nil {
			break
		}
		r, err := decodeRecord(body)
		if err != nil {
			return nil, err
		}
		recs = append(recs, r)
	}
	if d.err == nil && len(d.b) != 0 {
		d.fail("bytes after the last record")
	}
	if d.err != nil {
		return nil, d.err
	}
	return recs, nil
}

// maxVersion is the newest version of a record kind this code reads.
func maxVersion(t RecordType) uint64 {
	switch t {
	case TypePartition, TypePartitionChange:
		return 1
	}
	return 0
}

func decodeRecord(b []byte) (Record, error) {
	d := decoder{b: b}
	typ := d.uvarint()
	version := d.uvarint()
	if d.err != nil {
		return nil, d.err
	}
	if version > maxVersion(RecordType(typ)) {
		return nil, fmt.Errorf("%w: record type %d version %d is unknown", ErrMalformed, typ, version)
	}
	var r Record
	switch RecordType(typ) {
	case TypeRegisterBroker:
		x := &RegisterBrokerRecord{BrokerID: d.int32(), IncarnationID: d.uuid(), BrokerEpoch: d.varint()}
		n := d.length(d.uvarint(), 4)
		x.Endpoints = make([]Endpoint, 0, n)
		for i := 0; i < n && d.err == nil; i++ {
			x.Endpoints = append(x.Endpoints, Endpoint{Name: d.string(), Host: d.string(), Port: d.int32(), SecurityProtocol: d.int16()})
		}
		x.Rack = d.string()
		x.Fenced = d.bool()
		r = x
	case TypeUnregisterBroker:
		r = &UnregisterBrokerRecord{ID: d.int32(), Epoch: d.varint()}
	case TypeFenceBroker:
		r = &FenceBrokerRecord{ID: d.int32(), Epoch: d.varint()}
	case TypeUnfenceBroker:
		r = &UnfenceBrokerRecord{ID: d.int32(), Epoch: d.varint()}
	case TypeTopic:
		r = &TopicRecord{Name: d.string(), TopicID: d.uuid()}
	case TypePartition:
		x := &PartitionRecord{PartitionID: d.int32(), TopicID: d.uuid(), Replicas: d.int32s(), ISR: d.int32s(),
			Leader: d.int32(), LeaderEpoch: d.int32(), PartitionEpoch: d.int32()}
		if version >= 1 {
			x.Adding, x.Removing = d.int32s(), d.int32s()
		}
		r = x
	case TypePartitionChange:
		x := &PartitionChangeRecord{PartitionID: d.int32(), TopicID: d.uuid(), ISR: d.nullableInt32s(),
			Leader: d.int32(), Replicas: d.nullableInt32s()}
		if version >= 1 {
			x.Adding, x.Removing = d.nullableInt32s(), d.nullableInt32s()
		}
		r = x
	case TypeConfig:
		rt := d.varint()
		if rt != int64(ResourceTopic) && rt != int64(ResourceBroker) {
			d.fail("unknown config resource type")
		}
		r = &ConfigRecord{ResourceType: int8(rt), ResourceName: d.string(), Name: d.string(), Value: d.nullableString()}
	case TypeRemoveTopic:
		r = &RemoveTopicRecord{TopicID: d.uuid()}
	case TypeCluster:
		r = &ClusterRecord{ClusterID: d.string()}
	case TypeFeatureLevel:
		r = &FeatureLevelRecord{Name: d.string(), FeatureLevel: d.int16()}
	case TypeClientQuota:
		r = decodeClientQuota(&d)
	case TypeUserScramCredential:
		r = decodeUserScramCredential(&d)
	case TypeRemoveUserScramCredential:
		r = &RemoveUserScramCredentialRecord{Name: d.string(), Mechanism: d.int8()}
	default:
		return nil, fmt.Errorf("%w: record type %d is unknown", ErrMalformed, typ)
	}
	if d.err == nil && len(d.b) != 0 {
		d.fail("bytes after the record's fields")
	}
	if d.err != nil {
		return nil, d.err
	}
	return r, nil
}
