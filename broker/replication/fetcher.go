package replication

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
// with their offsets kept (partition's AppendFromLeader) and the producer state is
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

	"github.com/gregor-broker/gregor/broker/partition"
	"github.com/gregor-broker/gregor/broker/peer"
	"github.com/gregor-broker/gregor/storage"
)

// FetchClientID is the client id of replica fetches, which the
// connections Env.NewConn returns send.
const FetchClientID = "gregor-replica-fetcher"

// fetchVersion is the Fetch version followers send: topic ids,
// ReplicaState, diverging epochs.
const fetchVersion = 17

// A Target is a partition to follow, from the image.
type Target struct {
	Partition *partition.Partition
	// Topic gives its throttled-replica lists (throttle.go).
	Topic       Topic
	TopicID     [16]byte
	LeaderEpoch int32
}

// fetcherManager holds one fetcher per leader broker.
type fetcherManager struct {
	mgr      *Manager
	mu       sync.Mutex
	byLeader map[int32]*replicaFetcher
}

// update makes the fetchers follow exactly the partitions given, by
// leader: fetchers are started for new leaders and stopped for leaders no
// longer followed.
func (m *fetcherManager) update(follow map[int32][]Target) {
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
			case <-m.mgr.ctx.Done():
				return
			default:
			}
			f = newReplicaFetcher(m.mgr, leader)
			m.byLeader[leader] = f
			m.mgr.wg.Add(1)
			go func() {
				defer m.mgr.wg.Done()
				f.run()
			}()
		}
		f.set(targets)
	}
}

// fetchPartition is a followed partition's fetch state.
type fetchPartition struct {
	Target
	fenced     bool      // FENCED_LEADER_EPOCH: wait for a newer epoch
	failed     bool      // a local append failed: not fetched again
	delayUntil time.Time // retry after an error
	// lagKnown and inSync: whether the leader's high watermark was at or
	// below the log end after the last append (throttle.go).
	// Owned by the fetch loop (run), unguarded.
	lagKnown, inSync bool
}

// replicaFetcher fetches every partition this broker follows from one
// leader.
type replicaFetcher struct {
	mgr    *Manager
	leader int32

	mu      sync.Mutex
	parts   map[*partition.Partition]*fetchPartition // guarded by mu
	changed chan struct{}
	stop    chan struct{}
	stopped bool // guarded by mu

	// ctx ends when the fetcher or the Manager stops, and with it a fetch
	// in flight on conn, which only run uses.
	ctx    context.Context
	cancel context.CancelFunc
	conn   Conn
	// refusedWarned, which only run uses, is when a refused login was
	// last logged.
	refusedWarned time.Time
}

// refusedLoginLogInterval spaces the warnings of a refused inter-broker
// login, which repeats at every retry until the configuration is mended.
const refusedLoginLogInterval = 30 * time.Second

func newReplicaFetcher(mgr *Manager, leader int32) *replicaFetcher {
	ctx, cancel := context.WithCancel(mgr.ctx)
	return &replicaFetcher{mgr: mgr, leader: leader, parts: map[*partition.Partition]*fetchPartition{},
		changed: make(chan struct{}, 1), stop: make(chan struct{}), ctx: ctx, cancel: cancel,
		conn: mgr.env.NewConn()}
}

