package broker

// ElectLeaders (key 43), v0-v2.
//
// Behavior:
//   - on a cluster the active controller elects (coordinator/controller,
//     Kafka's ReplicationControlManager); another node forwards to it;
//     PREFERRED elects the first replica if in the ISR and unfenced,
//     UNCLEAN any unfenced replica of a leaderless partition;
//     ELECTION_NOT_NEEDED, PREFERRED_LEADER_NOT_AVAILABLE and
//     ELIGIBLE_LEADERS_NOT_AVAILABLE as Kafka;
//   - a single node never needs an election: ELECTION_NOT_NEEDED, and
//     UNKNOWN_TOPIC_OR_PARTITION with Kafka's messages;
//   - a null topic list means every partition, listing only those that
//     needed an election; an unknown election type is INVALID_REQUEST.
//
// Version notes:
//   - v1 adds the election type and the top-level error; v2 is flexible.
//
// docs/apis.md#electleaders has the details.

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-broker/gregor/coordinator/controller"
)

func init() { register(43, 0, 2, handleElectLeaders) }

// Election types (Kafka's ElectionType).
const (
	electionPreferred int8 = 0
	electionUnclean   int8 = 1
)

// electionNotNeeded is Kafka's message for ELECTION_NOT_NEEDED (Errors).
const electionNotNeeded = "Leader election not needed for topic partition."

func handleElectLeaders(b *Broker, r *request, req *kmsg.ElectLeadersRequest) (kmsg.Response, error) {
	resp := newResponse[*kmsg.ElectLeadersResponse](req)
	if req.ElectionType != electionPreferred && req.ElectionType != electionUnclean {
		// Kafka's ElectLeadersRequest.getErrorResponse: the request's
		// partitions, each with the request's error.
		msg := fmt.Sprintf("Unknown election type %d", req.ElectionType)
		resp.ErrorCode = kerr.InvalidRequest.Code
		for _, rt := range req.Topics {
			res := kmsg.NewElectLeadersResponseTopic()
			res.Topic = rt.Topic
			for _, p := range rt.Partitions {
				res.Partitions = append(res.Partitions, electionResult(p, kerr.InvalidRequest, msg))
			}
			resp.Topics = append(resp.Topics, res)
		}
		return resp, nil
	}
	if b.isCluster() {
		return b.cluster.electLeaders(r, req, resp)
	}

	b.mu.RLock()
	defer b.mu.RUnlock()
	if req.Topics == nil {
		// Every partition; none needs an election, so none is listed.
		for _, t := range b.catalog.sortedTopics() {
			res := kmsg.NewElectLeadersResponseTopic()
			res.Topic = t.name
			res.Partitions = []kmsg.ElectLeadersResponseTopicPartition{}
			resp.Topics = append(resp.Topics, res)
		}
		return resp, nil
	}
	for _, rt := range req.Topics {
		res := kmsg.NewElectLeadersResponseTopic()
		res.Topic = rt.Topic
		t := b.catalog.byName[rt.Topic]
		for _, p := range rt.Partitions {
			switch {
			case t == nil:
				res.Partitions = append(res.Partitions, electionResult(p, kerr.UnknownTopicOrPartition, "No such topic as "+rt.Topic))
			case p < 0 || int(p) >= len(t.partitions):
				res.Partitions = append(res.Partitions, electionResult(p, kerr.UnknownTopicOrPartition,
					fmt.Sprintf("No such partition as %s-%d", rt.Topic, p)))
			default:
				// The leader, this broker, is the preferred replica and live.
				res.Partitions = append(res.Partitions, electionResult(p, kerr.ElectionNotNeeded, electionNotNeeded))
			}
		}
		resp.Topics = append(resp.Topics, res)
	}
	return resp, nil
}

func electionResult(p int32, err *kerr.Error, msg string) kmsg.ElectLeadersResponseTopicPartition {
	res := kmsg.NewElectLeadersResponseTopicPartition()
	res.Partition, res.ErrorCode, res.ErrorMessage = p, err.Code, &msg
	return res
}

// electLeaders runs the request's elections on the active controller.
func (c *cluster) electLeaders(r *request, req *kmsg.ElectLeadersRequest, resp *kmsg.ElectLeadersResponse) (kmsg.Response, error) {
	var topics []controller.ElectionTopic
	if req.Topics != nil {
		topics = make([]controller.ElectionTopic, 0, len(req.Topics))
		for _, rt := range req.Topics {
			topics = append(topics, controller.ElectionTopic{Topic: rt.Topic, Partitions: rt.Partitions})
		}
	}
	var results []controller.ElectionTopicResult
	fwd, err := c.controllerCall(r, req, func(ctx context.Context) error {
		var err error
		results, err = c.ctrl.ElectLeaders(ctx, controller.ElectionType(req.ElectionType), topics)
		return err
	})
	if fwd != nil {
		return fwd, nil
	}
	if err != nil {
		// Kafka's ElectLeadersRequest.getErrorResponse.
		ke, msg := kerrOf(err)
		resp.ErrorCode = ke.Code
		for _, rt := range req.Topics {
			res := kmsg.NewElectLeadersResponseTopic()
			res.Topic = rt.Topic
			for _, p := range rt.Partitions {
				res.Partitions = append(res.Partitions, electionResult(p, ke, msg))
			}
			resp.Topics = append(resp.Topics, res)
		}
		return resp, nil
	}
	for _, tr := range results {
		res := kmsg.NewElectLeadersResponseTopic()
		res.Topic = tr.Topic
		res.Partitions = []kmsg.ElectLeadersResponseTopicPartition{}
		for _, pr := range tr.Partitions {
			sp := kmsg.NewElectLeadersResponseTopicPartition()
			sp.Partition = pr.Partition
			if pr.Err != nil {
				ke, msg := kerrOf(pr.Err)
				sp.ErrorCode, sp.ErrorMessage = ke.Code, &msg
			}
			res.Partitions = append(res.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, res)
	}
	return resp, nil
}
