package share

import (
	"math"
	"sort"
	"time"
)

// FetchedBatch is one record batch a log read returned: its offsets and
// what read_committed needs to know of it.
type FetchedBatch struct {
	BaseOffset    int64
	LastOffset    int64
	ProducerID    int64 // -1 when the batch has none
	Transactional bool
	Control       bool
	AbortMarker   bool // a control batch whose first record is an ABORT marker
}

// AbortedTxn is one aborted transaction the log read reported.
type AbortedTxn struct {
	ProducerID  int64
	FirstOffset int64
}

// AcquireRequest is one share fetch's request for a partition, with the
// batches the log read returned from FetchOffset.
type AcquireRequest struct {
	Member      string
	Mode        AcquireMode
	BatchSize   int // ShareFetch BatchSize; 0 or less: no splitting
	MaxRecords  int // the records still wanted by the fetch
	FetchOffset int64
	Batches     []FetchedBatch
	// ReadCommitted is share.isolation.level=read_committed: acquired
	// records of aborted transactions are archived, never handed out.
	ReadCommitted bool
	Aborted       []AbortedTxn
	Now           time.Time
}

// throttleLimit is the delivery count from which records are handed out
// in shrinking numbers (SharePartition.throttleRecordsDeliveryLimit).
func throttleLimit(maxDelivery int) int {
	return max(2, int(math.Ceil(float64(maxDelivery)/2)))
}

// Acquire acquires records of the fetched batches for the member, as
// SharePartition.acquire does: available in-flight ranges again (their
// delivery count raised), new ranges past the end offset, and gaps of the
// persisted state, each locked until Now plus the lock duration. It
// returns the ranges handed out and the number of offsets they count for.
// Acquisitions are not persisted.
func (p *Partition) Acquire(r AcquireRequest) ([]AcquiredRange, int) {
	if r.MaxRecords <= 0 || len(r.Batches) == 0 {
		return nil, 0
	}
	lastBatch := r.Batches[len(r.Batches)-1]
	if lastBatch.LastOffset < p.start {
		return nil, 0
	}
	lastToAcquire, maxRecs := p.acquireLimits(r.FetchOffset, r.MaxRecords, lastBatch.LastOffset)
	if maxRecs <= 0 {
		return nil, 0
	}
	rl := r.Mode == RecordLimit
	firstBase := r.Batches[0].BaseOffset
	base := firstBase
	p.archiveStale(r.FetchOffset, base)
	if i := p.floor(base); i < 0 {
		if base < p.start {
			base = p.start
		}
	} else if p.cache[i].last >= base {
		base = p.cache[i].first
	}
	sub := p.between(min(firstBase, base), lastToAcquire)
	if len(sub) == 0 {
		got, n := p.acquireNew(r, rl, base, lastToAcquire, maxRecs)
		return p.filterAborted(r, got, n)
	}

	var result []AcquiredRange
	acquired := 0
	gapStart := base
	for _, b := range sub {
		if acquired >= maxRecs {
			break
		}
		if p.gapActive() {
			if gapStart < b.first {
				got, n := p.acquireNew(r, rl, gapStart, b.first-1, maxRecs-acquired)
				result = append(result, got...)
				acquired += n
			}
			gapStart = b.last + 1
			if acquired >= maxRecs {
				break
			}
		}
		fullMatch := b.first >= firstBase && b.last <= lastToAcquire
		remaining := maxRecs - acquired
		rlSubset := rl && b.last-b.first+1 > int64(remaining)
		throttle := p.shouldThrottle(b, firstBase, lastToAcquire)
		if throttle && acquired > 0 {
			maxRecs = 0
			break
		}
		if fullMatch && !b.split() && !rlSubset && !throttle {
			if b.whole.state == Available && b.whole.tryUpdate(Acquired, true, p.cfg.MaxDeliveryCount, r.Member) {
				b.whole.deadline = r.Now.Add(p.cfg.LockDuration)
				result = append(result, AcquiredRange{b.first, b.last, int16(b.whole.count)})
				acquired += int(b.last - b.first + 1)
			}
			continue
		}
		if !b.split() {
			if b.whole.state != Available {
				continue
			}
			b.splitAll()
		}
		n := p.acquireSubset(r, rl, remaining, firstBase, lastToAcquire, b, &result)
		acquired += n
		if throttle && n > 0 {
			maxRecs = 0
			break
		}
	}
	if last := sub[len(sub)-1].last; acquired < maxRecs && last < lastToAcquire {
		got, n := p.acquireNew(r, rl, last+1, lastToAcquire, maxRecs-acquired)
		result = append(result, got...)
		acquired += n
	}
	if len(result) == 0 {
		return nil, acquired
	}
	p.moveGapStart(result[len(result)-1].LastOffset + 1)
	return p.filterAborted(r, result, acquired)
}

