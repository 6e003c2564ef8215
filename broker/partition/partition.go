package partition

import (
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gregor-broker/gregor/storage"
)

// Partition is one partition of this broker. appendMu serializes
// appends with the producer-state checks before them; mu guards only the
// set of fetches waiting for new data.
type Partition struct {
	topic  string
	index  int32
	log    *storage.Log
	logger *slog.Logger
	// leaderEpoch is the partition's leader epoch. A single node leads every
	// partition from epoch 0 for its whole life; in cluster mode it is the
	// image's, set when this broker becomes the partition's leader or
	// follower (replica.go).
	leaderEpoch atomic.Int32
	// cluster is the partition's leadership from the metadata image in
	// cluster mode (SetState, from the broker's applied image); nil on a
	// single node, which leads it.
	cluster atomic.Pointer[State]
	// hw is the high watermark in cluster mode (replica.go): on the
	// leader the smallest log end offset over the ISR, on a follower the
	// leader's, capped at the local log end. Unused on a single node.
	hw atomic.Int64
	// hwCheckpointed is the high watermark last checkpointed.
	hwCheckpointed atomic.Int64
	// repl is the partition's replication state in cluster mode
	// (replica.go).
	repl replicaState

	// appendMu is held around every append to log, so that a batch's
	// producer-state check and its append are one step (producer_state.go).
	appendMu  sync.Mutex
	producers producerStates // guarded by appendMu
	// txnGuards holds, per producer id, the token of a transaction
	// verification in flight (SetTxnGuard), Kafka's VerificationGuard: a
	// marker removes it, so a batch verified before its transaction ended
	// cannot open a transaction no marker will close. Guarded by appendMu.
	txnGuards map[int64]uint64

	mu      sync.Mutex
	waiters map[chan struct{}]struct{}
	closed  bool
}

// New is partition index of topic on log l, which it owns from now on.
// Before it serves, the caller loads its producer state (LoadProducers)
// and, in cluster mode, restores its high watermark
// (RestoreHighWatermark).
func New(topic string, index int32, l *storage.Log) *Partition {
	return &Partition{topic: topic, index: index, log: l, logger: slog.Default(), waiters: map[chan struct{}]struct{}{}}
}

// HighWatermark is the offset below which records are committed and visible
// to consumers. With one replica, every appended record is committed - once
// it is as durable as an acknowledgement requires: under flush.messages=1
// only fsynced records are, since Kafka's leader fsyncs inside the append,
// before its high watermark moves, so a consumer never sees a record that
// a power loss could take back. The producer path wakes fetches again once
// the fsync is done (awaitFlushes, or the log's background-flush hook).
//
// In cluster mode the high watermark is the replicated one (p.hw): the
// offset every in-sync replica holds (replica.go).
func (p *Partition) HighWatermark() int64 {
	if p.cluster.Load() != nil {
		return p.hw.Load()
	}
	return p.LocalEnd()
}

// LocalEnd is the end of what this replica holds durably enough to count
// as held: the log end, or under flush.messages=1 the fsynced end (see
// HighWatermark).
func (p *Partition) LocalEnd() int64 {
	end := p.log.EndOffset()
	if p.log.FlushPolicy().PerAppend() {
		return min(end, p.log.DurableOffset())
	}
	return end
}

// LastStableOffset is the read_committed limit (Kafka's UnifiedLog
// lastStableOffset): the first offset of the earliest transaction still
// open in the partition, or the high watermark when there is none or it
// lies above. Safe without locks.
func (p *Partition) LastStableOffset() int64 {
	hw := p.HighWatermark()
	if first, ok := p.producers.firstUnstable(); ok && first < hw {
		return first
	}
	return hw
}

// Watch registers ch to be signalled (without blocking) on the next append
// or when the partition goes away. Unwatch must follow.
func (p *Partition) Watch(ch chan struct{}) {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		notify(ch)
		return
	}
	p.waiters[ch] = struct{}{}
	p.mu.Unlock()
}

// Unwatch removes ch, registered by Watch.
func (p *Partition) Unwatch(ch chan struct{}) {
	p.mu.Lock()
	delete(p.waiters, ch)
	p.mu.Unlock()
}

// Appended wakes every waiting fetch, and in cluster mode first lets the
// leader's high watermark follow its log end (replica.go).
func (p *Partition) Appended() {
	if p.cluster.Load() != nil {
		p.MaybeIncrementHW(time.Now().UnixMilli())
	}
	p.Wake()
}

// Wake wakes every waiter: fetches waiting for data and acks=all produces
// waiting for the high watermark.
func (p *Partition) Wake() {
	p.mu.Lock()
	for ch := range p.waiters {
		notify(ch)
	}
	p.mu.Unlock()
}

// Close wakes every waiting fetch for good: the partition is being deleted
// or the broker is stopping.
func (p *Partition) Close() {
	p.mu.Lock()
	p.closed = true
	for ch := range p.waiters {
		notify(ch)
	}
	p.mu.Unlock()
}

func notify(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// NotLeader reports whether, in cluster mode, another broker (or none)
// leads the partition: Produce, Fetch and ListOffsets answer
// NOT_LEADER_OR_FOLLOWER. One atomic load; always false on a single node.
func (p *Partition) NotLeader() bool {
	s := p.cluster.Load()
	return s != nil && !s.Local
}
