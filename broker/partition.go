package broker

import (
	"log/slog"
	"sync"
	"sync/atomic"

	"github.com/gregor-broker/gregor/storage"
)

// partition is one partition led by this broker. appendMu serializes
// appends with the producer-state checks before them; mu guards only the
// set of fetches waiting for new data.
type partition struct {
	topic  string
	index  int32
	log    *storage.Log
	logger *slog.Logger
	// leaderEpoch is the partition's leader epoch. A single node leads every
	// partition from epoch 0 for its whole life; replication will move it.
	leaderEpoch int32
	// cluster is the partition's leadership from the metadata image in
	// cluster mode (cluster.go); nil on a single node, which leads it.
	cluster atomic.Pointer[partitionState]

	// appendMu is held around every append to log, so that a batch's
	// producer-state check and its append are one step (producer_state.go).
	appendMu  sync.Mutex
	producers producerStates // guarded by appendMu
	// txnGuards holds, per producer id, the token of a transaction
	// verification in flight (txn_verify.go), Kafka's VerificationGuard: a
	// marker removes it, so a batch verified before its transaction ended
	// cannot open a transaction no marker will close. Guarded by appendMu.
	txnGuards map[int64]uint64

	mu      sync.Mutex
	waiters map[chan struct{}]struct{}
	closed  bool
}

func newPartition(topic string, index int32, l *storage.Log) *partition {
	return &partition{topic: topic, index: index, log: l, logger: slog.Default(), waiters: map[chan struct{}]struct{}{}}
}

// highWatermark is the offset below which records are committed and visible
// to consumers. With one replica, every appended record is committed - once
// it is as durable as an acknowledgement requires: under flush.messages=1
// only fsynced records are, since Kafka's leader fsyncs inside the append,
// before its high watermark moves, so a consumer never sees a record that
// a power loss could take back. The producer path wakes fetches again once
// the fsync is done (awaitFlushes, or the log's background-flush hook).
func (p *partition) highWatermark() int64 {
	end := p.log.EndOffset()
	if p.log.FlushPolicy().PerAppend() {
		return min(end, p.log.DurableOffset())
	}
	return end
}

// lastStableOffset is the read_committed limit (Kafka's UnifiedLog
// lastStableOffset): the first offset of the earliest transaction still
// open in the partition, or the high watermark when there is none or it
// lies above. Safe without locks.
func (p *partition) lastStableOffset() int64 {
	hw := p.highWatermark()
	if first, ok := p.producers.firstUnstable(); ok && first < hw {
		return first
	}
	return hw
}

// watch registers ch to be signalled (without blocking) on the next append
// or when the partition goes away. unwatch must follow.
func (p *partition) watch(ch chan struct{}) {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		notify(ch)
		return
	}
	p.waiters[ch] = struct{}{}
	p.mu.Unlock()
}

func (p *partition) unwatch(ch chan struct{}) {
	p.mu.Lock()
	delete(p.waiters, ch)
	p.mu.Unlock()
}

// appended wakes every waiting fetch.
func (p *partition) appended() {
	p.mu.Lock()
	for ch := range p.waiters {
		notify(ch)
	}
	p.mu.Unlock()
}

// close wakes every waiting fetch for good: the partition is being deleted
// or the broker is stopping.
func (p *partition) close() {
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

// notLeader reports whether, in cluster mode, another broker (or none)
// leads the partition: Produce, Fetch and ListOffsets answer
// NOT_LEADER_OR_FOLLOWER. One atomic load; always false on a single node.
func (p *partition) notLeader() bool {
	s := p.cluster.Load()
	return s != nil && !s.local
}
