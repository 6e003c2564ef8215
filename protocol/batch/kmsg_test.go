package batch

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// These tests check the codec against franz-go, an independent implementation:
// kmsg for the batch and record layout, kgo's compressor and decompressor for
// the codecs.

var kgoCodecs = map[Compression]kgo.CompressionCodec{
	Gzip:   kgo.GzipCompression(),
	Snappy: kgo.SnappyCompression(),
	LZ4:    kgo.Lz4Compression(),
	Zstd:   kgo.ZstdCompression(),
}

// TestKmsgReadsWhatAppendBatchWrites decodes our batches with kmsg and kgo.
func TestKmsgReadsWhatAppendBatchWrites(t *testing.T) {
	recs := sampleRecords(37)
	for _, c := range codecs {
		t.Run(c.String(), func(t *testing.T) {
			opts := BuildOptions{Compression: c, BaseOffset: 12, BaseTimestamp: 1_700_000_000_000,
				ProducerID: 99, ProducerEpoch: 2, BaseSequence: 1000, Transactional: true, PartitionLeaderEpoch: 6}
			b := mustBuild(t, opts, recs)

			var kb kmsg.RecordBatch
			if err := kb.ReadFrom(b); err != nil {
				t.Fatalf("kmsg.RecordBatch.ReadFrom: %v", err)
			}
			if kb.FirstOffset != 12 || kb.Length != int32(len(b)-12) || kb.PartitionLeaderEpoch != 6 || kb.Magic != 2 ||
				kb.Attributes != int16(c)|0x10 || kb.LastOffsetDelta != 36 || kb.FirstTimestamp != opts.BaseTimestamp ||
				kb.MaxTimestamp != opts.BaseTimestamp+1<<40 || kb.ProducerID != 99 || kb.ProducerEpoch != 2 ||
				kb.FirstSequence != 1000 || kb.NumRecords != 37 {
				t.Fatalf("kmsg read %+v", kb)
			}
			// The CRC, recomputed from kmsg's re-encoding.
			again := kb.AppendTo(nil)
			if !bytes.Equal(again, b) {
				t.Fatal("kmsg re-encodes the batch differently")
			}
			if crc := crc32.Checksum(again[21:], crc32.MakeTable(crc32.Castagnoli)); uint32(kb.CRC) != crc {
				t.Fatalf("crc %#x, want %#x", uint32(kb.CRC), crc)
			}

			raw := kb.Records
			if c != None {
				var err error
				if raw, err = kgo.DefaultDecompressor().Decompress(kb.Records, kgo.CompressionCodecType(c)); err != nil {
					t.Fatalf("kgo decompress: %v", err)
				}
			}
			for i := range recs {
				var kr kmsg.Record
				if err := kr.ReadFrom(raw); err != nil {
					t.Fatalf("record %d: kmsg.Record.ReadFrom: %v", i, err)
				}
				n := int(kr.Length) + len(binary.AppendVarint(nil, int64(kr.Length)))
				raw = raw[n:]
				got := Record{Attributes: kr.Attributes, TimestampDelta: kr.TimestampDelta64, OffsetDelta: kr.OffsetDelta, Key: kr.Key, Value: kr.Value}
				for _, h := range kr.Headers {
					got.Headers = append(got.Headers, RecordHeader{Key: h.Key, Value: h.Value})
				}
				recordsEqual(t, []Record{got}, recs[i:i+1])
			}
			if len(raw) != 0 {
				t.Fatalf("%d bytes after the last record", len(raw))
			}
		})
	}
}

// TestValidateAcceptsWhatKmsgWrites builds batches with kmsg and kgo's
// compressors and validates and reads them.
func TestValidateAcceptsWhatKmsgWrites(t *testing.T) {
	recs := sampleRecords(29)
	var raw []byte
	for _, r := range recs {
		kr := kmsg.Record{Attributes: r.Attributes, TimestampDelta64: r.TimestampDelta, OffsetDelta: r.OffsetDelta, Key: r.Key, Value: r.Value}
		for _, h := range r.Headers {
			kr.Headers = append(kr.Headers, kmsg.Header{Key: h.Key, Value: h.Value})
		}
		body := kr.AppendTo(nil)[1:] // encoded with Length 0, a 1-byte varint
		kr.Length = int32(len(body))
		raw = kr.AppendTo(raw)
	}

	for _, c := range codecs {
		t.Run(c.String(), func(t *testing.T) {
			records := raw
			if c != None {
				comp, err := kgo.DefaultCompressor(kgoCodecs[c])
				if err != nil {
					t.Fatal(err)
				}
				var used kgo.CompressionCodecType
				records, used = comp.Compress(new(bytes.Buffer), raw)
				if used != kgo.CompressionCodecType(c) {
					t.Fatalf("kgo compressed with %v", used)
				}
				records = append([]byte(nil), records...)
			}
			kb := kmsg.RecordBatch{
				FirstOffset: 0, PartitionLeaderEpoch: -1, Magic: 2, Attributes: int16(c),
				LastOffsetDelta: int32(len(recs) - 1), FirstTimestamp: 1_600_000_000_000, MaxTimestamp: 1_600_000_000_000 + 1<<40,
				ProducerID: 5, ProducerEpoch: 0, FirstSequence: 0, NumRecords: int32(len(recs)), Records: records,
			}
			kb.Length = int32(49 + len(records))
			b := kb.AppendTo(nil)
			kb.CRC = int32(crc32.Checksum(b[21:], crc32.MakeTable(crc32.Castagnoli)))
			b = kb.AppendTo(b[:0])

			info, err := Validate(b, nil)
			if err != nil {
				t.Fatalf("Validate: %v", err)
			}
			if info.NumRecords != len(recs) || info.MaxTimestamp != kb.MaxTimestamp || info.UncompressedBytes != len(raw) {
				t.Fatalf("info %+v", info)
			}
			_, got := collect(t, b, nil)
			recordsEqual(t, got, recs)
		})
	}
}
