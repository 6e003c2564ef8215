package broker

// Produce (key 0), v0-v13.
//
// Behavior:
//   - each partition's one v2 batch is checked as Kafka's leader checks it
//     (size, CRC-32C, records, timestamps, null keys on a compacted topic),
//     stamped with its offsets and leader epoch in place, and appended
//     under the partition's producer-state guard (broker/partition);
//   - acks=0 gets no answer, and a failure on any partition closes the
//     connection once the others are appended, so that the producer learns
//     of it; acks=1 gets one after the append; acks=-1 on a cluster checks
//     min.insync.replicas first and waits for the ISR after
//     (broker/replication/acks.go);
//   - transactional batches go only to partitions the transaction added,
//     as the coordinator verifies (txn_verify.go, KIP-890);
//   - under flush.messages the answer waits for the fsync, taken outside
//     the append lock so that connections share it;
//   - over producer_byte_rate the answer carries throttle_time_ms and the
//     connection is muted (throttle.go);
//   - internal topics are INVALID_TOPIC_EXCEPTION to clients.
//
// Version notes:
//   - v0-v2 are advertised (librdkafka needs v0 listed) but close the
//     connection, as Kafka 4.2 does;
//   - v3+ carries exactly one magic v2 batch per partition; zstd needs v7+;
//   - v8+ names the failing records of INVALID_TIMESTAMP and INVALID_RECORD;
//   - v12+ retries CONCURRENT_TRANSACTIONS at the leader (transactions V2);
//   - v13 names topics by id.
//
// docs/apis.md#produce has the details and where they match Kafka.

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-broker/gregor/broker/partition"
	"github.com/gregor-broker/gregor/broker/replication"
	"github.com/gregor-broker/gregor/protocol/batch"
)

func init() { register(0, 0, 13, handleProduce) }

