package raftnode

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// The hello frame opens every transport connection (doc.go): a 4-byte
// big-endian length, then the body
//
//	magic "GRGRHLO" (7 bytes) | version uint8 | sender raft id uint64 BE |
//	cluster id length uint16 BE | cluster id (UTF-8, at most 255 bytes)
const (
	helloMagic = "GRGRHLO"
	// transportVersion is the version of the transport's wire format.
	// Version 1 had no hello (raft frames from the first byte).
	transportVersion  = 2
	helloFixed        = len(helloMagic) + 1 + 8 + 2
	maxClusterIDBytes = 255
	maxHelloBody      = helloFixed + maxClusterIDBytes
)

// errBadHello: a connection did not start with a hello this node reads.
var errBadHello = errors.New("raftnode: bad transport hello")

// hello is what a connection's first frame says about its sender.
type hello struct {
	from      uint64 // the sender's raft id
	clusterID string // empty when the sender does not know it yet
}

// appendHello appends the hello frame of raft node from, of cluster id
// (empty if not known), to b. An id longer than the limit is never one:
// Kafka's are 22 characters.
func appendHello(b []byte, from uint64, id string) []byte {
	if len(id) > maxClusterIDBytes {
		id = id[:maxClusterIDBytes]
	}
	b = binary.BigEndian.AppendUint32(b, uint32(helloFixed+len(id)))
	b = append(b, helloMagic...)
	b = append(b, transportVersion)
	b = binary.BigEndian.AppendUint64(b, from)
	b = binary.BigEndian.AppendUint16(b, uint16(len(id)))
	return append(b, id...)
}

// readHello reads a hello frame from r. Its length is checked before the
// body is read, into a buffer of at most maxHelloBody bytes.
func readHello(r io.Reader) (hello, error) {
	var hdr [4]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return hello{}, err
	}
	n := binary.BigEndian.Uint32(hdr[:])
	if n < uint32(len(helloMagic)+1) || n > uint32(maxHelloBody) {
		return hello{}, fmt.Errorf("%w: a first frame of %d bytes is not a hello (a peer of an older transport version?)", errBadHello, n)
	}
	var buf [maxHelloBody]byte
	body := buf[:n]
	if _, err := io.ReadFull(r, body); err != nil {
		return hello{}, err
	}
	return decodeHello(body)
}

// decodeHello decodes a hello frame's body.
func decodeHello(b []byte) (hello, error) {
	if len(b) < len(helloMagic)+1 || string(b[:len(helloMagic)]) != helloMagic {
		return hello{}, fmt.Errorf("%w: no hello magic", errBadHello)
	}
	if v := b[len(helloMagic)]; v != transportVersion {
		return hello{}, fmt.Errorf("%w: transport version %d, this node speaks %d", errBadHello, v, transportVersion)
	}
	if len(b) < helloFixed {
		return hello{}, fmt.Errorf("%w: %d bytes, at least %d needed", errBadHello, len(b), helloFixed)
	}
	from := binary.BigEndian.Uint64(b[len(helloMagic)+1:])
	idLen := int(binary.BigEndian.Uint16(b[helloFixed-2:]))
	if idLen > maxClusterIDBytes || len(b) != helloFixed+idLen {
		return hello{}, fmt.Errorf("%w: cluster id of %d bytes in a body of %d", errBadHello, idLen, len(b))
	}
	return hello{from: from, clusterID: string(b[helloFixed:])}, nil
}
