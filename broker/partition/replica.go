package partition

// A partition's replication in cluster mode: Kafka's Partition (makeLeader,
// makeFollower, updateFollowerFetchState, maybeExpandIsr, maybeShrinkIsr,
// maybeIncrementLeaderHW, checkEnoughReplicasReachOffset).
//
// Each applied metadata image gives every local partition a role
// (the broker's cluster.applyRoles): leader when the image names this broker, follower
// when this broker is another of its replicas, none otherwise.
//
// The leader assigns the image's leader epoch in the log's epoch cache at
// its log end (so OffsetForLeaderEpoch and the followers' divergence checks
// answer from it), keeps for each follower its log end offset (the offset
// of its last fetch), the time of its last fetch and the last time it was
// caught up, and moves the high watermark to the smallest log end offset
// over the ISR (and over the followers that are caught up but not yet in
// it, as Kafka waits for them too). The high watermark never moves back.
// A follower fetching up to the high watermark (and up to the start of the
// current leader epoch) within the leader epoch joins the ISR; one not
// caught up for replica.lag.time.max.ms leaves it. Both go through the
// active controller as AlterPartition (the broker sends it: AlterRequest,
// AlterDone); while one is in flight the
// high watermark counts the larger of the two ISRs (Kafka's maximal ISR),
// and only one is in flight per partition.
//
// A follower copies the leader's log (broker/replication/fetcher.go, through
// AppendFromLeader and the truncations in follower.go); its high
// watermark is the leader's, capped at its own log end.
//
// Locks: replicaState.mu comes after Partition.appendMu and before
// storage.Log's locks; it is released before waking waiters (Partition.mu).
// See the package documentation.

import (
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/twmb/franz-go/pkg/kerr"
)

// replicaRole is what this broker is for a partition.
type replicaRole int8

const (
	roleNone     replicaRole = iota // not a replica, or not known yet
	roleLeader                      // the image's leader
	roleFollower                    // another replica of the image's
)

// replicaState is a partition's replication state on this broker.
type replicaState struct {
	mu             sync.Mutex
	role           replicaRole
	leader         int32
	leaderEpoch    int32
	partitionEpoch int32
	// epochStart is, on the leader, the log end offset when it took the
	// current leader epoch: a follower joins the ISR only once it has
	// reached it (Kafka's leaderEpochStartOffsetOpt).
	epochStart int64
	replicas   []int32
	isr        []int32 // the committed ISR
	// pendingISR is the ISR an AlterPartition in flight asks for; nil when
	// none is.
	pendingISR []int32
	// alterGen counts the ISR changes put in flight; the sender of one
	// stops when it is no longer the current one.
	alterGen  uint64
	followers map[int32]*followerState
	lagMaxMs  int64 // replica.lag.time.max.ms
}

// followerState is the leader's view of one follower (Kafka's Replica).
type followerState struct {
	leo                int64 // log end offset, -1 while unknown
	lastFetchMs        int64
	lastFetchLeaderLEO int64
	lastCaughtUpMs     int64
	brokerEpoch        int64
	lastSentHW         int64 // the high watermark last sent to it
	logStart           int64 // its log start offset, from its fetches; -1 while unknown
	// eligible: the image has the follower's broker registered and
	// unfenced (Kafka's isReplicaIsrEligible), updated on each image and
	// fetch. Only an eligible follower joins the ISR, and the high
	// watermark waits for a caught-up follower outside the ISR only while
	// it is eligible.
	eligible bool
}

// caughtUp is Kafka's Replica.isCaughtUp.
func (f *followerState) caughtUp(leaderEnd, now, lagMaxMs int64) bool {
	return f.leo == leaderEnd || now-f.lastCaughtUpMs <= lagMaxMs
}

// maximalISR is the committed ISR joined with the one in flight.
func (rs *replicaState) maximalISR() []int32 {
	if rs.pendingISR == nil {
		return rs.isr
	}
	out := slices.Clone(rs.isr)
	for _, id := range rs.pendingISR {
		if !slices.Contains(out, id) {
			out = append(out, id)
		}
	}
	return out
}

