package batch

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/golang/snappy"
	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
)

// DefaultMaxUncompressed bounds decompression when Scratch.MaxUncompressed is 0.
const DefaultMaxUncompressed = 256 << 20

// Scratch holds the buffers and decoders that ForEachRecord reuses, so that
// a compressed batch costs no allocation once the Scratch has seen one like
// it, and the limit and pool that Validate and ForEachRecordMeta use. The
// zero value is ready to use.
//
// A Scratch is not safe for concurrent use; keep one per goroutine or in a
// sync.Pool. Its buffer grows to the largest records section it has
// decompressed (at most MaxUncompressed) and keeps that size; drop the Scratch
// to release it. Slices returned by a call alias the Scratch until its next
// use.
type Scratch struct {
	// MaxUncompressed bounds the bytes one batch's records may decompress
	// to; more is ErrTooLarge, and the Scratch keeps no buffer larger. 0
	// means DefaultMaxUncompressed. gzip, snappy and lz4 never allocate
	// output past it; zstd may decode up to max(MaxUncompressed, 8 MiB)
	// before failing (see zstdWindowAllowance), plus the codecs' own
	// block buffers (at most 4 MiB for lz4).
	MaxUncompressed int

	// Pool is the decoder sets Validate borrows for compressed batches
	// (decoders.go); nil is the package's default pool, one set per core
	// and at least two, shared by every Scratch that has none.
	Pool *DecompressionPool

	buf     []byte         // decompressed records
	header  Header         // ForEachRecord's header
	record  Record         // ForEachRecord's record
	headers []RecordHeader // Record.Headers of the current record
	keys    []string       // header keys of the last record, by position
	src     bytes.Reader   // reader over the compressed input
	probe   [1]byte        // reads past the limit, to tell "exactly full" from "too large"
	gz      *gzip.Reader
	lz      *lz4.Reader
	zd      *zstd.Decoder
	zdBound int // the memory bound zd was configured with
}

func (s *Scratch) pool() *DecompressionPool {
	if s.Pool != nil {
		return s.Pool
	}
	return defaultPool
}

func (s *Scratch) limit() int {
	if s.MaxUncompressed > 0 {
		return s.MaxUncompressed
	}
	return DefaultMaxUncompressed
}

// decompress returns the records section in, decompressed with c into s.buf,
// or in itself for None.
func (s *Scratch) decompress(c Compression, in []byte) ([]byte, error) {
	switch c {
	case None:
		return in, nil
	case Gzip:
		s.src.Reset(in)
		if s.gz == nil {
			s.gz = new(gzip.Reader)
		}
		if err := s.gz.Reset(&s.src); err != nil {
			return nil, decompressErr(c, err)
		}
		return s.readAll(c, s.gz, len(in))
	case Snappy:
		return s.unsnappy(in)
	case LZ4:
		if err := checkLZ4Frame(in); err != nil {
			return nil, decompressErr(c, err)
		}
		s.src.Reset(in)
		if s.lz == nil {
			s.lz = lz4.NewReader(&s.src)
		} else {
			s.lz.Reset(&s.src)
		}
		return s.readAll(c, s.lz, len(in))
	case Zstd:
		return s.unzstd(in)
	}
	return nil, unsupportedCompression(c)
}

