package broker

// Retention and compaction run in the background, as Kafka's LogManager
// and LogCleaner do:
//
//   - Every log.retention.check.interval.ms, each partition's log deletes
//     the segments wholly below its log start offset (after DeleteRecords)
//     and, when cleanup.policy includes delete, the segments past
//     retention.bytes and retention.ms (storage.Log.DeleteOldSegments).
//   - With log.cleaner.enable, log.cleaner.threads goroutines clean the
//     logs of topics whose cleanup.policy includes compact: each picks the
//     dirtiest log whose dirty ratio exceeds min.cleanable.dirty.ratio (or
//     whose oldest dirty record is past max.compaction.lag.ms), not being
//     cleaned by another thread, and cleans it (storage.Log.Clean); with
//     none to clean it sleeps log.cleaner.backoff.ms.
//
// Both stop when the broker closes (Broker.ctx and Broker.wg), before the
// logs are closed.

import (
	"errors"
	"math"
	"sync"
	"time"

	"github.com/gregor-broker/gregor/broker/partition"
	"github.com/gregor-broker/gregor/protocol/batch"
	"github.com/gregor-broker/gregor/storage"
)

// logManager holds the cleaner threads' shared state.
type logManager struct {
	b *Broker

	mu       sync.Mutex
	cleaning map[*partition.Partition]bool // partitions a cleaner thread holds
	// now is the clock, Unix milliseconds; tests replace it.
	now func() int64
	// mapEntries is the keys one cleaning round may index: Kafka's
	// SkimpyOffsetMap slots for a thread's share of the dedupe buffer (24
	// bytes each) at its 0.9 load factor.
	mapEntries int
}

// startLogManager starts the retention task and the cleaner threads.
func (b *Broker) startLogManager() {
	lm := &logManager{b: b, cleaning: map[*partition.Partition]bool{}, now: nowMillis,
		mapEntries: int(min(b.cfg.LogCleanerDedupeBufferSize/int64(b.cfg.LogCleanerThreads)/24*9/10, math.MaxInt32))}
	lm.mapEntries = max(lm.mapEntries, 1)
	b.logs = lm
	b.wg.Add(1)
	go lm.retentionLoop(time.Duration(b.cfg.LogRetentionCheckIntervalMs) * time.Millisecond)
	if *b.cfg.LogCleanerEnable {
		for range b.cfg.LogCleanerThreads {
			b.wg.Add(1)
			go lm.cleanerLoop(time.Duration(b.cfg.LogCleanerBackoffMs) * time.Millisecond)
		}
	}
}

// partitionRef is a partition with its topic's effective configs.
type partitionRef struct {
	p   *partition.Partition
	cfg *effectiveTopicConfig
}

// partitions returns every partition, read under Broker.mu.
func (lm *logManager) partitions() []partitionRef {
	lm.b.mu.RLock()
	defer lm.b.mu.RUnlock()
	var out []partitionRef
	for _, t := range lm.b.catalog.byName {
		cfg := t.effective.Load()
		for _, p := range t.partitions {
			out = append(out, partitionRef{p: p, cfg: cfg})
		}
	}
	return out
}

func (lm *logManager) retentionLoop(interval time.Duration) {
	defer lm.b.wg.Done()
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-lm.b.ctx.Done():
			return
		case <-t.C:
			lm.enforceRetention()
		}
	}
}

// enforceRetention runs one retention pass over every partition.
func (lm *logManager) enforceRetention() {
	now := lm.now()
	for _, ref := range lm.partitions() {
		if lm.b.ctx.Err() != nil {
			return
		}
		policy := storage.RetentionPolicy{
			Delete:         ref.cfg.deletePolicy,
			RetentionMs:    ref.cfg.retentionMs,
			RetentionBytes: ref.cfg.retentionBytes,
			HighWatermark:  ref.p.HighWatermark(),
		}
		res, err := ref.p.Log().DeleteOldSegments(policy, now)
		switch {
		case errors.Is(err, storage.ErrClosed): // deleted meanwhile
		case err != nil:
			lm.b.log.Error("retention failed", "topic", ref.p.Topic(), "partition", ref.p.Index(), "err", err)
		case res.Segments > 0:
			lm.b.log.Info("retention deleted segments", "topic", ref.p.Topic(), "partition", ref.p.Index(),
				"segments", res.Segments, "bytes", res.Bytes, "log_start_offset", res.NewStart)
		}
	}
}

// compactionPolicy is what the cleaner needs of a partition and its
// topic's configs.
func (lm *logManager) compactionPolicy(ref partitionRef) storage.CompactionPolicy {
	p := ref.p
	producers := p.ProducerLastBatches()
	maxLag := ref.cfg.maxCompactionLagMs
	if maxLag <= 0 {
		maxLag = math.MaxInt64
	}
	return storage.CompactionPolicy{
		Codec:              &batch.CleanerCodec{},
		MinCleanableRatio:  ref.cfg.minCleanableRatio,
		MinCompactionLagMs: ref.cfg.minCompactionLagMs,
		MaxCompactionLagMs: maxLag,
		DeleteRetentionMs:  ref.cfg.deleteRetentionMs,
		LastStableOffset:   p.LastStableOffset(),
		Producers:          producers,
		AbortedTxns:        p.Log().AbortedTxns,
		MaxMapEntries:      lm.mapEntries,
	}
}

func (lm *logManager) cleanerLoop(backoff time.Duration) {
	defer lm.b.wg.Done()
	for lm.b.ctx.Err() == nil {
		if lm.cleanFilthiest() {
			continue
		}
		t := time.NewTimer(backoff)
		select {
		case <-lm.b.ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}

// cleanFilthiest cleans the dirtiest compacted log that is due, as Kafka's
// grabFilthiestCompactedLog picks it, and reports whether it cleaned one.
func (lm *logManager) cleanFilthiest() bool {
	now := lm.now()
	var (
		best      partitionRef
		bestRatio = -1.0
		found     bool
	)
	lm.mu.Lock()
	for _, ref := range lm.partitions() {
		if !ref.cfg.compact || lm.cleaning[ref.p] {
			continue
		}
		c, err := ref.p.Log().Cleanable(lm.compactionPolicy(ref), now)
		if err != nil {
			if !errors.Is(err, storage.ErrClosed) {
				lm.b.log.Warn("cleaner: cannot inspect log", "topic", ref.p.Topic(), "partition", ref.p.Index(), "err", err)
			}
			continue
		}
		if c.Due(ref.cfg.minCleanableRatio) && c.Ratio() > bestRatio {
			best, bestRatio, found = ref, c.Ratio(), true
		}
	}
	if found {
		lm.cleaning[best.p] = true
	}
	lm.mu.Unlock()
	if !found {
		return false
	}
	defer func() {
		lm.mu.Lock()
		delete(lm.cleaning, best.p)
		lm.mu.Unlock()
	}()
	res, err := best.p.Log().Clean(lm.b.ctx, lm.compactionPolicy(best), now)
	switch {
	case err == nil:
		lm.b.log.Info("cleaner: cleaned log", "topic", best.p.Topic(), "partition", best.p.Index(),
			"first_dirty", res.FirstDirty, "new_first_dirty", res.NewFirstDirty,
			"bytes_in", res.BytesIn, "bytes_out", res.BytesOut, "records_read", res.RecordsRead, "records_kept", res.Retained)
	case errors.Is(err, storage.ErrClosed) || lm.b.ctx.Err() != nil:
	default:
		lm.b.log.Error("cleaner: cleaning failed", "topic", best.p.Topic(), "partition", best.p.Index(), "err", err)
		return false // back off rather than retry a failing log at once
	}
	return true
}
