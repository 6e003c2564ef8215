package batch

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"

	"github.com/golang/snappy"
)

// TestSnappyDecodesXerialAndRawBlocks feeds hand-framed snappy: the xerial
// stream the Java client writes (split into two blocks, as it does past 32
// KiB) and the raw block librdkafka and franz-go write.
func TestSnappyDecodesXerialAndRawBlocks(t *testing.T) {
	recs := sampleRecords(30)
	raw, _ := appendRecords(nil, recs)
	base := mustBuild(t, defaultOptions(None), recs)

	half := len(raw) / 2
	xerial := []byte{0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0, 0, 0, 0, 1, 0, 0, 0, 1}
	for _, part := range [][]byte{raw[:half], raw[half:]} {
		block := snappy.Encode(nil, part)
		xerial = binary.BigEndian.AppendUint32(xerial, uint32(len(block)))
		xerial = append(xerial, block...)
	}

	for name, body := range map[string][]byte{
		"xerial":       xerial,
		"raw":          snappy.Encode(nil, raw),
		"xerial empty": append(xerial[:16:16], 0, 0, 0, 1, 0), // a block decoding to nothing, then the records
	} {
		t.Run(name, func(t *testing.T) {
			if name == "xerial empty" {
				body = append(body, xerial[16:]...)
			}
			b := withRawBody(base, Snappy, body)
			info, err := Validate(b, nil)
			if err != nil {
				t.Fatal(err)
			}
			if info.UncompressedBytes != len(raw) {
				t.Fatalf("decoded %d bytes, want %d", info.UncompressedBytes, len(raw))
			}
			_, got := collect(t, b, nil)
			recordsEqual(t, got, recs)
		})
	}

	for name, body := range map[string][]byte{
		"xerial block length cut short": append(xerial[:16:16], 0, 0),
		"xerial block past the end":     append(xerial[:16:16], 0, 0, 1, 0, 1),
		"xerial bad block":              append(xerial[:16:16], 0, 0, 0, 2, 0xff, 0xff),
		"raw claims more than it holds": append(binary.AppendUvarint(nil, 1<<20), 0, 1, 2),
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := Validate(withRawBody(base, Snappy, body), nil); !errors.Is(err, ErrDecompress) {
				t.Fatalf("err %v, want ErrDecompress", err)
			}
		})
	}
}

func TestSnappyIsWrittenInXerialBlocksOf32KiB(t *testing.T) {
	recs := valueRecords(1000, 100) // > 100 KiB: several blocks
	b := mustBuild(t, defaultOptions(Snappy), recs)
	body := b[HeaderSize:]
	if !bytes.HasPrefix(body, xerialHeader) {
		t.Fatalf("snappy body starts % x, want the xerial header", body[:16])
	}
	var total, blocks int
	for p := body[16:]; len(p) > 0; blocks++ {
		n := binary.BigEndian.Uint32(p)
		d, err := snappy.Decode(nil, p[4:4+n])
		if err != nil {
			t.Fatal(err)
		}
		if len(d) > 32<<10 {
			t.Fatalf("block %d decodes to %d bytes, more than 32 KiB", blocks, len(d))
		}
		total += len(d)
		p = p[4+n:]
	}
	raw, _ := appendRecords(nil, recs)
	if total != len(raw) || blocks != (len(raw)+32<<10-1)/(32<<10) {
		t.Fatalf("%d blocks, %d bytes; want %d bytes in 32 KiB blocks", blocks, total, len(raw))
	}
}

// TestLZ4FrameIsWhatJavaWrites: Kafka's Lz4BlockInputStream refuses dependent
// blocks; the Java client writes 64 KiB blocks without checksums.
func TestLZ4FrameIsWhatJavaWrites(t *testing.T) {
	b := mustBuild(t, defaultOptions(LZ4), sampleRecords(5))
	body := b[HeaderSize:]
	if binary.LittleEndian.Uint32(body) != 0x184D2204 {
		t.Fatalf("lz4 magic % x", body[:4])
	}
	flg, bd := body[4], body[5]
	if flg>>6 != 1 || flg&0x20 == 0 || flg&0x10 != 0 || flg&0x04 != 0 {
		t.Fatalf("FLG %08b: want version 01, independent blocks, no block or content checksum", flg)
	}
	if (bd>>4)&7 != 4 {
		t.Fatalf("BD %08b: want 64 KiB blocks", bd)
	}
}

