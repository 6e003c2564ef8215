package storage

import "testing"

func TestSizeCountsBatchBytesAndShrinksWithStartOffset(t *testing.T) {
	forEachFS(t, func(t *testing.T, env testEnv) {
		l := mustOpen(t, env.fs, env.dir, testConfig())
		defer l.Close()
		if got := l.Size(); got != 0 {
			t.Fatalf("empty log Size %d, want 0", got)
		}
		var m model
		fillLog(t, l, &m, 60)
		sum := func(from int64) int64 {
			var n int64
			for _, b := range m.batches {
				if b.first >= from {
					n += int64(len(b.data))
				}
			}
			return n
		}
		if got, want := l.Size(), sum(0); got != want {
			t.Fatalf("Size %d, want %d", got, want)
		}
		base := l.segments[2].base
		if err := l.SetStartOffset(base); err != nil {
			t.Fatal(err)
		}
		if got, want := l.Size(), sum(base); got != want {
			t.Fatalf("after SetStartOffset(%d): Size %d, want %d", base, got, want)
		}
	})
}

func TestSetConfigAppliesToTheNextAppend(t *testing.T) {
	forEachFS(t, func(t *testing.T, env testEnv) {
		cfg := testConfig()
		cfg.SegmentBytes = 1 << 20
		l := mustOpen(t, env.fs, env.dir, cfg)
		defer l.Close()
		var m model
		m.append(t, l, batchSpec{records: 3, maxTs: 1000, valueSize: 10})
		m.append(t, l, batchSpec{records: 3, maxTs: 1001, valueSize: 10})
		if len(l.segments) != 1 {
			t.Fatalf("%d segments before SetConfig, want 1", len(l.segments))
		}
		bad := cfg
		bad.SegmentBytes = 0
		if err := l.SetConfig(bad); err == nil {
			t.Fatal("SetConfig accepted SegmentBytes 0")
		}
		small := cfg
		small.SegmentBytes = 100
		if err := l.SetConfig(small); err != nil {
			t.Fatal(err)
		}
		m.append(t, l, batchSpec{records: 3, maxTs: 1002, valueSize: 10})
		if len(l.segments) != 2 {
			t.Fatalf("%d segments after lowering SegmentBytes, want a roll to 2", len(l.segments))
		}
		m.check(t, l)
	})
}
