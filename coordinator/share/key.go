package share

import (
	"encoding/base64"
	"fmt"
	"unicode/utf16"
)

// Key names one share-partition: a share group's state of one partition
// of one topic (Kafka's SharePartitionKey).
type Key struct {
	GroupID   string
	TopicID   [16]byte
	Partition int32
}

// Batch is one state batch: the delivery state and count of the offsets
// FirstOffset to LastOffset, inclusive (Kafka's PersisterStateBatch).
// DeliveryState is Kafka's: 0 available, 2 acknowledged, 4 archived.
type Batch struct {
	FirstOffset   int64
	LastOffset    int64
	DeliveryState int8
	DeliveryCount int16
}

// Offset is the state of one share-partition, Kafka's ShareGroupOffset:
// the epochs, the share-partition start offset, how many offsets at or
// after it have completed delivery (KIP-1226; -1 unknown), the state
// batches, and when the state was created and last snapshotted.
type Offset struct {
	SnapshotEpoch         int32
	StateEpoch            int32
	LeaderEpoch           int32
	StartOffset           int64
	DeliveryCompleteCount int32
	Batches               []Batch
	CreateTimestamp       int64
	WriteTimestamp        int64
}

func (o *Offset) clone() *Offset {
	c := *o
	c.Batches = append([]Batch(nil), o.Batches...)
	return &c
}

// uuidString is Kafka's Uuid.toString: the 16 bytes in URL-safe base64
// without padding.
func uuidString(id [16]byte) string { return base64.RawURLEncoding.EncodeToString(id[:]) }

// CoordinatorKey is Kafka's SharePartitionKey.asCoordinatorKey,
// "groupId:topicId:partition", from which the __share_group_state
// partition is chosen.
func (k Key) CoordinatorKey() string {
	return fmt.Sprintf("%s:%s:%d", k.GroupID, uuidString(k.TopicID), k.Partition)
}

// javaStringHash is Java's String.hashCode: over the UTF-16 code units.
// Bytes that are not valid UTF-8 become U+FFFD, as Java decodes them.
func javaStringHash(s string) int32 {
	var h int32
	for _, r := range s {
		if r >= 0x10000 {
			r1, r2 := utf16.EncodeRune(r)
			h = 31*h + int32(r1)
			h = 31*h + int32(r2)
			continue
		}
		h = 31*h + int32(r)
	}
	return h
}

// PartitionFor is the partition of __share_group_state that holds k when
// the topic has numPartitions (share.coordinator.state.topic.num.partitions,
// Kafka's default 50): Kafka's ShareCoordinatorService.partitionFor,
// Utils.abs(key.asCoordinatorKey().hashCode()) % numPartitions. It is -1
// for numPartitions below 1.
func PartitionFor(k Key, numPartitions int32) int32 {
	if numPartitions < 1 {
		return -1
	}
	h := javaStringHash(k.CoordinatorKey())
	if h == -1<<31 {
		h = 0 // Kafka's Utils.abs
	} else if h < 0 {
		h = -h
	}
	return h % numPartitions
}
