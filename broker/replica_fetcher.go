package broker

// The follower's side of replication: Kafka's ReplicaFetcherThread and
// AbstractFetcherThread, one fetcher per leader broker
// (num.replica.fetchers=1) over one connection to the leader's Kafka
// listener.
//
// Each round is one Fetch v17 naming topics by id, with ReplicaState{this
// node, its broker epoch}, replica.fetch.wait.max.ms, replica.fetch.min.bytes,
// replica.fetch.response.max.bytes and, per partition, replica.fetch.max.bytes,
// the fetch offset (the local log end), the current leader epoch and the
// last fetched epoch (the log's latest leader epoch). Truncation is KIP-595's
// (Fetch v12+): a leader whose log diverges from the follower's at the last
// fetched epoch answers with the diverging epoch and where it ends, and the
// follower truncates to that point (Kafka's getOffsetTruncationState) before
// it fetches again. So a follower, the restarted old leader included, never
// keeps records the leader does not have.
//
// The records come whole-batch from the leader's log. Each batch's framing
// and CRC are checked (as Kafka's follower does), then they are appended
// with their offsets kept (appendReplicated) and the producer state is
// updated from them exactly as at recovery, so idempotence and transactions
// survive a failover. The follower's high watermark is the leader's capped
// at its log end, and its log start offset follows the leader's (below the
// high watermark). A follower whose append fails stops fetching that
// partition (the leader then drops it from the ISR).
//
// Errors: FENCED_LEADER_EPOCH (this follower is behind) stops fetching the
// partition until an image names a newer epoch; UNKNOWN_LEADER_EPOCH and
// NOT_LEADER_OR_FOLLOWER (the leader is behind) and the others retry after
// replica.fetch.backoff.ms. OFFSET_OUT_OF_RANGE, for a follower below the
// leader's log start, starts the log over at the leader's log start offset
// (ListOffsets earliest, as Kafka's fetchOffsetAndTruncate); past the
// leader's end it truncates to the leader's high watermark.

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-broker/gregor/broker/peer"
	"github.com/gregor-broker/gregor/protocol/batch"
	"github.com/gregor-broker/gregor/storage"
)

// replicaFetchClientID is the client id of replica fetches.
const replicaFetchClientID = "gregor-replica-fetcher"

// replicaFetchVersion is the Fetch version followers send: topic ids,
// ReplicaState, diverging epochs.
const replicaFetchVersion = 17

// fetchTarget is a partition to follow, from the image.
type fetchTarget struct {
	p           *partition
	t           *topic // its throttled-replica lists (replication_throttle.go)
	topicID     [16]byte
	leaderEpoch int32
}

// fetcherManager holds one fetcher per leader broker.
type fetcherManager struct {
	c        *cluster
	mu       sync.Mutex
	byLeader map[int32]*replicaFetcher
}

// update makes the fetchers follow exactly the partitions given, by
// leader: fetchers are started for new leaders and stopped for leaders no
// longer followed.
func (m *fetcherManager) update(follow map[int32][]fetchTarget) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.byLeader == nil {
		m.byLeader = map[int32]*replicaFetcher{}
	}
	for leader, f := range m.byLeader {
		if len(follow[leader]) == 0 {
			f.shutdown()
			delete(m.byLeader, leader)
		}
	}
	for leader, targets := range follow {
		f := m.byLeader[leader]
		if f == nil {
			select {
			case <-m.c.stop:
				return
			default:
			}
			f = newReplicaFetcher(m.c, leader)
			m.byLeader[leader] = f
			m.c.wg.Add(1)
			go func() {
				defer m.c.wg.Done()
				f.run()
			}()
		}
		f.set(targets)
	}
}

// fetchPartition is a followed partition's fetch state.
type fetchPartition struct {
	fetchTarget
	fenced     bool      // FENCED_LEADER_EPOCH: wait for a newer epoch
	failed     bool      // a local append failed: not fetched again
	delayUntil time.Time // retry after an error
	// lagKnown and inSync: whether the leader's high watermark was at or
	// below the log end after the last append (replication_throttle.go).
	// Owned by the fetch loop (run), unguarded.
	lagKnown, inSync bool
}

