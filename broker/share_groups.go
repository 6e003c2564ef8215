package broker

// The group coordinator's side of share groups (KIP-932): the share-group
// state the group coordinator has the share coordinator initialize before
// it assigns a partition, and delete with the group, through the broker's
// sharePersister, as Kafka's GroupCoordinatorService does with its
// Persister.
//
// Initialization: a ShareGroupHeartbeat that finds partitions of a
// subscribed topic without state writes them as initializing
// (ShareGroupStatePartitionMetadata) and leaves a group.ShareStateInit in
// the coordinator's effects. Once that record is appended (groupShard's
// Answered), a goroutine asks the share coordinator to
// InitializeShareGroupState (start offset -1: share.auto.offset.reset
// decides it when the partition is first fetched) and reports the
// partitions it initialized back with Coordinator.InitializeShareGroupState,
// which writes them as initialized; the next heartbeat assigns them. The
// heartbeat that asked is answered at once, without waiting. Partitions
// the share coordinator refused stay initializing and are asked again
// after group.share.initialize.retry.interval.ms (Kafka instead
// uninitializes them at once, so its next heartbeat asks again).

import (
	"context"
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-broker/gregor/coordinator/group"
)

// shareGroupsServed reports whether the broker serves share groups
// (KIP-932). Until ShareGroupHeartbeat, ShareGroupDescribe, ShareFetch and
// ShareAcknowledge all work end to end, only tests switch them on
// (Config.testHooks.shareGroups), and no share group key is advertised.
func (b *Broker) shareGroupsServed() bool { return b.cfg.testHooks.shareGroups }

// errNoSharePersister is returned while the share coordinator is not
// running.
var errNoSharePersister = errors.New("broker: the share coordinator is not running")

// initializeShareState has the share coordinator initialize init's
// partitions, then reports those it initialized to the group coordinator.
// It runs on a goroutine of its own, started once the records asking for
// it are appended; it ends early when the group coordinator stops.
func (gc *groupCoordinator) initializeShareState(init group.ShareStateInit) {
	ctx := gc.rt.Context()
	persister := gc.b.shareState
	if persister == nil {
		gc.b.log.Warn("share-group state not initialized", "group", init.GroupID, "err", errNoSharePersister)
		return
	}
	req := kmsg.NewPtrInitializeShareGroupStateRequest()
	req.GroupID = init.GroupID
	for _, t := range init.Topics {
		rt := kmsg.NewInitializeShareGroupStateRequestTopic()
		rt.TopicID = t.TopicID
		for _, p := range t.Partitions {
			rp := kmsg.NewInitializeShareGroupStateRequestTopicPartition()
			rp.Partition, rp.StateEpoch, rp.StartOffset = p, init.StateEpoch, -1
			rt.Partitions = append(rt.Partitions, rp)
		}
		req.Topics = append(req.Topics, rt)
	}
	res, err := persister.initializeShareState(ctx, req)
	if err != nil {
		if ctx.Err() == nil {
			gc.b.log.Warn("share-group state not initialized", "group", init.GroupID, "err", err)
		}
		return
	}
	var done []group.OwnedTopic
	for _, t := range res.Topics {
		ok := group.OwnedTopic{TopicID: t.TopicID}
		for _, p := range t.Partitions {
			if p.ErrorCode != 0 {
				gc.b.log.Warn("share-group state of a partition not initialized", "group", init.GroupID,
					"partition", p.Partition, "err", kerr.ErrorForCode(p.ErrorCode))
				continue
			}
			ok.Partitions = append(ok.Partitions, p.Partition)
		}
		if len(ok.Partitions) > 0 {
			done = append(done, ok)
		}
	}
	if len(done) == 0 {
		return
	}
	// An error here is the runtime stopping: the partitions stay
	// initializing in the log and are asked again after a restart.
	_ = gc.rt.Run(ctx, func(s *groupShard, now int64) { s.c.InitializeShareGroupState(now, init.GroupID, done) })
}

// deleteShareGroupsState deletes the share-group state of the empty share
// groups among ids, before DeleteGroups deletes the groups, as Kafka's
// GroupCoordinatorService.deleteGroups does. It returns the groups whose
// state could not be deleted, with the error code to answer them (the
// share coordinator's first refusal); they are not deleted. A group that
// is not an empty share group is left to DeleteGroups.
func (b *Broker) deleteShareGroupsState(r *request, ids []string) (map[string]int16, error) {
	held := map[string][]group.OwnedTopic{}
	if err := b.groups.read(r, func(c *group.Coordinator, now int64) {
		for _, id := range ids {
			if parts, ok := c.ShareGroupStatePartitions(now, id); ok && len(parts) > 0 {
				held[id] = parts
			}
		}
	}); err != nil {
		return nil, err
	}
	failed := map[string]int16{}
	for id, parts := range held {
		if code := b.deleteShareState(r.ctx, id, parts); code != 0 {
			failed[id] = code
		}
	}
	return failed, nil
}

// deleteShareState has the share coordinator delete groupID's state of
// parts and returns the first partition's error code, 0 if none.
func (b *Broker) deleteShareState(ctx context.Context, groupID string, parts []group.OwnedTopic) int16 {
	persister := b.shareState
	if persister == nil {
		return kerr.CoordinatorNotAvailable.Code
	}
	req := kmsg.NewPtrDeleteShareGroupStateRequest()
	req.GroupID = groupID
	for _, t := range parts {
		rt := kmsg.NewDeleteShareGroupStateRequestTopic()
		rt.TopicID = t.TopicID
		for _, p := range t.Partitions {
			rp := kmsg.NewDeleteShareGroupStateRequestTopicPartition()
			rp.Partition = p
			rt.Partitions = append(rt.Partitions, rp)
		}
		req.Topics = append(req.Topics, rt)
	}
	res, err := persister.deleteShareState(ctx, req)
	if err != nil {
		b.log.Warn("share-group state not deleted", "group", groupID, "err", err)
		return kerr.CoordinatorNotAvailable.Code
	}
	for _, t := range res.Topics {
		for _, p := range t.Partitions {
			if p.ErrorCode != 0 {
				return p.ErrorCode
			}
		}
	}
	return 0
}