// BecomeLeader makes this broker the partition's leader at st's leader
// epoch, or, at the same epoch, takes the image's replicas and ISR. A new
// leader epoch starts at the log end in the epoch cache; the followers'
// states are reset, those in the ISR counted as caught up now so that they
// are not shrunk out at once (Kafka's makeLeader). The append lock is held
// so that no batch is stamped with the old epoch after the new one begins.
//
// eligible tells, from the image, whether a broker may be in an ISR.
func (p *Partition) BecomeLeader(st *State, now, lagMaxMs int64, eligible func(int32) bool) error {
	p.appendMu.Lock()
	defer p.appendMu.Unlock()
	rs := &p.repl
	rs.mu.Lock()
	newEpoch := rs.role != roleLeader || rs.leaderEpoch != st.LeaderEpoch
	rs.mu.Unlock()
	if newEpoch {
		if err := p.log.AssignEpoch(st.LeaderEpoch, p.log.EndOffset()); err != nil {
			return fmt.Errorf("broker: assigning leader epoch %d to %s-%d: %w", st.LeaderEpoch, p.topic, p.index, err)
		}
	}
	end := p.log.EndOffset()
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if newEpoch {
		rs.role, rs.leader, rs.leaderEpoch = roleLeader, st.Leader, st.LeaderEpoch
		rs.epochStart = end
		rs.followers = map[int32]*followerState{}
		rs.pendingISR = nil
		rs.partitionEpoch = -1
		p.leaderEpoch.Store(st.LeaderEpoch)
		// The high watermark carries over (the checkpoint, or what this
		// broker had as follower), never above the log end.
		p.hw.Store(max(min(p.hw.Load(), end), p.log.StartOffset()))
	}
	if st.PartitionEpoch > rs.partitionEpoch {
		// A newer ISR from the controller ends any change in flight.
		rs.isr, rs.partitionEpoch, rs.pendingISR = st.ISR, st.PartitionEpoch, nil
	}
	rs.replicas, rs.lagMaxMs = st.Replicas, lagMaxMs
	for _, id := range st.Replicas {
		if id == st.Leader || rs.followers[id] != nil {
			continue
		}
		f := &followerState{leo: -1, lastFetchLeaderLEO: -1, logStart: -1}
		if slices.Contains(rs.isr, id) {
			f.lastCaughtUpMs = now
		}
		rs.followers[id] = f
	}
	for id, f := range rs.followers {
		if !slices.Contains(st.Replicas, id) {
			delete(rs.followers, id)
			continue
		}
		f.eligible = eligible(id)
	}
	return nil
}

// BecomeFollower makes this broker a follower of st's leader (or of no
// leader, st.leader -1) at st's leader epoch. It reports whether the leader
// or the epoch changed, which restarts the fetch from the new leader.
func (p *Partition) BecomeFollower(st *State) bool {
	p.appendMu.Lock()
	defer p.appendMu.Unlock()
	rs := &p.repl
	rs.mu.Lock()
	defer rs.mu.Unlock()
	changed := rs.role != roleFollower || rs.leaderEpoch != st.LeaderEpoch || rs.leader != st.Leader
	rs.role, rs.leader, rs.leaderEpoch, rs.partitionEpoch = roleFollower, st.Leader, st.LeaderEpoch, st.PartitionEpoch
	rs.replicas, rs.isr, rs.pendingISR, rs.followers = st.Replicas, st.ISR, nil, nil
	p.leaderEpoch.Store(st.LeaderEpoch)
	if end := p.log.EndOffset(); p.hw.Load() > end {
		p.hw.Store(end)
	}
	return changed
}

// BecomeNone drops any role: this broker is not a replica. A broker that
// was one (a reassignment removed it) empties its log, as Kafka deletes a
// replica it no longer hosts, so that its disk is freed and a later
// reassignment back starts from an empty log the fetcher fills. So does a
// restarted broker whose log holds data of a partition that an image
// holding its own registration (current: at least as new as everything
// before it started) no longer places here (Kafka's stray replicas).
func (p *Partition) BecomeNone(st *State, current bool) error {
	p.appendMu.Lock()
	defer p.appendMu.Unlock()
	rs := &p.repl
	rs.mu.Lock()
	was := rs.role
	rs.role, rs.leader, rs.leaderEpoch = roleNone, st.Leader, st.LeaderEpoch
	rs.replicas, rs.isr, rs.pendingISR, rs.followers = st.Replicas, st.ISR, nil, nil
	p.leaderEpoch.Store(st.LeaderEpoch)
	rs.mu.Unlock()
	if was == roleNone && !current || p.log.EndOffset() == 0 && p.log.StartOffset() == 0 {
		return nil
	}
	p.logger.Info("no longer a replica; removing the local data", "topic", p.topic, "partition", p.index)
	if err := p.log.TruncateFullyAndStartAt(0); err != nil {
		return err
	}
	p.hw.Store(0)
	return p.reloadProducers()
}

