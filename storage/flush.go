package storage

import (
	"errors"
	"math"
	"sync"
	"sync/atomic"
	"time"
)

// FlushPolicy is when a Log fsyncs what Append wrote, in Kafka's terms: the
// topic configs flush.messages and flush.ms (broker defaults
// log.flush.interval.messages and log.flush.interval.ms), with Kafka's
// values. OSFlush, Kafka's default and a new Log's, never forces an fsync:
// the operating system writes the page cache back when it chooses, and
// only Close, a segment roll and Sync fsync. Beware that the zero value is
// not that: its Ms of 0 fsyncs in the background after every append.
type FlushPolicy struct {
	// Messages is flush.messages: once this many offsets are appended but
	// not yet fsynced, the append that reached the count is made durable
	// before FlushAfterAppend returns. 1 makes every append durable before
	// it returns. Zero, negative and math.MaxInt64 mean never.
	Messages int64
	// Ms is flush.ms: an appended record is fsynced, in the background, at
	// most this many milliseconds after its append; FlushAfterAppend does
	// not wait for it. 0 starts the fsync at once. Negative and
	// math.MaxInt64 mean never.
	Ms int64
}

// OSFlush is Kafka's default policy, flush.messages and flush.ms both
// Long.MAX_VALUE: no fsync is forced, flushing is left to the OS.
func OSFlush() FlushPolicy { return FlushPolicy{Messages: math.MaxInt64, Ms: math.MaxInt64} }

func (p FlushPolicy) everyMessages() bool { return p.Messages > 0 && p.Messages < math.MaxInt64 }
func (p FlushPolicy) everyMs() bool       { return p.Ms >= 0 && p.Ms < math.MaxInt64 }

// PerAppend reports whether every append is durable before it is
// acknowledged (flush.messages=1).
func (p FlushPolicy) PerAppend() bool { return p.Messages == 1 }

// flusher is a Log's flush policy and the state of its background fsyncs.
// Its lock comes after every lock of the Log and is never held across I/O.
type flusher struct {
	policy atomic.Pointer[FlushPolicy]
	// durable mirrors Log.recoveryPoint so that appenders can count the
	// unflushed offsets without taking syncMu.
	durable atomic.Int64

	onBackground atomic.Pointer[func()] // run after each background fsync

	mu      sync.Mutex
	timer   *time.Timer // armed while a flush.ms deadline is pending
	running bool        // a background Sync goroutine is running
	again   bool        // it must Sync once more before it stops
	stopped bool        // the Log is closed: arm nothing more
}

// SetFlushPolicy replaces the log's flush policy; it applies from the next
// FlushAfterAppend. Safe to call concurrently with everything.
func (l *Log) SetFlushPolicy(p FlushPolicy) {
	l.flush.policy.Store(&p)
}

// OnBackgroundFlush sets fn to run after each background fsync (for
// flush.ms and FlushAfterAppendAsync), holding no lock of the Log, so that
// a caller who shows readers only durable offsets can wake them. nil
// clears it.
func (l *Log) OnBackgroundFlush(fn func()) {
	if fn == nil {
		l.flush.onBackground.Store(nil)
		return
	}
	l.flush.onBackground.Store(&fn)
}

// FlushPolicy returns the log's flush policy, OSFlush until SetFlushPolicy.
func (l *Log) FlushPolicy() FlushPolicy {
	if p := l.flush.policy.Load(); p != nil {
		return *p
	}
	return OSFlush()
}

// DurableOffset returns the recovery point: every offset below it has been
// fsynced. It may lag a Sync that is finishing.
func (l *Log) DurableOffset() int64 { return l.flush.durable.Load() }

// setRecoveryPoint records rp as the recovery point; syncMu held (or the
// Log not yet shared).
func (l *Log) setRecoveryPoint(rp int64) {
	l.recoveryPoint = rp
	l.flush.durable.Store(rp)
}

