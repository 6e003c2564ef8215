package main

// KIP-848 consumer groups: ConsumerGroupHeartbeat and ConsumerGroupDescribe,
// and what the classic-group APIs answer about a consumer group. Topic ids
// are random per broker and masked.

import (
	"fmt"
	"sort"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

var topicIDMask = []string{"Assignment.Topics.*.TopicID", "Groups.*.Members.*.Assignment.TopicPartitions.*.TopicID",
	"Groups.*.Members.*.TargetAssignment.TopicPartitions.*.TopicID"}

// cghb builds a v1 ConsumerGroupHeartbeat for group topic+"-cg". epoch 0
// is a full join subscribed to topic.
func cghb(topic, member string, epoch int32) *kmsg.ConsumerGroupHeartbeatRequest {
	req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	req.Version = 1
	req.Group, req.MemberID, req.MemberEpoch = topic+"-cg", member, epoch
	if epoch == 0 {
		req.RebalanceTimeoutMillis = 30000
		req.SubscribedTopicNames = []string{topic}
		req.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
	}
	return req
}

// joinEpoch is the member epoch the side being run answered
// joinedConsumerGroup's join with: 1 from Kafka 4.2.2, the reference, 2
// from Gregor, whose new consumer groups start at epoch 1 as Kafka 4.4's
// do. The entries after that setup send epochs relative to it, so that
// "the member's epoch" and "a stale epoch" mean the same on both sides
// (rawdiff runs an entry's setup and request on one side, then the other).
var joinEpoch int32

// joinedConsumerGroup creates topic (2 partitions) and joins member
// topic+"-m1" to group topic+"-cg" with the consumer protocol.
func joinedConsumerGroup(c *conn, topic string) error {
	if err := createTopic(c, topic, 2, nil); err != nil {
		return err
	}
	if err := waitCoordinator(c, topic+"-cg", 0); err != nil {
		return err
	}
	// Kafka may still be loading the coordinator's partition: retry.
	deadline := time.Now().Add(15 * time.Second)
	for {
		resp, err := c.roundTrip(cghb(topic, topic+"-m1", 0))
		if err != nil {
			return err
		}
		r := resp.(*kmsg.ConsumerGroupHeartbeatResponse)
		retriable := r.ErrorCode == kerr.NotCoordinator.Code || r.ErrorCode == kerr.CoordinatorLoadInProgress.Code ||
			r.ErrorCode == kerr.CoordinatorNotAvailable.Code
		if retriable && time.Now().Before(deadline) {
			time.Sleep(100 * time.Millisecond)
			continue
		}
		if r.ErrorCode != 0 || r.MemberEpoch < 1 {
			return fmt.Errorf("join: %v epoch %d", kerr.ErrorForCode(r.ErrorCode), r.MemberEpoch)
		}
		joinEpoch = r.MemberEpoch
		return nil
	}
}

func consumerGroupCoordinator(c *conn, topic string) error {
	if err := createTopic(c, topic, 2, nil); err != nil {
		return err
	}
	return waitCoordinator(c, topic+"-cg", 0)
}

var consumerGroupEntries = []entry{
	{name: "ConsumerGroupHeartbeat v1 join", setup: consumerGroupCoordinator, mask: topicIDMask,
		req: func(topic string) kmsg.Request { return cghb(topic, topic+"-m1", 0) }},
	{name: "ConsumerGroupHeartbeat v1 steady heartbeat", setup: joinedConsumerGroup, mask: topicIDMask,
		req: func(topic string) kmsg.Request { return cghb(topic, topic+"-m1", joinEpoch) }},
	{name: "ConsumerGroupHeartbeat v1 second member", setup: joinedConsumerGroup, mask: topicIDMask,
		req: func(topic string) kmsg.Request { return cghb(topic, topic+"-m2", 0) }},
	{name: "ConsumerGroupHeartbeat v1 unknown group", setup: consumerGroupCoordinator,
		req: func(topic string) kmsg.Request { return cghb(topic, topic+"-m1", 3) }},
	{name: "ConsumerGroupHeartbeat v1 unknown member", setup: joinedConsumerGroup,
		req: func(topic string) kmsg.Request { return cghb(topic, topic+"-m9", joinEpoch) }},
	{name: "ConsumerGroupHeartbeat v1 epoch ahead", setup: joinedConsumerGroup,
		req: func(topic string) kmsg.Request { return cghb(topic, topic+"-m1", joinEpoch+4) }},
	{name: "ConsumerGroupHeartbeat v1 empty member id", setup: consumerGroupCoordinator,
		req: func(topic string) kmsg.Request { return cghb(topic, "", 0) }},
	{name: "ConsumerGroupHeartbeat v1 join without subscription", setup: consumerGroupCoordinator,
		req: func(topic string) kmsg.Request {
			r := cghb(topic, topic+"-m1", 0)
			r.SubscribedTopicNames = nil
			return r
		}},
	{name: "ConsumerGroupHeartbeat v1 unknown assignor", setup: consumerGroupCoordinator,
		req: func(topic string) kmsg.Request {
			r := cghb(topic, topic+"-m1", 0)
			r.ServerAssignor = kmsg.StringPtr("sticky")
			return r
		}},
	{name: "ConsumerGroupHeartbeat v1 invalid regex", setup: consumerGroupCoordinator,
		req: func(topic string) kmsg.Request {
			r := cghb(topic, topic+"-m1", 0)
			r.SubscribedTopicNames, r.SubscribedTopicRegex = nil, kmsg.StringPtr("([")
			return r
		}},
	{name: "ConsumerGroupHeartbeat v1 names and empty regex", setup: consumerGroupCoordinator, mask: topicIDMask,
		req: func(topic string) kmsg.Request {
			r := cghb(topic, topic+"-m1", 0)
			r.SubscribedTopicRegex = kmsg.StringPtr("")
			return r
		}},
	{name: "ConsumerGroupHeartbeat v1 regex over internal topics", setup: internalTopicsSetup,
		raw: regexOverInternalTopics},
	{name: "ConsumerGroupHeartbeat v1 leave", setup: joinedConsumerGroup,
		req: func(topic string) kmsg.Request { return cghb(topic, topic+"-m1", -1) }},
	{name: "ConsumerGroupHeartbeat v1 static leave without instance id", setup: joinedConsumerGroup,
		req: func(topic string) kmsg.Request { return cghb(topic, topic+"-m1", -2) }},
	{name: "ConsumerGroupDescribe v1 consumer group", setup: joinedConsumerGroup, mask: topicIDMask,
		req: consumerGroupDescribe("-cg")},
	{name: "ConsumerGroupDescribe v1 unknown and classic groups", setup: commitSetup,
		req: consumerGroupDescribe("-g", "-none")},
	{name: "DescribeGroups v5 consumer group", setup: joinedConsumerGroup,
		req: describeGroups(5, "-cg")},
	{name: "DescribeGroups v6 consumer group", setup: joinedConsumerGroup,
		req: describeGroups(6, "-cg")},
	{name: "OffsetCommit v9 consumer group stale epoch", setup: joinedConsumerGroup,
		req: func(topic string) kmsg.Request { return memberCommit(topic, joinEpoch+1) }},
	{name: "OffsetCommit v9 consumer group current epoch", setup: joinedConsumerGroup,
		req: func(topic string) kmsg.Request { return memberCommit(topic, joinEpoch) }},
	{name: "OffsetFetch v9 consumer group stale epoch", setup: joinedConsumerGroup,
		req: func(topic string) kmsg.Request {
			req := kmsg.NewPtrOffsetFetchRequest()
			req.Version = 9
			g := kmsg.NewOffsetFetchRequestGroup()
			g.Group, g.MemberID, g.MemberEpoch = topic+"-cg", kmsg.StringPtr(topic+"-m1"), 7
			req.Groups = append(req.Groups, g)
			return req
		}},
	{name: "JoinGroup v9 into a consumer group", setup: joinedConsumerGroup,
		req: func(topic string) kmsg.Request {
			req := kmsg.NewPtrJoinGroupRequest()
			req.Version = 9
			req.Group, req.MemberID, req.ProtocolType = topic+"-cg", "", "consumer"
			req.SessionTimeoutMillis, req.RebalanceTimeoutMillis = 10000, 10000
			p := kmsg.NewJoinGroupRequestProtocol()
			p.Name, p.Metadata = "range", []byte{0, 0, 0, 0, 0, 0, 0, 0}
			req.Protocols = append(req.Protocols, p)
			return req
		}, mask: []string{"MemberID"}},
}

func memberCommit(topic string, epoch int32) kmsg.Request {
	req := kmsg.NewPtrOffsetCommitRequest()
	req.Version = 9
	req.Group, req.MemberID, req.Generation = topic+"-cg", topic+"-m1", epoch
	rt := kmsg.NewOffsetCommitRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewOffsetCommitRequestTopicPartition()
	rp.Partition, rp.Offset, rp.LeaderEpoch = 0, 1, -1
	rt.Partitions = []kmsg.OffsetCommitRequestTopicPartition{rp}
	req.Topics = []kmsg.OffsetCommitRequestTopic{rt}
	return req
}

// internalTopicsSetup makes both internal topics exist: a transactional
// producer initialized, and the group coordinator of topic+"-cg" found.
// (Kafka creates an internal topic at FindCoordinator; Gregor's single node
// at the first request that needs it.)
func internalTopicsSetup(c *conn, topic string) error {
	if err := txnInitSetup(c, topic); err != nil {
		return err
	}
	return waitCoordinator(c, topic+"-cg", 0)
}

// regexOverInternalTopics joins a member whose regex names the two internal
// topics beside topic, heartbeats until its assignment has held still for
// 1.5 s, and returns the names of the topics it was assigned: which topics
// a broker's regex resolution lets a subscription match. (Partition counts
// differ: the reference runs its internal topics with one partition.)
func regexOverInternalTopics(c *conn, topic string) (any, error) {
	req := cghb(topic, topic+"-m1", 0)
	req.SubscribedTopicNames = nil
	req.SubscribedTopicRegex = kmsg.StringPtr("__consumer_offsets|__transaction_state|" + topic)
	var assigned [][16]byte
	var lastChange time.Time
	deadline := time.Now().Add(setupTimeout)
	for time.Now().Before(deadline) {
		resp, err := c.roundTrip(req)
		if err != nil {
			return nil, err
		}
		r := resp.(*kmsg.ConsumerGroupHeartbeatResponse)
		if r.ErrorCode != 0 {
			return nil, fmt.Errorf("heartbeat: %v", kerr.ErrorForCode(r.ErrorCode))
		}
		if r.Assignment != nil {
			assigned = assigned[:0]
			for _, t := range r.Assignment.Topics {
				assigned = append(assigned, t.TopicID)
			}
			lastChange = time.Now()
		}
		if len(assigned) > 0 && time.Since(lastChange) > 1500*time.Millisecond {
			names, err := topicNamesByID(c)
			if err != nil {
				return nil, err
			}
			out := make([]string, 0, len(assigned))
			for _, id := range assigned {
				out = append(out, names[id])
			}
			sort.Strings(out)
			return out, nil
		}
		req = cghb(topic, topic+"-m1", r.MemberEpoch)
		req.MemberID = *r.MemberID
		time.Sleep(200 * time.Millisecond)
	}
	return nil, fmt.Errorf("the assignment of %s did not settle", topic)
}

// topicNamesByID lists every topic of the cluster by its id.
func topicNamesByID(c *conn) (map[[16]byte]string, error) {
	req := kmsg.NewPtrMetadataRequest()
	req.Version = 12
	resp, err := c.roundTrip(req)
	if err != nil {
		return nil, err
	}
	names := map[[16]byte]string{}
	for _, t := range resp.(*kmsg.MetadataResponse).Topics {
		names[t.TopicID] = *t.Topic
	}
	return names, nil
}
