package storage

import (
	"bytes"
	"errors"
	"math/rand"
	"testing"
)

// TestForEachBatchHeaderVisitsEveryBatchFromOffset walks headers from
// every offset of a log of several segments and compares them with the
// headers of the batches a full read returns.
func TestForEachBatchHeaderVisitsEveryBatchFromOffset(t *testing.T) {
	forEachFS(t, func(t *testing.T, env testEnv) {
		l := mustOpen(t, env.fs, env.dir, testConfig())
		defer l.Delete()
		rng := rand.New(rand.NewSource(2))
		var m model
		for range 80 {
			m.append(t, l, batchSpec{records: 1 + rng.Intn(4), maxTs: 1, valueSize: rng.Intn(400)})
		}
		if len(l.segments) < 4 {
			t.Fatalf("want several segments, have %d", len(l.segments))
		}
		end := l.EndOffset()
		for off := int64(0); off <= end; off++ {
			all, err := l.Read(off, 1<<30, end)
			if err != nil {
				t.Fatal(err)
			}
			var want [][]byte
			for p := 0; p < len(all); {
				h, _ := parseHeader(all[p:])
				want = append(want, all[p:p+batchHeaderSize])
				p += int(h.size)
			}
			var got [][]byte
			if err := l.ForEachBatchHeader(off, func(hdr []byte) error {
				got = append(got, bytes.Clone(hdr))
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			if len(got) != len(want) {
				t.Fatalf("from %d: %d headers, want %d", off, len(got), len(want))
			}
			for i := range got {
				if !bytes.Equal(got[i], want[i]) {
					t.Fatalf("from %d: header %d differs", off, i)
				}
			}
		}
		stop := errors.New("stop")
		n := 0
		if err := l.ForEachBatchHeader(0, func([]byte) error { n++; return stop }); err != stop || n != 1 {
			t.Fatalf("an error from fn: %v after %d calls", err, n)
		}
		if err := l.ForEachBatchHeader(end+1, func([]byte) error { return nil }); !errors.Is(err, ErrOffsetOutOfRange) {
			t.Fatalf("past the end: %v", err)
		}
	})
}
