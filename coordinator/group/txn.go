package group

// Transactional offset commits (TxnOffsetCommit, KIP-98 and KIP-447), after
// Kafka's OffsetMetadataManager: commitTransactionalOffset, replay with a
// producer id, replayEndTransactionMarker.
//
// A transactional commit is validated against the group like an
// OffsetCommit, but with the rules of a transaction (no REBALANCE_IN_PROGRESS,
// no UNKNOWN_MEMBER_ID for an old client that sends no member, a stale
// member epoch answered ILLEGAL_GENERATION). Its offsets are not committed
// yet: they wait, per producer id, for the producer's transaction to end.
// Their records go to __consumer_offsets at once, in a transactional batch
// of the producer (Record.Txn), so that the log holds them as Kafka's does.
//
// The transaction ends with a marker in the group's __consumer_offsets
// partition, written by the driver, which then calls CompleteTransaction:
// a commit makes the producer's pending offsets of the groups of that
// partition the committed ones, an abort drops them. Until then OffsetFetch
// shows the previous committed offset, and with RequireStable answers
// UNSTABLE_OFFSET_COMMIT for a partition with a pending offset.
//
// Kafka keeps the log offset of every committed offset and materialises a
// transactional offset only if its record is newer than the committed
// one's: a plain OffsetCommit written after the transactional one wins,
// whatever order the marker comes in. Gregor orders records the same way
// without knowing their offsets: every offset record is numbered as it is
// made (committedOffset.seq), live or loaded, and the driver writes and
// loads __consumer_offsets in that order, partition by partition. Only
// offsets of one group, hence of one partition, are ever compared.
//
// A tombstone for a partition (OffsetDelete, DeleteGroups, expiry) drops
// the committed offset and the pending offsets of the group's open
// transactions for it, as replaying one does in Kafka; OffsetDelete and
// DeleteGroups write one for a partition with only a pending offset, and
// expiry neither removes an offset with one pending nor deletes a group
// with an open transaction.

