package broker

// TxnOffsetCommit (key 28), v0-v5, the range Kafka 4.2 serves.
//
// Behavior:
//   - a transactional producer's offsets for a group are written now to
//     __consumer_offsets, in a transactional batch of the producer, and
//     count only once its transaction commits (the marker reaches the
//     group coordinator through Broker.writeMarker); OffsetFetch with
//     require_stable answers UNSTABLE_OFFSET_COMMIT meanwhile;
//   - checks, in Kafka's order: an unknown topic or partition
//     UNKNOWN_TOPIC_OR_PARTITION (left out of the rest); an empty group id
//     INVALID_GROUP_ID; the transaction's verification
//     (verifyTxnOffsetCommit); the group's member checks
//     (coordinator/group CommitTxnOffsets: ILLEGAL_GENERATION,
//     UNKNOWN_MEMBER_ID, FENCED_INSTANCE_ID); an older producer epoch than
//     the partition knows INVALID_PRODUCER_EPOCH; metadata over 4096 bytes
//     OFFSET_METADATA_TOO_LARGE; a failed write as for OffsetCommit.
//
// Version notes:
//   - v2 adds the committed leader epoch; v3 (KIP-447) is flexible and
//     adds the member id, generation and group.instance.id;
//   - v4 (KIP-890) lets a failed verification answer TRANSACTION_ABORTABLE;
//   - v5 (transactions V2): the broker adds the group's partition to the
//     transaction itself;
//   - v0-v1 get COORDINATOR_NOT_AVAILABLE for COORDINATOR_LOAD_IN_PROGRESS.
//
// docs/apis.md#txnoffsetcommit has the details and where they match Kafka.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-broker/gregor/coordinator/group"
)

func init() { registerScoped(everywhere, 28, 0, 5, handleTxnOffsetCommit) }

// txnOffsetCommitVerifier asks the transaction coordinator about a
// TxnOffsetCommit before any group check, as Kafka 4 does (KIP-890):
//
//   - add false (v0-v4): is the group's __consumer_offsets partition in
//     the ongoing transaction of transactional id tid, whose producer must
//     be pid at epoch? (AddPartitionsToTxn with verify_only, the partition
//     being the one AddOffsetsToTxn added.)
//   - add true (v5, transaction version 2): add that partition to the
//     transaction, as AddOffsetsToTxn would (Kafka's
//     TransactionSupportedOperation.ADD_PARTITION), bumping nothing.
//
// It returns the coordinator's error for the partition, nil when all is
// well. What Kafka's transaction coordinator answers there:
// INVALID_PRODUCER_ID_MAPPING (tid has another producer id, or none),
// PRODUCER_FENCED (epoch older than the transactional id's),
// TRANSACTION_ABORTABLE (verify only: the partition is not in the
// transaction, or there is none ongoing), CONCURRENT_TRANSACTIONS (the
// last transaction is still completing), COORDINATOR_NOT_AVAILABLE,
// NOT_COORDINATOR or COORDINATOR_LOAD_IN_PROGRESS; NETWORK_EXCEPTION when
// the coordinator could not be asked. verifyTxnError maps it for the
// client. Seen from clients of Kafka 4.2.2: a commit for a group never
// added is INVALID_TXN_STATE at v3 and TRANSACTION_ABORTABLE at v4, and at
// v5 adds the group's partition (the transaction goes from Empty to
// Ongoing); an unknown transactional id INVALID_PRODUCER_ID_MAPPING at
// v3-v5; an epoch newer or older than the transactional id's
// INVALID_PRODUCER_EPOCH; no transaction coordinator yet
// COORDINATOR_NOT_AVAILABLE.
//
// Until a transaction coordinator is connected (setTxnOffsetCommitVerifier)
// nothing is verified: the commit goes straight to the group checks.
type txnOffsetCommitVerifier func(ctx context.Context, tid string, pid int64, epoch int16, group string, add bool) *kerr.Error

// setTxnOffsetCommitVerifier connects the transaction coordinator's
// verification of TxnOffsetCommit (nil: none). Safe at any time.
func (b *Broker) setTxnOffsetCommitVerifier(v txnOffsetCommitVerifier) {
	if v == nil {
		b.verifyTxnOffsetCommit.Store(nil)
		return
	}
	b.verifyTxnOffsetCommit.Store(&v)
}