// set replaces the followed partitions. A partition whose leader epoch
// changed starts over (no longer fenced or delayed); one whose append
// failed stays failed.
func (f *replicaFetcher) set(targets []Target) {
	f.mu.Lock()
	next := make(map[*partition.Partition]*fetchPartition, len(targets))
	for _, t := range targets {
		fp := f.parts[t.Partition]
		switch {
		case fp == nil:
			fp = &fetchPartition{Target: t}
		case fp.LeaderEpoch != t.LeaderEpoch:
			fp = &fetchPartition{Target: t, failed: fp.failed}
		}
		next[t.Partition] = fp
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
	backoff := time.Duration(f.mgr.cfg.ReplicaFetchBackoffMs) * time.Millisecond
	for {
		select {
		case <-f.stop:
			return
		case <-f.mgr.ctx.Done():
			return
		default:
		}
		if hook := f.mgr.cfg.BeforeFetch; hook != nil {
			hook(f.leader)
		}
		req, sent, wait := f.buildRequest()
		if len(sent) == 0 {
			f.sleep(wait)
			continue
		}
		raw, err := f.roundTrip(req)
		if err != nil {
			if peer.LoginRefused(err) && time.Since(f.refusedWarned) >= refusedLoginLogInterval {
				f.refusedWarned = time.Now()
				f.mgr.log.Warn("replica fetch failed: the leader's inter-broker listener refused this node's login or certificate", "leader", f.leader, "err", err)
			} else {
				f.mgr.log.Debug("replica fetch failed", "leader", f.leader, "err", err)
			}
			f.sleep(backoff)
			continue
		}
		resp := raw.(*kmsg.FetchResponse)
		if resp.ErrorCode != 0 {
			f.mgr.log.Debug("replica fetch refused", "leader", f.leader, "err", kerr.ErrorForCode(resp.ErrorCode))
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
	case <-f.mgr.ctx.Done():
	}
}

// buildRequest builds the next fetch from the partitions ready to fetch,
// or returns how long to wait for one to be.
func (f *replicaFetcher) buildRequest() (*kmsg.FetchRequest, map[*partition.Partition]sentPartition, time.Duration) {
	cfg := f.mgr.cfg
	self := cfg.NodeID
	req := kmsg.NewPtrFetchRequest()
	req.SetVersion(fetchVersion)
	req.ReplicaID = self
	req.ReplicaState.ID, req.ReplicaState.Epoch = self, f.mgr.env.BrokerEpoch()
	req.MaxWaitMillis, req.MinBytes, req.MaxBytes = cfg.ReplicaFetchWaitMaxMs, cfg.ReplicaFetchMinBytes, cfg.ReplicaFetchResponseMaxBytes
	req.SessionID, req.SessionEpoch = 0, -1
	sent := map[*partition.Partition]sentPartition{}
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
		rp.Partition, rp.CurrentLeaderEpoch = p.Index(), fp.LeaderEpoch
		rp.FetchOffset, rp.LogStartOffset = p.Log().EndOffset(), p.Log().StartOffset()
		rp.LastFetchedEpoch = -1
		if e, ok := p.Log().LatestEpoch(); ok {
			rp.LastFetchedEpoch = e
		}
		rp.PartitionMaxBytes = cfg.ReplicaFetchMaxBytes
		i, ok := byTopic[fp.TopicID]
		if !ok {
			i = len(req.Topics)
			byTopic[fp.TopicID] = i
			rt := kmsg.NewFetchRequestTopic()
			rt.TopicID = fp.TopicID
			req.Topics = append(req.Topics, rt)
		}
		req.Topics[i].Partitions = append(req.Topics[i].Partitions, rp)
		sent[p] = sentPartition{fp: fp, fetchOffset: rp.FetchOffset}
	}
	return req, sent, wait
}

// leaderAddr is the leader's Kafka listener, from the image.
func (f *replicaFetcher) leaderAddr() (string, error) {
	host, port, registered := f.mgr.env.Endpoint(f.leader)
	if !registered {
		return "", fmt.Errorf("broker: leader %d is not registered", f.leader)
	}
	if port < 0 {
		return "", fmt.Errorf("broker: leader %d has no endpoint", f.leader)
	}
	return net.JoinHostPort(host, fmt.Sprint(port)), nil
}

// roundTrip sends req to the leader on the fetcher's connection, which
// dials again after an error or when the leader registers another
// endpoint (a peer.Conn). A fetch may wait replica.fetch.wait.max.ms at the
// leader, and gets 30 s more.
func (f *replicaFetcher) roundTrip(req kmsg.Request) (kmsg.Response, error) {
	addr, err := f.leaderAddr()
	if err != nil {
		return nil, err
	}
	wait := time.Duration(f.mgr.cfg.ReplicaFetchWaitMaxMs) * time.Millisecond
	ctx, cancel := context.WithTimeout(f.ctx, wait+30*time.Second)
	defer cancel()
	return f.conn.Do(ctx, addr, req)
}

// processResponse applies each partition's answer.
func (f *replicaFetcher) processResponse(resp *kmsg.FetchResponse, sent map[*partition.Partition]sentPartition) {
	byID := map[[16]byte]map[int32]sentPartition{}
	for p, s := range sent {
		if byID[s.fp.TopicID] == nil {
			byID[s.fp.TopicID] = map[int32]sentPartition{}
		}
		byID[s.fp.TopicID][p.Index()] = s
	}
	backoff := time.Duration(f.mgr.cfg.ReplicaFetchBackoffMs) * time.Millisecond
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
			p := s.fp.Partition
			switch err := kerr.ErrorForCode(rp.ErrorCode); {
			case err == nil:
				err := f.processPartition(s, rp)
				switch {
				case err == nil, errors.Is(err, storage.ErrClosed):
					// ErrClosed: the topic was deleted meanwhile; the next
					// image drops the partition.
				case errors.Is(err, partition.ErrInvalidFromLeader), errors.Is(err, partition.ErrNoProgress):
					f.mgr.log.Warn("fetching again after a backoff", "topic", p.Topic(), "partition", p.Index(), "leader", f.leader, "err", err)
					f.mark(s.fp, func(fp *fetchPartition) { fp.delayUntil = time.Now().Add(backoff) })
				default:
					f.mgr.log.Error("replicating from the leader failed; this replica stops fetching the partition",
						"topic", p.Topic(), "partition", p.Index(), "leader", f.leader, "err", err)
					f.mark(s.fp, func(fp *fetchPartition) { fp.failed = true })
				}
			case errors.Is(err, kerr.FencedLeaderEpoch):
				f.mgr.log.Info("the leader has a newer leader epoch; waiting for the metadata image",
					"topic", p.Topic(), "partition", p.Index(), "leader", f.leader, "epoch", s.fp.LeaderEpoch)
				f.mark(s.fp, func(fp *fetchPartition) { fp.fenced = true })
			case errors.Is(err, kerr.OffsetOutOfRange):
				if err := f.outOfRange(s); err != nil {
					f.mgr.log.Warn("resetting an out-of-range replica failed", "topic", p.Topic(), "partition", p.Index(), "err", err)
					f.mark(s.fp, func(fp *fetchPartition) { fp.delayUntil = time.Now().Add(backoff) })
				}
			default:
				f.mgr.log.Debug("replica fetch of a partition refused; retrying", "topic", p.Topic(), "partition", p.Index(), "leader", f.leader, "err", err)
				f.mark(s.fp, func(fp *fetchPartition) { fp.delayUntil = time.Now().Add(backoff) })
			}
		}
	}
}

