package broker

import (
	"context"
	"errors"
	"io"
	"net"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestConnectionCreationRateDelaysClosingNewConnections sets
// connection_creation_rate for 127.0.0.1 through kadm: past the quota a new
// connection is never answered and is closed after the throttle time,
// connections from another address (127.0.0.2, where the loopback allows
// it) are served, and removing the quota serves everyone again.
func TestConnectionCreationRateDelaysClosingNewConnections(t *testing.T) {
	// Not parallel: it times connection closes against a rate, which tests
	// beside it would skew.
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
