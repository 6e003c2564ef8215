package batch

// The decompression budget: the decoders a produced batch is validated
// with are a few, shared by every connection, rather than one set per
// connection. At most that many batches are decompressed at once, which
// bounds the memory decompression takes across all clients by the codecs'
// state (a zstd window, an lz4 block, a snappy block) times the slots, and
// a batch that finds every slot taken waits for one. Decompression is all
// CPU, so more slots than cores would not go faster anyway.

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"runtime"

	"github.com/golang/snappy"
	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
)

// zstdMaxWindow is the largest window a streamed zstd frame may declare:
// zstd's own default limit for decompression (ZSTD_WINDOWLOG_LIMIT_DEFAULT,
// 2^27), which Kafka's zstd-jni decoder applies too. The Java client's
// frames declare 2 MiB at the default level and 128 MiB at level 22.
const zstdMaxWindow = 128 << 20

// DecompressionPool is a bounded set of decoders that Validate borrows.
type DecompressionPool struct {
	slots chan *decoders
}

// NewDecompressionPool makes a pool of n decoder sets (at least 1).
func NewDecompressionPool(n int) *DecompressionPool {
	p := &DecompressionPool{slots: make(chan *decoders, max(n, 1))}
	for range cap(p.slots) {
		p.slots <- &decoders{} // their codecs are made on first use
	}
	return p
}

// Slots is how many batches the pool decompresses at once.
func (p *DecompressionPool) Slots() int { return cap(p.slots) }

// defaultPool serves every Scratch without a Pool: one slot per core, at
// least two.
var defaultPool = NewDecompressionPool(max(2, runtime.GOMAXPROCS(0)))

// get waits for a free decoder set.
func (p *DecompressionPool) get() *decoders { return <-p.slots }

// put returns d to the pool.
func (p *DecompressionPool) put(d *decoders) { p.slots <- d }

// decoders is one slot's codecs and window.
type decoders struct {
	src bytes.Reader
	gz  *gzip.Reader
	lz  *lz4.Reader
	zd  *zstd.Decoder
	// zdWhole decodes a zstd section whole into the window when it fits,
	// which costs less than streaming it.
	zdWhole *zstd.Decoder
	snappy  xerialReader
	window  []byte
}

// open returns a reader of in's records decompressed with c.
func (d *decoders) open(c Compression, in []byte, limit int) (io.Reader, error) {
	d.src.Reset(in)
	switch c {
	case Gzip:
		if d.gz == nil {
			d.gz = new(gzip.Reader)
		}
		if err := d.gz.Reset(&d.src); err != nil {
			return nil, decompressErr(c, err)
		}
		return d.gz, nil
	case LZ4:
		if err := checkLZ4Frame(in); err != nil {
			return nil, decompressErr(c, err)
		}
		if d.lz == nil {
			d.lz = lz4.NewReader(&d.src)
		} else {
			d.lz.Reset(&d.src)
		}
		return d.lz, nil
	case Zstd:
		if d.zd == nil {
			zd, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderLowmem(true),
				zstd.WithDecoderMaxWindow(zstdMaxWindow))
			if err != nil {
				return nil, fmt.Errorf("batch: zstd decoder: %w", err)
			}
			d.zd = zd
		}
		if err := d.zd.Reset(&d.src); err != nil {
			return nil, streamErr(c, limit, err)
		}
		return d.zd, nil
	case Snappy:
		if err := d.snappy.reset(in, limit); err != nil {
			return nil, err
		}
		return &d.snappy, nil
	}
	return nil, unsupportedCompression(c)
}

// zstdWhole decodes in whole into the window if it decompresses to no
// more than the window holds; ok false when it does not, or when a frame
// declares a larger window, and the section must be streamed.
func (d *decoders) zstdWhole(in []byte) (out []byte, ok bool, err error) {
	if d.zdWhole == nil {
		if d.zdWhole, err = zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderLowmem(true),
			zstd.WithDecoderMaxMemory(recordWindow)); err != nil {
			return nil, false, fmt.Errorf("batch: zstd decoder: %w", err)
		}
	}
	var first zstd.Header
	if first.Decode(in) == nil && first.HasFCS && first.FrameContentSize > recordWindow {
		return nil, false, nil // it says it will not fit: no decoding in vain
	}
	out, err = d.zdWhole.DecodeAll(in, d.window[:0])
	switch {
	case isZstdSizeError(err):
		return nil, false, nil
	case err != nil:
		return nil, false, decompressErr(Zstd, err)
	}
	return out, true, nil
}

// errZstdTooLarge stands for the zstd decoder's size refusals.
var errZstdTooLarge = errors.New("zstd window or size over the limit")

func isZstdSizeError(err error) bool {
	return errors.Is(err, zstd.ErrDecoderSizeExceeded) || errors.Is(err, zstd.ErrWindowSizeExceeded)
}

