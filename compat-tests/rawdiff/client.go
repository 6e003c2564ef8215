package main

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/gregor-broker/gregor/protocol"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// requestTimeout bounds every request: writing it and reading its answer.
const requestTimeout = 10 * time.Second

// errClosed reports that the broker closed the connection instead of
// answering; that is an observable outcome compared like any answer.
var errClosed = errors.New("connection closed by the broker")

// conn is a raw Kafka connection to one broker. It reconnects after the
// broker closed it.
type conn struct {
	name string // "kafka" or "gregor"
	addr string
	nc   net.Conn
	corr int32
}

func (c *conn) ensure() error {
	if c.nc != nil {
		return nil
	}
	nc, err := net.DialTimeout("tcp", c.addr, requestTimeout)
	if err != nil {
		return fmt.Errorf("%s: dial %s: %w", c.name, c.addr, err)
	}
	c.nc = nc
	return nil
}

func (c *conn) close() {
	if c.nc != nil {
		c.nc.Close()
		c.nc = nil
	}
}

// header appends a request header (v1, or v2 when flexible) to a frame whose
// four size bytes are still to be filled.
func header(key, version int16, corr int32, flexible bool) []byte {
	b := []byte{0, 0, 0, 0}
	b = binary.BigEndian.AppendUint16(b, uint16(key))
	b = binary.BigEndian.AppendUint16(b, uint16(version))
	b = binary.BigEndian.AppendUint32(b, uint32(corr))
	b = binary.BigEndian.AppendUint16(b, uint16(len("rawdiff")))
	b = append(b, "rawdiff"...)
	if flexible {
		b = append(b, 0) // no tagged fields
	}
	return b
}

// roundTripRaw sends frame (size prefix included, filled here) with
// correlation id corr already in it and returns the response body after the
// correlation id.
func (c *conn) roundTripRaw(frame []byte, corr int32) ([]byte, error) {
	if err := c.ensure(); err != nil {
		return nil, err
	}
	if err := c.writeFrame(frame); err != nil {
		return nil, err
	}
	resp, err := protocol.ReadFrame(c.nc, 1<<30, nil)
	if err != nil {
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			c.close()
			return nil, fmt.Errorf("%s: no answer within %v", c.name, requestTimeout)
		}
		c.close()
		return nil, errClosed
	}
	if len(resp) < 4 {
		return nil, fmt.Errorf("%s: response of %d bytes", c.name, len(resp))
	}
	if got := int32(binary.BigEndian.Uint32(resp)); got != corr {
		return nil, fmt.Errorf("%s: correlation id %d, want %d", c.name, got, corr)
	}
	return resp[4:], nil
}

// writeFrame fills in frame's size and writes it; a failed write is the
// broker having closed the connection.
func (c *conn) writeFrame(frame []byte) error {
	binary.BigEndian.PutUint32(frame, uint32(len(frame)-4))
	c.nc.SetDeadline(time.Now().Add(requestTimeout))
	if _, err := c.nc.Write(frame); err != nil {
		c.close()
		return errClosed
	}
	return nil
}

// roundTrip sends req at its version and decodes the answer at the same
// version.
func (c *conn) roundTrip(req kmsg.Request) (kmsg.Response, error) {
	c.corr++
	frame := header(req.Key(), req.GetVersion(), c.corr, req.IsFlexible())
	frame = req.AppendTo(frame)
	body, err := c.roundTripRaw(frame, c.corr)
	if err != nil {
		return nil, err
	}
	resp := req.ResponseKind()
	resp.SetVersion(req.GetVersion())
	if resp.Key() != protocol.APIVersionsKey && resp.IsFlexible() {
		if len(body) == 0 {
			return nil, fmt.Errorf("%s: empty response body", c.name)
		}
		body = body[1:] // response header tagged fields (none expected)
	}
	if err := resp.ReadFrom(body); err != nil {
		return nil, fmt.Errorf("%s: decoding %s v%d response: %w", c.name, kmsg.NameForKey(req.Key()), req.GetVersion(), err)
	}
	return resp, nil
}