// acquireLimits is lastOffsetAndMaxRecordsToAcquire: at the in-flight
// limit only offsets already in flight below the end offset can go.
func (p *Partition) acquireLimits(fetchOffset int64, maxFetch int, lastOffset int64) (int64, int) {
	last := lastOffset
	maxRecs := int64(maxFetch)
	if room := int64(p.cfg.MaxInFlightRecords) - p.InFlightCount(); room < maxRecs {
		maxRecs = room
	}
	if maxRecs <= 0 && fetchOffset <= p.end {
		maxRecs = min(int64(maxFetch), p.end-fetchOffset+1)
		last = min(lastOffset, p.end)
	}
	return last, int(maxRecs)
}

// archiveStale archives the available offsets between a fetch offset and
// the first batch the log returned above it: they are gone from the log
// (SharePartition.maybeArchiveStaleBatches).
func (p *Partition) archiveStale(fetchOffset, base int64) {
	if len(p.cache) == 0 || fetchOffset >= base {
		return
	}
	from := fetchOffset
	if i := p.floor(fetchOffset); i >= 0 && p.cache[i].last >= fetchOffset {
		from = p.cache[i].first
	}
	sub := p.between(from, base-1)
	if len(sub) > 0 && p.archiveRecords(fetchOffset, base, sub, Available) {
		p.findNext = true
	}
}

// shouldThrottle is SharePartition.shouldThrottleRecordsDelivery.
func (p *Partition) shouldThrottle(b *inFlightBatch, reqFirst, reqLast int64) bool {
	limit := throttleLimit(p.cfg.MaxDeliveryCount)
	if !b.split() {
		return b.whole.state == Available && !b.whole.pending && b.whole.count >= limit
	}
	top := 0
	for i := range b.offsets {
		off := b.first + int64(i)
		if off < reqFirst || off > reqLast {
			continue
		}
		if s := &b.offsets[i]; s.state == Available && !s.pending {
			top = max(top, s.count)
		}
	}
	return top >= limit
}

// acquireNew acquires [first, last] as new in-flight batches
// (acquireNewBatchRecords and createBatches).
func (p *Partition) acquireNew(r AcquireRequest, rl bool, first, last int64, maxFetch int) ([]AcquiredRange, int) {
	firstAcq := first
	if len(p.cache) == 0 && p.end > firstAcq {
		firstAcq = p.end
	}
	lastAcq := last
	if int64(maxFetch) < lastAcq-firstAcq+1 {
		lastAcq = lastOffsetOfBatchWith(r.Batches, firstAcq+int64(maxFetch)-1)
		if p.gapActive() && lastAcq > last {
			lastAcq = last
		}
	}
	if firstAcq > lastAcq {
		return nil, 0
	}
	got := p.createBatches(r, rl, maxFetch, firstAcq, lastAcq)
	if p.cache[0].first == firstAcq {
		p.start = firstAcq
	}
	if lastAcq > p.end {
		p.end = lastAcq
	}
	if rl {
		lastAcq = got[0].LastOffset
	}
	p.moveGapStart(lastAcq + 1)
	return got, int(lastAcq - firstAcq + 1)
}