// LeaderEpochIfLeading returns the leader epoch when this broker leads
// the partition.
func (p *Partition) LeaderEpochIfLeading() (int32, bool) {
	rs := &p.repl
	rs.mu.Lock()
	defer rs.mu.Unlock()
	return rs.leaderEpoch, rs.role == roleLeader
}

// ReplicationDone reports whether an acks=all append ending at end,
// appended at leaderEpoch, is answered (Kafka's
// checkEnoughReplicasReachOffset): with NOT_LEADER_OR_FOLLOWER when this
// broker no longer leads at that epoch; once the high watermark reached
// end, with NOT_ENOUGH_REPLICAS_AFTER_APPEND when the maximal ISR is
// smaller than minISR meanwhile, else success.
func (p *Partition) ReplicationDone(end int64, leaderEpoch int32, minISR int) (bool, *kerr.Error) {
	rs := &p.repl
	rs.mu.Lock()
	defer rs.mu.Unlock()
	switch {
	case rs.role != roleLeader || rs.leaderEpoch != leaderEpoch:
		return true, kerr.NotLeaderForPartition
	case p.hw.Load() < end:
		return false, nil
	case len(rs.maximalISR()) < EffectiveMinISR(minISR, len(rs.replicas)):
		return true, kerr.NotEnoughReplicasAfterAppend
	}
	return true, nil
}

// MaybeIncrementHW moves the leader's high watermark to the smallest log
// end offset over the maximal ISR and the caught-up followers (Kafka's
// maybeIncrementLeaderHW), never back. It reports whether it moved.
func (p *Partition) MaybeIncrementHW(now int64) bool {
	rs := &p.repl
	rs.mu.Lock()
	if rs.role != roleLeader {
		rs.mu.Unlock()
		return false
	}
	leo := p.LocalEnd()
	newHW := leo
	isr := rs.maximalISR()
	for id, f := range rs.followers {
		if f.leo < newHW && (slices.Contains(isr, id) || f.eligible && f.caughtUp(p.log.EndOffset(), now, rs.lagMaxMs)) {
			newHW = f.leo // -1 while unknown: the high watermark waits
		}
	}
	moved := false
	if old := p.hw.Load(); newHW > old {
		p.hw.Store(newHW)
		moved = true
	}
	rs.mu.Unlock()
	return moved
}

// FollowerFetch records a follower's fetch at fetchOffset (Kafka's
// updateFollowerFetchState): its log end offset and fetch time, and when it
// was last caught up. leaderEnd is the leader's log end offset when the
// fetch was read. It returns whether the high watermark moved and, when
// the follower should join the ISR, the ISR to ask the controller for (nil
// otherwise). ok is false when replica is not a replica of the partition
// or this broker no longer leads it.
//
// eligible says whether the image lets the follower join the ISR: its
// broker registered at the fetch's broker epoch and not fenced (Kafka's
// isReplicaIsrEligible).
//
// staleHW reports that the high watermark (after this fetch) is newer than
// the one last sent to the follower, which the caller sends now.
func (p *Partition) FollowerFetch(replica int32, brokerEpoch, fetchOffset, leaderEnd int64, fetchEpoch int32, eligible bool, now int64) (ok, hwMoved bool, expand []int32, staleHW bool) {
	rs := &p.repl
	rs.mu.Lock()
	f := rs.followers[replica]
	if rs.role != roleLeader || f == nil {
		rs.mu.Unlock()
		return false, false, nil, false
	}
	switch {
	case fetchOffset >= leaderEnd:
		f.lastCaughtUpMs = max(f.lastCaughtUpMs, now)
	case fetchOffset >= f.lastFetchLeaderLEO:
		f.lastCaughtUpMs = max(f.lastCaughtUpMs, f.lastFetchMs)
	}
	f.leo, f.lastFetchMs, f.lastFetchLeaderLEO, f.brokerEpoch, f.eligible = fetchOffset, now, leaderEnd, brokerEpoch, eligible
	// Kafka's maybeExpandIsr: not in the ISR, no change in flight, caught
	// up to the high watermark and to the start of this leader epoch,
	// fetching at the current epoch.
	if eligible && rs.pendingISR == nil && !slices.Contains(rs.isr, replica) && fetchEpoch == rs.leaderEpoch &&
		fetchOffset >= p.hw.Load() && fetchOffset >= rs.epochStart {
		expand = append(slices.Clone(rs.isr), replica)
		slices.Sort(expand)
		rs.pendingISR = expand
		rs.alterGen++
	}
	rs.mu.Unlock()
	hwMoved = p.MaybeIncrementHW(now)
	rs.mu.Lock()
	if hw := p.hw.Load(); hw > f.lastSentHW {
		f.lastSentHW, staleHW = hw, true
	}
	rs.mu.Unlock()
	return true, hwMoved, expand, staleHW
}

