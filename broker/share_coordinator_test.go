package broker

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestShareCoordinatorSurvivesRestart: share-partitions initialized and
// written through the broker's persister (b.shareState) are read back the
// same after the broker restarts on its data directory, from
// __share_group_state.
func TestShareCoordinatorSurvivesRestart(t *testing.T) {
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	b, err := Start(ctx, Config{DataDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	createTopics(t, ctx, b.Addr(), 4, "queue")
	id := b.lookupTopic("queue").id

	for p := range int32(4) {
		init := kmsg.NewPtrInitializeShareGroupStateRequest()
		init.GroupID = "sg"
		it := kmsg.NewInitializeShareGroupStateRequestTopic()
		it.TopicID = id
		ip := kmsg.NewInitializeShareGroupStateRequestTopicPartition()
		ip.Partition, ip.StateEpoch, ip.StartOffset = p, 1, 0
		it.Partitions = append(it.Partitions, ip)
		init.Topics = append(init.Topics, it)
		res, err := b.shares.initializeShareState(ctx, init)
		if err != nil || res.Topics[0].Partitions[0].ErrorCode != 0 {
			t.Fatalf("initialize %d: %v %+v", p, err, res)
		}

		w := kmsg.NewPtrWriteShareGroupStateRequest()
		w.Version, w.GroupID = 1, "sg"
		wt := kmsg.NewWriteShareGroupStateRequestTopic()
		wt.TopicID = id
		wp := kmsg.NewWriteShareGroupStateRequestTopicPartition()
		wp.Partition, wp.StateEpoch, wp.LeaderEpoch, wp.StartOffset = p, 1, 0, 3
		sb := kmsg.NewWriteShareGroupStateRequestTopicPartitionStateBatch()
		sb.FirstOffset, sb.LastOffset, sb.DeliveryState, sb.DeliveryCount = 3, 9, 2, int16(p+1)
		wp.StateBatches = append(wp.StateBatches, sb)
		wt.Partitions = append(wt.Partitions, wp)
		w.Topics = append(w.Topics, wt)
		wres, err := b.shareState.writeShareState(ctx, w)
		if err != nil || wres.Topics[0].Partitions[0].ErrorCode != 0 {
			t.Fatalf("write %d: %v %+v", p, err, wres)
		}
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}

	b = startBroker(t, Config{DataDir: dir})
	if b.lookupTopic(shareGroupStateTopic) == nil {
		t.Fatal(shareGroupStateTopic + " was not created")
	}
	for p := range int32(4) {
		r := kmsg.NewPtrReadShareGroupStateRequest()
		r.GroupID = "sg"
		rt := kmsg.NewReadShareGroupStateRequestTopic()
		rt.TopicID = id
		rp := kmsg.NewReadShareGroupStateRequestTopicPartition()
		rp.Partition = p
		rt.Partitions = append(rt.Partitions, rp)
		r.Topics = append(r.Topics, rt)
		res, err := b.shareState.readShareState(ctx, r)
		if err != nil {
			t.Fatal(err)
		}
		got := res.Topics[0].Partitions[0]
		if got.ErrorCode != 0 || got.StateEpoch != 1 || got.StartOffset != 3 || len(got.StateBatches) != 1 {
			t.Fatalf("partition %d after the restart: %+v", p, got)
		}
		if sb := got.StateBatches[0]; sb.FirstOffset != 3 || sb.LastOffset != 9 || sb.DeliveryState != 2 || sb.DeliveryCount != int16(p+1) {
			t.Fatalf("partition %d batch after the restart: %+v", p, sb)
		}
	}

}
