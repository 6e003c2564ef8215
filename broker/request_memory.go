package broker

// What a broker spends on requests it has read and not yet answered, and
// how a connection waits when that is too much: Kafka's memory pool
// (queued.max.request.bytes), which mutes a connection whose next request
// does not fit, and a bound per connection, since Gregor reads ahead on a
// connection where Kafka reads one request at a time.

import (
	"context"
	"sync"
)

// maxQueuedBytesPerConn bounds the bytes of the requests one connection has
// read and not yet answered. A request is always read when none is
// pending, so a request of up to socket.request.max.bytes still goes
// through, alone, as in Kafka.
const maxQueuedBytesPerConn = 16 << 20

// requestMemory is the broker's pool of request bytes. Like Kafka's
// non-strict pool, a reservation succeeds while anything is left, so one
// request larger than what remains (or than the whole pool) still fits once
// the pool is not exhausted. As in Kafka a frame reserves the size it
// claims before its bytes arrive, which is why the pool is unbounded unless
// queued.max.request.bytes is set: a bounded pool lets a few peers that
// claim large frames and send nothing stop every connection's reads.
type requestMemory struct {
	limit int64 // <= 0: no bound

	mu   sync.Mutex // a leaf lock
	used int64
	// freed is closed, and replaced, when a release makes room for the
	// readers waiting on it.
	freed chan struct{}
}

func newRequestMemory(limit int64) *requestMemory {
	return &requestMemory{limit: limit, freed: make(chan struct{})}
}

// reserve takes n bytes from the pool, waiting while it is exhausted; false
// when ctx ends first.
func (m *requestMemory) reserve(ctx context.Context, n int64) bool {
	for {
		m.mu.Lock()
		if m.limit <= 0 || m.used < m.limit {
			m.used += n
			m.mu.Unlock()
			return true
		}
		freed := m.freed
		m.mu.Unlock()
		select {
		case <-freed:
		case <-ctx.Done():
			return false
		}
	}
}

// release gives back n bytes reserved earlier.
func (m *requestMemory) release(n int64) {
	if n == 0 {
		return
	}
	m.mu.Lock()
	wasExhausted := m.limit > 0 && m.used >= m.limit
	m.used -= n
	if wasExhausted && m.used < m.limit {
		close(m.freed)
		m.freed = make(chan struct{})
	}
	m.mu.Unlock()
}

// inUse is the bytes reserved now.
func (m *requestMemory) inUse() int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.used
}

// reserveFrame waits until the connection may read a frame of size bytes:
// until its own pending requests leave room for it (or none is pending),
// and the broker's pool has room. It returns the bytes reserved, which
// releaseFrame gives back once the request is answered or dropped, and
// false when the connection or the broker closes first.
func (c *conn) reserveFrame(ctx context.Context, size int64) (int64, bool) {
	for {
		pending := c.pendingBytes.Load()
		if pending == 0 || pending+size <= maxQueuedBytesPerConn {
			break
		}
		select {
		case <-c.answered:
		case <-ctx.Done():
			return 0, false
		}
	}
	if !c.b.requestMemory.reserve(ctx, size) {
		return 0, false
	}
	c.pendingBytes.Add(size)
	return size, true
}

// releaseFrame gives back what reserveFrame took for a request now answered
// or dropped, and wakes the reader if it waits for room.
func (c *conn) releaseFrame(n int64) {
	if n == 0 {
		return
	}
	c.pendingBytes.Add(-n)
	c.b.requestMemory.release(n)
	select {
	case c.answered <- struct{}{}:
	default:
	}
}