// FollowerLogStart records a follower's log start offset, from its fetch;
// it reports whether it changed, which may complete a DeleteRecords.
func (p *Partition) FollowerLogStart(replica int32, logStart int64) bool {
	rs := &p.repl
	rs.mu.Lock()
	defer rs.mu.Unlock()
	f := rs.followers[replica]
	if rs.role != roleLeader || f == nil || f.logStart == logStart {
		return false
	}
	f.logStart = logStart
	return true
}

// LowWatermark is the smallest log start offset over the leader and the
// followers on live brokers (Kafka's lowWatermarkIfLeader), which a
// DeleteRecords waits for; ok is false when this broker does not lead.
func (p *Partition) LowWatermark() (low int64, ok bool) {
	rs := &p.repl
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if rs.role != roleLeader {
		return -1, false
	}
	low = p.log.StartOffset()
	for _, f := range rs.followers {
		if f.eligible {
			low = min(low, f.logStart)
		}
	}
	return low, true
}

// ShrinkISR returns the ISR without the followers not caught up for
// lagMaxMs (Kafka's maybeShrinkIsr), marked in flight, or nil when none is
// out of sync or a change is already in flight.
func (p *Partition) ShrinkISR(now, lagMaxMs int64) []int32 {
	rs := &p.repl
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if rs.role != roleLeader || rs.pendingISR != nil {
		return nil
	}
	end := p.log.EndOffset()
	var keep []int32
	shrink := false
	for _, id := range rs.isr {
		f := rs.followers[id]
		if id != rs.leader && f != nil && !f.caughtUp(end, now, lagMaxMs) {
			shrink = true
			continue
		}
		keep = append(keep, id)
	}
	if !shrink {
		return nil
	}
	rs.pendingISR = keep
	rs.alterGen++
	return keep
}

// AlterGeneration names the ISR change in flight.
func (p *Partition) AlterGeneration() uint64 {
	rs := &p.repl
	rs.mu.Lock()
	defer rs.mu.Unlock()
	return rs.alterGen
}

// ISRChange is the ISR change in flight, what an AlterPartition asks the
// controller for this partition.
type ISRChange struct {
	LeaderEpoch    int32
	PartitionEpoch int32
	NewISR         []int32
}

// AlterRequest returns the ISR change in flight gen, from which the
// caller builds the AlterPartition; ok is false when gen is no longer in
// flight or this broker no longer leads.
func (p *Partition) AlterRequest(gen uint64) (ch ISRChange, ok bool) {
	rs := &p.repl
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if rs.role != roleLeader || rs.pendingISR == nil || rs.alterGen != gen {
		return ch, false
	}
	return ISRChange{LeaderEpoch: rs.leaderEpoch, PartitionEpoch: rs.partitionEpoch, NewISR: slices.Clone(rs.pendingISR)}, true
}

// FollowerEpochs returns the broker epoch each follower last fetched with.
func (p *Partition) FollowerEpochs() map[int32]int64 {
	rs := &p.repl
	rs.mu.Lock()
	defer rs.mu.Unlock()
	out := make(map[int32]int64, len(rs.followers))
	for id, f := range rs.followers {
		out[id] = f.brokerEpoch
	}
	return out
}

