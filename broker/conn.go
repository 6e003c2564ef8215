package broker

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"log/slog"
	"math/bits"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-broker/gregor/broker/security/sasl"
	"github.com/gregor-broker/gregor/protocol"
	"github.com/gregor-broker/gregor/protocol/batch"
)

// maxInFlight bounds how many requests one connection may have read but not
// yet answered. A client that pipelines more simply waits for the socket.
const maxInFlight = 64

// conn is one client connection. A reader goroutine reads and parses frames
// and queues them; serve handles them one at a time in arrival order, which
// keeps responses in request order and appends from one producer in order,
// as Kafka does by muting a connection while its request is processed. A
// Produce request that arrives while nothing is queued or being handled is
// handled by the reader itself (readLoop), which saves waking the serving
// goroutine for each request of a producer; the order is the same, since
// nothing else is in flight. A request whose handler throttles the
// connection for a client quota (throttle.go) is answered at once; then the
// connection is muted as Kafka mutes its channel: serve handles nothing
// queued and the reader reads nothing until the throttle time has passed.
type conn struct {
	b   *Broker
	l   *listener // the listener the connection came in on
	nc  net.Conn
	log *slog.Logger
	w   *bufio.Writer
	tcp *net.TCPConn // nc, when records can be sent to it with sendfile
	out []byte       // response encoding buffer, reused; records never go in it

	// scratch is the batch decoder's reusable state; only the goroutine
	// handling a request touches it.
	scratch batch.Scratch

	// queued counts the requests the reader has queued for serve and serve
	// has not finished (handled, and flushed if it was the last). While it
	// is 0, serve touches nothing of the connection, so the reader may
	// handle a request itself: w, out and scratch belong to whichever
	// goroutine handles, and the atomic orders the hand-over both ways.
	queued atomic.Int32

	// auth is the connection's SASL authenticator, nil on a PLAINTEXT
	// listener. Only the reader touches it: it authenticates before
	// anything is queued, and re-authenticates once serve is idle.
	auth *sasl.Authenticator
	// principal is who the connection authenticated as (User:ANONYMOUS on
	// PLAINTEXT). Set by the reader before it queues the first request;
	// a re-authentication keeps it (Kafka refuses another principal).
	// Atomic so that the broker may list its connections' principals.
	principal atomic.Pointer[sasl.Principal]
	// idle, on a SASL connection, is signalled when serve has finished
	// everything queued, which a re-authentication waits for.
	idle chan struct{}

	// mutedUntil, when not 0, is the Unix time in nanoseconds until which
	// the connection is throttled for exceeding a client quota (KIP-219):
	// the response has gone, and no further request is read or handled
	// before then. Set by the goroutine handling a request (mute).
	mutedUntil atomic.Int64

	// pendingBytes is the size of the frames read and not yet answered
	// (request_memory.go); answered is signalled when one is, for a
	// reader waiting for room.
	pendingBytes atomic.Int64
	answered     chan struct{}
	// lastActive is when a frame was last read or a response last
	// written, in Unix nanoseconds, for connections.max.idle.ms
	// (conn_limits.go).
	lastActive atomic.Int64
}

// mute throttles the connection for ms milliseconds from now.
func (c *conn) mute(ms int32) {
	c.mutedUntil.Store(time.Now().Add(time.Duration(ms) * time.Millisecond).UnixNano())
}

// muted reports whether the connection is throttled.
func (c *conn) muted() bool {
	until := c.mutedUntil.Load()
	return until != 0 && time.Now().UnixNano() < until
}

// waitUnmuted returns once the connection's throttle time has passed, or
// false when ctx is done first.
func (c *conn) waitUnmuted(ctx context.Context) bool {
	until := c.mutedUntil.Load()
	if until == 0 {
		return true
	}
	if d := time.Until(time.Unix(0, until)); d > 0 {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
			return false
		}
	}
	c.mutedUntil.CompareAndSwap(until, 0)
	return true
}

