package partition

// Producer state: what a partition remembers of each idempotent producer so
// that a retried batch is not appended twice and a batch out of order is
// refused. It is Kafka's ProducerStateManager, ProducerStateEntry and
// ProducerAppendInfo; the transactional part (open transactions, the last
// stable offset, markers) is described in txn_markers.go.
//
// For each producer id the state holds the epoch and the metadata of its last
// five batches (Kafka's NUM_BATCHES_TO_RETAIN): first and last sequence, last
// offset, offset delta and max timestamp. A batch with a producer id (>= 0)
// is checked in Kafka's order (UnifiedLog.analyzeAndValidateProducerState,
// then ProducerAppendInfo.checkProducerEpoch and checkSequence):
//
//  1. Same epoch and the exact sequence range of one of the last five
//     batches: a duplicate. Nothing is appended; the response is success
//     with the original batch's base offset, and its max timestamp as
//     LogAppendTime, even on a CreateTime topic, as Kafka does
//     (appendInfo.setLogAppendTime(duplicate.timestamp)). Kafka stopped
//     sending DUPLICATE_SEQUENCE_NUMBER long ago; nothing in its broker
//     throws DuplicateSequenceException.
//  2. An epoch older than the producer's: INVALID_PRODUCER_EPOCH (Kafka 2.7+
//     answers this, not PRODUCER_FENCED, on produce).
//  3. A newer epoch (the KIP-360 bump of an idempotent producer) must start
//     at sequence 0: OUT_OF_ORDER_SEQUENCE_NUMBER otherwise.
//  4. The same epoch must continue at the last sequence + 1, wrapping from
//     2^31-1 to 0: OUT_OF_ORDER_SEQUENCE_NUMBER otherwise (a gap, an
//     overlap, or a retry of a batch older than the last five).
//  5. An unknown producer (never seen, or expired) is accepted at any
//     sequence, so UNKNOWN_PRODUCER_ID is never returned: KIP-360 removed it
//     from the produce path, and Kafka's check accepts any sequence when the
//     current epoch is NO_PRODUCER_EPOCH.
//
// The state changes only after a successful append, and the check and the
// append happen under Partition.appendMu, so two connections producing with
// the same producer id cannot both pass the check for the same sequence.
//
// Expiry: a producer whose last batch's max timestamp is
// producer.id.expiration.ms (one day) old is forgotten, checked at most every
// producer.id.expiration.check.interval.ms (ten minutes) as Kafka does, but
// lazily on the next append rather than on a timer.
//
// Restart: as Kafka's ProducerStateManager, the state is saved as a
// snapshot (storage's <offset>.snapshot, Kafka's file format) whenever an
// append rolls a new segment (the state of every batch before it) and when
// the broker closes (the state at the log end); storage keeps the last two.
// When a partition opens, the latest snapshot at or below the log end is
// loaded, its expired producers dropped, and only the batches after it are
// replayed without checks, as Kafka's loadProducersFromRecords does, from
// their headers alone (Log.ForEachBatchHeader). So a
// clean restart reads no data and a crash reads at most the active
// segment (unless recovery emptied transaction indexes: then from the
// first segment it emptied, see txn_markers.go). Gregor's snapshot keeps all five retained batches of each
// producer (Kafka's keeps the last), so a retry of any of them is still
// recognised after a restart. A corrupt snapshot is deleted by storage and
// the next older one used; with none at all (a log written before
// snapshots existed), the log is replayed from the first batch whose max
// timestamp is within producer.id.expiration.ms of now
// (Log.BatchAtTimestamp; every earlier batch belongs to producers Kafka
// would have expired). A failed snapshot write is logged and costs only
// replay time at the next start.

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-broker/gregor/protocol/batch"
	"github.com/gregor-broker/gregor/storage"
)

const (
	// ProducerBatchesRetained is Kafka's ProducerStateEntry.NUM_BATCHES_TO_RETAIN.
	ProducerBatchesRetained = 5
	// producerIDExpirationMs is Kafka's producer.id.expiration.ms default.
	producerIDExpirationMs = int64(24 * time.Hour / time.Millisecond)
	// producerIDExpirationCheckMs is Kafka's
	// producer.id.expiration.check.interval.ms default.
	producerIDExpirationCheckMs = int64(10 * time.Minute / time.Millisecond)
)

