package batch

import (
	"fmt"
	"testing"
)

// BenchmarkValidate validates a batch of 100 records with 100-byte values per
// codec, with a Scratch reused as the broker reuses it.
func BenchmarkValidate(b *testing.B) {
	recs := valueRecords(100, 100)
	for _, c := range codecs {
		b.Run(c.String(), func(b *testing.B) {
			benchValidate(b, mustBuild(b, defaultOptions(c), recs))
		})
	}
}

// benchValidate validates batch once per iteration, with a Scratch reused as
// the broker reuses it.
func benchValidate(b *testing.B, batch []byte) {
	var s Scratch
	b.SetBytes(int64(len(batch)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Validate(batch, &s); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkForEachRecord reads every record of the same batches.
func BenchmarkForEachRecord(b *testing.B) {
	recs := valueRecords(100, 100)
	for _, c := range codecs {
		b.Run(c.String(), func(b *testing.B) {
			batch := mustBuild(b, defaultOptions(c), recs)
			var s Scratch
			b.SetBytes(int64(len(batch)))
			b.ReportAllocs()
			for b.Loop() {
				if err := ForEachRecord(batch, &s, func(*Header, *Record) bool { return true }); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkAppendBatch builds the same batches into a reused buffer.
func BenchmarkAppendBatch(b *testing.B) {
	recs := valueRecords(100, 100)
	for _, c := range codecs {
		b.Run(c.String(), func(b *testing.B) {
			var dst []byte
			opts := defaultOptions(c)
			b.ReportAllocs()
			for b.Loop() {
				var err error
				if dst, err = AppendBatch(dst[:0], opts, recs); err != nil {
					b.Fatal(err)
				}
			}
			b.SetBytes(int64(len(dst)))
		})
	}
}

// BenchmarkSetLogAppendTime stamps a 100-record batch (one CRC pass).
func BenchmarkSetLogAppendTime(b *testing.B) {
	batch := mustBuild(b, defaultOptions(None), valueRecords(100, 100))
	b.SetBytes(int64(len(batch)))
	ts := int64(0)
	for b.Loop() {
		ts++
		SetLogAppendTime(batch, ts)
	}
}

// BenchmarkValidate1KB validates batches as kafka-producer-perf-test sends
// them with 1 KB records and batch.size=65536: about 64 records, so an lz4
// frame of two 64 KiB blocks, with a Scratch reused as the broker reuses it.
func BenchmarkValidate1KB(b *testing.B) {
	recs := valueRecords(64, 1024)
	for _, c := range codecs {
		b.Run(c.String(), func(b *testing.B) {
			benchValidate(b, mustBuild(b, defaultOptions(c), recs))
		})
	}
}

// BenchmarkValidateRepeated1KB validates batches of records that all carry
// the same 1 KB value, as kafka-producer-perf-test sends them (it fills one
// payload and sends it every time): compressed, such a batch is small and
// decompresses to a large records section.
func BenchmarkValidateRepeated1KB(b *testing.B) {
	for _, n := range []int{64, 1000} {
		recs := valueRecords(n, 1024)
		for i := range recs {
			recs[i].Value = recs[0].Value
		}
		for _, c := range []Compression{LZ4, Zstd} {
			b.Run(fmt.Sprintf("%s/%d", c, n), func(b *testing.B) {
				benchValidate(b, mustBuild(b, defaultOptions(c), recs))
			})
		}
	}
}