// replicaFetcher fetches every partition this broker follows from one
// leader.
type replicaFetcher struct {
	c      *cluster
	leader int32

	mu      sync.Mutex
	parts   map[*partition]*fetchPartition // guarded by mu
	changed chan struct{}
	stop    chan struct{}
	stopped bool // guarded by mu

	// ctx ends when the fetcher or the cluster stops, and with it a fetch
	// in flight on conn, which only run uses.
	ctx    context.Context
	cancel context.CancelFunc
	conn   peer.Conn
}

func newReplicaFetcher(c *cluster, leader int32) *replicaFetcher {
	ctx, cancel := context.WithCancel(c.ctx)
	return &replicaFetcher{c: c, leader: leader, parts: map[*partition]*fetchPartition{},
		changed: make(chan struct{}, 1), stop: make(chan struct{}), ctx: ctx, cancel: cancel,
		conn: peer.Conn{ClientID: replicaFetchClientID, MaxResponseBytes: c.b.cfg.MaxFrameBytes, DialTimeout: 10 * time.Second}}
}

// set replaces the followed partitions. A partition whose leader epoch
// changed starts over (no longer fenced or delayed); one whose append
// failed stays failed.
func (f *replicaFetcher) set(targets []fetchTarget) {
	f.mu.Lock()
	next := make(map[*partition]*fetchPartition, len(targets))
	for _, t := range targets {
		fp := f.parts[t.p]
		switch {
		case fp == nil:
			fp = &fetchPartition{fetchTarget: t}
		case fp.leaderEpoch != t.leaderEpoch:
			fp = &fetchPartition{fetchTarget: t, failed: fp.failed}
		}
		next[t.p] = fp
	}
	f.parts = next
	f.mu.Unlock()
	notify(f.changed)
}

func (f *replicaFetcher) shutdown() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.stopped {
		f.stopped = true
		close(f.stop)
		f.cancel()
	}
}

// sentPartition is what one partition's fetch asked for.
type sentPartition struct {
	fp          *fetchPartition
	fetchOffset int64
}

// run is the fetch loop.
func (f *replicaFetcher) run() {
	defer f.conn.Close()
	backoff := time.Duration(f.c.b.cfg.ReplicaFetchBackoffMs) * time.Millisecond
	for {
		select {
		case <-f.stop:
			return
		case <-f.c.stop:
			return
		default:
		}
		if hook := f.c.b.cfg.testHooks.replicaFetch; hook != nil {
			hook(f.leader)
		}
		req, sent, wait := f.buildRequest()
		if len(sent) == 0 {
			f.sleep(wait)
			continue
		}
		raw, err := f.roundTrip(req)
		if err != nil {
			f.c.b.log.Debug("replica fetch failed", "leader", f.leader, "err", err)
			f.sleep(backoff)
			continue
		}
		resp := raw.(*kmsg.FetchResponse)
		if resp.ErrorCode != 0 {
			f.c.b.log.Debug("replica fetch refused", "leader", f.leader, "err", kerr.ErrorForCode(resp.ErrorCode))
			f.sleep(backoff)
			continue
		}
		f.processResponse(resp, sent)
	}
}

// sleep waits d, or until the partitions change or the fetcher stops.
func (f *replicaFetcher) sleep(d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-f.changed:
	case <-f.stop:
	case <-f.c.stop:
	}
}