// producerBatch is Kafka's BatchMetadata: one appended batch of a producer.
type producerBatch struct {
	lastSeq     int32
	offsetDelta int32
	lastOffset  int64
	timestamp   int64 // the batch's max timestamp as stored
}

func (b producerBatch) firstSeq() int32    { return decrementSequence(b.lastSeq, b.offsetDelta) }
func (b producerBatch) firstOffset() int64 { return b.lastOffset - int64(b.offsetDelta) }

// producerEntry is Kafka's ProducerStateEntry.
type producerEntry struct {
	epoch         int16
	lastTimestamp int64
	n             int // batches in use, oldest first
	batches       [ProducerBatchesRetained]producerBatch
	// coordinatorEpoch is the epoch of the transaction coordinator that
	// wrote the producer's last marker here, -1 before any.
	coordinatorEpoch int32
	// txnFirstOffset is the first offset of the producer's ongoing
	// transaction in this partition, -1 when there is none.
	txnFirstOffset int64
}

// lastSeq is the last sequence appended, or -1 (Kafka's NO_SEQUENCE).
func (e *producerEntry) lastSeq() int32 {
	if e.n == 0 {
		return -1
	}
	return e.batches[e.n-1].lastSeq
}

// producerStates is one partition's producer state. All of it is guarded by
// Partition.appendMu.
type producerStates struct {
	byID      map[int64]*producerEntry
	lastSweep int64 // when expired producers were last removed, Unix ms
	// snapshotAt is the offset of the latest snapshot written or loaded
	// (every batch below it is in it), or the log start offset at open when
	// there was none: a snapshot is only worth writing above it.
	snapshotAt int64
	// ongoing maps the producers with a transaction open in this partition
	// to its first offset (Kafka's ongoingTxns).
	ongoing map[int64]int64
	// unstable is one more than the smallest first offset of an ongoing
	// transaction, 0 when there is none (Kafka's firstUnstableOffset). It
	// is written under appendMu and read without it by fetches, through
	// Partition.LastStableOffset.
	unstable atomic.Int64
}

// reset empties the state, before load rebuilds it (a follower's
// truncation).
func (s *producerStates) reset() {
	s.byID, s.ongoing, s.lastSweep, s.snapshotAt = nil, nil, 0, 0
	s.unstable.Store(0)
}

// firstUnstable returns the first offset of the earliest ongoing
// transaction; ok=false when there is none. Safe without appendMu.
func (s *producerStates) firstUnstable() (offset int64, ok bool) {
	u := s.unstable.Load()
	return u - 1, u > 0
}

// newProducerEntry is the entry of a producer first seen here.
func newProducerEntry() *producerEntry {
	return &producerEntry{epoch: -1, coordinatorEpoch: -1, txnFirstOffset: -1}
}

// entry returns pid's entry, created if it is new.
func (s *producerStates) entry(pid int64) *producerEntry {
	e := s.byID[pid]
	if e == nil {
		if s.byID == nil {
			s.byID = map[int64]*producerEntry{}
		}
		e = newProducerEntry()
		s.byID[pid] = e
	}
	return e
}

// setOngoing records that pid's transaction begins at first (first >= 0)
// or has ended (first < 0), and republishes firstUnstable.
func (s *producerStates) setOngoing(pid, first int64) {
	if first >= 0 {
		if s.ongoing == nil {
			s.ongoing = map[int64]int64{}
		}
		s.ongoing[pid] = first
	} else {
		delete(s.ongoing, pid)
	}
	s.unstable.Store(s.firstOngoing(-1) + 1)
}

// firstOngoing is the smallest first offset of the ongoing transactions
// of producers other than except, -1 when there are none.
func (s *producerStates) firstOngoing(except int64) int64 {
	first := int64(-1)
	for pid, off := range s.ongoing {
		if pid != except && (first < 0 || off < first) {
			first = off
		}
	}
	return first
}

// sequenceOf returns the first and last sequence of the batch h heads, as
// Kafka's DefaultRecordBatch.lastSequence does (wrapping past 2^31-1).
func sequenceOf(h *batch.Header) (first, last int32) {
	return h.BaseSequence, incrementSequence(h.BaseSequence, h.LastOffsetDelta)
}