func handleTxnOffsetCommit(b *Broker, r *request, req *kmsg.TxnOffsetCommitRequest) (kmsg.Response, error) {
	resp := newResponse[*kmsg.TxnOffsetCommitResponse](req)
	tr := group.TxnCommitRequest{GroupID: req.Group, Producer: group.Producer{ID: req.ProducerID, Epoch: req.ProducerEpoch},
		Generation: req.Generation, MemberID: req.MemberID, InstanceID: req.InstanceID}
	// Partitions the broker refuses itself are answered here; the others
	// keep their place, filled from the coordinator's answer.
	type slot struct{ topic, resp int }
	var slots []slot
	for _, rt := range req.Topics {
		st := kmsg.NewTxnOffsetCommitResponseTopic()
		st.Topic = rt.Topic
		t := b.lookupTopic(rt.Topic)
		ct := group.CommitTopic{Topic: rt.Topic}
		for _, rp := range rt.Partitions {
			if t == nil || b.partition(t, rp.Partition) == nil {
				sp := kmsg.NewTxnOffsetCommitResponseTopicPartition()
				sp.Partition, sp.ErrorCode = rp.Partition, kerr.UnknownTopicOrPartition.Code
				st.Partitions = append(st.Partitions, sp)
				continue
			}
			leaderEpoch := int32(-1)
			if req.Version >= 2 {
				leaderEpoch = rp.LeaderEpoch
			}
			ct.Partitions = append(ct.Partitions, group.CommitPartition{Partition: rp.Partition, Offset: rp.Offset,
				LeaderEpoch: leaderEpoch, Metadata: rp.Metadata})
		}
		if len(ct.Partitions) > 0 {
			slots = append(slots, slot{topic: len(tr.Topics), resp: len(resp.Topics)})
			tr.Topics = append(tr.Topics, ct)
		}
		resp.Topics = append(resp.Topics, st)
	}
	if len(slots) == 0 {
		return resp, nil
	}
	res, err := b.commitTxnOffsets(r, req, tr)
	if err != nil {
		return nil, err
	}
	for _, s := range slots {
		st := &resp.Topics[s.resp]
		for _, p := range res.Topics[s.topic].Partitions {
			sp := kmsg.NewTxnOffsetCommitResponseTopicPartition()
			sp.Partition, sp.ErrorCode = p.Partition, p.ErrorCode
			if req.Version < 2 && sp.ErrorCode == kerr.CoordinatorLoadInProgress.Code {
				sp.ErrorCode = kerr.CoordinatorNotAvailable.Code
			}
			st.Partitions = append(st.Partitions, sp)
		}
	}
	return resp, nil
}

// commitTxnOffsets verifies the transaction and hands the commit to the
// group coordinator. The producer epoch is checked against the group's
// __consumer_offsets partition on the coordinator's goroutine, the only
// writer of that topic, so nothing can change it before the append.
func (b *Broker) commitTxnOffsets(r *request, req *kmsg.TxnOffsetCommitRequest, tr group.TxnCommitRequest) (*group.CommitResult, error) {
	if tr.GroupID == "" {
		return failTxnCommit(tr, kerr.InvalidGroupID), nil
	}
	if b.isCluster() && !b.cluster.coordinates(tr.GroupID) {
		// Another broker leads the group's partition: Kafka's runtime
		// finds no leader here when it starts the verification, and
		// answers NOT_COORDINATOR.
		return failTxnCommit(tr, kerr.NotCoordinator), nil
	}
	if verify := b.verifyTxnOffsetCommit.Load(); verify != nil {
		if e := (*verify)(r.ctx, req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Group, req.Version >= 5); e != nil {
			return failTxnCommit(tr, verifyTxnError(e, req.Version)), nil
		}
	}
	gc := b.groups
	out, err := gc.call(r, func(c *group.Coordinator, now int64, id group.ReplyID) {
		tr.AppendError = gc.txnAppendError(tr.GroupID, tr.Producer)
		c.CommitTxnOffsets(now, id, tr)
	})
	if err != nil {
		return nil, err
	}
	return out.(*group.CommitResult), nil
}

// failTxnCommit answers every partition of tr with e, as Kafka's
// TxnOffsetCommitRequest.getErrorResponse.
func failTxnCommit(tr group.TxnCommitRequest, e *kerr.Error) *group.CommitResult {
	res := &group.CommitResult{}
	for _, t := range tr.Topics {
		rt := group.TopicResult{Topic: t.Topic}
		for _, p := range t.Partitions {
			rt.Partitions = append(rt.Partitions, group.PartitionResult{Partition: p.Partition, ErrorCode: e.Code})
		}
		res.Topics = append(res.Topics, rt)
	}
	return res
}

// verifyTxnError maps the transaction coordinator's answer to what Kafka
// 4.2 tells a TxnOffsetCommit of the given version: AddPartitionsToTxnManager
// turns PRODUCER_FENCED into INVALID_PRODUCER_EPOCH and, for v0-v3 (which
// predate it), TRANSACTION_ABORTABLE into INVALID_TXN_STATE; then
// GroupCoordinatorService.handleOperationException turns NETWORK_EXCEPTION
// into COORDINATOR_LOAD_IN_PROGRESS (a retry without a new coordinator
// lookup), UNKNOWN_TOPIC_OR_PARTITION, NOT_ENOUGH_REPLICAS and
// REQUEST_TIMED_OUT into COORDINATOR_NOT_AVAILABLE, NOT_LEADER_OR_FOLLOWER
// and KAFKA_STORAGE_ERROR into NOT_COORDINATOR.
func verifyTxnError(e *kerr.Error, version int16) *kerr.Error {
	switch e {
	case kerr.ProducerFenced:
		return kerr.InvalidProducerEpoch
	case kerr.TransactionAbortable:
		if version < 4 {
			return kerr.InvalidTxnState
		}
	case kerr.NetworkException:
		return kerr.CoordinatorLoadInProgress
	case kerr.UnknownTopicOrPartition, kerr.NotEnoughReplicas, kerr.RequestTimedOut:
		return kerr.CoordinatorNotAvailable
	case kerr.NotLeaderForPartition, kerr.KafkaStorageError:
		return kerr.NotCoordinator
	}
	return e
}
