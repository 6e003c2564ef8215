package broker

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// counted is a counter's value.
func counted(c prometheus.Counter) float64 {
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		panic(err)
	}
	return m.GetCounter().GetValue()
}

func TestParseConnectionOverrides(t *testing.T) {
	local := netip.MustParseAddr("127.0.0.1")
	tests := []struct {
		in      string
		want    map[netip.Addr]int64
		wantErr string
	}{
		{"", map[netip.Addr]int64{}, ""},
		{"127.0.0.1:5", map[netip.Addr]int64{local: 5}, ""},
		{" 127.0.0.1 : 5 , ::1:7", map[netip.Addr]int64{local: 5, netip.MustParseAddr("::1"): 7}, ""},
		{"[::1]:7", map[netip.Addr]int64{netip.MustParseAddr("::1"): 7}, ""},
		{"127.0.0.1", nil, "Map entry '127.0.0.1' is not of the form 'key:value'"},
		{"127.0.0.1:many", nil, `For input string: "many"`},
		{"no-such-host.invalid:3", nil, "max.connections.per.ip.overrides contains invalid addresses : no-such-host.invalid"},
	}
	for _, tt := range tests {
		got, err := parseConnectionOverrides(tt.in)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("%q: err %v, want %q", tt.in, err, tt.wantErr)
			}
			continue
		}
		if err != nil || fmt.Sprint(got) != fmt.Sprint(tt.want) {
			t.Errorf("%q: %v, %v; want %v", tt.in, got, err, tt.want)
		}
	}
	zero := int64(0)
	if _, err := Start(t.Context(), Config{MaxConnectionsPerIP: &zero}); err == nil ||
		!strings.Contains(err.Error(), "max.connections.per.ip can be set to zero only if max.connections.per.ip.overrides property is set.") {
		t.Fatalf("max.connections.per.ip=0 without overrides: %v", err)
	}
}

// answered reports whether a Metadata request on a new connection to addr
// is answered within wait.
func answered(t *testing.T, addr string, wait time.Duration) (net.Conn, bool) {
	t.Helper()
	nc, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	req := kmsg.NewPtrMetadataRequest()
	req.SetVersion(12)
	if _, err := nc.Write(encodeRequest(req, 1)); err != nil {
		return nc, false
	}
	nc.SetReadDeadline(time.Now().Add(wait))
	_, err = nc.Read(make([]byte, 4))
	nc.SetReadDeadline(time.Time{})
	return nc, err == nil
}

func TestMaxConnectionsPerIP(t *testing.T) {
	t.Parallel()
	two := int64(2)
	b := startBroker(t, Config{MaxConnectionsPerIP: &two})
	first, ok1 := answered(t, b.Addr(), 5*time.Second)
	_, ok2 := answered(t, b.Addr(), 5*time.Second)
	if !ok1 || !ok2 {
		t.Fatal("a connection under the limit was not answered")
	}
	if _, ok := answered(t, b.Addr(), time.Second); ok {
		t.Fatal("a third connection from 127.0.0.1 was answered with max.connections.per.ip=2")
	}
	if got := counted(b.metrics.connectionsRejectedPerIP); got != 1 {
		t.Fatalf("rejected connections counted %v, want 1", got)
	}
	first.Close()
	waitFor(t, "a slot after a close", func() bool {
		_, ok := answered(t, b.Addr(), time.Second)
		return ok
	})

	over := startBroker(t, Config{MaxConnectionsPerIP: &two, MaxConnectionsPerIPOverrides: "127.0.0.1:3"})
	for i := range 3 {
		if _, ok := answered(t, over.Addr(), 5*time.Second); !ok {
			t.Fatalf("connection %d under the override of 3 was not answered", i+1)
		}
	}
	if _, ok := answered(t, over.Addr(), time.Second); ok {
		t.Fatal("a fourth connection was answered with an override of 3")
	}
}

func TestMaxConnectionsWaitsForASlot(t *testing.T) {
	t.Parallel()
	two := int64(2)
	b := startBroker(t, Config{MaxConnections: &two})
	first, _ := answered(t, b.Addr(), 5*time.Second)
	answered(t, b.Addr(), 5*time.Second)
	third, ok := answered(t, b.Addr(), 500*time.Millisecond)
	if ok {
		t.Fatal("a third connection was served with max.connections=2")
	}
	first.Close()
	// The third connection waited in the backlog and is served now.
	third.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := third.Read(make([]byte, 4)); err != nil {
		t.Fatalf("the waiting connection was not served once a slot freed: %v", err)
	}
}