// lastOffsetOfBatchWith is lastOffsetFromBatchWithRequestOffset: the last
// offset of the fetched batch holding off, so whole batches are acquired.
func lastOffsetOfBatchWith(batches []FetchedBatch, off int64) int64 {
	var prev *FetchedBatch
	for i := range batches {
		if off < batches[i].BaseOffset {
			break
		}
		prev = &batches[i]
	}
	if prev != nil && off <= prev.LastOffset {
		return prev.LastOffset
	}
	return off
}

func (p *Partition) createBatches(r AcquireRequest, rl bool, maxFetch int, firstAcq, lastAcq int64) []AcquiredRange {
	var result []AcquiredRange
	cur := firstAcq
	if batchSize := int64(r.BatchSize); !rl && batchSize > 0 && lastAcq-firstAcq+1 > batchSize {
		for _, b := range r.Batches {
			if b.BaseOffset > lastAcq {
				break
			}
			if b.BaseOffset-cur >= batchSize {
				result = append(result, AcquiredRange{cur, b.BaseOffset - 1, 1})
				cur = b.BaseOffset
			}
		}
	}
	result = append(result, AcquiredRange{cur, lastAcq, 1})
	deadline := r.Now.Add(p.cfg.LockDuration)
	if rl {
		a := result[0]
		if a.LastOffset-a.FirstOffset+1 > int64(maxFetch) {
			// InFlightBatch.maybeInitializeOffsetStateUpdate(target, delay):
			// the first maxFetch offsets acquired, the rest available with
			// no delivery yet.
			target := a.FirstOffset + int64(maxFetch) - 1
			b := &inFlightBatch{first: a.FirstOffset, last: a.LastOffset}
			b.offsets = make([]inFlightState, a.LastOffset-a.FirstOffset+1)
			for i := range b.offsets {
				if a.FirstOffset+int64(i) <= target {
					b.offsets[i] = inFlightState{state: Acquired, count: 1, member: r.Member, deadline: deadline}
				} else {
					b.offsets[i] = inFlightState{state: Available}
				}
			}
			p.findNext = true
			p.insert(b)
			a.LastOffset = target
			return []AcquiredRange{a}
		}
	}
	for _, a := range result {
		p.insert(&inFlightBatch{first: a.FirstOffset, last: a.LastOffset,
			whole: &inFlightState{state: Acquired, count: 1, member: r.Member, deadline: deadline}})
	}
	return result
}

// acquireSubset acquires the available offsets of a split batch within
// the request (acquireSubsetBatchRecords): a record on its last delivery
// goes alone, and records delivered often go in shrinking numbers.
func (p *Partition) acquireSubset(r AcquireRequest, rl bool, maxFetch int, reqFirst, reqLast int64, b *inFlightBatch, result *[]AcquiredRange) int {
	acquired := 0
	maxWhileThrottled := int64(-1)
	throttled := false
	maxDelivery := p.cfg.MaxDeliveryCount
	limit := throttleLimit(maxDelivery)
	var got []AcquiredRange
	deadline := r.Now.Add(p.cfg.LockDuration)
	for i := range b.offsets {
		off := b.first + int64(i)
		if off < reqFirst {
			continue
		}
		if off > reqLast {
			break
		}
		s := &b.offsets[i]
		if s.state != Available || s.pending {
			continue
		}
		if maxDelivery > 2 && s.count == maxDelivery-1 && acquired > 0 {
			break
		}
		if s.count >= limit && maxWhileThrottled < 0 {
			// Java shifts a long: the count is taken modulo 64.
			maxWhileThrottled = max(1, int64(len(b.offsets))>>uint((s.count-limit+1)&63))
			throttled = true
		}
		if !s.tryUpdate(Acquired, true, maxDelivery, r.Member) {
			continue
		}
		s.deadline = deadline
		got = append(got, AcquiredRange{off, off, int16(s.count)})
		acquired++
		if s.count == maxDelivery && maxDelivery > 2 {
			break
		}
		if rl && acquired == maxFetch {
			break
		}
		if throttled && int64(acquired) == maxWhileThrottled {
			break
		}
	}
	*result = append(*result, mergeRanges(got)...)
	return acquired
}

