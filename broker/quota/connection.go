package quota

// Enforcing connection_creation_rate, the IP quota, as Kafka's
// ConnectionQuotas.recordIpConnectionMaybeThrottle does.
//
// An accepted connection from an address with a quota (its own IP entity,
// else the default IP entity) is recorded in the address's rate, over the
// same windows as the client quotas. When that takes the rate over the
// quota, the connection is taken back out of the rate and not served: the
// broker holds it open, unread, for the throttle time, bounded by one
// window, and then closes it, as Kafka's acceptor delays closing it.
// Connections already open are never affected.

import (
	"context"
	"math"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"
)

// ConnectionCreationRate is the IP quota key (QuotaConfig).
const ConnectionCreationRate = "connection_creation_rate"

// ipLimits are the connection rate quotas by address, and the default.
type ipLimits struct {
	byIP   map[netip.Addr]float64
	def    float64
	hasDef bool
}

// ConnectionRate enforces connection_creation_rate.
type ConnectionRate struct {
	cfg    RateConfig
	limits atomic.Pointer[ipLimits] // nil when no IP entity has a quota

	mu      sync.Mutex // a leaf lock
	sensors sensorSet[netip.Addr]
}

// NewConnectionRate returns the connection rate quota measured over cfg's
// windows, with no address holding one yet.
func NewConnectionRate(cfg RateConfig) *ConnectionRate {
	return &ConnectionRate{cfg: cfg}
}

// Update takes the quota values of all entities, after a change. A named
// entity is an address or a host name, resolved here as Kafka resolves it
// (InetAddress.getByName): to its first address.
func (q *ConnectionRate) Update(ctx context.Context, quotas map[Entity]map[string]float64) {
	l := &ipLimits{byIP: map[netip.Addr]float64{}}
	for e, values := range quotas {
		v, ok := values[ConnectionCreationRate]
		if !ok || !e.IP.Present {
			continue
		}
		if e.IP.Default {
			l.def, l.hasDef = v, true
			continue
		}
		if addr, ok := resolveIP(ctx, e.IP.Name); ok {
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

// Record counts a new connection from addr at now (ms) and returns how long
// to hold it before closing it, 0 when it may be served.
func (q *ConnectionRate) Record(addr netip.Addr, now int64) int32 {
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
	s := q.sensors.get(addr, now)
	s.rate.record(q.cfg, 1, now)
	observed := s.rate.measure(q.cfg, now)
	if observed <= limit {
		return 0
	}
	// Bounded by one window (QuotaUtils.boundedThrottleTime), and the
	// connection taken back out: it is not accepted.
	ms := math.Round((observed - limit) / limit * float64(s.rate.windowSize(q.cfg, now)))
	s.rate.record(q.cfg, -1, now)
	return int32(min(ms, float64(q.cfg.WindowMs)))
}