// request is one parsed request on its way to a handler.
type request struct {
	hdr  protocol.RequestHeader
	body []byte
	ctx  context.Context // done when the connection or the broker closes
	conn *conn
	// received is when the frame was read, for the latency metric.
	received time.Time
	// size is the request's size in bytes, header and body (Kafka's
	// RequestChannel.Request.sizeInBytes), which a producer quota counts.
	size int
	// frame, when not nil, is the pooled buffer body lies in; serve returns
	// it to producePool once the request is answered.
	frame *[]byte
	// reserved is what reserveFrame took for the frame
	// (request_memory.go), given back once the request is answered.
	reserved int64
}

// principal is the principal the request comes from, for authorization.
func (r *request) principal() sasl.Principal { return *r.conn.principal.Load() }

// producePool recycles the frame buffers of Produce requests, which are most
// of what a connection reads. Only Produce qualifies: kmsg decodes byte
// fields as sub-slices of the frame, and a Produce request leaves nothing
// that aliases them once handled (the log copies the records into its file,
// or MemFS into its own memory; the producer state, metrics and flush waits
// keep numbers). Other requests keep their frames (a group keeps its
// members' metadata, for one) and get a fresh buffer each.
var producePool sync.Pool // *[]byte

const (
	produceKey = 0 // the api key of Produce

	// minPooledFrame is the smallest buffer the pool hands out, so that
	// small produce requests share buffers.
	minPooledFrame = 16 << 10
	// maxPooledFrame is the largest frame read into a pooled buffer. The
	// Java client's max.request.size is 1 MiB by default, but franz-go
	// puts up to 1 MB per partition in a request (its batch limit), and
	// its 100 B workload sends requests of 1.3-2 MB; a fresh buffer for
	// each of those was zeroed and collected, a third of the broker's CPU
	// in that workload. A larger frame gets a buffer of its own, so the
	// pool never pins one of up to socket.request.max.bytes.
	maxPooledFrame = 8 << 20
)

// frameBuffer returns a pooled buffer with room for size bytes.
func frameBuffer(size int) *[]byte {
	if p, _ := producePool.Get().(*[]byte); p != nil && cap(*p) >= size {
		return p
	}
	// A pooled buffer too small for this frame is dropped.
	b := make([]byte, 0, pooledFrameCap(size))
	return &b
}

// pooledFrameCap is the capacity of a new pooled buffer for a frame of size
// bytes: a power of two, so that frames of similar size fit each other's
// buffers.
func pooledFrameCap(size int) int {
	return max(minPooledFrame, 1<<bits.Len(uint(size-1)))
}

// readFrame reads the next frame from r. A Produce frame of at most
// maxPooledFrame bytes is read into a buffer from producePool, returned as
// pooled; any other frame into a buffer of its own.
func (c *conn) readFrame(r *bufio.Reader) (frame []byte, pooled *[]byte, err error) {
	return c.readFrameMax(r, c.b.cfg.MaxFrameBytes)
}

// readFrameMax is readFrame with maxSize as the largest frame.
func (c *conn) readFrameMax(r *bufio.Reader, maxSize int32) (frame []byte, pooled *[]byte, err error) {
	// The size prefix and the api key are peeked, the latter only when the
	// frame is long enough to hold it: a client that sent a frame too short
	// to parse may be waiting for an answer, and must get its closed
	// connection rather than a reader waiting for bytes that never come.
	if p, perr := r.Peek(4); perr == nil {
		size := int32(binary.BigEndian.Uint32(p))
		if size >= 2 && size <= maxPooledFrame && size <= maxSize {
			if p, perr = r.Peek(6); perr == nil && int16(binary.BigEndian.Uint16(p[4:])) == produceKey {
				pooled = frameBuffer(int(size))
			}
		}
	}
	var buf []byte
	if pooled != nil {
		buf = *pooled
	}
	frame, err = protocol.ReadFrame(r, maxSize, buf)
	if err != nil {
		return nil, nil, err
	}
	return frame, pooled, nil
}