// SyncTo returns once every offset below end is durable, fsyncing if no
// other caller's fsync covers them: group commit. Callers appending
// concurrently each write under the Log's append lock and call SyncTo
// outside it; while one fsync runs, the others queue, and the next of them
// to go fsyncs everything written by then, releasing all whose offsets it
// covers. So N concurrent appenders share about two fsyncs rather than N.
// A failed fsync fails the Log: SyncTo returns an error matching
// ErrFailed, as do later writes.
func (l *Log) SyncTo(end int64) error {
	if l.flush.durable.Load() >= end {
		return nil
	}
	l.syncMu.Lock()
	defer l.syncMu.Unlock()
	if l.recoveryPoint >= end {
		return nil // another caller's fsync covered end while this one queued
	}
	return l.syncLocked()
}

// FlushAfterAppend applies the flush policy to an append that ended at end
// (the offset after its last record), and must be called after Append
// returns, without holding any lock other appenders need, so that their
// appends and fsyncs can group. It returns once the append is as durable as
// the policy demands:
//
//   - flush.messages reached (always, for flush.messages=1): everything
//     appended so far is fsynced before it returns (group commit, SyncTo);
//   - flush.ms set: a background fsync is scheduled within flush.ms, and it
//     returns at once;
//   - neither: it returns at once.
//
// An error matches ErrFailed (the fsync failed and the Log with it) or
// ErrClosed; the append itself stays in the log, readable but not durable.
func (l *Log) FlushAfterAppend(end int64) error {
	p := l.FlushPolicy()
	if p.everyMessages() && end-l.flush.durable.Load() >= p.Messages {
		return l.SyncTo(end)
	}
	if p.everyMs() {
		l.flushWithin(time.Duration(p.Ms) * time.Millisecond)
	}
	return nil
}

// FlushAfterAppendAsync is FlushAfterAppend for a caller that will not wait
// (a producer with acks=0): an fsync the policy demands now is started in
// the background instead of awaited. It never blocks on the disk.
func (l *Log) FlushAfterAppendAsync(end int64) {
	p := l.FlushPolicy()
	if p.everyMessages() && end-l.flush.durable.Load() >= p.Messages {
		l.flushInBackground()
		return
	}
	if p.everyMs() {
		l.flushWithin(time.Duration(p.Ms) * time.Millisecond)
	}
}

// flushWithin makes sure a background fsync starts within d, arming a timer
// unless one is pending already.
func (l *Log) flushWithin(d time.Duration) {
	if d <= 0 {
		l.flushInBackground()
		return
	}
	f := &l.flush
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.timer != nil || f.stopped {
		return
	}
	f.timer = time.AfterFunc(d, func() {
		f.mu.Lock()
		f.timer = nil
		f.mu.Unlock()
		l.flushInBackground()
	})
}

// flushInBackground starts one goroutine that fsyncs the log, or asks the
// running one to fsync again when it is done, so a log never has more than
// one background fsync.
func (l *Log) flushInBackground() {
	f := &l.flush
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.stopped {
		return
	}
	if f.running {
		f.again = true
		return
	}
	f.running = true
	go l.backgroundFlushes()
}

func (l *Log) backgroundFlushes() {
	f := &l.flush
	for {
		// A failure is logged and kept by Sync (fail); the next write sees it.
		if err := l.SyncTo(l.end.Load()); err != nil && !errors.Is(err, ErrClosed) && !errors.Is(err, ErrFailed) {
			l.logger.Error("storage: background flush failed", "dir", l.dir, "err", err)
		}
		if fn := f.onBackground.Load(); fn != nil {
			(*fn)()
		}
		f.mu.Lock()
		if !f.again || f.stopped {
			f.running = false
			f.mu.Unlock()
			return
		}
		f.again = false
		f.mu.Unlock()
	}
}

// stopFlushes cancels a pending flush.ms timer and arms no more; a
// background fsync already running finds the Log closed.
func (l *Log) stopFlushes() {
	f := &l.flush
	f.mu.Lock()
	defer f.mu.Unlock()
	f.stopped = true
	if f.timer != nil {
		f.timer.Stop()
		f.timer = nil
	}
}
