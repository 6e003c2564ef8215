package share

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

var (
	topicA = [16]byte{0xa}
	topicB = [16]byte{0xb}
	topicX = [16]byte{0xee} // not in the image
)

// image: topic A has 3 partitions, B has 1.
func image(id [16]byte) (int32, bool) {
	switch id {
	case topicA:
		return 3, true
	case topicB:
		return 1, true
	}
	return 0, false
}

var served = Inputs{Partitions: image}

// part is one partition of a request: its topic, and the fields the RPCs
// take (each RPC reads those it has).
type part struct {
	topic                   [16]byte
	partition               int32
	stateEpoch, leaderEpoch int32
	startOffset             int64
	dcc                     int32
	batches                 []Batch
}

func initReq(group string, ps ...part) *kmsg.InitializeShareGroupStateRequest {
	req := kmsg.NewPtrInitializeShareGroupStateRequest()
	req.GroupID = group
	for _, p := range ps {
		tp := kmsg.NewInitializeShareGroupStateRequestTopicPartition()
		tp.Partition, tp.StateEpoch, tp.StartOffset = p.partition, p.stateEpoch, p.startOffset
		t := kmsg.NewInitializeShareGroupStateRequestTopic()
		t.TopicID, t.Partitions = p.topic, []kmsg.InitializeShareGroupStateRequestTopicPartition{tp}
		req.Topics = append(req.Topics, t)
	}
	return req
}

func writeReq(group string, ps ...part) *kmsg.WriteShareGroupStateRequest {
	req := kmsg.NewPtrWriteShareGroupStateRequest()
	req.Version = 1
	req.GroupID = group
	for _, p := range ps {
		tp := kmsg.NewWriteShareGroupStateRequestTopicPartition()
		tp.Partition, tp.StateEpoch, tp.LeaderEpoch, tp.StartOffset, tp.DeliveryCompleteCount = p.partition, p.stateEpoch, p.leaderEpoch, p.startOffset, p.dcc
		for _, b := range p.batches {
			sb := kmsg.NewWriteShareGroupStateRequestTopicPartitionStateBatch()
			sb.FirstOffset, sb.LastOffset, sb.DeliveryState, sb.DeliveryCount = b.FirstOffset, b.LastOffset, b.DeliveryState, b.DeliveryCount
			tp.StateBatches = append(tp.StateBatches, sb)
		}
		t := kmsg.NewWriteShareGroupStateRequestTopic()
		t.TopicID, t.Partitions = p.topic, []kmsg.WriteShareGroupStateRequestTopicPartition{tp}
		req.Topics = append(req.Topics, t)
	}
	return req
}

func readReq(group string, ps ...part) *kmsg.ReadShareGroupStateRequest {
	req := kmsg.NewPtrReadShareGroupStateRequest()
	req.GroupID = group
	for _, p := range ps {
		tp := kmsg.NewReadShareGroupStateRequestTopicPartition()
		tp.Partition, tp.LeaderEpoch = p.partition, p.leaderEpoch
		t := kmsg.NewReadShareGroupStateRequestTopic()
		t.TopicID, t.Partitions = p.topic, []kmsg.ReadShareGroupStateRequestTopicPartition{tp}
		req.Topics = append(req.Topics, t)
	}
	return req
}

func summaryReq(group string, ps ...part) *kmsg.ReadShareGroupStateSummaryRequest {
	req := kmsg.NewPtrReadShareGroupStateSummaryRequest()
	req.Version = 1
	req.GroupID = group
	for _, p := range ps {
		tp := kmsg.NewReadShareGroupStateSummaryRequestTopicPartition()
		tp.Partition, tp.LeaderEpoch = p.partition, p.leaderEpoch
		t := kmsg.NewReadShareGroupStateSummaryRequestTopic()
		t.TopicID, t.Partitions = p.topic, []kmsg.ReadShareGroupStateSummaryRequestTopicPartition{tp}
		req.Topics = append(req.Topics, t)
	}
	return req
}

func deleteReq(group string, ps ...part) *kmsg.DeleteShareGroupStateRequest {
	req := kmsg.NewPtrDeleteShareGroupStateRequest()
	req.GroupID = group
	for _, p := range ps {
		tp := kmsg.NewDeleteShareGroupStateRequestTopicPartition()
		tp.Partition = p.partition
		t := kmsg.NewDeleteShareGroupStateRequestTopic()
		t.TopicID, t.Partitions = p.topic, []kmsg.DeleteShareGroupStateRequestTopicPartition{tp}
		req.Topics = append(req.Topics, t)
	}
	return req
}

// answer is one partition's answer, whichever the RPC.
type answer struct {
	topic     [16]byte
	partition int32
	code      int16
	msg       string // "" for none
}

func msgOf(m *string) string {
	if m == nil {
		return ""
	}
	return *m
}

// call sends req (one of the five request types) and flattens the
// answer's partitions.
func call(t *testing.T, c *Coordinator, now int64, req any, in Inputs) []answer {
	t.Helper()
	var out []answer
	switch r := req.(type) {
	case *kmsg.InitializeShareGroupStateRequest:
		for _, rt := range c.InitializeShareGroupState(now, r, in).Topics {
			for _, p := range rt.Partitions {
				out = append(out, answer{rt.TopicID, p.Partition, p.ErrorCode, msgOf(p.ErrorMessage)})
			}
		}
	case *kmsg.WriteShareGroupStateRequest:
		for _, rt := range c.WriteShareGroupState(now, r, in).Topics {
			for _, p := range rt.Partitions {
				out = append(out, answer{rt.TopicID, p.Partition, p.ErrorCode, msgOf(p.ErrorMessage)})
			}
		}
	case *kmsg.ReadShareGroupStateRequest:
		for _, rt := range c.ReadShareGroupState(now, r, in).Topics {
			for _, p := range rt.Partitions {
				out = append(out, answer{rt.TopicID, p.Partition, p.ErrorCode, msgOf(p.ErrorMessage)})
			}
		}
	case *kmsg.ReadShareGroupStateSummaryRequest:
		for _, rt := range c.ReadShareGroupStateSummary(now, r, in).Topics {
			for _, p := range rt.Partitions {
				out = append(out, answer{rt.TopicID, p.Partition, p.ErrorCode, msgOf(p.ErrorMessage)})
			}
		}
	case *kmsg.DeleteShareGroupStateRequest:
		for _, rt := range c.DeleteShareGroupState(now, r, in).Topics {
			for _, p := range rt.Partitions {
				out = append(out, answer{rt.TopicID, p.Partition, p.ErrorCode, msgOf(p.ErrorMessage)})
			}
		}
	default:
		t.Fatalf("not a share state request: %T", req)
	}
	return out
}

// mustOK sends req and fails unless every partition succeeds.
func mustOK(t *testing.T, c *Coordinator, now int64, req any) {
	t.Helper()
	for _, a := range call(t, c, now, req, served) {
		if a.code != 0 {
			t.Fatalf("%T: partition %d: code %d %q", req, a.partition, a.code, a.msg)
		}
	}
}

// rebuilt is a coordinator loaded from every record c has produced.
func rebuilt(t *testing.T, cfg Config, log []Record) *Coordinator {
	t.Helper()
	c := New(cfg)
	for _, r := range log {
		if err := c.Load(r.Key, r.Value); err != nil {
			t.Fatalf("the coordinator's own record does not load: %v", err)
		}
	}
	return c
}
