package storage

import (
	"math/rand"
	"testing"
)

// TestRandomOperationsKeepInvariants runs random sequences of appends
// (rolling often), syncs, reopens (clean and crashed), truncations and start
// offset moves against a model, with fixed seeds. After every step the
// offsets are contiguous and every batch in the model reads back byte for
// byte (with its assigned base offset), alone and all together.
func TestRandomOperationsKeepInvariants(t *testing.T) {
	forEachFS(t, func(t *testing.T, env testEnv) {
		seeds, steps := 20, 300
		if env.mem == nil {
			seeds, steps = 2, 80 // real fsyncs are slow
		}
		for seed := int64(1); seed <= int64(seeds); seed++ {
			rng := rand.New(rand.NewSource(seed))
			cfg := testConfig()
			cfg.SegmentBytes = int64(600 + rng.Intn(3000))
			cfg.IndexIntervalBytes = rng.Intn(500)
			cfg.SegmentIndexBytes = 24 + rng.Intn(200)
			dir := env.dir + "-" + string(rune('a'+seed))
			l := mustOpen(t, env.fs, dir, cfg)
			var m model
			for step := 0; step < steps; step++ {
				switch op := rng.Intn(20); {
				case op < 12:
					n := 1 + rng.Intn(3)
					specs := make([]batchSpec, n)
					for i := range specs {
						specs[i] = batchSpec{records: 1 + rng.Intn(6), maxTs: rng.Int63n(1000), valueSize: rng.Intn(200)}
					}
					m.append(t, l, specs...)
				case op < 13:
					if err := l.Sync(); err != nil {
						t.Fatal(err)
					}
				case op < 15:
					if rng.Intn(2) == 0 {
						if err := l.Close(); err != nil {
							t.Fatal(err)
						}
					} else {
						crash(l)
					}
					l = mustOpen(t, env.fs, dir, cfg)
				case op < 17:
					off := m.start + rng.Int63n(m.end-m.start+2)
					if off < l.segments[0].base {
						m = model{start: off, end: off}
					} else {
						m.truncate(off)
					}
					if err := l.TruncateTo(off); err != nil {
						t.Fatalf("seed %d step %d: Truncate(%d): %v", seed, step, off, err)
					}
				case op < 19:
					off := m.start + rng.Int63n(m.end-m.start+1)
					m.start = max(m.start, off)
					if err := l.SetStartOffset(off); err != nil {
						t.Fatalf("seed %d step %d: SetStartOffset(%d): %v", seed, step, off, err)
					}
				default:
					if rng.Intn(4) == 0 {
						off := rng.Int63n(m.end + 10)
						m = model{start: off, end: off}
						if err := l.TruncateFullyAndStartAt(off); err != nil {
							t.Fatal(err)
						}
					}
				}
				m.check(t, l)
				for i := 1; i < len(l.segments); i++ {
					if l.segments[i-1].end != l.segments[i].base {
						t.Fatalf("seed %d step %d: segments not contiguous", seed, step)
					}
				}
			}
			if err := l.Delete(); err != nil {
				t.Fatal(err)
			}
		}
	})
}