func incrementSequence(seq, n int32) int32 {
	if seq > math.MaxInt32-n {
		return n - (math.MaxInt32 - seq) - 1
	}
	return seq + n
}

func decrementSequence(seq, n int32) int32 {
	if seq < n {
		return math.MaxInt32 - (n - seq) + 1
	}
	return seq - n
}

// inSequence is Kafka's ProducerAppendInfo.inSequence.
func inSequence(lastSeq, nextSeq int32) bool {
	return int64(nextSeq) == int64(lastSeq)+1 || (nextSeq == 0 && lastSeq == math.MaxInt32)
}

// duplicate returns the retained batch that h repeats: same producer, same
// epoch, same sequence range (ProducerStateEntry.findDuplicateBatch).
func (s *producerStates) duplicate(h *batch.Header) (producerBatch, bool) {
	e := s.byID[h.ProducerID]
	if e == nil || e.epoch != h.ProducerEpoch {
		return producerBatch{}, false
	}
	first, last := sequenceOf(h)
	for _, b := range e.batches[:e.n] {
		if b.firstSeq() == first && b.lastSeq == last {
			return b, true
		}
	}
	return producerBatch{}, false
}

// check applies ProducerAppendInfo's epoch and sequence checks to a batch
// that is not a duplicate, returning the Kafka error and message that refuse
// it, or nil.
func (s *producerStates) check(h *batch.Header) (*kerr.Error, string) {
	pid, epoch := h.ProducerID, h.ProducerEpoch
	current, lastSeq := int16(-1), int32(-1) // an unknown producer: NO_PRODUCER_EPOCH, NO_SEQUENCE
	if e := s.byID[pid]; e != nil {
		current, lastSeq = e.epoch, e.lastSeq()
	}
	switch {
	case epoch < current:
		return kerr.InvalidProducerEpoch, fmt.Sprintf("Epoch of producer %d is %d, which is smaller than the last seen epoch %d", pid, epoch, current)
	case epoch != current:
		if h.BaseSequence != 0 && current != -1 {
			return kerr.OutOfOrderSequenceNumber, fmt.Sprintf("Invalid sequence number for new epoch of producer %d: %d (request epoch), %d (seq. number), %d (current producer epoch)",
				pid, epoch, h.BaseSequence, current)
		}
	case current != -1 && !inSequence(lastSeq, h.BaseSequence):
		return kerr.OutOfOrderSequenceNumber, fmt.Sprintf("Out of order sequence number for producer %d: %d (incoming seq. number), %d (current end sequence number)",
			pid, h.BaseSequence, lastSeq)
	}
	if e := s.byID[pid]; e != nil && e.txnFirstOffset >= 0 && !h.Transactional() {
		return kerr.InvalidTxnState, fmt.Sprintf("Expected transactional write from producer %d", pid)
	}
	return nil, ""
}

// checkEpoch is ProducerAppendInfo.checkProducerEpoch alone: an epoch
// older than the producer's is INVALID_PRODUCER_EPOCH.
func (s *producerStates) checkEpoch(pid int64, epoch int16) (*kerr.Error, string) {
	if e := s.byID[pid]; e != nil && epoch < e.epoch {
		return kerr.InvalidProducerEpoch, fmt.Sprintf("Epoch of producer %d is %d, which is smaller than the last seen epoch %d", pid, epoch, e.epoch)
	}
	return nil, ""
}

// update records a batch of h's producer appended at baseOffset, with h's
// max timestamp as stored. A new epoch forgets the old epoch's batches.
//
// A transactional batch of a producer without an ongoing transaction here
// begins one at baseOffset; Append publishes that before the batch is
// appended, so that no read_committed fetch sees it past the LSO.
func (s *producerStates) update(h *batch.Header, baseOffset int64) {
	e := s.entry(h.ProducerID)
	if h.Transactional() && e.txnFirstOffset < 0 {
		e.txnFirstOffset = baseOffset
		s.setOngoing(h.ProducerID, baseOffset)
	}
	if e.epoch != h.ProducerEpoch {
		e.epoch, e.n = h.ProducerEpoch, 0
	}
	if e.n == ProducerBatchesRetained {
		copy(e.batches[:], e.batches[1:])
		e.n--
	}
	_, last := sequenceOf(h)
	e.batches[e.n] = producerBatch{lastSeq: last, offsetDelta: h.LastOffsetDelta,
		lastOffset: baseOffset + int64(h.LastOffsetDelta), timestamp: h.MaxTimestamp}
	e.n++
	e.lastTimestamp = h.MaxTimestamp
}

