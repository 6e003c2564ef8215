package broker

// AlterPartition (key 56), v2-v3, partition leader to active controller.
//
// Behavior:
//   - a leader's ISR changes (partition/replica.go, replication/isr.go),
//     in cluster mode only and never advertised (see
//     62_broker_registration.go);
//   - NOT_CONTROLLER from a node whose controller is not active, for the
//     sender to find the active one again.
//
// Version notes:
//   - v2 names topics by id; v3 carries each new ISR member's broker epoch
//     (NewEpochISR).

import (
	"context"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-broker/gregor/coordinator/controller"
	"github.com/gregor-broker/gregor/coordinator/controller/metadata"
)

func init() { registerScoped(brokerToController, 56, 2, 3, handleAlterPartition) }

func handleAlterPartition(b *Broker, r *request, req *kmsg.AlterPartitionRequest) (kmsg.Response, error) {
	resp := newResponse[*kmsg.AlterPartitionResponse](req)
	areq := controller.AlterPartitionRequest{BrokerID: req.BrokerID, BrokerEpoch: req.BrokerEpoch}
	for _, rt := range req.Topics {
		for _, rp := range rt.Partitions {
			item := controller.AlterPartitionItem{TopicID: metadata.UUID(rt.TopicID), Partition: rp.Partition,
				LeaderEpoch: rp.LeaderEpoch, PartitionEpoch: rp.PartitionEpoch, NewISR: rp.NewISR}
			if req.Version >= 3 {
				item.NewISR = make([]int32, len(rp.NewEpochISR))
				for i, m := range rp.NewEpochISR {
					item.NewISR[i] = m.BrokerID
				}
			}
			areq.Partitions = append(areq.Partitions, item)
		}
	}
	ctx, cancel := context.WithTimeout(r.ctx, 30*time.Second)
	defer cancel()
	results, err := b.cluster.ctrl.AlterPartition(ctx, areq)
	if err != nil {
		resp.ErrorCode = controller.ErrorCode(err)
		return resp, nil
	}
	i := 0
	for _, rt := range req.Topics {
		st := kmsg.NewAlterPartitionResponseTopic()
		st.TopidID = rt.TopicID // kmsg's spelling
		for range rt.Partitions {
			res := results[i]
			i++
			sp := kmsg.NewAlterPartitionResponseTopicPartition()
			sp.Partition = res.Partition
			sp.ErrorCode = controller.ErrorCode(res.Err)
			if res.Err == nil {
				sp.LeaderID, sp.LeaderEpoch, sp.ISR, sp.PartitionEpoch = res.Leader, res.LeaderEpoch, res.ISR, res.PartitionEpoch
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp, nil
}

// alterPartition forwards one partition's AlterPartition to the active
// controller's node. The result's Err is the partition's error; the
// returned error is the request's (transport, NOT_CONTROLLER,
// STALE_BROKER_EPOCH).
func (r *controllerRPC) alterPartition(ctx context.Context, addr string, areq controller.AlterPartitionRequest, epochs map[int32]int64) (controller.AlterPartitionResult, error) {
	if len(areq.Partitions) != 1 {
		return controller.AlterPartitionResult{}, fmt.Errorf("broker: forwarding %d partitions in one AlterPartition", len(areq.Partitions))
	}
	item := areq.Partitions[0]
	req := kmsg.NewPtrAlterPartitionRequest()
	req.BrokerID, req.BrokerEpoch = areq.BrokerID, areq.BrokerEpoch
	rt := kmsg.NewAlterPartitionRequestTopic()
	rt.TopicID = item.TopicID
	rp := kmsg.NewAlterPartitionRequestTopicPartition()
	rp.Partition, rp.LeaderEpoch, rp.PartitionEpoch = item.Partition, item.LeaderEpoch, item.PartitionEpoch
	rp.NewISR = item.NewISR // v2; do fills NewEpochISR for v3 below
	for _, id := range item.NewISR {
		m := kmsg.NewAlterPartitionRequestTopicPartitionNewEpochISR()
		m.BrokerID, m.BrokerEpoch = id, -1
		if e, ok := epochs[id]; ok {
			m.BrokerEpoch = e
		}
		rp.NewEpochISR = append(rp.NewEpochISR, m)
	}
	rt.Partitions = []kmsg.AlterPartitionRequestTopicPartition{rp}
	req.Topics = []kmsg.AlterPartitionRequestTopic{rt}
	raw, err := r.do(ctx, addr, req)
	if err != nil {
		return controller.AlterPartitionResult{}, err
	}
	resp := raw.(*kmsg.AlterPartitionResponse)
	if err := codeErr(resp.ErrorCode, nil); err != nil {
		return controller.AlterPartitionResult{}, err
	}
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		return controller.AlterPartitionResult{}, fmt.Errorf("broker: the controller answered an AlterPartition of one partition with %d topics: %w", len(resp.Topics), kerr.UnknownServerError)
	}
	sp := resp.Topics[0].Partitions[0]
	return controller.AlterPartitionResult{TopicID: item.TopicID, Partition: sp.Partition, Err: codeErr(sp.ErrorCode, nil),
		Leader: sp.LeaderID, LeaderEpoch: sp.LeaderEpoch, PartitionEpoch: sp.PartitionEpoch, ISR: sp.ISR}, nil
}
