package group

import (
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// PartitionFor returns the __consumer_offsets partition of a group: Kafka's
// Utils.abs(groupId.hashCode()) % n, with Java's String.hashCode over UTF-16
// code units and Utils.abs mapping MinInt32 to 0.
func PartitionFor(groupID string, n int32) int32 {
	var h int32
	for _, r := range groupID {
		if r >= 0x10000 {
			r -= 0x10000
			h = 31*h + int32(0xD800+(r>>10))
			h = 31*h + int32(0xDC00+(r&0x3FF))
			continue
		}
		h = 31*h + int32(r)
	}
	if h == -1<<31 {
		h = 0
	} else if h < 0 {
		h = -h
	}
	return h % n
}

// Record versions written, as Kafka 4 writes them.
const (
	offsetKeyVersion     = 1
	offsetValueVersion   = 3
	groupKeyVersion      = 2
	groupMetadataVersion = 3
)

func offsetKey(groupID, topic string, partition int32) []byte {
	k := kmsg.NewOffsetCommitKey()
	k.Version, k.Group, k.Topic, k.Partition = offsetKeyVersion, groupID, topic, partition
	return k.AppendTo(nil)
}

func offsetValue(co committedOffset) []byte {
	v := kmsg.NewOffsetCommitValue()
	v.Version = offsetValueVersion
	v.Offset, v.LeaderEpoch, v.Metadata, v.CommitTimestamp = co.offset, co.leaderEpoch, co.metadata, co.commitTimestamp
	return v.AppendTo(nil)
}

func groupKey(groupID string) []byte {
	k := kmsg.NewGroupMetadataKey()
	k.Version, k.Group = groupKeyVersion, groupID
	return k.AppendTo(nil)
}

// storeGroup records the group's metadata (Kafka's
// GroupCoordinatorRecordHelpers.newGroupMetadataRecord): written when a
// generation's assignment is set, when the group becomes Empty, and when a
// static member is replaced.
func (c *Coordinator) storeGroup(g *group) {
	v := kmsg.NewGroupMetadataValue()
	v.Version = groupMetadataVersion
	v.ProtocolType, v.Generation = g.protocolType, g.generation
	if g.protocol != "" {
		v.Protocol = strp(g.protocol)
	}
	if g.leader != "" {
		v.Leader = strp(g.leader)
	}
	v.CurrentStateTimestamp = g.stateTimestamp
	for _, id := range g.order {
		m := g.members[id]
		mm := kmsg.NewGroupMetadataValueMember()
		mm.MemberID, mm.InstanceID, mm.ClientID, mm.ClientHost = m.id, m.instanceID, m.clientID, m.clientHost
		mm.RebalanceTimeoutMillis, mm.SessionTimeoutMillis = m.rebalanceTimeout, m.sessionTimeout
		mm.Subscription = m.metadata(g.protocol)
		if mm.Subscription == nil {
			mm.Subscription = []byte{}
		}
		mm.Assignment = m.assignment
		if mm.Assignment == nil {
			mm.Assignment = []byte{}
		}
		v.Members = append(v.Members, mm)
	}
	c.record(g.id, groupKey(g.id), v.AppendTo(nil))
}

// LoadDone finishes a replay: it rebuilds what records do not carry
// (which member holds which partition, the rebalance deadlines of members
// still revoking). Call it once after the last Load.
func (c *Coordinator) LoadDone(now int64) {
	c.finishConsumerLoad(now)
	c.finishShareLoad()
}

// ErrBadRecord marks a __consumer_offsets record Load cannot decode.
var ErrBadRecord = errors.New("group: undecodable __consumer_offsets record")

// Load replays one record of __consumer_offsets, in log order, to rebuild
// groups and offsets before serving (Kafka's GroupCoordinatorShard.replay).
// A nil value is a tombstone. A group loaded with members is Stable, and
// each member's session starts at now. Load produces no effects. Records
// of transactional batches are loaded with LoadTransactional, and markers
// with CompleteTransaction.
func (c *Coordinator) Load(now int64, key, value []byte) error { return c.load(now, nil, key, value) }

// load replays a record; pid is the producer of the transactional batch
// holding it, or nil.
func (c *Coordinator) load(now int64, pid *int64, key, value []byte) error {
	if len(key) < 2 {
		return fmt.Errorf("%w: key of %d bytes", ErrBadRecord, len(key))
	}
	version := int16(key[0])<<8 | int16(key[1])
	switch version {
	case 0, 1:
		k := kmsg.NewOffsetCommitKey()
		if err := k.ReadFrom(key); err != nil {
			return fmt.Errorf("%w: %v", ErrBadRecord, err)
		}
		g := c.groups[k.Group]
		tp := topicPartition{k.Topic, k.Partition}
		if value == nil {
			c.dropOffset(k.Group, tp)
			return nil
		}
		v := kmsg.NewOffsetCommitValue()
		if err := v.ReadFrom(value); err != nil {
			return fmt.Errorf("%w: %v", ErrBadRecord, err)
		}
		if g == nil {
			g = newGroup(k.Group, now)
			c.groups[k.Group] = g
		}
		co := committedOffset{offset: v.Offset, leaderEpoch: v.LeaderEpoch, metadata: v.Metadata, commitTimestamp: v.CommitTimestamp, seq: c.nextSeq()}
		if pid != nil {
			c.addPending(*pid, k.Group, tp, co)
		} else {
			g.offsets[tp] = co
		}
	case 2:
		k := kmsg.NewGroupMetadataKey()
		if err := k.ReadFrom(key); err != nil {
			return fmt.Errorf("%w: %v", ErrBadRecord, err)
		}
		if value == nil {
			// The classic group goes; offsets committed to it stay, as
			// Kafka keeps them apart (a group upgraded to a consumer
			// group writes this tombstone and keeps its offsets).
			if old := c.groups[k.Group]; old != nil && old.cg == nil && old.sg == nil {
				if len(old.offsets) == 0 {
					delete(c.groups, k.Group)
				} else {
					g := newGroup(k.Group, now)
					g.offsets = old.offsets
					c.groups[k.Group] = g
				}
			}
			return nil
		}
		v := kmsg.NewGroupMetadataValue()
		if err := v.ReadFrom(value); err != nil {
			return fmt.Errorf("%w: %v", ErrBadRecord, err)
		}
		old := c.groups[k.Group]
		g := newGroup(k.Group, now)
		if old != nil {
			g.offsets = old.offsets
		}
		g.protocolType, g.generation = v.ProtocolType, v.Generation
		if v.Protocol != nil {
			g.protocol = *v.Protocol
		}
		if v.CurrentStateTimestamp >= 0 {
			g.stateTimestamp = v.CurrentStateTimestamp
		}
		for _, mm := range v.Members {
			if g.members[mm.MemberID] != nil {
				continue // never written by Kafka or Gregor; keep the first
			}
			m := &member{
				id: mm.MemberID, instanceID: mm.InstanceID, clientID: mm.ClientID, clientHost: mm.ClientHost,
				sessionTimeout: mm.SessionTimeoutMillis, rebalanceTimeout: mm.RebalanceTimeoutMillis,
				protocols:         []Protocol{{Name: g.protocol, Metadata: mm.Subscription}},
				assignment:        mm.Assignment,
				heartbeatDeadline: now + int64(mm.SessionTimeoutMillis),
			}
			g.addMember(m)
		}
		if v.Leader != nil && g.members[*v.Leader] != nil {
			g.leader = *v.Leader
		}
		if len(g.members) > 0 {
			g.state = Stable
		}
		g.subscribedTopics = g.computeSubscribedTopics()
		c.groups[k.Group] = g
	case consumerGroupMetadataType, consumerGroupPartitionMetaType, consumerMemberMetadataType,
		targetAssignmentMetadataType, targetAssignmentMemberType, currentMemberAssignmentType, regularExpressionType:
		if err := c.loadConsumerRecord(now, version, key, value); err != nil {
			return fmt.Errorf("%w: record type %d: %v", ErrBadRecord, version, err)
		}
	case shareMemberMetadataType, shareGroupMetadataType, shareTargetMetadataType, shareTargetMemberType,
		shareCurrentAssignmentType, shareStatePartitionMetaType:
		if err := c.loadShareRecord(now, version, key, value); err != nil {
			return fmt.Errorf("%w: record type %d: %v", ErrBadRecord, version, err)
		}
	default:
		// Kafka writes other record types (streams groups) with higher key
		// versions; Gregor writes none of them.
		return fmt.Errorf("%w: key version %d", ErrBadRecord, version)
	}
	return nil
}
