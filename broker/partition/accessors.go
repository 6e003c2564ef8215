package partition

import (
	"log/slog"

	"github.com/gregor-broker/gregor/storage"
)

// SetLogger sets the logger of the partition's messages, before it is used.
func (p *Partition) SetLogger(l *slog.Logger) { p.logger = l }

// RestoreHighWatermark sets the high watermark from its checkpoint when
// the partition opens in cluster mode, within the log's bounds; until the
// image gives the partition a role, it is the one served.
func (p *Partition) RestoreHighWatermark(hw int64) {
	p.hw.Store(min(max(hw, p.log.StartOffset()), p.log.EndOffset()))
	p.hwCheckpointed.Store(p.hw.Load())
}

// State is a partition's replica set and leadership from the
// image, as this broker serves it.
type State struct {
	Leader         int32
	LeaderEpoch    int32
	PartitionEpoch int32
	Replicas       []int32
	ISR            []int32
	Local          bool // this broker leads the partition
}

// Topic is the name of the partition's topic.
func (p *Partition) Topic() string { return p.topic }

// Index is the partition's index in its topic.
func (p *Partition) Index() int32 { return p.index }

// Log is the partition's log. Appends go through the partition (Append,
// AppendBuilt, WriteTxnMarker, AppendFromLeader), so that each is checked
// against the producer state and stamped with the leader epoch under
// appendMu; the log is for reads, flushes and the cleaner.
func (p *Partition) Log() *storage.Log { return p.log }

// LeaderEpoch is the partition's leader epoch: 0 on a single node, the
// image's in cluster mode, once a role was applied.
func (p *Partition) LeaderEpoch() int32 { return p.leaderEpoch.Load() }

// State is the partition's leadership from the metadata image in cluster
// mode, nil on a single node.
func (p *Partition) State() *State { return p.cluster.Load() }

// SetState publishes the image's leadership of the partition, before its
// role is applied (BecomeLeader, BecomeFollower, BecomeNone).
func (p *Partition) SetState(st *State) { p.cluster.Store(st) }
