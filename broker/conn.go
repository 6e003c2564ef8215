package broker

import (
	"bufio"
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"time"

	"github.com/gregor-broker/gregor/protocol"
	"github.com/gregor-broker/gregor/protocol/batch"
)

// maxInFlight bounds how many requests one connection may have read but not
// yet answered. A client that pipelines more simply waits for the socket.
const maxInFlight = 64

// conn is one client connection. A reader goroutine reads and parses frames
// and queues them; serve handles them one at a time in arrival order, which
// keeps responses in request order and appends from one producer in order,
// as Kafka does by muting a connection while its request is processed.
type conn struct {
	b   *Broker
	nc  net.Conn
	log *slog.Logger
	w   *bufio.Writer
	tcp *net.TCPConn // nc, when records can be sent to it with sendfile
	out []byte       // response encoding buffer, reused; records never go in it

	// scratch is the batch decoder's reusable state; only the serve
	// goroutine touches it.
	scratch batch.Scratch
}

// request is one parsed request on its way to a handler.
type request struct {
	hdr  protocol.RequestHeader
	body []byte
	ctx  context.Context // done when the connection or the broker closes
	conn *conn
	// received is when the frame was read, for the latency metric.
	received time.Time
}

func newConn(b *Broker, nc net.Conn) *conn {
	tcp, _ := nc.(*net.TCPConn)
	return &conn{
		b:   b,
		nc:  nc,
		log: b.log.With("remote", nc.RemoteAddr().String()),
		w:   bufio.NewWriterSize(nc, 64*1024),
		tcp: tcp,
	}
}

func (c *conn) serve() {
	ctx, cancel := context.WithCancel(c.b.ctx)
	defer cancel()
	defer c.nc.Close()

	queue := make(chan *request, maxInFlight)
	go c.readLoop(ctx, cancel, queue)

	for req := range queue {
		if err := c.handle(req); err != nil {
			c.log.Info("closing connection", "api_key", req.hdr.APIKey, "api_version", req.hdr.APIVersion,
				"correlation_id", req.hdr.CorrelationID, "reason", err)
			cancel()
			c.nc.Close()
			for range queue { // let the reader finish
			}
			return
		}
		if len(queue) == 0 {
			if err := c.w.Flush(); err != nil {
				cancel()
				c.nc.Close()
				for range queue {
				}
				return
			}
		}
	}
}

// readLoop reads frames until the connection fails, then cancels the
// connection's context, so that a fetch still waiting for data gives up on a
// client that has gone, and closes queue.
func (c *conn) readLoop(ctx context.Context, cancel context.CancelFunc, queue chan<- *request) {
	defer close(queue)
	defer cancel()
	r := bufio.NewReaderSize(c.nc, 64*1024)
	for {
		frame, err := protocol.ReadFrame(r, c.b.cfg.MaxFrameBytes, nil)
		if err != nil {
			if !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) && ctx.Err() == nil {
				c.log.Info("closing connection", "reason", err)
			}
			return
		}
		received := time.Now()
		hdr, body, err := protocol.ParseRequestHeader(frame)
		if err != nil {
			c.log.Info("closing connection", "api_key", hdr.APIKey, "reason", err)
			c.b.metrics.observe(&request{hdr: hdr, received: received}, nil, true)
			return
		}
		select {
		case queue <- &request{hdr: hdr, body: body, ctx: ctx, conn: c, received: received}:
		case <-ctx.Done():
			return
		}
	}
}

// handle runs one request and writes its response, if it has one. Small
// responses collect in c.w and leave together when the queue runs dry; a
// Fetch response's records are sent from their files (fetch_send.go),
// flushing what precedes them.
func (c *conn) handle(req *request) error {
	resp, err := dispatch(c.b, req)
	if fr, ok := resp.(*fetchReply); ok {
		defer fr.release()
	}
	if c.log.Enabled(req.ctx, slog.LevelDebug) {
		c.log.Debug("request", "api_key", req.hdr.APIKey, "api_version", req.hdr.APIVersion,
			"correlation_id", req.hdr.CorrelationID, "response", resp != nil, "err", err)
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
