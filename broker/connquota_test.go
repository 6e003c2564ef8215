package broker

import (
	"context"
	"errors"
	"io"
	"net"
	"net/netip"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestConnectionRateQuotaAsKafka: an address's own quota wins over the
// default; a connection over the quota is taken back out of the rate and
// held for the throttle time, bounded by one window.
func TestConnectionRateQuotaAsKafka(t *testing.T) {
	q := newConnectionRateQuota(rateConfig{samples: 11, windowMs: 1000})
	a, other := netip.MustParseAddr("10.0.0.1"), netip.MustParseAddr("10.0.0.2")
	q.update(context.Background(), map[quotaEntity]map[string]float64{
		{ip: quotaName{present: true, name: "10.0.0.1"}}:  {connectionCreationRate: 1},
		{ip: quotaName{present: true, isDefault: true}}:   {connectionCreationRate: 100},
		{user: quotaName{present: true, isDefault: true}}: {producerByteRate: 1},
	})
	now := int64(1_700_000_000_000)
	// 1 a second over at least 10 s: ten connections at once fit.
	for i := range 10 {
		if ms := q.record(a, now); ms != 0 {
			t.Fatalf("connection %d throttled %d ms", i, ms)
		}
	}
	// The 11th makes 1.1/s: (1.1-1)/1 * 10 s = 1 s, bounded by one window.
	if ms := q.record(a, now); ms != 1000 {
		t.Fatalf("11th connection throttled %d ms, want 1000", ms)
	}
	// It was taken back out: the rate is still 10 over 10 s.
	if got := q.sensors[a].rate.measure(q.cfg, now); got != 1 {
		t.Fatalf("rate after the refused connection = %v, want 1", got)
	}
	for i := range 50 {
		if ms := q.record(other, now); ms != 0 {
			t.Fatalf("connection %d from an address under the default throttled %d ms", i, ms)
		}
	}
	q.update(context.Background(), nil)
	if ms := q.record(a, now); ms != 0 {
		t.Fatalf("throttled %d ms with no quota left", ms)
	}
}

// TestConnectionCreationRateDelaysClosingNewConnections sets
// connection_creation_rate for 127.0.0.1 through kadm: past the quota a new
// connection is never answered and is closed after the throttle time,
// connections from another address (127.0.0.2, where the loopback allows
// it) are served, and removing the quota serves everyone again.
func TestConnectionCreationRateDelaysClosingNewConnections(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	// Two windows: the rate is over at least one second, so one
	// connection a second is the quota however slowly the test dials.
	b := startBroker(t, Config{QuotaWindowNum: 2})
	adm, _ := newAdmin(t, b.Addr())
	ip := strp("ip")
	alterQuotas(t, ctx, adm, kadm.AlterClientQuotaEntry{
		Entity: quotaEnt(ip, strp("127.0.0.1")),
		Ops:    []kadm.AlterClientQuotaOp{{Key: "connection_creation_rate", Value: 1}},
	})

	// served dials from local (nil: any) and reports whether an
	// ApiVersions request is answered, or how long the broker took to
	// close the connection instead.
	served := func(local net.Addr) (bool, time.Duration) {
		d := net.Dialer{LocalAddr: local, Timeout: 10 * time.Second}
		nc, err := d.DialContext(ctx, "tcp", b.Addr())
		if err != nil {
			t.Fatal(err)
		}
		defer nc.Close()
		start := time.Now()
		nc.SetDeadline(time.Now().Add(20 * time.Second))
		if _, err := nc.Write(encodeRequest(kmsg.NewPtrApiVersionsRequest(), 1)); err != nil {
			t.Fatal(err)
		}
		var size [4]byte
		_, err = io.ReadFull(nc, size[:])
		if err == nil {
			return true, 0
		}
		if !errors.Is(err, io.EOF) && !errors.Is(err, syscall.ECONNRESET) {
			t.Fatalf("reading the answer: %v", err)
		}
		return false, time.Since(start)
	}

	refused := 0
	for range 10 {
		ok, after := served(nil)
		if !ok {
			refused++
			if after > 5*time.Second {
				t.Errorf("a throttled connection was closed after %v, more than one window", after)
			}
			break
		}
	}
	if refused == 0 {
		t.Fatal("ten connections at once were all served under a quota of one a second")
	}

	other := &net.TCPAddr{IP: net.ParseIP("127.0.0.2")}
	if l, err := net.ListenTCP("tcp", &net.TCPAddr{IP: other.IP}); err == nil {
		l.Close()
		for i := range 5 {
			if ok, _ := served(other); !ok {
				t.Fatalf("connection %d from 127.0.0.2, which has no quota, was refused", i)
			}
		}
	} else {
		t.Logf("127.0.0.2 is not usable here (%v): skipping the other-address check", err)
	}

	alterQuotas(t, ctx, adm, kadm.AlterClientQuotaEntry{
		Entity: quotaEnt(ip, strp("127.0.0.1")),
		Ops:    []kadm.AlterClientQuotaOp{{Key: "connection_creation_rate", Remove: true}},
	})
	for i := range 10 {
		if ok, _ := served(nil); !ok {
			t.Fatalf("connection %d refused after the quota was removed", i)
		}
	}
}
