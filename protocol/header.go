package protocol

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Header parsing errors. Each means the connection cannot continue, as in
// Kafka, which closes a connection whose request it cannot parse.
var (
	// ErrTruncatedHeader is returned when a frame ends inside its header.
	ErrTruncatedHeader = errors.New("protocol: truncated request header")
	// ErrUnknownAPIKey is returned for an API key this package has no schema for.
	ErrUnknownAPIKey = errors.New("protocol: unknown api key")
)

// APIVersionsKey is the key of ApiVersions, whose response header is never
// flexible and whose unknown versions get a v0 answer (KIP-511).
const APIVersionsKey = 18

// RequestHeader is a parsed request header.
type RequestHeader struct {
	APIKey        int16
	APIVersion    int16
	CorrelationID int32
	// ClientID is nil when the client sent a null client id.
	ClientID *string
}

// ParseRequestHeader parses the header at the start of frame and returns it
// with the body that follows. Whether the header carries tagged fields
// (header v2) depends on whether the request is flexible at that version, as
// kmsg's schema says; a version beyond the schema's maximum is treated as
// flexible when the schema's newest version is, which is what KIP-511 needs
// to read an ApiVersions request from a newer client.
//
// On ErrUnknownAPIKey the returned header still holds the key, version and
// correlation id, so the caller can log them. ClientID aliases no memory of
// frame: it is copied.
func ParseRequestHeader(frame []byte) (RequestHeader, []byte, error) {
	var h RequestHeader
	if len(frame) < 10 {
		return h, nil, ErrTruncatedHeader
	}
	h.APIKey = int16(binary.BigEndian.Uint16(frame[0:]))
	h.APIVersion = int16(binary.BigEndian.Uint16(frame[2:]))
	h.CorrelationID = int32(binary.BigEndian.Uint32(frame[4:]))
	idLen := int16(binary.BigEndian.Uint16(frame[8:]))
	rest := frame[10:]
	switch {
	case idLen < -1:
		return h, nil, fmt.Errorf("protocol: invalid client id length %d", idLen)
	case idLen >= 0:
		if int(idLen) > len(rest) {
			return h, nil, ErrTruncatedHeader
		}
		id := string(rest[:idLen])
		h.ClientID = &id
		rest = rest[idLen:]
	}
	flexible, known := IsFlexible(h.APIKey, h.APIVersion)
	if !known {
		return h, nil, fmt.Errorf("%w %d", ErrUnknownAPIKey, h.APIKey)
	}
	if flexible {
		n, err := skipTaggedFields(rest)
		if err != nil {
			return h, nil, err
		}
		rest = rest[n:]
	}
	return h, rest, nil
}

// skipTaggedFields returns the length of the tagged-field section at the
// start of b. Lengths are checked against the bytes present; nothing is
// allocated.
func skipTaggedFields(b []byte) (int, error) {
	count, n := binary.Uvarint(b)
	if n <= 0 {
		return 0, ErrTruncatedHeader
	}
	pos := n
	for i := uint64(0); i < count; i++ {
		_, n = binary.Uvarint(b[pos:]) // tag
		if n <= 0 {
			return 0, ErrTruncatedHeader
		}
		pos += n
		size, n := binary.Uvarint(b[pos:])
		if n <= 0 {
			return 0, ErrTruncatedHeader
		}
		pos += n
		if size > uint64(len(b)-pos) {
			return 0, ErrTruncatedHeader
		}
		pos += int(size)
	}
	return pos, nil
}

// maxKnownKey bounds the table of flexible versions.
const maxKnownKey = 127

// flexibleFrom[key] is the first flexible version of key, or -1 when the key
// is unknown to kmsg, or maxVersion+1 when no version of it is flexible.
// maxVersion[key] is kmsg's newest version of key.
var flexibleFrom, maxVersion [maxKnownKey + 1]int16

func init() {
	for key := int16(0); key <= maxKnownKey; key++ {
		req := kmsg.RequestForKey(key)
		if req == nil {
			flexibleFrom[key] = -1
			continue
		}
		maxVersion[key] = req.MaxVersion()
		flexibleFrom[key] = maxVersion[key] + 1
		for v := int16(0); v <= maxVersion[key]; v++ {
			req.SetVersion(v)
			if req.IsFlexible() {
				flexibleFrom[key] = v
				break
			}
		}
	}
}

// IsFlexible reports whether requests and responses of key at version use
// flexible encodings (compact strings and arrays, tagged fields), and whether
// key is known at all. Versions beyond the newest known one count as
// flexible when the newest is.
func IsFlexible(key, version int16) (flexible, known bool) {
	if key < 0 || key > maxKnownKey || flexibleFrom[key] < 0 {
		return false, false
	}
	if version > maxVersion[key] {
		return flexibleFrom[key] <= maxVersion[key], true
	}
	return version >= flexibleFrom[key], true
}

// AppendResponse appends a complete response frame to dst: the size prefix,
// the response header for resp's key and version, and resp's body encoded by
// kmsg at the version set on it.
func AppendResponse(dst []byte, correlationID int32, resp kmsg.Response) []byte {
	start := len(dst)
	dst = append(dst, 0, 0, 0, 0)
	dst = binary.BigEndian.AppendUint32(dst, uint32(correlationID))
	if resp.Key() != APIVersionsKey && resp.IsFlexible() {
		dst = append(dst, 0) // empty tagged fields
	}
	dst = resp.AppendTo(dst)
	binary.BigEndian.PutUint32(dst[start:], uint32(len(dst)-start-4))
	return dst
}

// ParseResponseHeader splits a response frame (without its size prefix)
// into the correlation id and the body. flexible says whether the
// response header is v1 (tagged fields after the correlation id), as for
// every flexible version of every API but ApiVersions. Nothing is
// allocated; body aliases frame.
func ParseResponseHeader(frame []byte, flexible bool) (correlationID int32, body []byte, err error) {
	if len(frame) < 4 {
		return 0, nil, ErrTruncatedHeader
	}
	correlationID = int32(binary.BigEndian.Uint32(frame))
	body = frame[4:]
	if flexible {
		n, err := skipTaggedFields(body)
		if err != nil {
			return 0, nil, err
		}
		body = body[n:]
	}
	return correlationID, body, nil
}
