package peer

import (
	"context"
	"errors"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-broker/gregor/protocol"
)

// fakePeer is a Kafka listener answering Metadata requests with a
// response naming its own id as the controller, through answer, which may
// change the correlation id or hold the answer back.
type fakePeer struct {
	ln      net.Listener
	id      int32
	accepts atomic.Int32
	answer  func(corr int32) (int32, time.Duration)
	// login, when set, makes the peer a SASL listener (security_test.go):
	// it answers the SASL requests and closes a connection that sends
	// anything else before it logged in.
	login *fakeLogin
}

func startPeer(t *testing.T, id int32) *fakePeer {
	t.Helper()
	return startLoginPeer(t, id, nil)
}

// startLoginPeer is startPeer with login set before it accepts.
func startLoginPeer(t *testing.T, id int32, login *fakeLogin) *fakePeer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &fakePeer{id: id, answer: func(corr int32) (int32, time.Duration) { return corr, 0 }, login: login}
	p.listen(t, ln)
	return p
}

// listen serves ln's connections until the test ends.
func (p *fakePeer) listen(t *testing.T, ln net.Listener) {
	p.ln = ln
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			nc, err := ln.Accept()
			if err != nil {
				return
			}
			p.accepts.Add(1)
			go p.serve(nc)
		}
	}()
}

func (p *fakePeer) serve(nc net.Conn) {
	defer nc.Close()
	authenticated := p.login == nil
	for {
		frame, err := protocol.ReadFrame(nc, 1<<20, nil)
		if err != nil {
			return
		}
		h, body, err := protocol.ParseRequestHeader(frame)
		if err != nil {
			return
		}
		if h.APIKey == 17 || h.APIKey == 36 { // SaslHandshake, SaslAuthenticate
			if p.login == nil || !p.login.answer(nc, h, body, &authenticated) {
				return
			}
			continue
		}
		if !authenticated {
			return // Kafka's ILLEGAL_SASL_STATE: the connection closes
		}
		resp := kmsg.NewPtrMetadataResponse()
		resp.Version = h.APIVersion
		resp.ControllerID = p.id
		corr, delay := p.answer(h.CorrelationID)
		time.Sleep(delay)
		if _, err := nc.Write(protocol.AppendResponse(nil, corr, resp)); err != nil {
			return
		}
	}
}

func (p *fakePeer) addr() string { return p.ln.Addr().String() }

func metadata() *kmsg.MetadataRequest {
	req := kmsg.NewPtrMetadataRequest()
	req.Version = 12
	return req
}

func controllerOf(t *testing.T, c *Conn, ctx context.Context, addr string) int32 {
	t.Helper()
	resp, err := c.Do(ctx, addr, metadata())
	if err != nil {
		t.Fatal(err)
	}
	return resp.(*kmsg.MetadataResponse).ControllerID
}

func TestConnReusesItsConnectionAndRedialsWhenThePeerMoves(t *testing.T) {
	a, b := startPeer(t, 1), startPeer(t, 2)
	c := &Conn{ClientID: "test"}
	defer c.Close()
	ctx := context.Background()
	for range 3 {
		if got := controllerOf(t, c, ctx, a.addr()); got != 1 {
			t.Fatalf("controller %d, want 1", got)
		}
	}
	if got := controllerOf(t, c, ctx, b.addr()); got != 2 {
		t.Fatalf("after the move: controller %d, want 2", got)
	}
	if a.accepts.Load() != 1 || b.accepts.Load() != 1 {
		t.Fatalf("dials: a %d b %d, want one each", a.accepts.Load(), b.accepts.Load())
	}
}

func TestConnRedialsAfterAWrongCorrelationID(t *testing.T) {
	p := startPeer(t, 1)
	var wrong atomic.Bool
	wrong.Store(true)
	p.answer = func(corr int32) (int32, time.Duration) {
		if wrong.Swap(false) {
			return corr + 7, 0
		}
		return corr, 0
	}
	c := &Conn{}
	defer c.Close()
	_, err := c.Do(context.Background(), p.addr(), metadata())
	if err == nil || !strings.Contains(err.Error(), "correlation id") {
		t.Fatalf("first request: %v, want a correlation id error", err)
	}
	if got := controllerOf(t, c, context.Background(), p.addr()); got != 1 || p.accepts.Load() != 2 {
		t.Fatalf("controller %d after %d dials, want 1 after 2", got, p.accepts.Load())
	}
}

func TestConnRequestEndsWithItsContext(t *testing.T) {
	p := startPeer(t, 1)
	p.answer = func(corr int32) (int32, time.Duration) { return corr, time.Hour }
	c := &Conn{}
	defer c.Close()
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(50*time.Millisecond, cancel)
	start := time.Now()
	_, err := c.Do(ctx, p.addr(), metadata())
	if !errors.Is(err, context.Canceled) || time.Since(start) > 10*time.Second {
		t.Fatalf("after %v: %v, want context.Canceled soon", time.Since(start), err)
	}
	ctx, cancel = context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := c.Do(ctx, p.addr(), metadata()); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("%v, want context.DeadlineExceeded", err)
	}
}

func TestConnRefusesAResponseOverItsLimit(t *testing.T) {
	p := startPeer(t, 1)
	c := &Conn{MaxResponseBytes: 8}
	defer c.Close()
	if _, err := c.Do(context.Background(), p.addr(), metadata()); err == nil {
		t.Fatal("a response over MaxResponseBytes was accepted")
	}
}

func TestConnClosedRefusesRequests(t *testing.T) {
	p := startPeer(t, 1)
	c := &Conn{}
	controllerOf(t, c, context.Background(), p.addr())
	c.Close()
	if _, err := c.Do(context.Background(), p.addr(), metadata()); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("after Close: %v, want net.ErrClosed", err)
	}
}
