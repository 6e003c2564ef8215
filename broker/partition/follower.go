package partition

import (
	"errors"
	"fmt"
	"time"

	"github.com/gregor-broker/gregor/protocol/batch"
	"github.com/gregor-broker/gregor/storage"
)

// ErrNoProgress is a diverging epoch that truncates nothing: fetching
// again at once would get the same answer, so the partition waits
// replica.fetch.backoff.ms.
var ErrNoProgress = errors.New("broker: a diverging epoch without progress")

// ErrInvalidFromLeader is records from the leader that fail their checks
// (a bad CRC, a gap in the offsets): the fetch is retried after a backoff,
// as Kafka's fetcher retries a CorruptRecordException, while a failing
// local log stops the partition.
var ErrInvalidFromLeader = errors.New("broker: invalid records from the leader")

// AppendFromLeader appends the whole batches of records, fetched at
// fetchOffset at leaderEpoch, keeping their offsets, and updates the
// producer state from them as recovery does. It returns the new log end,
// or 0 when nothing was appended (the partition moved on meanwhile, or the
// answer held no whole batch).
func (p *Partition) AppendFromLeader(leaderEpoch int32, fetchOffset int64, records []byte) (int64, error) {
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
		return 0, fmt.Errorf("%w: %w", ErrInvalidFromLeader, err)
	}
	if splitErr != nil && !errors.Is(splitErr, batch.ErrTruncated) {
		return 0, fmt.Errorf("%w: %w", ErrInvalidFromLeader, splitErr)
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
		return 0, fmt.Errorf("%w: %w", ErrInvalidFromLeader, err)
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
func (p *Partition) replayReplicated(batches []byte) error {
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

// TruncateDiverging truncates a follower whose log diverges from the
// leader's, which answered that its epoch divEpoch ends at divEnd (Kafka's
// getOffsetTruncationState), and rebuilds the producer state.
func (p *Partition) TruncateDiverging(leaderEpoch, divEpoch int32, divEnd int64) error {
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
				ErrNoProgress, divEpoch, divEnd, end, latest)
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
func (p *Partition) reloadProducers() error {
	if end := p.log.EndOffset(); p.hw.Load() > end {
		p.hw.Store(end)
	}
	p.producers.reset()
	return p.producers.load(p.log, time.Now().UnixMilli(), p.replayMarker)
}

// followingAt reports whether this broker still follows the partition at
// leaderEpoch: a fetch answer of an older leadership changes nothing.
// appendMu held, so that the role cannot change before the log does.
func (p *Partition) followingAt(leaderEpoch int32) bool {
	rs := &p.repl
	rs.mu.Lock()
	defer rs.mu.Unlock()
	return rs.role == roleFollower && rs.leaderEpoch == leaderEpoch
}

// TruncateAbove truncates a follower whose log end (fetchOffset) lies past
// the leader's to the leader's high watermark.
func (p *Partition) TruncateAbove(leaderEpoch int32, fetchOffset, leaderHW int64) error {
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

// StartOverAt empties a follower's log to start at the leader's log start
// offset, when its log end (fetchOffset) lies below it.
func (p *Partition) StartOverAt(leaderEpoch int32, fetchOffset, leaderStart int64) error {
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

// FollowLogStart moves a follower's log start offset up to the leader's,
// never past its own high watermark.
func (p *Partition) FollowLogStart(leaderStart int64) error {
	if start := min(leaderStart, p.hw.Load()); start > p.log.StartOffset() {
		if err := p.log.SetStartOffset(start); err != nil && !errors.Is(err, storage.ErrOffsetOutOfRange) {
			return err
		}
	}
	return nil
}
