package share

import (
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

var t0 = time.Unix(1_700_000_000, 0)

// fresh returns an empty share partition starting at start.
func fresh(t *testing.T, cfg Config, start int64) *Partition {
	t.Helper()
	p, err := Load(cfg, 3, PersistedState{StateEpoch: 1, StartOffset: start}, AutoOffsetReset{}, LogOffsets{}, t0)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// batches returns contiguous plain fetched batches of the given sizes
// starting at base.
func batches(base int64, sizes ...int) []FetchedBatch {
	var out []FetchedBatch
	for _, n := range sizes {
		out = append(out, FetchedBatch{BaseOffset: base, LastOffset: base + int64(n) - 1, ProducerID: -1})
		base += int64(n)
	}
	return out
}

func acquire(p *Partition, member string, fetchOffset int64, bs []FetchedBatch) ([]AcquiredRange, int) {
	return p.Acquire(AcquireRequest{Member: member, Mode: BatchOptimized, BatchSize: 500, MaxRecords: 500,
		FetchOffset: fetchOffset, Batches: bs, Now: t0})
}

func ack(first, last int64, types ...AckType) AckBatch {
	return AckBatch{FirstOffset: first, LastOffset: last, Types: types}
}

func wantRanges(t *testing.T, got []AcquiredRange, want ...AcquiredRange) {
	t.Helper()
	if len(got) == 0 && len(want) == 0 {
		return
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("acquired %v, want %v", got, want)
	}
}

func wantState(t *testing.T, p *Partition, off int64, state RecordState, count int, member string) {
	t.Helper()
	s, ok := p.State(off)
	if !ok {
		t.Fatalf("offset %d is not in flight", off)
	}
	if s.State != state || s.DeliveryCount != count || s.Member != member {
		t.Fatalf("offset %d: %v count %d member %q, want %v count %d member %q", off, s.State, s.DeliveryCount, s.Member, state, count, member)
	}
}

func wantOffsets(t *testing.T, p *Partition, start, end int64) {
	t.Helper()
	if p.StartOffset() != start || p.EndOffset() != end {
		t.Fatalf("start %d end %d, want %d %d", p.StartOffset(), p.EndOffset(), start, end)
	}
}

func wantCode(t *testing.T, err error, code *kerr.Error) {
	t.Helper()
	if code == nil {
		if err != nil {
			t.Fatalf("unexpected error %v", err)
		}
		return
	}
	if !errors.Is(err, code) {
		t.Fatalf("error %v, want %v", err, code)
	}
}

// dump is every in-flight state, lock deadlines left out, and the offsets.
type dumpState struct {
	Start, End int64
	Offsets    map[int64]OffsetState
}

func dump(p *Partition) dumpState {
	d := dumpState{Start: p.start, End: p.end, Offsets: map[int64]OffsetState{}}
	for _, b := range p.cache {
		for off := b.first; off <= b.last; off++ {
			s := b.state(off)
			d.Offsets[off] = OffsetState{State: s.state, DeliveryCount: s.count, Member: s.member}
		}
	}
	return d
}