// removeExpired forgets the producers whose last batch is
// producer.id.expiration.ms older than now and that have no transaction
// ongoing (ProducerStateManager.isProducerExpired).
func (s *producerStates) removeExpired(now int64) {
	for pid, e := range s.byID {
		if e.txnFirstOffset < 0 && now-e.lastTimestamp >= producerIDExpirationMs {
			delete(s.byID, pid)
		}
	}
	s.lastSweep = now
}

// maybeRemoveExpired runs removeExpired if the last run is
// producer.id.expiration.check.interval.ms old.
func (s *producerStates) maybeRemoveExpired(now int64) {
	if now-s.lastSweep >= producerIDExpirationCheckMs {
		s.removeExpired(now)
	}
}

// markerFunc applies a transaction marker replayed at open (the
// partition's completeTxn).
type markerFunc func(h *batch.Header, m batch.EndTxnMarker) error

// load rebuilds the state of l, which nothing else may use yet: from the
// latest snapshot and the batches after it or, without a snapshot, from
// every batch that may belong to an unexpired producer. Each transaction
// marker replayed goes to onMarker.
//
// After a crash whose recovery emptied transaction indexes
// (RecoveryStats.TxnIndexRebuildFrom), the replay starts at or below the
// first of them, so that every abort marker in them is indexed again.
func (s *producerStates) load(l *storage.Log, now int64, onMarker markerFunc) error {
	s.lastSweep, s.snapshotAt = now, l.StartOffset()
	defer s.removeExpired(now)
	limit := l.EndOffset()
	if from := l.Recovery().TxnIndexRebuildFrom; from >= 0 {
		limit = from
	}
	snapAt, entries, found, err := l.ProducerSnapshotAtOrBelow(limit)
	if err != nil {
		return err
	}
	if found {
		s.restore(entries, now)
		s.snapshotAt = snapAt
		return s.replay(l, max(snapAt, l.StartOffset()), onMarker)
	}
	from := limit
	first, found, err := l.BatchAtTimestamp(now - producerIDExpirationMs + 1)
	if err != nil {
		return err
	}
	if found {
		h, err := batch.ParseHeader(first)
		if err != nil {
			return err
		}
		from = min(from, h.BaseOffset)
	}
	return s.replay(l, max(from, l.StartOffset()), onMarker)
}

// errAtMarker stops a header walk at a control batch, which replay must
// read whole.
var errAtMarker = errors.New("broker: a control batch")

// replay applies the producer batches of l from offset to the end, without
// checks, reading only batch headers but for transaction markers, which
// are read whole and handed to onMarker.
func (s *producerStates) replay(l *storage.Log, offset int64, onMarker markerFunc) error {
	for {
		var marker batch.Header
		err := l.ForEachBatchHeader(offset, func(hdr []byte) error {
			h, err := batch.ParseHeader(hdr)
			if err != nil {
				return err
			}
			switch {
			case h.ProducerID < 0:
			case h.Control():
				marker = h
				return errAtMarker
			default:
				s.update(&h, h.BaseOffset)
			}
			return nil
		})
		if !errors.Is(err, errAtMarker) {
			return err
		}
		b, err := l.Read(marker.BaseOffset, 12+int(marker.BatchLength), marker.LastOffset()+1)
		if err != nil {
			return err
		}
		m, ok, err := batch.ParseEndTxnMarker(b[:min(len(b), 12+int(marker.BatchLength))], nil)
		if err != nil {
			return fmt.Errorf("broker: the control batch at offset %d: %w", marker.BaseOffset, err)
		}
		if ok {
			if err := onMarker(&marker, m); err != nil {
				return err
			}
		}
		offset = marker.LastOffset() + 1
	}
}