// xerialReader reads a snappy records section as snappy-java does: the
// xerial framing one block at a time, or one raw block whole (at most 22
// times its size, as unsnappy checks).
type xerialReader struct {
	in    []byte // the blocks not yet decoded
	raw   bool   // in is one raw block
	limit int
	block []byte // the decoded block being read
	p     int
}

func (x *xerialReader) reset(in []byte, limit int) error {
	x.block, x.p, x.limit = x.block[:0], 0, limit
	if len(in) < xerialHeaderLen || !bytes.Equal(in[:xerialMagicLen], xerialHeader[:xerialMagicLen]) {
		x.in, x.raw = in, true
		return nil
	}
	x.in, x.raw = in[xerialHeaderLen:], false
	return nil
}

func (x *xerialReader) Read(b []byte) (int, error) {
	for x.p == len(x.block) {
		if !x.raw && len(x.in) >= 4 {
			// A block that fits b is decoded straight into it.
			n := binary.BigEndian.Uint32(x.in)
			if uint64(n) <= uint64(len(x.in)-4) {
				if m, err := snappy.DecodedLen(x.in[4 : 4+n]); err == nil && m <= len(b) && m <= 22*int(n) && m <= x.limit {
					got, err := snappy.Decode(b[:m], x.in[4:4+n])
					if err != nil {
						return 0, decompressErr(Snappy, err)
					}
					if len(got) != m || m > 0 && &got[0] != &b[0] {
						return 0, decompressErr(Snappy, fmt.Errorf("decoded %d bytes, expected %d", len(got), m))
					}
					x.in = x.in[4+n:]
					if m == 0 {
						continue
					}
					return m, nil
				}
			}
		}
		if len(x.in) == 0 {
			return 0, io.EOF
		}
		next := x.in
		if x.raw {
			x.in = nil
		} else {
			if len(next) < 4 {
				return 0, decompressErr(Snappy, errors.New("xerial block length cut short"))
			}
			n := binary.BigEndian.Uint32(next)
			next = next[4:]
			if uint64(n) > uint64(len(next)) {
				return 0, decompressErr(Snappy, fmt.Errorf("xerial block of %d bytes, %d remain", n, len(next)))
			}
			next, x.in = next[:n], next[n:]
		}
		if err := x.decode(next); err != nil {
			return 0, err
		}
	}
	n := copy(b, x.block[x.p:])
	x.p += n
	return n, nil
}

// decode decodes one raw snappy block into x.block, after checking the
// length it claims as snappyBlock does.
func (x *xerialReader) decode(in []byte) error {
	n, err := snappy.DecodedLen(in)
	if err != nil {
		return decompressErr(Snappy, err)
	}
	if n > 22*len(in) {
		return decompressErr(Snappy, fmt.Errorf("block of %d bytes claims %d decoded", len(in), n))
	}
	if n > x.limit {
		return tooLarge(Snappy, x.limit)
	}
	if cap(x.block) < n {
		x.block = make([]byte, n)
	}
	got, err := snappy.Decode(x.block[:n], in)
	if err != nil {
		return decompressErr(Snappy, err)
	}
	if len(got) != n {
		return decompressErr(Snappy, fmt.Errorf("decoded %d bytes, expected %d", len(got), n))
	}
	x.block, x.p = got, 0
	return nil
}

// walkCompressed walks the records of the compressed batch body in (the
// bytes after the header) with a decoder set borrowed from pool, adding
// each record to st and calling fn (if not nil) for each, and returns the
// uncompressed size read. A broken rule is
// ErrInvalidRecord; a stream that does not decode, ErrDecompress; more
// than limit bytes, ErrTooLarge.
func walkCompressed(pool *DecompressionPool, h *Header, in []byte, limit int, st *recordStats, fn func(RecordMeta) bool) (int, error) {
	d := pool.get()
	defer pool.put(d)
	r, err := d.open(h.Compression(), in, limit)
	if err != nil {
		return 0, err
	}
	if d.window == nil {
		d.window = make([]byte, recordWindow)
	}
	s := recordStream{r: r, buf: d.window, limit: limit, codec: h.Compression()}
	if h.Compression() == Zstd {
		if out, ok, err := d.zstdWhole(in); err != nil {
			return 0, err
		} else if ok {
			// The whole section is in the window: the stream is at its
			// end, and only the limit is left to check.
			s.r, s.buf, s.n, s.read, s.eof = nil, out, len(out), len(out), true
			if len(out) > limit {
				return 0, tooLarge(Zstd, limit)
			}
		}
	}
	broken := walkStream(&s, h, st, fn)
	switch {
	case s.failed != nil:
		return 0, s.failed
	case broken != "":
		return 0, invalidf("%s records: %s", h.Compression(), broken)
	}
	return s.read, nil
}