// buildRequest builds the next fetch from the partitions ready to fetch,
// or returns how long to wait for one to be.
func (f *replicaFetcher) buildRequest() (*kmsg.FetchRequest, map[*partition]sentPartition, time.Duration) {
	cfg := f.c.b.cfg
	self := cfg.NodeID
	req := kmsg.NewPtrFetchRequest()
	req.SetVersion(replicaFetchVersion)
	req.ReplicaID = self
	req.ReplicaState.ID, req.ReplicaState.Epoch = self, f.c.epoch.Load()
	req.MaxWaitMillis, req.MinBytes, req.MaxBytes = cfg.ReplicaFetchWaitMaxMs, cfg.ReplicaFetchMinBytes, cfg.ReplicaFetchResponseMaxBytes
	req.SessionID, req.SessionEpoch = 0, -1
	sent := map[*partition]sentPartition{}
	wait := time.Duration(cfg.ReplicaFetchBackoffMs) * time.Millisecond
	now := time.Now()
	byTopic := map[[16]byte]int{}
	f.mu.Lock()
	defer f.mu.Unlock()
	for p, fp := range f.parts {
		if fp.fenced || fp.failed {
			continue
		}
		if now.Before(fp.delayUntil) {
			wait = min(wait, fp.delayUntil.Sub(now))
			continue
		}
		if f.followerThrottles(fp) {
			continue // until the rate is below the bound; the wait is the backoff
		}
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.Partition, rp.CurrentLeaderEpoch = p.index, fp.leaderEpoch
		rp.FetchOffset, rp.LogStartOffset = p.log.EndOffset(), p.log.StartOffset()
		rp.LastFetchedEpoch = -1
		if e, ok := p.log.LatestEpoch(); ok {
			rp.LastFetchedEpoch = e
		}
		rp.PartitionMaxBytes = cfg.ReplicaFetchMaxBytes
		i, ok := byTopic[fp.topicID]
		if !ok {
			i = len(req.Topics)
			byTopic[fp.topicID] = i
			rt := kmsg.NewFetchRequestTopic()
			rt.TopicID = fp.topicID
			req.Topics = append(req.Topics, rt)
		}
		req.Topics[i].Partitions = append(req.Topics[i].Partitions, rp)
		sent[p] = sentPartition{fp: fp, fetchOffset: rp.FetchOffset}
	}
	return req, sent, wait
}

// leaderAddr is the leader's Kafka listener, from the image.
func (f *replicaFetcher) leaderAddr() (string, error) {
	im := f.c.currentImage()
	if im == nil || im.Brokers[f.leader] == nil {
		return "", fmt.Errorf("broker: leader %d is not registered", f.leader)
	}
	host, port := brokerEndpoint(im.Brokers[f.leader])
	if port < 0 {
		return "", fmt.Errorf("broker: leader %d has no endpoint", f.leader)
	}
	return net.JoinHostPort(host, fmt.Sprint(port)), nil
}

// roundTrip sends req to the leader on the fetcher's connection, which
// dials again after an error or when the leader registers another
// endpoint (peer.Conn). A fetch may wait replica.fetch.wait.max.ms at the
// leader, and gets 30 s more.
func (f *replicaFetcher) roundTrip(req kmsg.Request) (kmsg.Response, error) {
	addr, err := f.leaderAddr()
	if err != nil {
		return nil, err
	}
	wait := time.Duration(f.c.b.cfg.ReplicaFetchWaitMaxMs) * time.Millisecond
	ctx, cancel := context.WithTimeout(f.ctx, wait+30*time.Second)
	defer cancel()
	return f.conn.Do(ctx, addr, req)
}

// processResponse applies each partition's answer.
func (f *replicaFetcher) processResponse(resp *kmsg.FetchResponse, sent map[*partition]sentPartition) {
	byID := map[[16]byte]map[int32]sentPartition{}
	for p, s := range sent {
		if byID[s.fp.topicID] == nil {
			byID[s.fp.topicID] = map[int32]sentPartition{}
		}
		byID[s.fp.topicID][p.index] = s
	}
	backoff := time.Duration(f.c.b.cfg.ReplicaFetchBackoffMs) * time.Millisecond
	for _, rt := range resp.Topics {
		for i := range rt.Partitions {
			rp := &rt.Partitions[i]
			s, ok := byID[rt.TopicID][rp.Partition]
			if !ok {
				continue
			}
			if !f.current(s.fp) {
				continue // the image moved the partition meanwhile
			}
			p := s.fp.p
			switch err := kerr.ErrorForCode(rp.ErrorCode); {
			case err == nil:
				err := f.processPartition(s, rp)
				switch {
				case err == nil, errors.Is(err, storage.ErrClosed):
					// ErrClosed: the topic was deleted meanwhile; the next
					// image drops the partition.
				case errors.Is(err, errInvalidFromLeader), errors.Is(err, errNoProgress):
					f.c.b.log.Warn("fetching again after a backoff", "topic", p.topic, "partition", p.index, "leader", f.leader, "err", err)
					f.mark(s.fp, func(fp *fetchPartition) { fp.delayUntil = time.Now().Add(backoff) })
				default:
					f.c.b.log.Error("replicating from the leader failed; this replica stops fetching the partition",
						"topic", p.topic, "partition", p.index, "leader", f.leader, "err", err)
					f.mark(s.fp, func(fp *fetchPartition) { fp.failed = true })
				}
			case errors.Is(err, kerr.FencedLeaderEpoch):
				f.c.b.log.Info("the leader has a newer leader epoch; waiting for the metadata image",
					"topic", p.topic, "partition", p.index, "leader", f.leader, "epoch", s.fp.leaderEpoch)
				f.mark(s.fp, func(fp *fetchPartition) { fp.fenced = true })
			case errors.Is(err, kerr.OffsetOutOfRange):
				if err := f.outOfRange(s); err != nil {
					f.c.b.log.Warn("resetting an out-of-range replica failed", "topic", p.topic, "partition", p.index, "err", err)
					f.mark(s.fp, func(fp *fetchPartition) { fp.delayUntil = time.Now().Add(backoff) })
				}
			default:
				f.c.b.log.Debug("replica fetch of a partition refused; retrying", "topic", p.topic, "partition", p.index, "leader", f.leader, "err", err)
				f.mark(s.fp, func(fp *fetchPartition) { fp.delayUntil = time.Now().Add(backoff) })
			}
		}
	}
}