// restore sets the state from snapshot entries, leaving out the producers
// expired at now (Kafka's loadFromSnapshot) and keeping each one's last
// ProducerBatchesRetained batches.
func (s *producerStates) restore(entries []storage.ProducerSnapshotEntry, now int64) {
	s.byID = make(map[int64]*producerEntry, len(entries))
	s.ongoing = nil
	for _, se := range entries {
		if se.CurrentTxnFirstOffset < 0 && now-se.LastTimestamp >= producerIDExpirationMs {
			continue
		}
		e := &producerEntry{epoch: se.Epoch, lastTimestamp: se.LastTimestamp,
			coordinatorEpoch: se.CoordinatorEpoch, txnFirstOffset: max(se.CurrentTxnFirstOffset, -1)}
		if e.txnFirstOffset >= 0 {
			s.setOngoing(se.ProducerID, e.txnFirstOffset)
		}
		batches := se.Batches[max(len(se.Batches)-ProducerBatchesRetained, 0):]
		for _, b := range batches {
			if b.LastOffset < 0 {
				continue // a producer whose last entry is a marker has no batch
			}
			e.batches[e.n] = producerBatch{lastSeq: b.LastSequence, offsetDelta: b.OffsetDelta, lastOffset: b.LastOffset, timestamp: b.Timestamp}
			e.n++
		}
		s.byID[se.ProducerID] = e
	}
	s.unstable.Store(s.firstOngoing(-1) + 1)
}

// snapshotEntries returns the state as storage's snapshot entries.
func (s *producerStates) snapshotEntries() []storage.ProducerSnapshotEntry {
	out := make([]storage.ProducerSnapshotEntry, 0, len(s.byID))
	for pid, e := range s.byID {
		se := storage.ProducerSnapshotEntry{ProducerID: pid, Epoch: e.epoch, LastTimestamp: e.lastTimestamp,
			CoordinatorEpoch: e.coordinatorEpoch, CurrentTxnFirstOffset: e.txnFirstOffset, Batches: make([]storage.ProducerBatchMeta, e.n)}
		for i, b := range e.batches[:e.n] {
			se.Batches[i] = storage.ProducerBatchMeta{LastSequence: b.lastSeq, LastOffset: b.lastOffset, OffsetDelta: b.offsetDelta, Timestamp: b.timestamp}
		}
		out = append(out, se)
	}
	slices.SortFunc(out, func(a, b storage.ProducerSnapshotEntry) int { return cmp.Compare(a.ProducerID, b.ProducerID) })
	return out
}

// takeSnapshot writes the state as the snapshot at offset, which must be
// the offset every batch in the state lies below. appendMu held. A failure
// is logged, not returned: the next start replays more of the log instead.
func (p *Partition) takeSnapshot(offset int64) {
	if offset <= p.producers.snapshotAt {
		return
	}
	if err := p.log.WriteProducerSnapshot(offset, p.producers.snapshotEntries()); err != nil {
		p.logger.Warn("writing the producer snapshot failed", "topic", p.topic, "partition", p.index, "offset", offset, "err", err)
		return
	}
	p.producers.snapshotAt = offset
}

// SnapshotAtClose saves the state at the log end before the log closes, so
// that the next start reads nothing of the log (Kafka's snapshot at
// shutdown).
func (p *Partition) SnapshotAtClose() {
	p.appendMu.Lock()
	defer p.appendMu.Unlock()
	p.takeSnapshot(p.log.EndOffset())
}

// AppendOutcome is what Append did with a batch.
type AppendOutcome struct {
	// BaseOffset is where the batch was appended or, for a duplicate, where
	// the original was.
	BaseOffset int64
	// end is the offset after the batch (or the original, for a
	// duplicate): the flush policy must make offsets below it durable
	// before the producer is answered.
	End int64
	// duplicate is set for a retry of a batch still in the producer state:
	// nothing was appended, and timestamp is the original's max timestamp.
	Duplicate bool
	Timestamp int64
	// refused is the error the producer state refuses the batch with, and
	// message says why; nothing was appended.
	Refused *kerr.Error
	Message string
	// LeaderEpoch is the epoch the batch was appended at (cluster mode),
	// which an acks=all produce waits under.
	LeaderEpoch int32
}

