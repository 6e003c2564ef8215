package main

import (
	"fmt"
	"hash/crc32"
	"strings"
	"time"

	"github.com/gregor-broker/gregor/protocol/batch"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// baseTimestamp is the CreateTime of the records the catalogue writes (2023,
// like the compat scenarios; the reference Kafka runs no retention check).
const baseTimestamp = 1700000000000

// setupTimeout bounds a setup step's polling.
const setupTimeout = 15 * time.Second

// mkBatch builds one v2 batch of n records with values "v0".."vN-1" (size
// bytes each when size > 0) and timestamps baseTimestamp+i.
func mkBatch(n int, ts int64, c batch.Compression, size int) []byte {
	recs := make([]batch.Record, n)
	for i := range recs {
		v := []byte(fmt.Sprintf("v%d", i))
		if size > 0 {
			v = []byte(strings.Repeat("x", size))
		}
		recs[i] = batch.Record{OffsetDelta: int32(i), TimestampDelta: int64(i), Value: v}
	}
	b, err := batch.AppendBatch(nil, batch.BuildOptions{
		Compression: c, BaseTimestamp: ts, ProducerID: -1, ProducerEpoch: -1,
		BaseSequence: -1, PartitionLeaderEpoch: -1,
	}, recs)
	if err != nil {
		panic(err)
	}
	return b
}

// recordsBatch builds one uncompressed v2 batch of recs at base timestamp ts.
func recordsBatch(ts int64, recs []batch.Record) []byte {
	b, err := batch.AppendBatch(nil, batch.BuildOptions{BaseTimestamp: ts, ProducerID: -1, ProducerEpoch: -1,
		BaseSequence: -1, PartitionLeaderEpoch: -1}, recs)
	if err != nil {
		panic(err)
	}
	return b
}

// messageV1 builds a legacy magic-1 message set of one message.
func messageV1(ts int64, value string) []byte {
	msg := []byte{1, 0} // magic, attributes
	msg = be64(msg, uint64(ts))
	msg = be32(msg, 0xffffffff) // null key
	msg = be32(msg, uint32(len(value)))
	msg = append(msg, value...)
	body := be32(nil, crc32.ChecksumIEEE(msg))
	body = append(body, msg...)
	out := be64(nil, 0)
	out = be32(out, uint32(len(body)))
	return append(out, body...)
}

func be64(b []byte, v uint64) []byte {
	return append(b, byte(v>>56), byte(v>>48), byte(v>>40), byte(v>>32), byte(v>>24), byte(v>>16), byte(v>>8), byte(v))
}

func be32(b []byte, v uint32) []byte {
	return append(b, byte(v>>24), byte(v>>16), byte(v>>8), byte(v))
}

func createTopicsReq(names []string, partitions int32, rf int16, configs map[string]string) *kmsg.CreateTopicsRequest {
	req := kmsg.NewPtrCreateTopicsRequest()
	req.Version = 7
	req.TimeoutMillis = 10000
	for _, name := range names {
		t := kmsg.NewCreateTopicsRequestTopic()
		t.Topic = name
		t.NumPartitions = partitions
		t.ReplicationFactor = rf
		for k, v := range configs {
			cfg := kmsg.NewCreateTopicsRequestTopicConfig()
			cfg.Name = k
			cfg.Value = kmsg.StringPtr(v)
			t.Configs = append(t.Configs, cfg)
		}
		req.Topics = append(req.Topics, t)
	}
	return req
}

// createTopic creates topic and waits until every partition has a leader.
func createTopic(c *conn, topic string, partitions int32, configs map[string]string) error {
	resp, err := c.roundTrip(createTopicsReq([]string{topic}, partitions, 1, configs))
	if err != nil {
		return err
	}
	if code := resp.(*kmsg.CreateTopicsResponse).Topics[0].ErrorCode; code != 0 {
		return fmt.Errorf("creating %s: %v", topic, kerr.ErrorForCode(code))
	}
	return waitTopic(c, topic, partitions)
}

func waitTopic(c *conn, topic string, partitions int32) error {
	deadline := time.Now().Add(setupTimeout)
	for {
		req := kmsg.NewPtrMetadataRequest()
		req.Version = 12
		mt := kmsg.NewMetadataRequestTopic()
		mt.Topic = kmsg.StringPtr(topic)
		req.Topics = append(req.Topics, mt)
		resp, err := c.roundTrip(req)
		if err != nil {
			return err
		}
		ready := false
		if ts := resp.(*kmsg.MetadataResponse).Topics; len(ts) == 1 && ts[0].ErrorCode == 0 && len(ts[0].Partitions) == int(partitions) {
			ready = true
			for _, p := range ts[0].Partitions {
				if p.ErrorCode != 0 || p.Leader < 0 {
					ready = false
				}
			}
		}
		if ready {
			ready, err = leading(c, topic, partitions)
			if err != nil {
				return err
			}
		}
		if ready {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("topic %s not ready after %v", topic, setupTimeout)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// leading reports whether the broker serves every partition of topic as
// leader: Kafka's metadata can name the leader a moment before its replica
// manager took the partition over (NOT_LEADER_OR_FOLLOWER meanwhile).
func leading(c *conn, topic string, partitions int32) (bool, error) {
	req := kmsg.NewPtrListOffsetsRequest()
	req.Version = 7
	req.ReplicaID = -1
	t := kmsg.NewListOffsetsRequestTopic()
	t.Topic = topic
	for i := range partitions {
		p := kmsg.NewListOffsetsRequestTopicPartition()
		p.Partition = i
		p.CurrentLeaderEpoch = -1
		p.Timestamp = -1
		t.Partitions = append(t.Partitions, p)
	}
	req.Topics = append(req.Topics, t)
	resp, err := c.roundTrip(req)
	if err != nil {
		return false, err
	}
	for _, rt := range resp.(*kmsg.ListOffsetsResponse).Topics {
		for _, rp := range rt.Partitions {
			if rp.ErrorCode != 0 {
				return false, nil
			}
		}
	}
	return true, nil
}

func produceReq(version int16, acks int16, topic string, partition int32, records []byte) *kmsg.ProduceRequest {
	req := kmsg.NewPtrProduceRequest()
	req.Version = version
	req.Acks = acks
	req.TimeoutMillis = 10000
	t := kmsg.NewProduceRequestTopic()
	t.Topic = topic
	p := kmsg.NewProduceRequestTopicPartition()
	p.Partition = partition
	p.Records = records
	t.Partitions = append(t.Partitions, p)
	req.Topics = append(req.Topics, t)
	return req
}

// produce writes records to partition 0 of topic (acks all), retrying
// retriable errors.
func produce(c *conn, topic string, records []byte) error {
	deadline := time.Now().Add(setupTimeout)
	for {
		resp, err := c.roundTrip(produceReq(9, -1, topic, 0, records))
		if err != nil {
			return err
		}
		code := resp.(*kmsg.ProduceResponse).Topics[0].Partitions[0].ErrorCode
		if code == 0 {
			return nil
		}
		kErr := kerr.ErrorForCode(code)
		if !kerr.IsRetriable(kErr) || time.Now().After(deadline) {
			return fmt.Errorf("producing to %s: %v", topic, kErr)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// topicWithData creates topic (one partition) holding two batches: offsets
// 0-2 and 3-4, timestamps baseTimestamp+0..2 and baseTimestamp+1000..1001.
func topicWithData(c *conn, topic string) error {
	if err := createTopic(c, topic, 1, nil); err != nil {
		return err
	}
	if err := produce(c, topic, mkBatch(3, baseTimestamp, batch.None, 0)); err != nil {
		return err
	}
	return produce(c, topic, mkBatch(2, baseTimestamp+1000, batch.None, 0))
}

func findCoordinatorReq(version int16, key string, typ int8) *kmsg.FindCoordinatorRequest {
	req := kmsg.NewPtrFindCoordinatorRequest()
	req.Version = version
	req.CoordinatorKey = key
	req.CoordinatorType = typ
	if version >= 4 {
		req.CoordinatorKeys = []string{key}
	}
	return req
}

// waitCoordinator waits until the coordinator of key (type typ) is
// available: Kafka creates its internal topic on the first request and
// answers COORDINATOR_NOT_AVAILABLE meanwhile, a timing difference the
// catalogue does not compare.
func waitCoordinator(c *conn, key string, typ int8) error {
	deadline := time.Now().Add(setupTimeout)
	for {
		resp, err := c.roundTrip(findCoordinatorReq(4, key, typ))
		if err != nil {
			return err
		}
		code := resp.(*kmsg.FindCoordinatorResponse).Coordinators[0].ErrorCode
		if code == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("coordinator of %q: %v", key, kerr.ErrorForCode(code))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func offsetCommitReq(group, topic string, offset int64) *kmsg.OffsetCommitRequest {
	req := kmsg.NewPtrOffsetCommitRequest()
	req.Version = 8
	req.Group = group
	req.Generation = -1
	t := kmsg.NewOffsetCommitRequestTopic()
	t.Topic = topic
	p := kmsg.NewOffsetCommitRequestTopicPartition()
	p.Partition = 0
	p.Offset = offset
	p.LeaderEpoch = -1
	t.Partitions = append(t.Partitions, p)
	req.Topics = append(req.Topics, t)
	return req
}

// commitSetup creates topic with data and commits offset 3 for group topic+"-g".
func commitSetup(c *conn, topic string) error {
	if err := topicWithData(c, topic); err != nil {
		return err
	}
	if err := waitCoordinator(c, topic+"-g", 0); err != nil {
		return err
	}
	resp, err := c.roundTrip(offsetCommitReq(topic+"-g", topic, 3))
	if err != nil {
		return err
	}
	if code := resp.(*kmsg.OffsetCommitResponse).Topics[0].Partitions[0].ErrorCode; code != 0 {
		return fmt.Errorf("commit: %v", kerr.ErrorForCode(code))
	}
	return nil
}
