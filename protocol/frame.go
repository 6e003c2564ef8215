package protocol

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// DefaultMaxFrameBytes is Kafka's default socket.request.max.bytes (100 MiB).
const DefaultMaxFrameBytes = 100 * 1024 * 1024

// Framing errors. Each means the connection cannot continue.
var (
	// ErrFrameTooLarge is returned when a frame's size prefix exceeds the limit.
	ErrFrameTooLarge = errors.New("protocol: frame exceeds the maximum size")
	// ErrNegativeFrameSize is returned when a frame's size prefix is negative.
	ErrNegativeFrameSize = errors.New("protocol: negative frame size")
)

// ReadFrame reads one size-prefixed frame from r and returns its payload
// (without the size prefix). The size is checked against maxSize before any
// memory is allocated for it. The payload is read into buf when it fits,
// otherwise into a new slice that grows as the payload's bytes arrive
// (readGrowing), so that a size a peer claims and never sends costs little;
// either way the caller owns the result until it passes it back as buf.
//
// io.EOF is returned only when r ends cleanly before a frame starts; a frame
// cut short yields io.ErrUnexpectedEOF.
func ReadFrame(r io.Reader, maxSize int32, buf []byte) ([]byte, error) {
	var prefix [4]byte
	if _, err := io.ReadFull(r, prefix[:]); err != nil {
		return nil, err
	}
	size := int32(binary.BigEndian.Uint32(prefix[:]))
	switch {
	case size < 0:
		return nil, fmt.Errorf("%w: %d", ErrNegativeFrameSize, size)
	case size > maxSize:
		return nil, fmt.Errorf("%w: %d > %d", ErrFrameTooLarge, size, maxSize)
	}
	var err error
	if int(size) <= cap(buf) {
		buf = buf[:size]
		_, err = io.ReadFull(r, buf)
	} else {
		buf, err = readGrowing(r, int(size))
	}
	if err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	return buf, nil
}

// firstChunk is the most readGrowing allocates before any payload byte has
// arrived.
const firstChunk = 64 << 10

// readGrowing reads exactly size bytes from r into a new slice that starts
// at firstChunk and doubles as the bytes arrive, so that the memory held
// is at most twice what the peer has sent, never what it claims.
func readGrowing(r io.Reader, size int) ([]byte, error) {
	buf := make([]byte, 0, min(size, firstChunk))
	for len(buf) < size {
		if len(buf) == cap(buf) {
			grown := make([]byte, len(buf), min(2*cap(buf), size))
			copy(grown, buf)
			buf = grown
		}
		n, err := io.ReadFull(r, buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err != nil {
			if err == io.EOF && len(buf) > 0 {
				err = io.ErrUnexpectedEOF
			}
			return nil, err
		}
	}
	return buf, nil
}