// readAll reads r to its end into s.buf, growing the buffer by doubling from a
// size derived from the compressed input (never from a size the stream claims)
// and never past the limit.
func (s *Scratch) readAll(c Compression, r io.Reader, inLen int) ([]byte, error) {
	limit := s.limit()
	buf := s.buf[:0]
	if cap(buf) == 0 {
		buf = make([]byte, 0, min(max(4*inLen, 1024), limit))
	}
	// Whatever the outcome, the buffer as grown is kept for the next call.
	defer func() { s.buf = buf[:0] }()
	stalls := 0
	for {
		if len(buf) >= limit {
			n, err := r.Read(s.probe[:])
			switch {
			case n > 0:
				return nil, tooLarge(c, limit)
			case err == io.EOF:
				return buf, nil
			case err != nil:
				return nil, decompressErr(c, err)
			}
			if stalls++; stalls > 100 {
				return nil, decompressErr(c, io.ErrNoProgress)
			}
			continue
		}
		if len(buf) == cap(buf) {
			buf = grow(buf, cap(buf), limit)
		}
		n, err := r.Read(buf[len(buf):min(cap(buf), limit)])
		buf = buf[:len(buf)+n]
		switch {
		case err == io.EOF:
			return buf, nil
		case err != nil:
			return nil, decompressErr(c, err)
		case n == 0:
			if stalls++; stalls > 100 {
				return nil, decompressErr(c, io.ErrNoProgress)
			}
		default:
			stalls = 0
		}
	}
}

// checkLZ4Frame applies to the first frame descriptor the rules Kafka's
// Lz4BlockInputStream (FLG.validate, BD.validate) applies and pierrec's reader
// does not: the LZ4 frame magic (no legacy or skippable frames), version 01,
// reserved bits (the dictionary-id bit among them) clear, independent blocks,
// and a block size of 64 KiB to 4 MiB.
func checkLZ4Frame(in []byte) error {
	if len(in) < 6 {
		return errors.New("lz4 frame header cut short")
	}
	if binary.LittleEndian.Uint32(in) != 0x184D2204 {
		return fmt.Errorf("not an lz4 frame: magic %#08x", binary.LittleEndian.Uint32(in))
	}
	flg, bd := in[4], in[5]
	switch {
	case flg>>6 != 1:
		return fmt.Errorf("lz4 frame version %d", flg>>6)
	case flg&0x03 != 0:
		return errors.New("lz4 frame: reserved or dictionary bits set")
	case flg&0x20 == 0:
		return errors.New("lz4 frame with dependent blocks")
	case bd&0x8f != 0:
		return errors.New("lz4 frame: reserved block-descriptor bits set")
	case (bd>>4)&7 < 4:
		return fmt.Errorf("lz4 frame: block size code %d", (bd>>4)&7)
	}
	return nil
}

// zstdWindowAllowance is the largest window a zstd frame may declare whatever
// the limit. A window is not output, but the decoder refuses frames whose
// window exceeds its memory bound, and the Java client streams frames without
// a content size whose window follows the level: 2 MiB at the default level 3,
// 8 MiB up to level 19. So the decoder's bound is max(limit, this), and the
// limit itself is checked on the output.
const zstdWindowAllowance = 8 << 20

// unzstd decodes in, one or more zstd frames, into s.buf. Decoding stops with
// ErrTooLarge once the output passes max(limit, zstdWindowAllowance) bytes;
// output above limit is ErrTooLarge too.
func (s *Scratch) unzstd(in []byte) ([]byte, error) {
	limit := s.limit()
	bound := max(limit, zstdWindowAllowance)
	switch {
	case s.zd == nil:
		d, err := zstd.NewReader(nil,
			zstd.WithDecoderConcurrency(1),
			zstd.WithDecoderLowmem(true),
			zstd.WithDecoderMaxMemory(uint64(bound)))
		if err != nil {
			return nil, fmt.Errorf("batch: zstd decoder: %w", err)
		}
		s.zd, s.zdBound = d, bound
	case s.zdBound != bound:
		if err := s.zd.ResetWithOptions(nil, zstd.WithDecoderMaxMemory(uint64(bound))); err != nil {
			return nil, fmt.Errorf("batch: zstd decoder: %w", err)
		}
		s.zdBound = bound
	}
	out, err := s.zd.DecodeAll(in, s.buf[:0])
	if cap(out) > cap(s.buf) && cap(out) <= limit {
		s.buf = out[:0] // keep the grown buffer, unless it outgrew the limit
	}
	switch {
	case errors.Is(err, zstd.ErrDecoderSizeExceeded), errors.Is(err, zstd.ErrWindowSizeExceeded):
		return nil, tooLarge(Zstd, limit)
	case err != nil:
		return nil, decompressErr(Zstd, err)
	case len(out) > limit:
		return nil, tooLarge(Zstd, limit)
	}
	return out, nil
}

