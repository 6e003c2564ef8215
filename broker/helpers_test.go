package broker

import (
	"context"
	"encoding/binary"
	"errors"
	"log/slog"
	"net"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-broker/gregor/protocol"
)

// startBroker starts a broker on a random loopback port for the test and
// closes it when the test ends.
func startBroker(t testing.TB, cfg Config) *Broker {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if cfg.Logger == nil && os.Getenv("GREGOR_TEST_DEBUG") != "" {
		cfg.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	b, err := Start(ctx, cfg)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() {
		if err := b.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return b
}

// rawConn speaks the Kafka protocol directly, for requests at versions and
// with contents that client libraries would not send.
type rawConn struct {
	t    testing.TB
	nc   net.Conn
	corr int32
}

func dialRaw(t testing.TB, addr string) *rawConn {
	t.Helper()
	nc, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	return &rawConn{t: t, nc: nc}
}

// encodeRequest returns a complete request frame for req at its version.
func encodeRequest(req kmsg.Request, corr int32) []byte {
	b := []byte{0, 0, 0, 0}
	b = binary.BigEndian.AppendUint16(b, uint16(req.Key()))
	b = binary.BigEndian.AppendUint16(b, uint16(req.GetVersion()))
	b = binary.BigEndian.AppendUint32(b, uint32(corr))
	b = binary.BigEndian.AppendUint16(b, 4)
	b = append(b, "test"...)
	if req.IsFlexible() {
		b = append(b, 0)
	}
	b = req.AppendTo(b)
	binary.BigEndian.PutUint32(b, uint32(len(b)-4))
	return b
}

func (c *rawConn) send(req kmsg.Request) int32 {
	c.t.Helper()
	c.corr++
	if _, err := c.nc.Write(encodeRequest(req, c.corr)); err != nil {
		c.t.Fatalf("write: %v", err)
	}
	return c.corr
}

// sendRefused writes a request the broker is expected to refuse by closing
// the connection: for a large frame the broker may close before the write
// ends, so a reset or broken pipe is what the test wants, not a failure.
func (c *rawConn) sendRefused(req kmsg.Request) {
	c.t.Helper()
	c.corr++
	if _, err := c.nc.Write(encodeRequest(req, c.corr)); err != nil &&
		!errors.Is(err, syscall.ECONNRESET) && !errors.Is(err, syscall.EPIPE) {
		c.t.Fatalf("write: %v", err)
	}
}

// readResponse reads one response frame and decodes it as resp (whose
// version must be set), checking the correlation id.
func (c *rawConn) readResponse(corr int32, resp kmsg.Response) {
	c.t.Helper()
	c.nc.SetReadDeadline(time.Now().Add(10 * time.Second))
	frame, err := protocol.ReadFrame(c.nc, 1<<30, nil)
	if err != nil {
		c.t.Fatalf("reading response: %v", err)
	}
	if got := int32(binary.BigEndian.Uint32(frame)); got != corr {
		c.t.Fatalf("correlation id %d, want %d", got, corr)
	}
	body := frame[4:]
	if resp.Key() != protocol.APIVersionsKey && resp.IsFlexible() {
		body = body[1:]
	}
	if err := resp.ReadFrom(body); err != nil {
		c.t.Fatalf("decoding %T: %v", resp, err)
	}
}

// do sends req and returns its response at the same version.
func (c *rawConn) do(req kmsg.Request) kmsg.Response {
	c.t.Helper()
	corr := c.send(req)
	resp := req.ResponseKind()
	resp.SetVersion(req.GetVersion())
	c.readResponse(corr, resp)
	return resp
}

// expectClosed checks that the broker closed the connection.
func (c *rawConn) expectClosed() {
	c.t.Helper()
	c.nc.SetReadDeadline(time.Now().Add(5 * time.Second))
	buf := make([]byte, 1)
	n, err := c.nc.Read(buf)
	if n > 0 {
		c.t.Fatal("the broker answered instead of closing the connection")
	}
	if ne, ok := err.(net.Error); ok && ne.Timeout() {
		c.t.Fatal("the broker kept the connection open")
	}
}

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