// current reports whether fp is still followed at its epoch.
func (f *replicaFetcher) current(fp *fetchPartition) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.parts[fp.p] == fp
}

func (f *replicaFetcher) mark(fp *fetchPartition, fn func(*fetchPartition)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fn(fp)
}

// processPartition applies a partition's successful answer: truncation at
// a diverging epoch, or the records, then the high watermark and the log
// start offset. An error means the local log failed.
func (f *replicaFetcher) processPartition(s sentPartition, rp *kmsg.FetchResponseTopicPartition) error {
	p := s.fp.p
	if rp.DivergingEpoch.Epoch >= 0 || rp.DivergingEpoch.EndOffset >= 0 {
		return p.truncateDiverging(s.fp.leaderEpoch, rp.DivergingEpoch.Epoch, rp.DivergingEpoch.EndOffset)
	}
	var end int64
	if len(rp.RecordBatches) > 0 {
		var err error
		end, err = p.appendFromLeader(s.fp.leaderEpoch, s.fetchOffset, rp.RecordBatches)
		if err != nil {
			return err
		}
		if end > 0 {
			if err := p.log.FlushAfterAppend(end); err != nil {
				return err
			}
		}
	}
	f.fetched(s, rp, end)
	moved := p.followerHW(rp.HighWatermark)
	if start := min(rp.LogStartOffset, p.hw.Load()); start > p.log.StartOffset() {
		if err := p.log.SetStartOffset(start); err != nil && !errors.Is(err, storage.ErrOffsetOutOfRange) {
			return err
		}
	}
	if moved || len(rp.RecordBatches) > 0 {
		p.wake()
	}
	return nil
}

// errNoProgress is a diverging epoch that truncates nothing: fetching
// again at once would get the same answer, so the partition waits
// replica.fetch.backoff.ms.
var errNoProgress = errors.New("broker: a diverging epoch without progress")

// errInvalidFromLeader is records from the leader that fail their checks
// (a bad CRC, a gap in the offsets): the fetch is retried after a backoff,
// as Kafka's fetcher retries a CorruptRecordException, while a failing
// local log stops the partition.
var errInvalidFromLeader = errors.New("broker: invalid records from the leader")

