package broker

// The bound Kafka's controller puts on the metadata records one request
// may make (QuorumController.MAX_RECORDS_PER_USER_OP), which CreateTopics
// and CreatePartitions check before anything is created: a request over
// it is refused whole with POLICY_VIOLATION, so that one client's request
// cannot open tens of thousands of partitions at once.

import (
	"github.com/twmb/franz-go/pkg/kmsg"
)

// maxRecordsPerRequest is QuorumController.MAX_RECORDS_PER_USER_OP.
const maxRecordsPerRequest = 10000

// Kafka's messages for a request over the bound.
const (
	msgTooManyPartitions           = "Excessively large number of partitions per request."
	msgTooManyAdditionalPartitions = "Excessively large number of additional partitions per request."
	msgBatchTooLarge               = "Unable to perform excessively large batch operation."
)

// requestedPartitions is ReplicationControlManager's
// validateTotalNumberOfPartitions sum for one topic of a CreateTopics
// request: its manual assignments, else its partition count (-1 is the
// broker's num.partitions; a count below 1 adds nothing).
func requestedPartitions(rt kmsg.CreateTopicsRequestTopic, defaultPartitions int32) int64 {
	switch {
	case len(rt.ReplicaAssignment) > 0:
		return int64(len(rt.ReplicaAssignment))
	case rt.NumPartitions == -1:
		return int64(defaultPartitions)
	case rt.NumPartitions > 0:
		return int64(rt.NumPartitions)
	}
	return 0
}

// createTopicRecords is how many metadata records creating rt makes: its
// TopicRecord, one PartitionRecord per partition and one ConfigRecord per
// config set.
func createTopicRecords(rt kmsg.CreateTopicsRequestTopic, defaultPartitions int32) int64 {
	n := 1 + requestedPartitions(rt, defaultPartitions)
	for _, c := range rt.Configs {
		if c.Value != nil {
			n++
		}
	}
	return n
}
