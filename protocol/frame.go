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
// otherwise into a new slice; either way the caller owns the result until it
// passes it back as buf.
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
	if int(size) <= cap(buf) {
		buf = buf[:size]
	} else {
		buf = make([]byte, size)
	}
	if _, err := io.ReadFull(r, buf); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	return buf, nil
}