// current reports whether fp is still followed at its epoch.
func (f *replicaFetcher) current(fp *fetchPartition) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.parts[fp.Partition] == fp
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
	p := s.fp.Partition
	if rp.DivergingEpoch.Epoch >= 0 || rp.DivergingEpoch.EndOffset >= 0 {
		return p.TruncateDiverging(s.fp.LeaderEpoch, rp.DivergingEpoch.Epoch, rp.DivergingEpoch.EndOffset)
	}
	var end int64
	if len(rp.RecordBatches) > 0 {
		var err error
		end, err = p.AppendFromLeader(s.fp.LeaderEpoch, s.fetchOffset, rp.RecordBatches)
		if err != nil {
			return err
		}
		if end > 0 {
			if err := p.Log().FlushAfterAppend(end); err != nil {
				return err
			}
		}
	}
	f.fetched(s, rp, end)
	moved := p.FollowerHW(rp.HighWatermark)
	if err := p.FollowLogStart(rp.LogStartOffset); err != nil {
		return err
	}
	if moved || len(rp.RecordBatches) > 0 {
		p.Wake()
	}
	return nil
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
		return s.fp.Partition.StartOverAt(s.fp.LeaderEpoch, s.fetchOffset, start)
	}
	hw, err := f.listOffset(s, -1)
	if err != nil {
		return err
	}
	return s.fp.Partition.TruncateAbove(s.fp.LeaderEpoch, s.fetchOffset, hw)
}

// listOffset asks the leader for the partition's earliest (-2) or latest
// (-1: its high watermark, as a consumer's ListOffsets) offset.
func (f *replicaFetcher) listOffset(s sentPartition, timestamp int64) (int64, error) {
	req := kmsg.NewPtrListOffsetsRequest()
	req.ReplicaID = -1
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = s.fp.Partition.Topic()
	rp := kmsg.NewListOffsetsRequestTopicPartition()
	rp.Partition, rp.CurrentLeaderEpoch, rp.Timestamp = s.fp.Partition.Index(), s.fp.LeaderEpoch, timestamp
	rt.Partitions = []kmsg.ListOffsetsRequestTopicPartition{rp}
	req.Topics = []kmsg.ListOffsetsRequestTopic{rt}
	req.SetVersion(f.mgr.cfg.ListOffsetsVersion)
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

// notify signals ch without blocking.
func notify(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}