// Origin is who appends a batch, as Kafka's AppendOrigin.
type Origin int8

const (
	// OriginClient: a producer's batch, checked for duplicates, epoch and
	// sequence.
	OriginClient Origin = iota
	// OriginCoordinator: the group coordinator's transactional offset
	// commits, written without sequences (-1) as Kafka's coordinator
	// writes them, so only the producer epoch is checked
	// (ProducerAppendInfo checks sequences for CLIENT appends only).
	OriginCoordinator
)

// Unguarded is the guard of appends that are not a client's transactional
// produce.
const Unguarded = ^uint64(0)

// Append appends one validated batch of origin, ready to store, to p's
// log, stamped with the leader epoch it is appended at (AppendOutcome's
// LeaderEpoch). h is the batch's header, which the caller has parsed
// already (a produced batch's, from batch.Validate) and which is not
// parsed again: of it Append reads the producer id, epoch and base
// sequence, the last offset delta, the transactional flag and the max
// timestamp, which must be one's as stored, after any stamp of the
// caller's; the log takes the last two as the batch's shape
// (storage.Log.AppendValidated). A batch with a producer id is first
// checked against the producer state, and the state is updated once the
// append succeeded; the check, the stamp and the append are atomic with
// respect to other appends to p. now (Unix ms) drives expiry. A non-nil
// error is the log's and nothing was appended.
//
// guard is the transaction verification a client's transactional batch
// was verified under (the broker's txn_verify.go sets it with
// SetTxnGuard; 0: not verified, because the producer's transaction was
// already open here; Unguarded: not a client's transactional produce). If
// the batch would open a transaction and guard is not p's guard for the
// producer — a marker ended the transaction meanwhile — it is refused with
// INVALID_TXN_STATE, as Kafka's UnifiedLog refuses a batch whose
// VerificationGuard does not match.
func (p *Partition) Append(origin Origin, one []byte, h *batch.Header, now int64, guard uint64) (AppendOutcome, error) {
	p.appendMu.Lock()
	defer p.appendMu.Unlock()
	epoch := p.leaderEpoch.Load() // 0 on a single node
	if p.cluster.Load() != nil {
		// In cluster mode the role may have changed since the caller
		// looked: only the leader appends, stamping its current epoch.
		var leading bool
		if epoch, leading = p.LeaderEpochIfLeading(); !leading {
			return AppendOutcome{Refused: kerr.NotLeaderForPartition, Message: fmt.Sprintf("This broker does not lead partition %s-%d", p.topic, p.index)}, nil
		}
	}
	// The batch's leader epoch is stamped here, once, under appendMu.
	batch.SetPartitionLeaderEpoch(one, epoch)
	idempotent := h.ProducerID >= 0
	if idempotent {
		p.producers.maybeRemoveExpired(now)
		if origin == OriginCoordinator {
			if e, msg := p.producers.checkEpoch(h.ProducerID, h.ProducerEpoch); e != nil {
				return AppendOutcome{Refused: e, Message: fmt.Sprintf("%s in partition %s-%d", msg, p.topic, p.index)}, nil
			}
		} else if dup, ok := p.producers.duplicate(h); ok {
			return AppendOutcome{BaseOffset: dup.firstOffset(), End: dup.lastOffset + 1, Duplicate: true, Timestamp: dup.timestamp, LeaderEpoch: epoch}, nil
		} else if e, msg := p.producers.check(h); e != nil {
			return AppendOutcome{Refused: e, Message: fmt.Sprintf("%s in partition %s-%d", msg, p.topic, p.index)}, nil
		}
	}
	// A batch opening a transaction raises the LSO barrier before it is
	// visible, so that no read_committed fetch reads past its first offset.
	beginsTxn := idempotent && h.Transactional()
	if e := p.producers.byID[h.ProducerID]; beginsTxn && e != nil && e.txnFirstOffset >= 0 {
		beginsTxn = false
	}
	if beginsTxn && guard != Unguarded {
		if g, ok := p.txnGuards[h.ProducerID]; !ok || g != guard {
			return AppendOutcome{Refused: kerr.InvalidTxnState, Message: fmt.Sprintf("The transaction of producer %d ended while partition %s-%d was being verified", h.ProducerID, p.topic, p.index)}, nil
		}
		delete(p.txnGuards, h.ProducerID)
	}
	if beginsTxn {
		p.producers.setOngoing(h.ProducerID, p.log.EndOffset())
	}
	first, last, err := p.log.AppendValidated(one, storage.BatchShape{LastOffsetDelta: h.LastOffsetDelta, MaxTimestamp: h.MaxTimestamp})
	if err != nil {
		if beginsTxn {
			p.producers.setOngoing(h.ProducerID, -1)
		}
		return AppendOutcome{}, err
	}
	if first > p.producers.snapshotAt && p.log.ActiveSegmentBase() == first {
		// The batch rolled a new segment: snapshot the state of every batch
		// before it, as Kafka's roll does.
		p.takeSnapshot(first)
	}
	if idempotent {
		p.producers.update(h, first)
	}
	return AppendOutcome{BaseOffset: first, End: last + 1, LeaderEpoch: epoch}, nil
}