import (
	"sort"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Producer names the transactional producer a record is written for.
type Producer struct {
	ID    int64
	Epoch int16
}

// TxnCommitRequest is a TxnOffsetCommit.
type TxnCommitRequest struct {
	GroupID  string
	Producer Producer
	// Generation, MemberID and InstanceID are v3+'s (KIP-447): -1, "" and
	// nil before.
	Generation int32
	MemberID   string
	InstanceID *string
	Topics     []CommitTopic
	// AppendError, if set, is how the group's __consumer_offsets partition
	// would refuse the producer's batch (INVALID_PRODUCER_EPOCH for an
	// epoch older than the partition's), found by the driver just before
	// this event. Kafka meets it when the append fails, after the group
	// checks; the coordinator answers it after them too, and writes and
	// keeps nothing.
	AppendError *kerr.Error
}

// CommitTxnOffsets handles a TxnOffsetCommit (Kafka's
// OffsetMetadataManager.commitTransactionalOffset): the answer is a
// *CommitResult; the offsets wait for CompleteTransaction.
func (c *Coordinator) CommitTxnOffsets(now int64, id ReplyID, req TxnCommitRequest) {
	c.fireDueTimers(req.GroupID, now, nil)
	e := c.validateTxnCommit(req)
	if e == nil && req.AppendError != nil {
		e = req.AppendError
	}
	g := c.groups[req.GroupID]
	if e == nil && g == nil {
		// A simple group, created by its first manual commit, as Kafka's
		// getOrMaybeCreateClassicGroup.
		g = newGroup(req.GroupID, now)
		c.groups[req.GroupID] = g
	}
	producer := req.Producer
	c.reply(id, c.commitEach(now, e, req.Topics, func(tp topicPartition, co committedOffset) {
		c.addPending(producer.ID, g.id, tp, co)
		c.pending.Records = append(c.pending.Records, Record{GroupID: g.id, Key: offsetKey(g.id, tp.topic, tp.partition),
			Value: offsetValue(co), Txn: &producer})
	}))
}

// validateTxnCommit is Kafka's validateTransactionalOffsetCommit with
// ClassicGroup's and ConsumerGroup's validateOffsetCommit for a
// transactional commit. It creates nothing.
func (c *Coordinator) validateTxnCommit(req TxnCommitRequest) *kerr.Error {
	if req.GroupID == "" {
		return kerr.InvalidGroupID
	}
	g := c.groups[req.GroupID]
	switch {
	case g == nil && req.Generation < 0:
		return nil // a simple group, created on commit
	case g == nil:
		return kerr.IllegalGeneration
	case g.sg != nil:
		return kerr.GroupIDNotFound // ShareGroup.validateOffsetCommit
	case g.cg != nil:
		cg := g.cg
		if req.Generation < 0 && len(cg.members) == 0 {
			return nil
		}
		if req.Generation == -1 && req.MemberID == "" && req.InstanceID == nil {
			// A producer older than KIP-447 sends no member: accepted
			// whatever the members.
			return nil
		}
		m := cg.members[req.MemberID]
		if m == nil {
			return kerr.UnknownMemberID
		}
		if req.Generation != m.epoch {
			// ConsumerGroup answers STALE_MEMBER_EPOCH, which Kafka turns
			// into ILLEGAL_GENERATION for a transactional commit: that is
			// what a transactional producer understands.
			return kerr.IllegalGeneration
		}
		return nil
	case g.state == Dead:
		return kerr.CoordinatorNotAvailable
	case req.Generation < 0 && g.state == Empty:
		return nil
	case req.Generation >= 0 || req.MemberID != "" || req.InstanceID != nil:
		if e := g.validateMember(req.MemberID, req.InstanceID); e != nil {
			return e
		}
		if req.Generation != g.generation {
			return kerr.IllegalGeneration
		}
	}
	// Unlike OffsetCommit, a transactional commit without a member is
	// accepted in any state, and a CompletingRebalance group is no reason
	// to refuse one: the transaction, not the group, decides.
	return nil
}

// CompleteTransaction applies the marker the driver wrote for producer
// pid in __consumer_offsets partition partition (of partitions): the
// producer's pending offsets of the groups in that partition become the
// committed ones (commit) or are dropped (abort), as Kafka's
// replayEndTransactionMarker. A committed offset replaces the current one
// only if its record is newer. It produces no effects and is also how a
// marker is replayed at load.
func (c *Coordinator) CompleteTransaction(now int64, pid int64, partition, partitions int32, commit bool) {
	byGroup := c.txns[pid]
	for _, gid := range sortedKeys(byGroup) {
		if PartitionFor(gid, partitions) != partition {
			continue
		}
		offs := byGroup[gid]
		delete(byGroup, gid)
		if open := c.openTxns[gid]; open != nil {
			delete(open, pid)
			if len(open) == 0 {
				delete(c.openTxns, gid)
			}
		}
		if !commit || len(offs) == 0 {
			continue
		}
		g := c.groups[gid]
		if g == nil {
			// Deleted while the transaction was open: its tombstones
			// dropped what was pending then, so what is left came after.
			g = newGroup(gid, now)
			c.groups[gid] = g
		}
		for tp, co := range offs {
			if cur, ok := g.offsets[tp]; !ok || co.seq > cur.seq {
				g.offsets[tp] = co
			}
		}
	}
	if len(byGroup) == 0 {
		delete(c.txns, pid)
	}
}

// LoadTransactional replays one record of a transactional batch of
// producer pid in __consumer_offsets: an offset commit waits for the
// producer's marker (CompleteTransaction) as it did when it was written;
// anything else loads as Load does.
func (c *Coordinator) LoadTransactional(now int64, pid int64, key, value []byte) error {
	return c.load(now, &pid, key, value)
}

// hasOpenTxns reports whether a transaction holds offsets of the group
// (Kafka's openTransactionsByGroup.containsKey).
func (c *Coordinator) hasOpenTxns(group string) bool { return len(c.openTxns[group]) > 0 }

func (c *Coordinator) nextSeq() int64 {
	c.seq++
	return c.seq
}

func (c *Coordinator) addPending(pid int64, gid string, tp topicPartition, co committedOffset) {
	byGroup := c.txns[pid]
	if byGroup == nil {
		byGroup = map[string]map[topicPartition]committedOffset{}
		c.txns[pid] = byGroup
	}
	offs := byGroup[gid]
	if offs == nil {
		offs = map[topicPartition]committedOffset{}
		byGroup[gid] = offs
	}
	offs[tp] = co
	open := c.openTxns[gid]
	if open == nil {
		open = map[int64]bool{}
		c.openTxns[gid] = open
	}
	open[pid] = true
}

// hasPending is Kafka's hasPendingTransactionalOffsets: whether an open
// transaction holds an offset of the group for the partition.
func (c *Coordinator) hasPending(gid string, tp topicPartition) bool {
	for pid := range c.openTxns[gid] {
		if _, ok := c.txns[pid][gid][tp]; ok {
			return true
		}
	}
	return false
}

// pendingPartitions lists the partitions with a pending offset of group
// gid, sorted.
func (c *Coordinator) pendingPartitions(gid string) []topicPartition {
	seen := map[topicPartition]bool{}
	var out []topicPartition
	for pid := range c.openTxns[gid] {
		for tp := range c.txns[pid][gid] {
			if !seen[tp] {
				seen[tp] = true
				out = append(out, tp)
			}
		}
	}
	sortPartitions(out)
	return out
}

// dropOffset is what a tombstone for the group's partition does: the
// committed offset and the pending ones of its open transactions go
// (Kafka's replay of an OffsetCommit tombstone).
func (c *Coordinator) dropOffset(gid string, tp topicPartition) {
	if g := c.groups[gid]; g != nil {
		delete(g.offsets, tp)
	}
	for pid := range c.openTxns[gid] {
		delete(c.txns[pid][gid], tp)
	}
}

// tombstoneOffset writes a tombstone for the group's partition and applies
// it.
func (c *Coordinator) tombstoneOffset(gid string, tp topicPartition) {
	c.dropOffset(gid, tp)
	c.record(gid, offsetKey(gid, tp.topic, tp.partition), nil)
}

func sortPartitions(tps []topicPartition) {
	sort.Slice(tps, func(i, j int) bool {
		if tps[i].topic != tps[j].topic {
			return tps[i].topic < tps[j].topic
		}
		return tps[i].partition < tps[j].partition
	})
}