func handleProduce(b *Broker, r *request, req *kmsg.ProduceRequest) (kmsg.Response, error) {
	if req.Version < 3 {
		return nil, fmt.Errorf("unsupported version %d of api key 0 (Produce), removed in Kafka 4", req.Version)
	}
	resp := newResponse[*kmsg.ProduceResponse](req)
	if req.TransactionID == nil && hasTransactionalRecords(req) {
		return refuseTransactionalProduce(req, resp)
	}
	validAcks := req.Acks == -1 || req.Acks == 0 || req.Acks == 1
	var flushes []pendingFlush
	for ti, rt := range req.Topics {
		st := kmsg.NewProduceResponseTopic()
		st.Topic, st.TopicID = rt.Topic, rt.TopicID
		t := b.lookupTopicRef(req.Version >= 13, rt.Topic, rt.TopicID)
		for _, rp := range rt.Partitions {
			sp := kmsg.NewProduceResponseTopicPartition()
			sp.Partition = rp.Partition
			sp.BaseOffset, sp.LogAppendTime, sp.LogStartOffset = -1, -1, -1
			var p *partition.Partition
			if t != nil {
				p = b.partition(t, rp.Partition)
			}
			switch {
			case t == nil && req.Version >= 13:
				sp.ErrorCode = kerr.UnknownTopicID.Code
			case p == nil:
				sp.ErrorCode = kerr.UnknownTopicOrPartition.Code
			case p.NotLeader():
				sp.ErrorCode = kerr.NotLeaderForPartition.Code
				if req.Version >= 10 {
					b.cluster.produceCurrentLeader(p, &sp, resp, r.conn.l.cfg.Name)
				}
			case !validAcks:
				sp.ErrorCode = kerr.InvalidRequiredAcks.Code
			case isInternalTopic(t.name):
				// Only the coordinators write their topics (ReplicaManager
				// refuses clients' appends to internal topics).
				sp.ErrorCode = kerr.InvalidTopicException.Code
			case req.Acks == -1 && p.State() != nil && !replication.EnoughISR(t, p, &sp, req.Version):
				// NOT_ENOUGH_REPLICAS, nothing appended.
			default:
				if end, epoch := b.produceTo(r, req, t, p, rp.Records, &sp); end >= 0 {
					flushes = append(flushes, pendingFlush{p: p, t: t, end: end, epoch: epoch, topic: ti, partition: len(st.Partitions)})
				}
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	if req.Acks == 0 {
		for _, f := range flushes {
			f.p.Log().FlushAfterAppendAsync(f.end)
		}
		b.throttleProduce(r) // muted without an answer, as Kafka
		if failed := failedPartitions(resp); failed != "" {
			return nil, errAcksZeroFailed(failed)
		}
		return nil, nil
	}
	b.awaitFlushes(resp, flushes)
	if req.Acks == -1 && b.isCluster() {
		if err := b.awaitReplication(r, req, resp, flushes); err != nil {
			return nil, err // the connection or the broker is going away
		}
	}
	resp.ThrottleMillis = b.throttleProduce(r)
	return resp, nil
}

// failedPartitions lists the partitions of resp that carry an error, as
// "topic-partition: ERROR" pairs, or is empty when none does.
func failedPartitions(resp *kmsg.ProduceResponse) string {
	var failed []string
	for _, st := range resp.Topics {
		name := st.Topic
		if name == "" {
			name = fmt.Sprintf("%x", st.TopicID)
		}
		for _, sp := range st.Partitions {
			if sp.ErrorCode != 0 {
				failed = append(failed, fmt.Sprintf("%s-%d: %s", name, sp.Partition, kerr.ErrorForCode(sp.ErrorCode)))
			}
		}
	}
	return strings.Join(failed, ", ")
}

// errAcksZeroFailed closes the connection of an acks=0 Produce that failed
// somewhere: the producer expects no answer, so closing is the only way it
// learns to refresh its metadata (KafkaApis.handleProduceRequest).
func errAcksZeroFailed(failed string) error {
	return fmt.Errorf("error during produce request with ack=0: %s", failed)
}

// pendingFlush is an append whose answer waits for the flush policy: the
// partition, the offset after the batch, and where its answer is in the
// response.
type pendingFlush struct {
	p                *partition.Partition
	t                *topic
	end              int64
	epoch            int32 // the leader epoch of the append (cluster mode)
	topic, partition int
}

// awaitFlushes applies each partition's flush policy to its append, in
// parallel when there are several, and turns a failed fsync into
// KAFKA_STORAGE_ERROR. It is called holding no partition lock, so appends
// by other connections join the same fsyncs.
func (b *Broker) awaitFlushes(resp *kmsg.ProduceResponse, flushes []pendingFlush) {
	errs := make([]error, len(flushes))
	if len(flushes) == 1 {
		errs[0] = flushes[0].p.Log().FlushAfterAppend(flushes[0].end)
	} else {
		var wg sync.WaitGroup
		for i, f := range flushes {
			wg.Go(func() { errs[i] = f.p.Log().FlushAfterAppend(f.end) })
		}
		wg.Wait()
	}
	for i, err := range errs {
		f := flushes[i]
		if err == nil {
			f.p.Appended() // the high watermark may have waited for the fsync
			continue
		}
		b.log.Error("flush failed", "topic", f.p.Topic(), "partition", f.p.Index(), "err", err)
		sp := &resp.Topics[f.topic].Partitions[f.partition]
		sp.ErrorCode = kerr.KafkaStorageError.Code
		sp.ErrorMessage = nil
		sp.BaseOffset, sp.LogAppendTime, sp.LogStartOffset = -1, -1, -1
	}
}

// produceTo validates one partition's records and appends them, filling sp.
// It returns the offset after the batch when one was appended (or found to
// be a duplicate) and the flush policy must be applied to it, else -1, and
// the leader epoch it was appended at.
func (b *Broker) produceTo(r *request, req *kmsg.ProduceRequest, t *topic, p *partition.Partition, records []byte, sp *kmsg.ProduceResponseTopicPartition) (int64, int32) {
	// As Kafka's LogAppendResult, an error carries no message but the
	// custom ones: a RecordValidationException's (failInLog) and the
	// transaction verification's translations (failWithMessage).
	fail := func(e *kerr.Error) { sp.ErrorCode = e.Code }
	failWithMessage := func(e *kerr.Error, msg string) {
		fail(e)
		if msg != "" && req.Version >= 8 {
			sp.ErrorMessage = &msg
		}
	}
	// failInLog is a RecordValidationException, raised inside the log
	// append, whose answer carries the partition's log start offset;
	// request-level checks and the errors ReplicaManager lists (corrupt,
	// too large) carry -1.
	failInLog := func(e *kerr.Error, msg string) {
		failWithMessage(e, msg)
		sp.LogStartOffset = p.Log().StartOffset()
	}
	// ProduceRequest.validateRecords, in Kafka's order: at least one batch,
	// the first batch's magic, zstd below v7 (read in place, before the CRC
	// or the records; Validate is the one parse of the header), then exactly
	// one batch. The log's size checks come after.
	failBatches := func(err error) {
		if errors.Is(err, batch.ErrCorrupt) {
			fail(kerr.CorruptMessage)
		} else {
			fail(kerr.InvalidRecord)
		}
	}
	one, rest, err := firstBatch(records, req.Version)
	if err != nil {
		failBatches(err)
		return -1, 0
	}
	if magic, _ := batch.Magic(one); magic != 2 {
		fail(kerr.InvalidRecord)
		return -1, 0
	}
	if codec, ok := batch.Codec(one); ok && codec == batch.Zstd && req.Version < 7 {
		fail(kerr.UnsupportedCompressionType)
		return -1, 0
	}
	if rest != nil {
		failBatches(rest)
		return -1, 0
	}
	cfg := *t.effective.Load()
	if len(one) > int(cfg.maxMessageBytes) {
		fail(kerr.MessageTooLarge)
		return -1, 0
	}
	if int64(len(one)) > cfg.segmentBytes {
		fail(kerr.RecordListTooLarge)
		return -1, 0
	}
	info, err := batch.Validate(one, &r.conn.scratch)
	if err != nil {
		b.log.Debug("produce: refused batch", "topic", p.Topic(), "partition", p.Index(), "err", err)
		fail(batchErrorCode(err))
		return -1, 0
	}
	guard := partition.Unguarded
	if info.Transactional() {
		g, e, msg, err := b.verifyTxnBatch(r, req, p, &info.Header)
		if err != nil {
			// The connection or the broker is going away: no answer.
			fail(kerr.RequestTimedOut)
			return -1, 0
		}
		if e != nil {
			failWithMessage(e, msg)
			return -1, 0
		}
		guard = g
	}
	now := time.Now().UnixMilli()
	if code, msg, errs := recordErrors(one, &info, cfg, now, p, r); code != nil {
		failInLog(code, msg)
		if req.Version >= 8 {
			sp.ErrorRecords = errs
		}
		return -1, 0
	}
	// stored is the header as the batch is stored, once stamped: the
	// partition's producer state and its log take it from Validate
	// rather than parsing the batch again.
	stored := info.Header
	if cfg.logAppendTime {
		batch.SetLogAppendTime(one, now)
		sp.LogAppendTime = now
		stored.MaxTimestamp = now
	} else if info.MaxTimestamp != info.Header.MaxTimestamp || info.Header.LogAppendTime() {
		// Kafka's LogValidator sets the topic's timestamp type and the
		// records' largest timestamp: it corrects a header that disagrees
		// with its records, and clears a client's LogAppendTime bit (whose
		// records all read as the header's MaxTimestamp, which so stays).
		batch.SetMaxTimestamp(one, false, info.MaxTimestamp)
		if h, err := batch.ParseHeader(one); err == nil {
			stored = h // the attributes are rebuilt too
		}
	}
	out, err := p.Append(partition.OriginClient, one, &stored, now, guard)
	switch {
	case err != nil:
		b.log.Error("append failed", "topic", p.Topic(), "partition", p.Index(), "err", err)
		fail(kerr.KafkaStorageError)
		return -1, 0
	case out.Refused != nil:
		fail(out.Refused)
		return -1, 0
	case out.Duplicate:
		sp.LogAppendTime = out.Timestamp
	default:
		p.Appended()
		t.metrics.produced(len(one), info.NumRecords)
	}
	sp.BaseOffset = out.BaseOffset
	sp.LogStartOffset = p.Log().StartOffset()
	return out.End, out.LeaderEpoch
}

// firstBatch splits a v3+ partition entry into its first batch and what
// Kafka says of the rest once it has checked the first one's magic and
// codec: nil when no other batch follows, else INVALID_RECORD for a second
// batch or the framing error that reading one met. As in Kafka, bytes after
// the last complete batch that do not form a whole batch are ignored; a
// blob with no complete batch is INVALID_RECORD (err).
func firstBatch(records []byte, version int16) (one []byte, rest, err error) {
	errSecond := fmt.Errorf("Produce requests with version %d are only allowed to contain exactly one record batch per partition", version)
	err = batch.Split(records, func(b []byte) error {
		if one != nil {
			return errSecond
		}
		one = b
		return nil
	})
	if errors.Is(err, batch.ErrTruncated) {
		err = nil
	}
	if one != nil {
		return one, err, nil
	}
	if err == nil {
		err = fmt.Errorf("Produce requests with version %d must have at least one record batch per partition", version)
	}
	return nil, nil, err
}

// batchErrorCode maps a batch validation error to its Kafka code.
func batchErrorCode(err error) *kerr.Error {
	switch {
	case errors.Is(err, batch.ErrCorrupt):
		return kerr.CorruptMessage
	case errors.Is(err, batch.ErrUnsupportedCompression):
		return kerr.UnsupportedCompressionType
	default:
		return kerr.InvalidRecord
	}
}

// recordErrors is the per-record part of Kafka's LogValidator: on a
// compacted topic a record without a key is INVALID_RECORD, and on a
// CreateTime topic a record whose timestamp is set (not -1) and outside
// message.timestamp.before.max.ms / after.max.ms of now is INVALID_TIMESTAMP;
// a record has at most one error, the key's first. Every record is checked
// and each error is listed, as Kafka's RecordValidationException lists them;
// the partition's error is INVALID_TIMESTAMP if any record has a timestamp
// error, else INVALID_RECORD, with Kafka's message. The records are walked
// only when Validate's counts say some record fails: on the refusal path
// alone, to name the records.
func recordErrors(one []byte, info *batch.Info, cfg effectiveTopicConfig, now int64, p *partition.Partition, r *request) (*kerr.Error, string, []kmsg.ProduceResponseTopicPartitionErrorRecord) {
	keys := cfg.compact && info.NullKeys > 0
	checkNew := !cfg.logAppendTime && cfg.timestampAfterMaxMs < math.MaxInt64-now
	checkOld := !cfg.logAppendTime && cfg.timestampBeforeMaxMs < now
	tooNew := func(ts int64) bool { return checkNew && ts > now+cfg.timestampAfterMaxMs }
	tooOld := func(ts int64) bool { return checkOld && ts != batch.NoTimestamp && ts < now-cfg.timestampBeforeMaxMs }
	if !keys && !tooNew(info.MaxTimestamp) && !tooOld(info.MinTimestamp) {
		return nil, "", nil
	}
	var errs []kmsg.ProduceResponseTopicPartitionErrorRecord
	timestamps := false
	add := func(i int, msg string) {
		rec := kmsg.NewProduceResponseTopicPartitionErrorRecord()
		rec.RelativeOffset, rec.ErrorMessage = int32(i), &msg
		errs = append(errs, rec)
	}
	batch.ForEachRecordMeta(one, &r.conn.scratch, func(m batch.RecordMeta) bool {
		i := int(m.Index)
		switch ts := m.Timestamp; {
		case cfg.compact && m.NullKey:
			add(i, fmt.Sprintf("Compacted topic cannot accept message without key in topic partition %s-%d", p.Topic(), p.Index()))
		case ts != batch.NoTimestamp && (tooNew(ts) || tooOld(ts)):
			timestamps = true
			add(i, fmt.Sprintf("Timestamp %d of message with offset %d is out of range. The timestamp should be within [%d, %d]",
				ts, i, now-cfg.timestampBeforeMaxMs, now+cfg.timestampAfterMaxMs))
		}
		return true
	})
	switch {
	case len(errs) == 0:
		return nil, "", nil
	case timestamps:
		return kerr.InvalidTimestamp, "One or more records have been rejected due to invalid timestamp", errs
	}
	shown := make([]string, 0, 3)
	for _, e := range errs[:min(len(errs), 3)] {
		shown = append(shown, fmt.Sprintf("RecordError(batchIndex=%d, message='%s')", e.RelativeOffset, *e.ErrorMessage))
	}
	return kerr.InvalidRecord, fmt.Sprintf("One or more records have been rejected due to %d record errors in total, and only showing the first three errors at most: [%s]",
		len(errs), strings.Join(shown, ", ")), errs
}