// xerialHeader starts a snappy stream framed by snappy-java's
// SnappyOutputStream, which the Java client uses: a magic, then version 1 and
// minimum compatible version 1, then blocks of [int32 length][raw snappy].
var xerialHeader = []byte{0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0, 0, 0, 0, 1, 0, 0, 0, 1}

const (
	xerialMagicLen  = 8
	xerialHeaderLen = 16
	// xerialBlockSize is snappy-java's default block size, the one the Java
	// client writes.
	xerialBlockSize = 32 << 10
)

// unsnappy decodes in as snappy-java does: xerial-framed if it starts with the
// magic, else as one raw snappy block.
func (s *Scratch) unsnappy(in []byte) ([]byte, error) {
	limit := s.limit()
	if len(in) < xerialHeaderLen || !bytes.Equal(in[:xerialMagicLen], xerialHeader[:xerialMagicLen]) {
		return s.snappyBlock(s.buf[:0], in, limit)
	}
	out := s.buf[:0]
	for p := in[xerialHeaderLen:]; len(p) > 0; {
		if len(p) < 4 {
			return nil, decompressErr(Snappy, fmt.Errorf("xerial block length cut short"))
		}
		n := binary.BigEndian.Uint32(p)
		p = p[4:]
		if uint64(n) > uint64(len(p)) {
			return nil, decompressErr(Snappy, fmt.Errorf("xerial block of %d bytes, %d remain", n, len(p)))
		}
		var err error
		if out, err = s.snappyBlock(out, p[:n], limit); err != nil {
			return nil, err
		}
		p = p[n:]
	}
	return out, nil
}

// snappyBlock appends the decoding of the raw snappy block in to out, after
// checking the length it claims against the limit and against what in can
// possibly expand to.
func (s *Scratch) snappyBlock(out, in []byte, limit int) ([]byte, error) {
	n, err := snappy.DecodedLen(in)
	if err != nil {
		return nil, decompressErr(Snappy, err)
	}
	// The densest snappy element, a 3-byte copy, yields 64 bytes: a larger
	// claim is a lie, whatever the limit.
	if n > 22*len(in) {
		return nil, decompressErr(Snappy, fmt.Errorf("block of %d bytes claims %d decoded", len(in), n))
	}
	if n > limit-len(out) {
		return nil, tooLarge(Snappy, limit)
	}
	if cap(out)-len(out) < n {
		out = grow(out, max(n, cap(out)), limit)
		s.buf = out[:0]
	}
	dst := out[len(out) : len(out)+n]
	got, err := snappy.Decode(dst, in)
	if err != nil {
		return nil, decompressErr(Snappy, err)
	}
	if len(got) != n || (n > 0 && &got[0] != &dst[0]) {
		return nil, decompressErr(Snappy, fmt.Errorf("decoded %d bytes, expected %d", len(got), n))
	}
	return out[:len(out)+n], nil
}

// grow returns buf with room for at least n more bytes (or up to limit, if
// less), copying it to a new array whose capacity never exceeds limit.
func grow(buf []byte, n, limit int) []byte {
	c := min(len(buf)+n, limit)
	if c <= cap(buf) {
		return buf
	}
	return append(make([]byte, 0, c), buf...)
}

func decompressErr(c Compression, err error) error {
	return fmt.Errorf("%w: %s: %v", ErrDecompress, c, err)
}

func tooLarge(c Compression, limit int) error {
	return fmt.Errorf("%w: %s records exceed %d bytes", ErrTooLarge, c, limit)
}
