package storage

import (
	"testing"
	"time"
)

// testClock is a settable clock for Config.Now.
type testClock struct{ ms int64 }

func (c *testClock) now() time.Time { return time.UnixMilli(c.ms) }

// rollStep is one append in a time-roll scenario: advance the clock, append
// a batch with max timestamp ts, and expect a roll or not.
type rollStep struct {
	advance int64
	ts      int64
	roll    bool
}

func TestRollOnSegmentMs(t *testing.T) {
	const segmentMs = 100
	for _, tc := range []struct {
		name      string
		segmentMs int64
		steps     []rollStep
	}{
		{"first batch timestamp", segmentMs, []rollStep{
			{0, 1000, false}, // into the empty segment: never a roll
			{0, 1050, false},
			{0, 1100, false}, // waited exactly segment.ms: not more
			{0, 990, false},  // an older timestamp waits less
			{0, 1101, true},  // more than segment.ms after the first batch
			{0, 1150, false}, // measured from the new segment's first batch, 1101
			{0, 1202, true},
		}},
		{"wall clock ignored when batches have timestamps", segmentMs, []rollStep{
			{0, 1000, false},
			{10 * segmentMs, 1001, false},
		}},
		{"no timestamp: wall clock since creation", segmentMs, []rollStep{
			{0, noTimestamp, false},
			{segmentMs, noTimestamp, false},
			{1, noTimestamp, true},
			{segmentMs, noTimestamp, false}, // the new segment was created at the roll
			{1, 5, true},                    // its first batch had none: the clock still rules
		}},
		{"segment.ms 0 turns it off", 0, []rollStep{
			{0, 1000, false},
			{1 << 40, 1 << 40, false},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			forEachFS(t, func(t *testing.T, env testEnv) {
				clock := &testClock{ms: 1_000_000}
				cfg := testConfig()
				cfg.SegmentBytes = 1 << 20
				cfg.SegmentMs, cfg.Now = tc.segmentMs, clock.now
				l := mustOpen(t, env.fs, env.dir, cfg)
				defer l.Close()
				var m model
				for i, s := range tc.steps {
					clock.ms += s.advance
					before := len(l.segments)
					m.append(t, l, batchSpec{records: 1, maxTs: s.ts})
					if rolled := len(l.segments) > before; rolled != s.roll {
						t.Fatalf("step %d (ts %d, clock +%d): rolled = %v, want %v", i, s.ts, s.advance, rolled, s.roll)
					}
				}
				m.check(t, l)
			})
		})
	}
}

// TestRollJitter: each segment draws its jitter in [0, min(jitter,
// segment.ms)), and rolls once the wait exceeds segment.ms minus it.
func TestRollJitter(t *testing.T) {
	forEachFS(t, func(t *testing.T, env testEnv) {
		cfg := testConfig()
		cfg.SegmentBytes = 1 << 20
		cfg.SegmentMs, cfg.SegmentJitterMs = 1000, 5000
		l := mustOpen(t, env.fs, env.dir, cfg)
		defer l.Close()
		var m model
		ts := int64(1_000_000)
		jitters := map[int64]bool{}
		for range 20 {
			seg := l.active()
			j := seg.rollJitter
			if j < 0 || j >= cfg.SegmentMs {
				t.Fatalf("segment %d: jitter %d not in [0, %d)", seg.base, j, cfg.SegmentMs)
			}
			jitters[j] = true
			first := ts
			m.append(t, l, batchSpec{records: 1, maxTs: first})
			m.append(t, l, batchSpec{records: 1, maxTs: first + cfg.SegmentMs - j})
			if l.active() != seg {
				t.Fatalf("segment %d rolled after waiting segment.ms - jitter (%d)", seg.base, cfg.SegmentMs-j)
			}
			ts = first + cfg.SegmentMs - j + 1
			m.append(t, l, batchSpec{records: 1, maxTs: ts})
			if l.active() == seg {
				t.Fatalf("segment %d did not roll after waiting %d, more than segment.ms - jitter", seg.base, cfg.SegmentMs-j+1)
			}
		}
		if len(jitters) < 2 {
			t.Fatalf("20 segments drew the same jitter %v", jitters)
		}
		m.check(t, l)
	})
}

// TestRollTimestampSurvivesReopenAndResetsOnTruncation: an opened active
// segment measures from its first batch, read from disk (Kafka's
// loadFirstBatchTimestamp); one truncated empty counts as created at the
// truncation.
func TestRollTimestampSurvivesReopenAndResetsOnTruncation(t *testing.T) {
	forEachFS(t, func(t *testing.T, env testEnv) {
		clock := &testClock{ms: 1_000_000}
		cfg := testConfig()
		cfg.SegmentBytes = 1 << 20
		cfg.SegmentMs, cfg.Now = 100, clock.now
		l := mustOpen(t, env.fs, env.dir, cfg)
		var m model
		m.append(t, l, batchSpec{records: 1, maxTs: 1000})
		m.append(t, l, batchSpec{records: 1, maxTs: 1050})
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		l = mustOpen(t, env.fs, env.dir, cfg)
		defer l.Close()
		m.append(t, l, batchSpec{records: 1, maxTs: 1100})
		if len(l.segments) != 1 {
			t.Fatal("rolled before segment.ms had passed since the first batch")
		}
		m.append(t, l, batchSpec{records: 1, maxTs: 1101})
		if len(l.segments) != 2 {
			t.Fatal("did not roll 101 ms after the first batch, which was read back at Open")
		}
		m.check(t, l)

		// Truncate into the first segment, leaving it with one batch: it
		// measures from that batch again.
		if err := l.TruncateTo(1); err != nil {
			t.Fatal(err)
		}
		m.truncate(1)
		m.append(t, l, batchSpec{records: 1, maxTs: 1101})
		if len(l.segments) != 2 {
			t.Fatal("the truncated segment did not roll 101 ms after its first batch")
		}
		// Truncate the active segment empty, long after it was created: it
		// counts as created now.
		clock.ms += 1000
		if err := l.TruncateTo(l.active().base); err != nil {
			t.Fatal(err)
		}
		m.truncate(l.active().base)
		m.append(t, l, batchSpec{records: 1, maxTs: noTimestamp})
		clock.ms += 100
		m.append(t, l, batchSpec{records: 1, maxTs: noTimestamp})
		if len(l.segments) != 2 {
			t.Fatal("rolled although segment.ms had not passed since the segment became empty")
		}
		clock.ms++
		m.append(t, l, batchSpec{records: 1, maxTs: noTimestamp})
		if len(l.segments) != 3 {
			t.Fatal("did not roll once segment.ms had passed since the segment became empty")
		}
		m.check(t, l)
	})
}
