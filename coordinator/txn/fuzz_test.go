package txn

import (
	"testing"
)

// FuzzLoad feeds arbitrary key and value bytes to Load, as a record of
// __transaction_state (written by anyone) arrives at start-up.
// Invariants: Load never panics and never allocates more than the input
// allows (kmsg checks every length against the bytes left); it either
// accepts the record or returns an error wrapping ErrBadRecord; it has no
// effects; an accepted record describes a known state with a valid
// producer id; and the coordinator still answers Describe, List and
// PendingMarkers afterwards, and writes back a record that loads the same.
func FuzzLoad(f *testing.F) {
	c, in := New(Config{}), Inputs{NewProducerID: func() (int64, int16) { return 7, 0 }}
	r := c.InitProducerID(1, "seed", 1000, -1, -1, in)
	c.AddPartitions(2, "seed", r.ProducerID, r.ProducerEpoch, []Partition{{"t", 0}, {"t", 3}, {"u", 1}}, 0, in)
	c.EndTxn(3, "seed", r.ProducerID, r.ProducerEpoch, true, 0, in)
	eff := c.Ready()
	c.MarkersWritten(4, "seed", r.ProducerID, r.ProducerEpoch, eff.Markers[0].Partitions)
	c.ExpireIDs(1<<40, in)
	for _, rec := range append(eff.Records, c.Ready().Records...) {
		f.Add(rec.Key, rec.Value)
	}
	f.Add([]byte{0, 0, 0, 1, 'x'}, []byte{0, 0})
	f.Add([]byte{0, 1}, []byte{0, 1, 0xff, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, key, value []byte) {
		c, in := New(Config{}), Inputs{}
		if err := c.Load(key, value); err != nil {
			if !isBadRecord(err) {
				t.Fatalf("error %v does not wrap ErrBadRecord", err)
			}
			return
		}
		for _, l := range func() []Listed { l, _ := c.List(0, ListFilter{DurationMs: -1}, in); return l }() {
			d, code := c.Describe(l.ID, in)
			if code != 0 && l.ID != "" {
				t.Fatalf("listed %q does not describe: %d", l.ID, code)
			}
			if d.State < Empty || d.State > CompleteAbort || d.ProducerID < 0 {
				t.Fatalf("loaded an impossible transaction %+v", d)
			}
			again := New(Config{})
			rec := record(&d)
			if err := again.Load(rec.Key, rec.Value); err != nil {
				t.Fatalf("a loaded transaction does not load again: %v", err)
			}
		}
		c.PendingMarkers(in)
		if e := c.Ready(); len(e.Records) != 0 {
			t.Fatal("Load produced records")
		}
	})
}