// mergeRanges joins adjacent ranges of equal delivery count
// (ShareFetchUtils.accumulateAcquiredRecords).
func mergeRanges(rs []AcquiredRange) []AcquiredRange {
	var out []AcquiredRange
	for _, r := range rs {
		if n := len(out); n > 0 && out[n-1].LastOffset+1 == r.FirstOffset && out[n-1].DeliveryCount == r.DeliveryCount {
			out[n-1].LastOffset = r.LastOffset
			continue
		}
		out = append(out, r)
	}
	return out
}

// filterAborted archives the acquired records of aborted transactions and
// leaves them out of what is handed out, under read_committed
// (maybeFilterAbortedTransactionalAcquiredRecords).
func (p *Partition) filterAborted(r AcquireRequest, got []AcquiredRange, n int) ([]AcquiredRange, int) {
	if !r.ReadCommitted || len(r.Aborted) == 0 {
		return got, n
	}
	toArchive := abortedBatches(r.Batches, r.Aborted)
	for _, b := range toArchive {
		// Kafka looks up the cached batch at or below the aborted batch's
		// base and fails the fetch when there is none, which happens when
		// the aborted batch begins below the start offset: the records
		// just acquired would stay locked, handed to no one. The batches
		// from the base on are archived instead.
		from := b.BaseOffset
		if i := p.floor(b.BaseOffset); i >= 0 {
			from = p.cache[i].first
		}
		p.archiveRecords(b.BaseOffset, b.LastOffset+1, p.between(from, b.LastOffset), Acquired)
	}
	out := removeBatches(got, toArchive)
	count := 0
	for _, a := range out {
		count += int(a.LastOffset - a.FirstOffset + 1)
	}
	return out, count
}

// abortedBatches is fetchAbortedTransactionRecordBatches: the
// transactional batches of producers with an aborted transaction open at
// that point, until their abort marker.
func abortedBatches(batches []FetchedBatch, aborted []AbortedTxn) []FetchedBatch {
	ordered := append([]AbortedTxn(nil), aborted...)
	sort.SliceStable(ordered, func(i, j int) bool { return ordered[i].FirstOffset < ordered[j].FirstOffset })
	open := map[int64]bool{}
	var out []FetchedBatch
	for _, b := range batches {
		if b.ProducerID < 0 {
			continue
		}
		for len(ordered) > 0 && ordered[0].FirstOffset <= b.LastOffset {
			open[ordered[0].ProducerID] = true
			ordered = ordered[1:]
		}
		switch {
		case b.Control && b.AbortMarker:
			delete(open, b.ProducerID)
		case b.Transactional && open[b.ProducerID]:
			out = append(out, b)
		}
	}
	return out
}

// removeBatches cuts the offsets of the given batches out of the acquired
// ranges (filterRecordBatchesFromAcquiredRecords).
func removeBatches(got []AcquiredRange, cut []FetchedBatch) []AcquiredRange {
	if len(cut) == 0 {
		return got
	}
	var out []AcquiredRange
	for _, a := range got {
		pieces := []AcquiredRange{a}
		for _, b := range cut {
			var next []AcquiredRange
			for _, pc := range pieces {
				if pc.LastOffset < b.BaseOffset || pc.FirstOffset > b.LastOffset {
					next = append(next, pc)
					continue
				}
				if pc.FirstOffset < b.BaseOffset {
					next = append(next, AcquiredRange{pc.FirstOffset, b.BaseOffset - 1, pc.DeliveryCount})
				}
				if pc.LastOffset > b.LastOffset {
					next = append(next, AcquiredRange{b.LastOffset + 1, pc.LastOffset, pc.DeliveryCount})
				}
			}
			pieces = next
		}
		out = append(out, pieces...)
	}
	return out
}
