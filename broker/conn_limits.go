package broker

// The limits on connections Kafka's SocketServer applies: max.connections
// (the acceptor waits for a slot), max.connections.per.ip with its
// overrides (a connection over its address's limit is closed at once,
// ConnectionQuotas.inc), connections.max.idle.ms (a connection with
// nothing in flight and no traffic for that long is closed, as the
// Selector's idle expiry does), and an accept loop that backs off when the
// process is out of descriptors instead of spinning.

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// connLimits counts the open client connections, in total and per address.
type connLimits struct {
	max       int64 // max.connections
	maxPerIP  int64 // max.connections.per.ip
	overrides map[netip.Addr]int64

	mu      sync.Mutex // a leaf lock
	total   int64
	perAddr map[netip.Addr]int64
	// closed is closed, and replaced, when a connection closes while the
	// acceptor waits for a slot.
	closed chan struct{}
}

func newConnLimits(max, maxPerIP int64, overrides map[netip.Addr]int64) *connLimits {
	return &connLimits{max: max, maxPerIP: maxPerIP, overrides: overrides,
		perAddr: map[netip.Addr]int64{}, closed: make(chan struct{})}
}

// awaitSlot waits until fewer than max.connections are open; false when
// ctx ends first. Connections meanwhile wait in the listen backlog.
func (l *connLimits) awaitSlot(ctx context.Context) bool {
	for {
		l.mu.Lock()
		if l.total < l.max {
			l.mu.Unlock()
			return true
		}
		closed := l.closed
		l.mu.Unlock()
		select {
		case <-closed:
		case <-ctx.Done():
			return false
		}
	}
}

// admit counts a new connection from addr, unless addr already has its
// maximum, in which case it returns that maximum and false.
func (l *connLimits) admit(addr netip.Addr) (int64, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	limit, ok := l.overrides[addr]
	if !ok {
		limit = l.maxPerIP
	}
	if l.perAddr[addr] >= limit {
		return limit, false
	}
	l.perAddr[addr]++
	l.total++
	return limit, true
}

// release uncounts a connection from addr that has closed.
func (l *connLimits) release(addr netip.Addr) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.perAddr[addr]--; l.perAddr[addr] <= 0 {
		delete(l.perAddr, addr)
	}
	l.total--
	close(l.closed)
	l.closed = make(chan struct{})
}

// parseConnectionOverrides reads max.connections.per.ip.overrides, Kafka's
// "host:count,host:count" map, resolving each host as Kafka's
// InetAddress.getByName does; the errors are KafkaConfig's.
func parseConnectionOverrides(v string) (map[netip.Addr]int64, error) {
	out := map[netip.Addr]int64{}
	if strings.TrimSpace(v) == "" {
		return out, nil
	}
	var invalid []string
	for _, entry := range strings.Split(v, ",") {
		entry = strings.TrimSpace(entry)
		i := strings.LastIndex(entry, ":")
		if i <= 0 {
			return nil, fmt.Errorf("Invalid value %s for configuration max.connections.per.ip.overrides: Map entry '%s' is not of the form 'key:value'", v, entry)
		}
		host, count := strings.TrimSpace(entry[:i]), strings.TrimSpace(entry[i+1:])
		n, err := strconv.ParseInt(count, 10, 32)
		if err != nil {
			return nil, fmt.Errorf("For input string: \"%s\"", count)
		}
		addrs, err := resolveHost(host)
		if err != nil {
			invalid = append(invalid, host)
			continue
		}
		for _, a := range addrs {
			out[a] = n
		}
	}
	if len(invalid) > 0 {
		return nil, fmt.Errorf("max.connections.per.ip.overrides contains invalid addresses : %s", strings.Join(invalid, ","))
	}
	return out, nil
}

// resolveHost is an address literal, or the addresses a name resolves to.
func resolveHost(host string) ([]netip.Addr, error) {
	if a, err := netip.ParseAddr(strings.Trim(host, "[]")); err == nil {
		return []netip.Addr{a.Unmap()}, nil
	}
	ips, err := net.LookupIP(host)
	if err != nil || len(ips) == 0 {
		return nil, fmt.Errorf("unknown host %s", host)
	}
	var out []netip.Addr
	for _, ip := range ips {
		if a, ok := netip.AddrFromSlice(ip); ok {
			out = append(out, a.Unmap())
		}
	}
	return out, nil
}

// newBrokerConnLimits checks the connection limits of cfg as KafkaConfig
// does and builds them.
func newBrokerConnLimits(cfg *Config) (*connLimits, error) {
	overrides, err := parseConnectionOverrides(cfg.MaxConnectionsPerIPOverrides)
	if err != nil {
		return nil, fmt.Errorf("broker: %v", err)
	}
	if *cfg.MaxConnectionsPerIP == 0 && len(overrides) == 0 {
		return nil, errors.New("broker: max.connections.per.ip can be set to zero only if max.connections.per.ip.overrides property is set.")
	}
	return newConnLimits(*cfg.MaxConnections, *cfg.MaxConnectionsPerIP, overrides), nil
}

// acceptBackoff paces the accept loop after failures that retrying at once
// cannot mend (out of descriptors or buffers), and says so at most once an
// interval, with how many failed since.
type acceptBackoff struct {
	delay      time.Duration
	failures   int
	lastWarned time.Time
}

const (
	minAcceptBackoff  = 5 * time.Millisecond
	maxAcceptBackoff  = time.Second
	acceptWarnEvery   = 10 * time.Second
	defaultIdleMillis = 600000 // connections.max.idle.ms
)

// transient reports whether an accept error is one to wait out.
func transientAcceptError(err error) bool {
	var ne net.Error
	return errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE) || errors.Is(err, syscall.ENOBUFS) ||
		errors.Is(err, syscall.ENOMEM) || errors.As(err, &ne) && ne.Timeout()
}

// failed records a failure and returns how long to wait before the next
// accept, and whether to warn now (with the failures since the last
// warning).
func (a *acceptBackoff) failed(now time.Time) (time.Duration, bool, int) {
	a.delay = min(max(2*a.delay, minAcceptBackoff), maxAcceptBackoff)
	a.failures++
	if now.Sub(a.lastWarned) < acceptWarnEvery {
		return a.delay, false, 0
	}
	n := a.failures
	a.lastWarned, a.failures = now, 0
	return a.delay, true, n
}

// succeeded resets the delay after an accept.
func (a *acceptBackoff) succeeded() { a.delay = 0 }

// expireIdleConnections closes, every so often, the connections that have
// had nothing in flight and no traffic for connections.max.idle.ms, until
// the broker closes. A negative setting disables it, as in Kafka.
func (b *Broker) expireIdleConnections() {
	defer b.wg.Done()
	idle := time.Duration(*b.cfg.ConnectionsMaxIdleMs) * time.Millisecond
	if idle < 0 {
		return
	}
	every := min(max(idle/4, 10*time.Millisecond), 5*time.Second)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-t.C:
		case <-b.ctx.Done():
			return
		}
		cutoff := time.Now().Add(-idle).UnixNano()
		b.connMu.Lock()
		for c := range b.conns {
			if c.lastActive.Load() < cutoff && c.queued.Load() == 0 && c.pendingBytes.Load() == 0 {
				c.log.Debug("closing idle connection", "idle_ms", *b.cfg.ConnectionsMaxIdleMs)
				b.metrics.idleConnectionsClosed.Inc()
				c.abort()
			}
		}
		b.connMu.Unlock()
	}
}

// maxConnectionsDefault is Kafka's default for max.connections and
// max.connections.per.ip: no limit in practice.
const maxConnectionsDefault = math.MaxInt32