// appendFromLeader appends the whole batches of records, fetched at
// fetchOffset at leaderEpoch, keeping their offsets, and updates the
// producer state from them as recovery does. It returns the new log end,
// or 0 when nothing was appended (the partition moved on meanwhile, or the
// answer held no whole batch).
func (p *partition) appendFromLeader(leaderEpoch int32, fetchOffset int64, records []byte) (int64, error) {
	n := 0
	var err error
	splitErr := batch.Split(records, func(b []byte) error {
		if _, cerr := batch.Check(b); cerr != nil {
			err = cerr
			return cerr
		}
		n += len(b)
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("%w: %w", errInvalidFromLeader, err)
	}
	if splitErr != nil && !errors.Is(splitErr, batch.ErrTruncated) {
		return 0, fmt.Errorf("%w: %w", errInvalidFromLeader, splitErr)
	}
	whole := records[:n]
	if n == 0 {
		return 0, nil
	}
	p.appendMu.Lock()
	defer p.appendMu.Unlock()
	following := p.followingAt(leaderEpoch)
	if !following || p.log.EndOffset() != fetchOffset {
		return 0, nil
	}
	_, last, err := p.log.AppendReplicated(whole)
	if errors.Is(err, storage.ErrInvalidBatch) {
		return 0, fmt.Errorf("%w: %w", errInvalidFromLeader, err)
	}
	if err != nil {
		return 0, err
	}
	// The append rolled a segment when the active one now starts at the old
	// log end (not necessarily first: a compacted leader's offsets skip):
	// snapshot the state of every batch before it, as a leader's roll does.
	if base := p.log.ActiveSegmentBase(); base == fetchOffset && base > p.producers.snapshotAt {
		p.takeSnapshot(base)
	}
	if err := p.replayReplicated(whole); err != nil {
		return 0, err
	}
	return last + 1, nil
}

// replayReplicated updates the producer state from batches just appended
// as a follower, as recovery replays them (producerStates.replay).
// appendMu held.
func (p *partition) replayReplicated(batches []byte) error {
	now := time.Now().UnixMilli()
	p.producers.maybeRemoveExpired(now)
	return batch.Split(batches, func(b []byte) error {
		h, err := batch.ParseHeader(b)
		if err != nil {
			return err
		}
		switch {
		case h.ProducerID < 0:
		case h.Control():
			m, ok, err := batch.ParseEndTxnMarker(b, nil)
			if err != nil {
				return fmt.Errorf("broker: the control batch at offset %d: %w", h.BaseOffset, err)
			}
			if ok {
				delete(p.txnGuards, h.ProducerID)
				return p.replayMarker(&h, m)
			}
		default:
			p.producers.update(&h, h.BaseOffset)
		}
		return nil
	})
}

// truncateDiverging truncates a follower whose log diverges from the
// leader's, which answered that its epoch divEpoch ends at divEnd (Kafka's
// getOffsetTruncationState), and rebuilds the producer state.
func (p *partition) truncateDiverging(leaderEpoch, divEpoch int32, divEnd int64) error {
	p.appendMu.Lock()
	defer p.appendMu.Unlock()
	following := p.followingAt(leaderEpoch)
	if !following || divEnd < 0 {
		return nil
	}
	end := p.log.EndOffset()
	to := truncationOffset(divEpoch, divEnd, end, p.log.EndOffsetForEpoch)
	if to >= end {
		// Nothing to cut, but a leader epoch this broker started at its log
		// end while it led, with no batch after it, goes: the leader never
		// had it (Kafka's truncateTo at the log end). Without that the
		// next fetch would diverge at the same epoch again.
		latest, _ := p.log.LatestEpoch()
		if err := p.log.TruncateTo(end); err != nil {
			return err
		}
		if now, _ := p.log.LatestEpoch(); now == latest {
			return fmt.Errorf("%w: the leader's epoch %d ending at %d changes nothing here (log end %d, latest epoch %d)",
				errNoProgress, divEpoch, divEnd, end, latest)
		}
		return nil
	}
	p.logger.Info("truncating a diverged replica", "topic", p.topic, "partition", p.index, "from", end, "to", to,
		"leader_epoch", divEpoch, "leader_end", divEnd)
	if err := p.log.TruncateTo(to); err != nil {
		return err
	}
	return p.reloadProducers()
}

// truncationOffset is where a follower whose log ends at logEnd truncates
// when the leader answers that its epoch divEpoch ends at divEnd (Kafka's
// AbstractFetcherThread.getOffsetTruncationState). localEndFor is the
// follower's own epoch cache (Log.EndOffsetForEpoch). An epoch the follower
// does not know takes it to the end of its largest epoch below it, from
// where its next fetch (at that epoch) finds the rest.
func truncationOffset(divEpoch int32, divEnd, logEnd int64, localEndFor func(int32) (int32, int64)) int64 {
	switch {
	case divEnd < 0:
		return logEnd // the leader knows no offset: nothing to truncate
	case divEpoch < 0:
		return min(divEnd, logEnd)
	}
	e, off := localEndFor(divEpoch)
	switch {
	case e == storage.UndefinedEpoch:
		return min(divEnd, logEnd) // below every epoch the follower has
	case e != divEpoch:
		return min(off, logEnd)
	default:
		return min(off, divEnd, logEnd)
	}
}

// reloadProducers rebuilds the producer state after a truncation, from the
// latest snapshot at or below the new log end, as Kafka's truncateTo
// rebuilds it. appendMu held.
func (p *partition) reloadProducers() error {
	if end := p.log.EndOffset(); p.hw.Load() > end {
		p.hw.Store(end)
	}
	p.producers.reset()
	return p.producers.load(p.log, time.Now().UnixMilli(), p.replayMarker)
}

// outOfRange handles OFFSET_OUT_OF_RANGE (Kafka's fetchOffsetAndTruncate):
// a follower whose log end is below the leader's log start starts over
// there; one past the leader's end (a log without leader epochs, which the
// diverging-epoch check cannot place) truncates to the leader's high
// watermark, below which every replica holds the same records.
func (f *replicaFetcher) outOfRange(s sentPartition) error {
	start, err := f.listOffset(s, -2)
	if err != nil {
		return err
	}
	if s.fetchOffset < start {
		return s.fp.p.startOverAt(s.fp.leaderEpoch, s.fetchOffset, start)
	}
	hw, err := f.listOffset(s, -1)
	if err != nil {
		return err
	}
	return s.fp.p.truncateAbove(s.fp.leaderEpoch, s.fetchOffset, hw)
}

// listOffset asks the leader for the partition's earliest (-2) or latest
// (-1: its high watermark, as a consumer's ListOffsets) offset.
func (f *replicaFetcher) listOffset(s sentPartition, timestamp int64) (int64, error) {
	req := kmsg.NewPtrListOffsetsRequest()
	req.ReplicaID = -1
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = s.fp.p.topic
	rp := kmsg.NewListOffsetsRequestTopicPartition()
	rp.Partition, rp.CurrentLeaderEpoch, rp.Timestamp = s.fp.p.index, s.fp.leaderEpoch, timestamp
	rt.Partitions = []kmsg.ListOffsetsRequestTopicPartition{rp}
	req.Topics = []kmsg.ListOffsetsRequestTopic{rt}
	req.SetVersion(handlers[2].max)
	raw, err := f.roundTrip(req)
	if err != nil {
		return 0, err
	}
	resp := raw.(*kmsg.ListOffsetsResponse)
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		return 0, errors.New("broker: a ListOffsets answer without the partition")
	}
	lp := resp.Topics[0].Partitions[0]
	if err := kerr.ErrorForCode(lp.ErrorCode); err != nil {
		return 0, err
	}
	return lp.Offset, nil
}

