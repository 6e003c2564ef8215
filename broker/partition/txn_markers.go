package partition

// Transactions on the partition side.
//
// Open transactions: a producer's first transactional batch in a
// partition opens its transaction there at the batch's base offset
// (producerEntry.txnFirstOffset, Kafka's currentTxnFirstOffset), published
// in producerStates.unstable before the batch is appended. The last stable
// offset is the smallest such offset, else the high watermark
// (Partition.LastStableOffset); read_committed fetches and ListOffsets stop
// there and the cleaner never passes it. While its transaction is open, a
// producer's non-transactional batch is INVALID_TXN_STATE, and the
// producer never expires. A transactional batch is appended only once the
// transaction coordinator has verified that the producer's transaction
// added the partition (the broker's txn_verify.go).
//
// Transaction markers: what Kafka's
// UnifiedLog.appendAsLeader does with origin COORDINATOR, and its
// ProducerAppendInfo.appendEndTxnMarker. The transaction coordinator
// (broker/txns.go) calls it through Broker.writeMarker, the path of
// WriteTxnMarkers, for each partition of a transaction it completes.
//
// A marker is refused, nothing appended, with:
//   - INVALID_PRODUCER_EPOCH when its producer epoch is older than the
//     producer's epoch here or, for a transaction version 2 marker (whose
//     epoch the coordinator bumped, KIP-890), not newer than it, unless it
//     is a retry: the same epoch with no transaction open, which Kafka
//     4.2 appends again (checkProducerEpoch);
//   - TRANSACTION_COORDINATOR_FENCED when its coordinator epoch is older
//     than that of the last marker written for the producer
//     (checkCoordinatorEpoch).
//
// Otherwise the control batch is appended. If the producer had a
// transaction open here, it is complete: an abort is first indexed in the
// segment's .txnindex with the LSO it leaves (Kafka's
// ProducerStateManager.lastStableOffset: the first offset of the next
// ongoing transaction, else the offset after the marker), and only then is
// the transaction removed from the ongoing set, which moves the LSO. A
// read_committed fetch therefore never reads aborted records without the
// aborted transaction in its answer. A marker for a producer with no
// transaction open here (an empty transaction) is appended and changes
// only the producer's epoch and coordinator epoch, as in Kafka.
//
// Restart: the producer snapshot keeps each producer's coordinator epoch
// and open transaction's first offset, and the markers after the snapshot
// are replayed (replayMarker), indexing each abort again (a no-op when its
// entry is there). After a crash, storage empties the .txnindex of the
// recovered segments that hold markers, and the replay starts from a
// snapshot at or below the first of them (producerStates.load).

import (
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/gregor-broker/gregor/protocol/batch"
	"github.com/gregor-broker/gregor/storage"
)

// errMarkerIndex wraps a failure to index an aborted transaction whose
// marker is in the log: the transaction stays open (the LSO does not
// pass it) and the coordinator's retry writes the marker again.
var errMarkerIndex = errors.New("broker: indexing an aborted transaction failed")

// MarkerOutcome is what WriteTxnMarker did.
type MarkerOutcome struct {
	Offset int64 // the marker's offset, when appended
	// refused is the Kafka error the marker was refused with, and message
	// says why; nothing was appended.
	Refused *kerr.Error
	Message string
}

// TxnMarker is one marker a coordinator asks a partition to write.
type TxnMarker struct {
	PID              int64
	Epoch            int16
	CoordinatorEpoch int32
	Commit           bool
	// TransactionVersion is the client's transaction version (0 and 1
	// behave alike; 2 is KIP-890's epoch bump per transaction).
	TransactionVersion int8
}

// WriteTxnMarker appends m at time now (Unix ms). A non-nil error is the
// log's: KAFKA_STORAGE_ERROR to the caller.
//
// The marker follows the partition's flush policy like a produce (Kafka
// appends markers with acks=all): under flush.messages=1 the call returns
// once it is fsynced, and the high watermark passes it only then.
func (p *Partition) WriteTxnMarker(m TxnMarker, now int64) (MarkerOutcome, error) {
	out, err := p.appendTxnMarker(m, now)
	if err != nil || out.Refused != nil {
		return out, err
	}
	p.Appended() // the LSO moved: wake read_committed long polls
	if err := p.log.FlushAfterAppend(out.Offset + 1); err != nil {
		return MarkerOutcome{}, err
	}
	p.Appended() // the high watermark may have waited for the fsync
	return out, nil
}

