package broker

import (
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// A CreateTopics or CreatePartitions request past Kafka's controller bound
// of 10000 records is refused whole with POLICY_VIOLATION and Kafka's
// message, before anything is created (compat-tests/rawdiff "CreateTopics
// 10001 partitions" and its neighbours compare the answers with Kafka's).
func TestRequestBoundsRefuseWholeRequests(t *testing.T) {
	t.Parallel()
	b := startBroker(t, Config{NumPartitions: 3})
	c := dialRaw(t, b.Addr())
	createTopic(t, c, "exists", 1, nil)

	type topic struct {
		name       string
		partitions int32
		configs    int
	}
	create := func(validateOnly bool, topics ...topic) []kmsg.CreateTopicsResponseTopic {
		req := kmsg.NewPtrCreateTopicsRequest()
		req.SetVersion(7)
		req.TimeoutMillis, req.ValidateOnly = 30000, validateOnly
		for _, tp := range topics {
			rt := kmsg.NewCreateTopicsRequestTopic()
			rt.Topic, rt.NumPartitions, rt.ReplicationFactor = tp.name, tp.partitions, -1
			for i := range tp.configs {
				cfg := kmsg.NewCreateTopicsRequestTopicConfig()
				// Distinct keys are not needed: each config given is a record.
				cfg.Name, cfg.Value = "retention.ms", kmsg.StringPtr(fmt.Sprint(1000+i))
				rt.Configs = append(rt.Configs, cfg)
			}
			req.Topics = append(req.Topics, rt)
		}
		return c.do(req).(*kmsg.CreateTopicsResponse).Topics
	}
	tests := []struct {
		name         string
		validateOnly bool
		topics       []topic
		want         []*kerr.Error
		msg          string
	}{
		{"one topic over", false, []topic{{"big", 10001, 0}}, []*kerr.Error{kerr.PolicyViolation}, msgTooManyPartitions},
		{"the largest count", false, []topic{{"huge", 2147483647, 0}}, []*kerr.Error{kerr.PolicyViolation}, msgTooManyPartitions},
		{"two topics over together", false, []topic{{"a", 6000, 0}, {"b", 4001, 0}}, []*kerr.Error{kerr.PolicyViolation, kerr.PolicyViolation}, msgTooManyPartitions},
		// A topic that would fail anyway still counts in the sum.
		{"a failing topic counts", false, []topic{{"exists", 9000, 0}, {"c", 1001, 0}}, []*kerr.Error{kerr.PolicyViolation, kerr.PolicyViolation}, msgTooManyPartitions},
		// -1 is num.partitions (3 here).
		{"defaults count", true, []topic{{"d", 9998, 0}, {"e", -1, 0}}, []*kerr.Error{kerr.PolicyViolation, kerr.PolicyViolation}, msgTooManyPartitions},
		// 10000 partitions and the topic's own record make 10001 records.
		{"records over", true, []topic{{"f", 10000, 0}}, []*kerr.Error{kerr.PolicyViolation}, msgBatchTooLarge},
		{"config records count", true, []topic{{"g", 9995, 5}}, []*kerr.Error{kerr.PolicyViolation}, msgBatchTooLarge},
		// A topic that fails makes no records.
		{"failing topics make no records", true, []topic{{"h", 9990, 0}, {"exists", 5, 9}}, []*kerr.Error{nil, kerr.TopicAlreadyExists}, ""},
		{"at the bound", true, []topic{{"i", 9999, 0}}, []*kerr.Error{nil}, ""},
	}
	for _, tt := range tests {
		got := create(tt.validateOnly, tt.topics...)
		if len(got) != len(tt.want) {
			t.Fatalf("%s: %d answers, want %d", tt.name, len(got), len(tt.want))
		}
		for i, st := range got {
			if e := kerr.ErrorForCode(st.ErrorCode); e != tt.want[i] && !(e == nil && tt.want[i] == nil) {
				t.Errorf("%s: %s: %v, want %v", tt.name, st.Topic, e, tt.want[i])
				continue
			}
			if tt.msg != "" && (st.ErrorMessage == nil || *st.ErrorMessage != tt.msg || st.NumPartitions != -1) {
				t.Errorf("%s: %s: message %v, partitions %d", tt.name, st.Topic, st.ErrorMessage, st.NumPartitions)
			}
		}
	}
	md := c.do(metadataRequest()).(*kmsg.MetadataResponse)
	if len(md.Topics) != 1 || *md.Topics[0].Topic != "exists" {
		t.Fatalf("topics after the refusals: %d (only exists wanted)", len(md.Topics))
	}

	grow := func(count int32, validateOnly bool) kmsg.CreatePartitionsResponseTopic {
		req := kmsg.NewPtrCreatePartitionsRequest()
		req.TimeoutMillis, req.ValidateOnly = 30000, validateOnly
		rt := kmsg.NewCreatePartitionsRequestTopic()
		rt.Topic, rt.Count = "exists", count
		req.Topics = append(req.Topics, rt)
		return c.do(req).(*kmsg.CreatePartitionsResponse).Topics[0]
	}
	if st := grow(10002, false); st.ErrorCode != kerr.PolicyViolation.Code || st.ErrorMessage == nil || *st.ErrorMessage != msgTooManyAdditionalPartitions {
		t.Fatalf("grow by 10001: %v %v", kerr.ErrorForCode(st.ErrorCode), st.ErrorMessage)
	}
	if st := grow(10001, true); st.ErrorCode != 0 {
		t.Fatalf("grow by 10000, validate only: %v", kerr.ErrorForCode(st.ErrorCode))
	}
}