// followingAt reports whether this broker still follows the partition at
// leaderEpoch: a fetch answer of an older leadership changes nothing.
// appendMu held, so that the role cannot change before the log does.
func (p *partition) followingAt(leaderEpoch int32) bool {
	rs := &p.repl
	rs.mu.Lock()
	defer rs.mu.Unlock()
	return rs.role == roleFollower && rs.leaderEpoch == leaderEpoch
}

// truncateAbove truncates a follower whose log end (fetchOffset) lies past
// the leader's to the leader's high watermark.
func (p *partition) truncateAbove(leaderEpoch int32, fetchOffset, leaderHW int64) error {
	p.appendMu.Lock()
	defer p.appendMu.Unlock()
	following := p.followingAt(leaderEpoch)
	if !following || p.log.EndOffset() != fetchOffset || fetchOffset <= leaderHW {
		return nil
	}
	p.logger.Info("this replica's log ends past the leader's; truncating to its high watermark", "topic", p.topic, "partition", p.index,
		"end", fetchOffset, "leader_high_watermark", leaderHW)
	if err := p.log.TruncateTo(leaderHW); err != nil {
		return err
	}
	return p.reloadProducers()
}

// startOverAt empties a follower's log to start at the leader's log start
// offset, when its log end (fetchOffset) lies below it.
func (p *partition) startOverAt(leaderEpoch int32, fetchOffset, leaderStart int64) error {
	p.appendMu.Lock()
	defer p.appendMu.Unlock()
	following := p.followingAt(leaderEpoch)
	if !following || p.log.EndOffset() != fetchOffset || fetchOffset >= leaderStart {
		return nil
	}
	p.logger.Info("the leader's log starts past this replica's end; starting over", "topic", p.topic, "partition", p.index,
		"end", fetchOffset, "leader_start", leaderStart)
	if err := p.log.TruncateFullyAndStartAt(leaderStart); err != nil {
		return err
	}
	p.hw.Store(leaderStart)
	return p.reloadProducers()
}
