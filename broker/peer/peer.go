package peer

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-broker/gregor/protocol"
)

// DefaultTimeout bounds a request whose context has no deadline, Kafka's
// request.timeout.ms default.
const DefaultTimeout = 30 * time.Second

// DefaultMaxResponseBytes bounds a response when MaxResponseBytes is zero.
const DefaultMaxResponseBytes = 16 << 20

// Conn is a connection to one peer at a time. The zero value is ready to
// use; set the fields before the first request.
type Conn struct {
	// ClientID names this node in the requests' headers.
	ClientID string
	// MaxResponseBytes bounds a response's size; a larger one fails the
	// request. Zero is DefaultMaxResponseBytes.
	MaxResponseBytes int32
	// DialTimeout bounds a dial, with its TLS handshake and SASL login,
	// on its own; zero leaves it to the request's context.
	DialTimeout time.Duration
	// Security is how the connection authenticates to the peer; nil is
	// plain TCP without a login.
	Security *Security

	mu   sync.Mutex
	nc   net.Conn // guarded by mu
	addr string   // guarded by mu: what nc was dialled at
	corr int32    // guarded by mu
	// redialAt, guarded by mu, is when the SASL session the peer granted
	// nc nears its end; zero when it has none.
	redialAt time.Time
	closed   bool // guarded by mu
}

// Do sends req, at the version the caller set, to the Kafka listener at
// addr and returns the decoded response. It dials first when there is no
// connection or it goes to another address. The context's deadline bounds
// the round trip (DefaultTimeout without one), and cancelling the context
// ends it. After any error the connection is closed, so that the next
// request dials again.
func (c *Conn) Do(ctx context.Context, addr string, req kmsg.Request) (kmsg.Response, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil, net.ErrClosed
	}
	if c.nc != nil && (c.addr != addr || !c.redialAt.IsZero() && !time.Now().Before(c.redialAt)) {
		c.resetLocked()
	}
	if c.nc == nil {
		dialCtx, cancel := ctx, context.CancelFunc(func() {})
		if c.DialTimeout > 0 {
			dialCtx, cancel = context.WithTimeout(ctx, c.DialTimeout)
		}
		nc, err := (&net.Dialer{}).DialContext(dialCtx, "tcp", addr)
		if err != nil {
			cancel()
			return nil, fmt.Errorf("dialling %s: %w", addr, err)
		}
		nc, redialAt, err := c.secureLocked(dialCtx, nc, addr)
		cancel()
		if err != nil {
			return nil, err
		}
		c.nc, c.addr, c.redialAt = nc, addr, redialAt
	}
	resp, err := c.roundTrip(ctx, req)
	if err != nil {
		c.resetLocked()
		return nil, fmt.Errorf("request %d to %s: %w", req.Key(), addr, err)
	}
	return resp, nil
}

func (c *Conn) roundTrip(ctx context.Context, req kmsg.Request) (kmsg.Response, error) {
	deadline, ok := ctx.Deadline()
	if !ok {
		deadline = time.Now().Add(DefaultTimeout)
	}
	if err := c.nc.SetDeadline(deadline); err != nil {
		return nil, err
	}
	// A cancelled context ends the request: the deadline moves to now.
	nc := c.nc
	stop := context.AfterFunc(ctx, func() { nc.SetDeadline(time.Now()) })
	defer stop()

	c.corr++
	corr := c.corr
	frame := kmsg.NewRequestFormatter(kmsg.FormatterClientID(c.ClientID)).AppendRequest(nil, req, corr)
	if _, err := nc.Write(frame); err != nil {
		return nil, ctxErr(ctx, err)
	}
	maxBytes := c.MaxResponseBytes
	if maxBytes <= 0 {
		maxBytes = DefaultMaxResponseBytes
	}
	raw, err := protocol.ReadFrame(nc, maxBytes, nil)
	if err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return nil, ctxErr(ctx, err)
	}
	got, body, err := protocol.ParseResponseHeader(raw, req.IsFlexible())
	if err != nil {
		return nil, err
	}
	if got != corr {
		return nil, fmt.Errorf("correlation id %d, want %d", got, corr)
	}
	resp := req.ResponseKind()
	if err := resp.ReadFrom(body); err != nil {
		return nil, fmt.Errorf("malformed response: %w", err)
	}
	return resp, nil
}

// ctxErr names the context's end as the cause of an I/O error it caused:
// a cancellation, or its deadline, which is the connection's too.
func ctxErr(ctx context.Context, err error) error {
	cerr := ctx.Err()
	if d, ok := ctx.Deadline(); ok && cerr == nil && !time.Now().Before(d) {
		cerr = context.DeadlineExceeded
	}
	if cerr != nil {
		return fmt.Errorf("%w (%v)", cerr, err)
	}
	return err
}

// Reset closes the connection; the next request dials again.
func (c *Conn) Reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.resetLocked()
}

func (c *Conn) resetLocked() {
	if c.nc != nil {
		c.nc.Close()
		c.nc = nil
	}
	c.redialAt = time.Time{}
}

// Close closes the connection for good, once any request in flight is
// done: later requests fail with net.ErrClosed.
func (c *Conn) Close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed = true
	c.resetLocked()
}