// AppendBuilt is Append, Unguarded, for a batch the broker built rather
// than validated (a coordinator's records, tests): its header is parsed
// here.
func (p *Partition) AppendBuilt(origin Origin, one []byte, now int64) (AppendOutcome, error) {
	h, err := batch.ParseHeader(one)
	if err != nil {
		return AppendOutcome{}, err
	}
	return p.Append(origin, one, &h, now, Unguarded)
}

// ProducerLastBatches returns each producer's epoch and the last offset of
// its last data batch, -1 when its last entry here is a transaction
// marker: what the cleaner keeps of it (storage.CompactionPolicy).
func (p *Partition) ProducerLastBatches() map[int64]storage.ProducerLastBatch {
	producers := map[int64]storage.ProducerLastBatch{}
	p.appendMu.Lock()
	for id, e := range p.producers.byID {
		last := int64(-1) // the producer's last entry here is a transaction marker
		if e.n > 0 {
			last = e.batches[e.n-1].lastOffset
		}
		producers[id] = storage.ProducerLastBatch{LastDataOffset: last, Epoch: e.epoch}
	}
	p.appendMu.Unlock()
	return producers
}

// CheckProducerEpoch is INVALID_PRODUCER_EPOCH when epoch is older than
// producer pid's epoch here, else nil.
func (p *Partition) CheckProducerEpoch(pid int64, epoch int16) *kerr.Error {
	p.appendMu.Lock()
	defer p.appendMu.Unlock()
	e, _ := p.producers.checkEpoch(pid, epoch)
	return e
}

// LoadProducers rebuilds the producer state when the partition opens,
// before anything else uses it (producerStates.load).
func (p *Partition) LoadProducers(now int64) error {
	return p.producers.load(p.log, now, p.replayMarker)
}

// SnapshotOffset is the offset of the latest producer snapshot written or
// loaded, or the log start offset at open when there was none.
func (p *Partition) SnapshotOffset() int64 {
	p.appendMu.Lock()
	defer p.appendMu.Unlock()
	return p.producers.snapshotAt
}

// ActiveProducers lists p's producer state for DescribeProducers.
func (p *Partition) ActiveProducers(now int64) []kmsg.DescribeProducersResponseTopicPartitionActiveProducer {
	p.appendMu.Lock()
	defer p.appendMu.Unlock()
	p.producers.maybeRemoveExpired(now)
	out := make([]kmsg.DescribeProducersResponseTopicPartitionActiveProducer, 0, len(p.producers.byID))
	for pid, e := range p.producers.byID {
		ap := kmsg.NewDescribeProducersResponseTopicPartitionActiveProducer()
		ap.ProducerID, ap.ProducerEpoch, ap.LastSequence, ap.LastTimestamp = pid, int32(e.epoch), e.lastSeq(), e.lastTimestamp
		ap.CoordinatorEpoch, ap.CurrentTxnStartOffset = e.coordinatorEpoch, e.txnFirstOffset
		out = append(out, ap)
	}
	slices.SortFunc(out, func(a, b kmsg.DescribeProducersResponseTopicPartitionActiveProducer) int {
		return cmp.Compare(a.ProducerID, b.ProducerID)
	})
	return out
}