func newConn(b *Broker, l *listener, nc net.Conn) *conn {
	tcp, _ := nc.(*net.TCPConn)
	c := &conn{
		b:   b,
		l:   l,
		nc:  nc,
		log: b.log.With("remote", nc.RemoteAddr().String(), "listener", l.cfg.Name),
		w:   bufio.NewWriterSize(nc, 64*1024),
		tcp: tcp,

		answered: make(chan struct{}, 1),
	}
	c.scratch.MaxUncompressed = int(b.cfg.MaxUncompressedBytes)
	c.principal.Store(&anonymous)
	c.lastActive.Store(time.Now().UnixNano())
	if l.sasl != nil {
		c.idle = make(chan struct{}, 1)
	}
	return c
}

func (c *conn) serve() {
	ctx, cancel := context.WithCancel(c.b.ctx)
	defer cancel()
	defer c.nc.Close()
	if !c.handshake(ctx) {
		return
	}

	queue := make(chan *request, maxInFlight)
	go c.readLoop(ctx, cancel, queue)

	for req := range queue {
		err := c.handleAndRelease(req)
		throttled := err == nil && c.muted()
		if err == nil && (len(queue) == 0 || throttled) {
			err = c.w.Flush()
			c.lastActive.Store(time.Now().UnixNano())
		}
		if throttled && err == nil && !c.waitUnmuted(ctx) {
			err = ctx.Err()
		}
		if err != nil {
			cancel()
			c.nc.Close()
			for req := range queue { // let the reader finish
				c.releaseFrame(req.reserved)
			}
			return
		}
		if c.queued.Add(-1) == 0 {
			select {
			case c.idle <- struct{}{}: // nil, and never ready, on PLAINTEXT
			default:
			}
		}
	}
}

// handleAndRelease handles req, returns its frame to the pool, and logs why
// the connection must close if handling fails.
func (c *conn) handleAndRelease(req *request) error {
	err := c.handle(req)
	if req.frame != nil {
		// Answered (or failed): nothing refers to the frame any more.
		producePool.Put(req.frame)
		req.frame, req.body = nil, nil
	}
	c.releaseFrame(req.reserved)
	req.reserved = 0
	if err != nil {
		c.log.Info("closing connection", "api_key", req.hdr.APIKey, "api_version", req.hdr.APIVersion,
			"correlation_id", req.hdr.CorrelationID, "reason", err)
	}
	return err
}

