package broker

// Enforcing connection_creation_rate, the IP quota, as Kafka's
// ConnectionQuotas.recordIpConnectionMaybeThrottle does.
//
// An accepted connection from an address with a quota (its own IP entity,
// else the default IP entity) is recorded in the address's rate, over the
// same windows as the client quotas. When that takes the rate over the
// quota, the connection is taken back out of the rate and not served: it is
// held open, unread, for the throttle time, bounded by one window, and then
// closed, as Kafka's acceptor delays closing it. Connections already open
// are never affected.

import (
	"context"
	"math"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"
)

// connectionCreationRate is the IP quota key (QuotaConfig).
const connectionCreationRate = "connection_creation_rate"

// ipLimits are the connection rate quotas by address, and the default.
type ipLimits struct {
	byIP   map[netip.Addr]float64
	def    float64
	hasDef bool
}

// connectionRateQuota enforces connection_creation_rate.
type connectionRateQuota struct {
	cfg    rateConfig
	limits atomic.Pointer[ipLimits] // nil when no IP entity has a quota

	mu        sync.Mutex // a leaf lock
	sensors   map[netip.Addr]*quotaSensor
	lastSweep int64 // ms
}

func newConnectionRateQuota(cfg rateConfig) *connectionRateQuota {
	return &connectionRateQuota{cfg: cfg, sensors: map[netip.Addr]*quotaSensor{}}
}

// update takes the quota values of all entities, after a change. A named
// entity is an address or a host name, resolved here as Kafka resolves it
// (InetAddress.getByName): to its first address.
func (q *connectionRateQuota) update(ctx context.Context, quotas map[quotaEntity]map[string]float64) {
	l := &ipLimits{byIP: map[netip.Addr]float64{}}
	for e, values := range quotas {
		v, ok := values[connectionCreationRate]
		if !ok || !e.ip.present {
			continue
		}
		if e.ip.isDefault {
			l.def, l.hasDef = v, true
			continue
		}
		if addr, ok := resolveIP(ctx, e.ip.name); ok {
			l.byIP[addr] = v
		}
	}
	if len(l.byIP) == 0 && !l.hasDef {
		q.limits.Store(nil)
		return
	}
	q.limits.Store(l)
}

// resolveIP returns the address name is or resolves to.
func resolveIP(ctx context.Context, name string) (netip.Addr, bool) {
	if addr, err := netip.ParseAddr(name); err == nil {
		return addr.Unmap(), true
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	addrs, err := net.DefaultResolver.LookupNetIP(ctx, "ip", name)
	if err != nil || len(addrs) == 0 {
		return netip.Addr{}, false
	}
	return addrs[0].Unmap(), true
}

// record counts a new connection from addr at now (ms) and returns how long
// to hold it before closing it, 0 when it may be served.
func (q *connectionRateQuota) record(addr netip.Addr, now int64) int32 {
	l := q.limits.Load()
	if l == nil {
		return 0
	}
	limit, ok := l.byIP[addr]
	if !ok {
		limit, ok = l.def, l.hasDef
	}
	if !ok {
		return 0
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if now-q.lastSweep >= sensorExpiry.Milliseconds()/60 {
		q.lastSweep = now
		for a, s := range q.sensors {
			if now-s.lastRecord >= sensorExpiry.Milliseconds() {
				delete(q.sensors, a)
			}
		}
	}
	s := q.sensors[addr]
	if s == nil {
		s = &quotaSensor{}
		q.sensors[addr] = s
	}
	s.lastRecord = now
	s.rate.record(q.cfg, 1, now)
	observed := s.rate.measure(q.cfg, now)
	if observed <= limit {
		return 0
	}
	// Bounded by one window (QuotaUtils.boundedThrottleTime), and the
	// connection taken back out: it is not accepted.
	ms := math.Round((observed - limit) / limit * float64(s.rate.windowSize(q.cfg, now)))
	s.rate.record(q.cfg, -1, now)
	return int32(min(ms, float64(q.cfg.windowMs)))
}

// remoteAddr is the address a connection comes from.
func remoteAddr(nc net.Conn) netip.Addr {
	if a, ok := nc.RemoteAddr().(*net.TCPAddr); ok {
		return a.AddrPort().Addr().Unmap()
	}
	return netip.Addr{}
}

// throttleConnection reports whether nc is over its address's connection
// rate quota; if so it holds nc, unread, and closes it once the throttle
// time has passed or the broker closes.
func (b *Broker) throttleConnection(nc net.Conn) bool {
	ms := b.quotas.connections.record(remoteAddr(nc), time.Now().UnixMilli())
	if ms <= 0 {
		return false
	}
	b.log.Debug("delaying the close of a connection over its IP's connection_creation_rate",
		"remote", nc.RemoteAddr().String(), "throttle_ms", ms)
	b.quotas.connectionMs.Add(float64(ms))
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		t := time.NewTimer(time.Duration(ms) * time.Millisecond)
		defer t.Stop()
		select {
		case <-t.C:
		case <-b.ctx.Done():
		}
		nc.Close()
	}()
	return true
}
