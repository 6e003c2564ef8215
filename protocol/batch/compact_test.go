package batch

import (
	"testing"
)

// plainRecord is a decoded record in comparable form.
type plainRecord struct {
	offset     int64
	key, value string
	keyNull    bool
	valueNull  bool
	ts         int64
}

func plainRecords(t *testing.T, b []byte) []plainRecord {
	t.Helper()
	var out []plainRecord
	if err := ForEachRecord(b, nil, func(h *Header, r *Record) bool {
		out = append(out, plainRecord{h.BaseOffset + int64(r.OffsetDelta), string(r.Key), string(r.Value), r.Key == nil, r.Value == nil, h.RecordTimestamp(r)})
		return true
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestCleanerCodecRebuildKeepsOffsetsHeaderAndTimestamps(t *testing.T) {
	for _, c := range []Compression{None, Gzip, Snappy, LZ4, Zstd} {
		t.Run(c.String(), func(t *testing.T) {
			recs := []Record{
				{OffsetDelta: 0, TimestampDelta: 0, Key: []byte("a"), Value: []byte("1")},
				{OffsetDelta: 1, TimestampDelta: 5, Key: []byte("b"), Value: nil, Headers: []RecordHeader{{Key: "h", Value: []byte("v")}}},
				{OffsetDelta: 2, TimestampDelta: 9, Key: []byte("c"), Value: []byte("3")},
			}
			orig, err := AppendBatch(nil, BuildOptions{Compression: c, BaseOffset: 100, BaseTimestamp: 1000,
				ProducerID: 7, ProducerEpoch: 2, BaseSequence: 40, PartitionLeaderEpoch: 3}, recs)
			if err != nil {
				t.Fatal(err)
			}
			var codec CleanerCodec
			for _, tc := range []struct {
				name    string
				keep    func(int64) bool
				horizon int64
			}{
				{"keep the middle, set a horizon", func(o int64) bool { return o == 101 }, 5000},
				{"drop the last, no horizon", func(o int64) bool { return o != 102 }, -1},
			} {
				out, err := codec.Rebuild(nil, orig, tc.keep, tc.horizon)
				if err != nil {
					t.Fatal(err)
				}
				h, err := Check(out)
				if err != nil {
					t.Fatalf("%s: rebuilt batch does not check: %v", tc.name, err)
				}
				oh, _ := ParseHeader(orig)
				if h.BaseOffset != 100 || h.LastOffset() != 102 || h.ProducerID != 7 || h.ProducerEpoch != 2 ||
					h.BaseSequence != 40 || h.PartitionLeaderEpoch != 3 || h.Compression() != c {
					t.Fatalf("%s: header %+v", tc.name, h)
				}
				if h.DeleteHorizon() != (tc.horizon >= 0) || (tc.horizon >= 0 && h.BaseTimestamp != tc.horizon) {
					t.Fatalf("%s: delete horizon %v base timestamp %d", tc.name, h.DeleteHorizon(), h.BaseTimestamp)
				}
				var want []plainRecord
				for _, r := range plainRecords(t, orig) {
					if tc.keep(r.offset) {
						want = append(want, r)
					}
				}
				got := plainRecords(t, out)
				if len(got) != len(want) {
					t.Fatalf("%s: %+v, want %+v", tc.name, got, want)
				}
				for i := range got {
					if got[i] != want[i] {
						t.Fatalf("%s: record %d %+v, want %+v", tc.name, i, got[i], want[i])
					}
				}
				var maxTs int64 = -1
				for _, r := range want {
					maxTs = max(maxTs, r.ts)
				}
				if h.MaxTimestamp != maxTs || oh.MaxTimestamp != 1009 {
					t.Fatalf("%s: max timestamp %d, want %d", tc.name, h.MaxTimestamp, maxTs)
				}
			}
		})
	}
}

// FuzzCleanerCodec feeds arbitrary bytes to the cleaner's codec and checks:
//   - Records and Rebuild never panic;
//   - for a batch that passes Check, Rebuild keeping every other record
//     gives a batch that passes Check, with the same base and last offsets,
//     holding exactly the kept records with their offsets, keys, values and
//     timestamps.
func FuzzCleanerCodec(f *testing.F) {
	for _, c := range []Compression{None, Gzip, Zstd} {
		b, _ := AppendBatch(nil, BuildOptions{Compression: c, BaseOffset: 5, BaseTimestamp: 10, ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1},
			[]Record{{OffsetDelta: 0, Key: []byte("k"), Value: []byte("v")}, {OffsetDelta: 1, TimestampDelta: 3, Key: []byte("k2")}})
		f.Add(b)
	}
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		var codec CleanerCodec
		n := 0
		if err := codec.Records(data, func(int64, []byte, bool) bool { n++; return true }); err != nil {
			return
		}
		out, err := codec.Rebuild(nil, data, func(o int64) bool { return o%2 == 0 }, -1)
		if _, cerr := Check(data); cerr != nil || err != nil {
			return
		}
		h, err := Check(out)
		if err != nil {
			t.Fatalf("rebuilt batch does not check: %v", err)
		}
		oh, _ := ParseHeader(data)
		if h.BaseOffset != oh.BaseOffset || h.LastOffset() < oh.LastOffset() {
			t.Fatalf("offsets moved: %+v from %+v", h, oh)
		}
		var want []plainRecord
		for _, r := range plainRecords(t, data) {
			if r.offset%2 == 0 {
				want = append(want, r)
			}
		}
		got := plainRecords(t, out)
		if oh.LogAppendTime() {
			return // every record takes the batch's time
		}
		if len(got) != len(want) {
			t.Fatalf("%d records kept, want %d", len(got), len(want))
		}
		for i := range got {
			if got[i] != want[i] {
				t.Fatalf("record %d: %+v, want %+v", i, got[i], want[i])
			}
		}
	})
}