// readLoop reads frames until the connection fails, then cancels the
// connection's context, so that a fetch still waiting for data gives up on a
// client that has gone, and closes queue.
func (c *conn) readLoop(ctx context.Context, cancel context.CancelFunc, queue chan<- *request) {
	defer close(queue)
	defer cancel()
	r := bufio.NewReaderSize(c.nc, 64*1024)
	if c.l.sasl != nil {
		c.auth = sasl.New(c.l.sasl, func(hdr protocol.RequestHeader, body []byte) (bool, error) {
			return c.preAuthAPIVersions(ctx, hdr, body)
		})
		if !c.authenticate(ctx, r, nil) {
			c.nc.Close()
			return
		}
		p := c.auth.Principal()
		c.principal.Store(&p)
	}
	for {
		// A throttled connection reads nothing until its time has passed.
		if !c.waitUnmuted(ctx) {
			return
		}
		reserved, ok := c.reserveNextFrame(ctx, r)
		if !ok {
			return
		}
		frame, pooled, err := c.readFrame(r)
		if err != nil {
			c.releaseFrame(reserved)
			if !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) && ctx.Err() == nil {
				c.log.Info("closing connection", "reason", err)
			}
			return
		}
		received := time.Now()
		c.lastActive.Store(received.UnixNano())
		hdr, body, err := protocol.ParseRequestHeader(frame)
		if err != nil {
			c.releaseFrame(reserved)
			c.log.Info("closing connection", "api_key", hdr.APIKey, "reason", err)
			c.b.metrics.observe(&request{hdr: hdr, received: received}, nil, true)
			return
		}
		if c.auth != nil && c.auth.HasSessionExpiry() {
			// KIP-368, as Kafka's Processor: a SaslHandshake may begin a
			// re-authentication; otherwise a request on an expired
			// session closes the connection unanswered.
			if hdr.APIKey == saslHandshakeKey {
				if !c.awaitIdle(ctx) {
					return
				}
				if res, ok := c.auth.BeginReauthentication(frame); ok {
					c.releaseFrame(reserved)
					if !c.authenticate(ctx, r, &res) {
						c.nc.Close()
						return
					}
					continue
				}
			}
			if c.auth.SessionExpired() {
				c.log.Info("closing connection", "api_key", hdr.APIKey, "correlation_id", hdr.CorrelationID,
					"reason", "SASL session expired without re-authentication", "principal", c.principal.Load().String())
				c.b.metrics.expiredSessions.Inc()
				c.releaseFrame(reserved)
				c.nc.Close()
				return
			}
		}
		req := &request{hdr: hdr, body: body, ctx: ctx, conn: c, received: received, frame: pooled, size: len(frame), reserved: reserved}
		if hdr.APIKey == produceKey && c.queued.Load() == 0 {
			// Nothing is in flight: answer it here rather than wake serve.
			// The response waits in w while the next request is already
			// buffered, as serve's do while its queue is not empty.
			err := c.handleAndRelease(req)
			if err == nil && (!frameBuffered(r) || c.muted()) {
				err = c.w.Flush()
				c.lastActive.Store(time.Now().UnixNano())
			}
			if err != nil {
				c.nc.Close()
				return
			}
			continue
		}
		c.queued.Add(1)
		select {
		case queue <- req:
		case <-ctx.Done():
			c.releaseFrame(reserved)
			return
		}
	}
}

// reserveNextFrame waits until the next frame, whose size it peeks, may be
// read (reserveFrame), and returns what it reserved; false when the
// connection or the broker closes meanwhile. A size that readFrame will
// refuse, or a prefix that does not arrive, reserves nothing: readFrame
// reports it.
func (c *conn) reserveNextFrame(ctx context.Context, r *bufio.Reader) (int64, bool) {
	p, err := r.Peek(4)
	if err != nil {
		return 0, true
	}
	size := int32(binary.BigEndian.Uint32(p))
	if size < 0 || size > c.b.cfg.MaxFrameBytes {
		return 0, true
	}
	return c.reserveFrame(ctx, int64(size))
}

// frameBuffered reports whether r holds a whole frame, which the next read
// returns without waiting for the client.
func frameBuffered(r *bufio.Reader) bool {
	n := r.Buffered()
	if n < 4 {
		return false
	}
	p, _ := r.Peek(4)
	size := int32(binary.BigEndian.Uint32(p))
	return size >= 0 && int64(size) <= int64(n-4)
}

// handle runs one request and writes its response, if it has one. Small
// responses collect in c.w and leave together when the queue runs dry; a
// Fetch response's records are sent from their files (fetch_send.go),
// flushing what precedes them.
func (c *conn) handle(req *request) error {
	resp, err := dispatch(c.b, req)
	return c.respond(req, resp, err)
}