func TestIdleConnectionsAreClosed(t *testing.T) {
	t.Parallel()
	idle := int64(300)
	b := startBroker(t, Config{ConnectionsMaxIdleMs: &idle})
	quiet := dialRaw(t, b.Addr())
	busy := dialRaw(t, b.Addr())
	createTopic(t, busy, "t", 1, nil)
	corr := busy.send(fetchRequest(12, "t", 0, 1000, 1)) // in flight for longer than the idle time
	quiet.expectClosed()
	resp := kmsg.NewPtrFetchResponse()
	resp.SetVersion(12)
	busy.readResponse(corr, resp) // not closed while its fetch waited
	if got := counted(b.metrics.idleConnectionsClosed); got < 1 {
		t.Fatalf("idle closes counted %v", got)
	}
	never := int64(-1)
	kept := startBroker(t, Config{ConnectionsMaxIdleMs: &never})
	c := dialRaw(t, kept.Addr())
	time.Sleep(100 * time.Millisecond)
	meta := kmsg.NewPtrMetadataRequest()
	meta.SetVersion(12)
	c.do(meta)
}

// failingListener fails its first n accepts with EMFILE, counting every
// call.
type failingListener struct {
	net.Listener
	n, calls atomic.Int64
}

func (l *failingListener) Accept() (net.Conn, error) {
	l.calls.Add(1)
	if l.n.Add(-1) >= 0 {
		return nil, &net.OpError{Op: "accept", Net: "tcp", Err: syscall.EMFILE}
	}
	return l.Listener.Accept()
}

type lockedBuffer struct {
	mu sync.Mutex
	bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.Buffer.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.Buffer.String()
}

// TestAcceptBacksOffWhenOutOfDescriptors: an accept loop out of file
// descriptors waits, doubling up to a second, and warns once an interval
// (issue #19: 16.7 million warnings, 2 GB of log, in 140 s), then serves
// clients once accepts succeed again.
func TestAcceptBacksOffWhenOutOfDescriptors(t *testing.T) {
	t.Parallel()
	var logs lockedBuffer
	fl := &failingListener{}
	fl.n.Store(8)
	cfg := Config{Logger: slog.New(slog.NewTextHandler(&logs, nil))}
	cfg.testHooks.wrapListener = func(ln net.Listener) net.Listener {
		fl.Listener = ln
		return fl
	}
	b := startBroker(t, cfg)
	start := time.Now()
	if _, ok := answered(t, b.Addr(), 10*time.Second); !ok {
		t.Fatal("not served after the accept failures")
	}
	// 5+10+20+...+640 ms of backoff before the ninth accept, counted from
	// before Start returned: most of it is still ahead of the client.
	if waited := time.Since(start); waited < 700*time.Millisecond {
		t.Fatalf("served after %v: the accept loop did not back off", waited)
	}
	if got := strings.Count(logs.String(), "accept failed"); got != 1 {
		t.Fatalf("%d accept warnings for 8 failures in a second, want 1", got)
	}
	if got := counted(b.metrics.acceptFailures); got != 8 {
		t.Fatalf("accept failures counted %v, want 8", got)
	}
}

func TestAcceptBackoffDoublesAndWarnsOnceAnInterval(t *testing.T) {
	var a acceptBackoff
	now := time.Unix(1000, 0)
	var delays []time.Duration
	warnings := 0
	for range 10 {
		d, warn, _ := a.failed(now)
		delays = append(delays, d)
		if warn {
			warnings++
		}
		now = now.Add(d)
	}
	want := []time.Duration{5, 10, 20, 40, 80, 160, 320, 640, 1000, 1000}
	for i := range want {
		if delays[i] != want[i]*time.Millisecond {
			t.Fatalf("delays %v", delays)
		}
	}
	if warnings != 1 {
		t.Fatalf("%d warnings in %v", warnings, now.Sub(time.Unix(1000, 0)))
	}
	_, warn, n := a.failed(now.Add(acceptWarnEvery))
	if !warn || n != 10 {
		t.Fatalf("after the interval: warn %v with %d failures, want true with 10", warn, n)
	}
	a.succeeded()
	if d, _, _ := a.failed(now); d != minAcceptBackoff {
		t.Fatalf("after a success the delay starts again at %v", d)
	}
	if !transientAcceptError(&net.OpError{Err: syscall.ENFILE}) || transientAcceptError(errors.New("other")) {
		t.Fatal("transientAcceptError")
	}
}
