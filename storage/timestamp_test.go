package storage

import (
	"bytes"
	"math/rand"
	"testing"
)

// wantAtTimestamp is BatchAtTimestamp by brute force: the first batch in
// offset order with max timestamp >= ts and ending at or after the start.
func (m *model) wantAtTimestamp(ts int64) []byte {
	for _, b := range m.batches {
		if b.maxTs >= ts && b.last >= m.start && b.maxTs != noTimestamp {
			return b.data
		}
	}
	return nil
}

// wantMaxTimestamp is MaxTimestampBatch by brute force.
func (m *model) wantMaxTimestamp() []byte {
	var best *modelBatch
	for i := range m.batches {
		if b := &m.batches[i]; b.maxTs > noTimestamp && (best == nil || b.maxTs > best.maxTs) {
			best = b
		}
	}
	if best == nil {
		return nil
	}
	return best.data
}

func checkTimestamps(t testing.TB, l *Log, m *model, probes []int64) {
	t.Helper()
	for _, ts := range probes {
		got, found, err := l.BatchAtTimestamp(ts)
		if err != nil {
			t.Fatalf("BatchAtTimestamp(%d): %v", ts, err)
		}
		want := m.wantAtTimestamp(ts)
		if found != (want != nil) || !bytes.Equal(got, want) {
			t.Fatalf("BatchAtTimestamp(%d) = base %d found=%v, want base %d", ts, baseOf(got), found, baseOf(want))
		}
	}
	got, found, err := l.MaxTimestampBatch()
	if err != nil {
		t.Fatalf("MaxTimestampBatch: %v", err)
	}
	if want := m.wantMaxTimestamp(); found != (want != nil) || !bytes.Equal(got, want) {
		t.Fatalf("MaxTimestampBatch = base %d found=%v, want base %d", baseOf(got), found, baseOf(want))
	}
}

func TestBatchAtTimestampWithNonMonotonicTimestamps(t *testing.T) {
	forEachFS(t, func(t *testing.T, env testEnv) {
		rng := rand.New(rand.NewSource(7))
		l := mustOpen(t, env.fs, env.dir, testConfig())
		var m model
		var probes []int64
		for i := 0; i < 200; i++ {
			// Mostly rising with jitter and occasional old or equal ones.
			ts := int64(i*10) + rng.Int63n(200) - 100
			switch rng.Intn(8) {
			case 0:
				ts = rng.Int63n(int64(i*10 + 1))
			case 1:
				ts = noTimestamp
			}
			m.append(t, l, batchSpec{records: 1 + rng.Intn(4), maxTs: ts, valueSize: rng.Intn(120)})
			probes = append(probes, ts, ts+1, ts-1)
		}
		probes = append(probes, -1000, 0, 1, 1<<40)
		if len(l.segments) < 5 {
			t.Fatalf("only %d segments", len(l.segments))
		}
		checkTimestamps(t, l, &m, probes)
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		l = mustOpen(t, env.fs, env.dir, testConfig())
		checkTimestamps(t, l, &m, probes)
		crash(l)
		l = mustOpen(t, env.fs, env.dir, testConfig())
		defer l.Close()
		checkTimestamps(t, l, &m, probes)

		// The start offset hides earlier batches from BatchAtTimestamp.
		m.start = m.batches[len(m.batches)/2].first + 1
		if err := l.SetStartOffset(m.start); err != nil {
			t.Fatal(err)
		}
		checkTimestamps(t, l, &m, probes)
	})
}

func TestMaxTimestampBatchTiesAndRestarts(t *testing.T) {
	forEachFS(t, func(t *testing.T, env testEnv) {
		l := mustOpen(t, env.fs, env.dir, testConfig())
		var m model
		if _, found, err := l.MaxTimestampBatch(); found || err != nil {
			t.Fatalf("empty log: found=%v err=%v", found, err)
		}
		m.append(t, l, batchSpec{records: 1, maxTs: noTimestamp})
		checkTimestamps(t, l, &m, nil)
		for i := 0; i < 40; i++ {
			m.append(t, l, batchSpec{records: 2, maxTs: int64(i % 7), valueSize: 100})
		}
		m.append(t, l, batchSpec{records: 3, maxTs: 500, valueSize: 100}) // the max
		for i := 0; i < 40; i++ {
			m.append(t, l, batchSpec{records: 2, maxTs: int64(i%7) * 70, valueSize: 100}) // ties at 420 < 500
		}
		m.append(t, l, batchSpec{records: 1, maxTs: 500}) // a later tie
		checkTimestamps(t, l, &m, nil)
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		l = mustOpen(t, env.fs, env.dir, testConfig())
		checkTimestamps(t, l, &m, nil)
		m.append(t, l, batchSpec{records: 1, maxTs: 501})
		checkTimestamps(t, l, &m, nil)
		crash(l)
		l = mustOpen(t, env.fs, env.dir, testConfig())
		defer l.Close()
		checkTimestamps(t, l, &m, nil)
		// Truncating the max away brings back the earlier one.
		last := m.batches[len(m.batches)-1].first
		m.truncate(last)
		if err := l.TruncateTo(last); err != nil {
			t.Fatal(err)
		}
		checkTimestamps(t, l, &m, []int64{0, 420, 500, 501})
	})
}