func (p *Partition) appendTxnMarker(m TxnMarker, now int64) (MarkerOutcome, error) {
	pid, epoch, coordinatorEpoch, commit := m.PID, m.Epoch, m.CoordinatorEpoch, m.Commit
	one, err := batch.AppendEndTxnMarker(nil, pid, epoch, p.leaderEpoch.Load(), now, batch.EndTxnMarker{Commit: commit, CoordinatorEpoch: coordinatorEpoch})
	if err != nil {
		return MarkerOutcome{}, err
	}
	p.appendMu.Lock()
	defer p.appendMu.Unlock()
	if p.cluster.Load() != nil {
		// Only the leader writes markers, at its current epoch.
		leaderEpoch, leading := p.LeaderEpochIfLeading()
		if !leading {
			return MarkerOutcome{Refused: kerr.NotLeaderForPartition, Message: fmt.Sprintf("This broker does not lead partition %s-%d", p.topic, p.index)}, nil
		}
		batch.SetPartitionLeaderEpoch(one, leaderEpoch)
	}
	p.producers.maybeRemoveExpired(now)
	if e := p.producers.byID[pid]; e != nil {
		tv2 := m.TransactionVersion >= 2
		stale := epoch < e.epoch || tv2 && epoch == e.epoch && e.txnFirstOffset >= 0
		switch {
		case stale:
			cmp := "<"
			if tv2 {
				cmp = "<="
			}
			return MarkerOutcome{Refused: kerr.InvalidProducerEpoch, Message: fmt.Sprintf("Epoch of producer %d in partition %s-%d is %d, which is %s the last seen epoch %d",
				pid, p.topic, p.index, epoch, cmp, e.epoch)}, nil
		case coordinatorEpoch < e.coordinatorEpoch:
			return MarkerOutcome{Refused: kerr.TransactionCoordinatorFenced, Message: fmt.Sprintf("Invalid coordinator epoch for producerId %d in partition %s-%d: %d (zombie), %d (current)",
				pid, p.topic, p.index, coordinatorEpoch, e.coordinatorEpoch)}, nil
		}
	}
	offset, _, err := p.log.Append(one)
	if err != nil {
		return MarkerOutcome{}, err
	}
	delete(p.txnGuards, pid) // a batch verified before this marker must not open a transaction
	if err := p.completeTxn(pid, epoch, coordinatorEpoch, commit, offset, now); err != nil {
		return MarkerOutcome{}, err
	}
	return MarkerOutcome{Offset: offset}, nil
}

// completeTxn applies a marker at offset to the producer state: Kafka's
// appendEndTxnMarker, then completeTxn. appendMu held.
func (p *Partition) completeTxn(pid int64, epoch int16, coordinatorEpoch int32, commit bool, offset, ts int64) error {
	e := p.producers.entry(pid)
	if first := e.txnFirstOffset; first >= 0 && !commit {
		lso := p.producers.firstOngoing(pid)
		if lso < 0 {
			lso = offset + 1
		}
		a := storage.AbortedTxn{ProducerID: pid, FirstOffset: first, LastOffset: offset, LastStableOffset: lso}
		if err := p.log.AppendAbortedTxn(a); err != nil {
			return fmt.Errorf("%w: %w", errMarkerIndex, err)
		}
	}
	if e.epoch != epoch {
		e.epoch, e.n = epoch, 0
	}
	e.coordinatorEpoch, e.txnFirstOffset, e.lastTimestamp = coordinatorEpoch, -1, ts
	p.producers.setOngoing(pid, -1)
	return nil
}

// replayMarker applies a marker replayed at open, when nothing else uses
// the partition yet.
func (p *Partition) replayMarker(h *batch.Header, m batch.EndTxnMarker) error {
	return p.completeTxn(h.ProducerID, h.ProducerEpoch, m.CoordinatorEpoch, m.Commit, h.BaseOffset, h.MaxTimestamp)
}