// AlterDone applies the controller's answer to the ISR change gen, sent at
// leaderEpoch: on success the ISR and partition epoch it returns; on
// OPERATION_NOT_ATTEMPTED or INELIGIBLE_REPLICA the change is dropped (the
// committed ISR stands); on any other refusal (FENCED_LEADER_EPOCH,
// INVALID_UPDATE_VERSION, ...) it stays in flight until the next image
// resets it, as Kafka waits for the next leader and ISR update. It reports
// whether the high watermark moved.
func (p *Partition) AlterDone(gen uint64, leaderEpoch int32, isr []int32, partitionEpoch int32, err error, now int64) bool {
	rs := &p.repl
	rs.mu.Lock()
	if rs.role != roleLeader || rs.leaderEpoch != leaderEpoch || rs.alterGen != gen {
		rs.mu.Unlock()
		return false
	}
	switch {
	case err == nil:
		if partitionEpoch >= rs.partitionEpoch {
			rs.isr, rs.partitionEpoch = isr, partitionEpoch
		}
		rs.pendingISR = nil
	case errors.Is(err, kerr.OperationNotAttempted), errors.Is(err, kerr.IneligibleReplica):
		rs.pendingISR = nil
	}
	rs.mu.Unlock()
	return p.MaybeIncrementHW(now)
}

// LeaderISR returns the committed ISR and the number of replicas, and
// whether this broker leads the partition.
func (p *Partition) LeaderISR() (isr []int32, replicas int, leading bool) {
	rs := &p.repl
	rs.mu.Lock()
	defer rs.mu.Unlock()
	return slices.Clone(rs.isr), len(rs.replicas), rs.role == roleLeader
}

// ISR returns the committed ISR.
func (p *Partition) ISR() []int32 {
	rs := &p.repl
	rs.mu.Lock()
	defer rs.mu.Unlock()
	return slices.Clone(rs.isr)
}

// EffectiveMinISR is min.insync.replicas capped at the replication
// factor, as Kafka 4's effectiveMinIsr.
func EffectiveMinISR(minISR int, replicas int) int {
	return max(min(minISR, replicas), 1)
}

// FollowerHW sets a follower's high watermark from the leader's, capped at
// the local log end; it never moves back but for a truncation below it.
// It reports whether it moved.
func (p *Partition) FollowerHW(leaderHW int64) bool {
	hw := min(leaderHW, p.log.EndOffset())
	if hw > p.hw.Load() {
		p.hw.Store(hw)
		return true
	}
	return false
}

// FollowerView is the leader's view of follower id (Kafka's
// Replica.stateSnapshot): its log end offset (-1 while unknown) and when
// it was last caught up with the leader's log end (Unix ms). ok is false
// when this broker does not lead the partition or id is not a follower.
func (p *Partition) FollowerView(id int32) (leo, lastCaughtUpMs int64, ok bool) {
	rs := &p.repl
	rs.mu.Lock()
	defer rs.mu.Unlock()
	f := rs.followers[id]
	if rs.role != roleLeader || f == nil {
		return -1, 0, false
	}
	return f.leo, f.lastCaughtUpMs, true
}

// HighWatermarkToCheckpoint returns the high watermark and whether it
// differs from the one last checkpointed.
func (p *Partition) HighWatermarkToCheckpoint() (int64, bool) {
	hw := p.hw.Load()
	return hw, p.hwCheckpointed.Load() != hw
}

// Checkpointed records hw as the high watermark last checkpointed.
func (p *Partition) Checkpointed(hw int64) { p.hwCheckpointed.Store(hw) }

// InISR reports whether replica is in the partition's ISR as its leader
// sees it, additions in flight included (Partition.inSyncReplicaIds).
func (p *Partition) InISR(replica int32) bool {
	rs := &p.repl
	rs.mu.Lock()
	defer rs.mu.Unlock()
	return slices.Contains(rs.maximalISR(), replica)
}

// LedHere reports, in cluster mode, whether this broker leads p and at
// which leader epoch: the image names it leader and the role is applied.
// The image is published before the role (the broker's cluster.apply), and until
// BecomeLeader has run the partition has no ISR and cannot take a
// coordinator's write, so a coordinator must not load it or serve its
// groups yet.
func (p *Partition) LedHere() (int32, bool) {
	st := p.cluster.Load()
	if st == nil || !st.Local {
		return 0, false
	}
	epoch, leading := p.LeaderEpochIfLeading()
	return st.LeaderEpoch, leading && epoch == st.LeaderEpoch
}