func TestGzipReadsConcatenatedMembers(t *testing.T) {
	recs := sampleRecords(6)
	raw, _ := appendRecords(nil, recs)
	one, _ := compress(nil, Gzip, raw[:10])
	two, _ := compress(nil, Gzip, raw[10:])
	b := withRawBody(mustBuild(t, defaultOptions(None), recs), Gzip, append(one, two...))
	_, got := collect(t, b, nil)
	recordsEqual(t, got, recs)
}

func TestZstdReadsConcatenatedFrames(t *testing.T) {
	recs := sampleRecords(6)
	raw, _ := appendRecords(nil, recs)
	one, _ := compress(nil, Zstd, raw[:10])
	two, _ := compress(nil, Zstd, raw[10:])
	b := withRawBody(mustBuild(t, defaultOptions(None), recs), Zstd, append(one, two...))
	_, got := collect(t, b, nil)
	recordsEqual(t, got, recs)
}

// TestScratchReuseAvoidsAllocation: after a warm-up the same Scratch validates
// batches of every codec without allocating, and an uncompressed batch never
// allocates.
func TestScratchReuseAvoidsAllocation(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("allocation counts are only meaningful without -race and -short")
	}
	for _, c := range codecs {
		// Records with headers too: their keys are strings, reused between
		// records when equal.
		recs := append(valueRecords(100, 100), sampleRecords(20)...)
		for i := range recs {
			recs[i].OffsetDelta = int32(i)
		}
		b := mustBuild(t, defaultOptions(c), recs)
		var s Scratch
		if _, err := Validate(b, &s); err != nil {
			t.Fatal(err)
		}
		allocs := testing.AllocsPerRun(50, func() {
			if _, err := Validate(b, &s); err != nil {
				t.Fatal(err)
			}
		})
		if allocs > 0 {
			t.Errorf("%v: Validate allocates %.1f times per batch with a warm Scratch", c, allocs)
		}
		allocs = testing.AllocsPerRun(50, func() {
			_ = ForEachRecord(b, &s, func(*Header, *Record) bool { return true })
		})
		if allocs > 0 {
			t.Errorf("%v: ForEachRecord allocates %.1f times per batch with a warm Scratch", c, allocs)
		}
	}
}

// TestLZ4RefusesWhatKafkaRefuses: frames pierrec would read but Kafka's
// Lz4BlockInputStream refuses.
func TestLZ4RefusesWhatKafkaRefuses(t *testing.T) {
	good := mustBuild(t, defaultOptions(LZ4), sampleRecords(5))
	for name, f := range map[string]func(body []byte){
		"dependent blocks":   func(b []byte) { b[4] &^= 0x20 },
		"version 2":          func(b []byte) { b[4] = b[4]&0x3f | 0x80 },
		"dictionary id":      func(b []byte) { b[4] |= 0x01 },
		"reserved FLG bit":   func(b []byte) { b[4] |= 0x02 },
		"reserved BD bit":    func(b []byte) { b[5] |= 0x80 },
		"block size code 3":  func(b []byte) { b[5] = 3 << 4 },
		"legacy frame magic": func(b []byte) { binary.LittleEndian.PutUint32(b, 0x184C2102) },
		"skippable frame":    func(b []byte) { binary.LittleEndian.PutUint32(b, 0x184D2A50) },
	} {
		t.Run(name, func(t *testing.T) {
			body := append([]byte(nil), good[HeaderSize:]...)
			f(body)
			if _, err := Validate(withRawBody(good, LZ4, body), nil); !errors.Is(err, ErrDecompress) {
				t.Fatalf("err %v, want ErrDecompress", err)
			}
		})
	}
}