// respond writes the response of a dispatched request, if it has one.
func (c *conn) respond(req *request, resp kmsg.Response, err error) error {
	if fr, ok := resp.(*fetchReply); ok {
		defer fr.release()
	}
	if c.log.Enabled(req.ctx, slog.LevelDebug) {
		c.log.Debug("request", "api_key", req.hdr.APIKey, "api_version", req.hdr.APIVersion,
			"correlation_id", req.hdr.CorrelationID, "principal", req.principal().String(), "response", resp != nil, "err", err)
	}
	if err != nil {
		c.b.metrics.observe(req, nil, true)
		return err
	}
	if resp == nil { // Produce with acks=0 gets no response
		c.b.metrics.observe(req, nil, false)
		return nil
	}
	if fr, ok := resp.(*fetchReply); ok {
		// Counted before the client can see the response, so a client that
		// has its answer finds the request in /metrics.
		c.b.metrics.observe(req, resp, false)
		c.out, err = writeFetchReply(c.w, c.tcp, c.out, req.hdr.CorrelationID, fr)
	} else {
		c.out = protocol.AppendResponse(c.out[:0], req.hdr.CorrelationID, resp)
		c.b.metrics.observe(req, resp, false)
		_, err = c.w.Write(c.out)
	}
	if cap(c.out) > 1<<20 { // do not pin a large response's buffer
		c.out = nil
	}
	if err != nil {
		c.b.metrics.api(req.hdr.APIKey).failed.Inc()
	}
	return err
}

// saslHandshakeKey is the api key of SaslHandshake.
const saslHandshakeKey = 17

// authenticate runs the SASL exchange until the connection is
// authenticated (true) or must close (false). first, when not nil, is the
// result of the SaslHandshake that began a re-authentication. Nothing is
// queued meanwhile, so the reader owns the writer.
func (c *conn) authenticate(ctx context.Context, r *bufio.Reader, first *sasl.Result) bool {
	for first != nil || !c.auth.Complete() {
		var res sasl.Result
		if first != nil {
			res, first = *first, nil
		} else {
			frame, _, err := c.readFrameMax(r, c.auth.MaxReceiveSize())
			switch {
			case errors.Is(err, protocol.ErrFrameTooLarge) || errors.Is(err, protocol.ErrNegativeFrameSize):
				res = c.auth.InvalidReceive()
			case err != nil:
				if !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) && ctx.Err() == nil {
					c.log.Info("closing connection during SASL authentication", "reason", err)
				}
				return false
			default:
				res = c.auth.Step(frame)
			}
		}
		if len(res.Write) > 0 {
			if _, err := c.w.Write(res.Write); err != nil {
				return false
			}
		}
		if c.w.Buffered() > 0 {
			if err := c.w.Flush(); err != nil {
				return false
			}
		}
		if res.Err == nil {
			continue
		}
		if !res.Delayed {
			c.log.Info("closing connection during SASL authentication", "reason", res.Err)
			return false
		}
		// Kafka's delayed close: the failure response, if any, goes when
		// connection.failed.authentication.delay.ms has passed.
		c.b.metrics.failedAuthentications.Inc()
		c.log.Info("failed authentication", "mechanism", c.auth.Mechanism(), "reason", res.Err)
		if d := c.b.cfg.failedAuthenticationDelay(); d > 0 {
			t := time.NewTimer(d)
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
				return false
			}
		}
		if len(res.FailWrite) > 0 {
			if _, err := c.w.Write(res.FailWrite); err == nil {
				c.w.Flush()
			}
		}
		return false
	}
	c.b.metrics.successfulAuthentications.Inc()
	return true
}

// preAuthAPIVersions answers an ApiVersions request that comes before the
// SASL handshake with the normal handler, and reports whether its answer
// carries no error code.
func (c *conn) preAuthAPIVersions(ctx context.Context, hdr protocol.RequestHeader, body []byte) (bool, error) {
	req := &request{hdr: hdr, body: body, ctx: ctx, conn: c, received: time.Now(), size: len(body)}
	resp, err := dispatch(c.b, req)
	ok := false
	if av, isAV := resp.(*kmsg.ApiVersionsResponse); isAV && err == nil {
		ok = av.ErrorCode == 0
	}
	if err := c.respond(req, resp, err); err != nil {
		return false, err
	}
	return ok, nil
}

// awaitIdle waits until serve has finished every queued request, so that
// the reader may write.
func (c *conn) awaitIdle(ctx context.Context) bool {
	for c.queued.Load() != 0 {
		select {
		case <-c.idle:
		case <-ctx.Done():
			return false
		}
	}
	return true
}
