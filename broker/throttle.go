package broker

// The glue between requests and the client quotas of package quota:
// Produce and Fetch are measured against producer_byte_rate and
// consumer_byte_rate, and accepted connections against
// connection_creation_rate.
//
// The user of a quota entity is the connection's principal name, as in
// Kafka's ClientQuotaManager: the SASL user, an SSL client certificate's
// mapped subject, or "ANONYMOUS" on a connection that did not
// authenticate.
//
// Enforcement, KIP-219: the handler answers at once with throttle_time_ms
// and mutes its connection for that long (conn.mute): nothing more is read
// from it or handled until the time has passed. A connection over its
// address's rate is held, unread, and closed once the throttle time has
// passed.

import (
	"context"
	"math/bits"
	"net"
	"net/netip"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// refreshQuotas puts the stored quotas in force. It resolves host names
// of IP entities, so it is called holding no lock of the broker's.
func (b *Broker) refreshQuotas(ctx context.Context) {
	b.quotas.Refresh(ctx, b.storedQuotas)
}

// clientIDOf is the request's client id, "" when null.
func clientIDOf(r *request) string {
	if r.hdr.ClientID == nil {
		return ""
	}
	return *r.hdr.ClientID
}

// quotaUser is the user r's quotas resolve by: its principal's name.
func quotaUser(r *request) string { return r.principal().Name }

// throttleProduce records a produce request's size against the client's
// producer_byte_rate, as Kafka's handleProduceRequest does once the appends
// are done, whatever their outcome, and mutes the connection when the
// client is over its quota. It returns the throttle time in ms.
func (b *Broker) throttleProduce(r *request) int32 {
	q := b.quotas.Produce
	if !q.Enabled() {
		return 0
	}
	ms := q.Record(quotaUser(r), clientIDOf(r), float64(r.size), time.Now().UnixMilli())
	if ms > 0 {
		r.conn.mute(ms)
		b.quotas.ProduceMs.Add(float64(ms))
	}
	return ms
}

// capFetch lowers a fetch's max bytes to what the client's
// consumer_byte_rate lets it take in one go, and its min bytes with it, as
// Kafka's handleFetchRequest does before reading.
func (b *Broker) capFetch(r *request, req *kmsg.FetchRequest) {
	q := b.quotas.Fetch
	if !q.Enabled() {
		return
	}
	// Kafka's cap may be 0 (quota.window.num 1), which still returns the
	// first batch; a budget of 1 byte does here, where 0 means no limit.
	limit := max(q.MaxValueInWindow(quotaUser(r), clientIDOf(r)), 1)
	if req.MaxBytes <= 0 || req.MaxBytes > limit { // 0 is no limit to readFetch
		req.MaxBytes = limit
	}
	req.MinBytes = min(req.MinBytes, req.MaxBytes)
}

// throttleFetch records a fetch response's size against the client's
// consumer_byte_rate. Over the quota, the size is taken back, the
// connection muted, and the answer replaced by Kafka's throttled one: no
// error, no session, no partitions, the throttle time (FetchContext
// .getThrottledResponse). It returns the response to send.
func (b *Broker) throttleFetch(r *request, resp kmsg.Response) kmsg.Response {
	q := b.quotas.Fetch
	if !q.Enabled() {
		return resp
	}
	var fr *kmsg.FetchResponse
	var reply *fetchReply
	switch v := resp.(type) {
	case *fetchReply:
		reply, fr = v, v.FetchResponse
	case *kmsg.FetchResponse:
		fr = v
	default:
		return resp
	}
	size := float64(fetchResponseSize(r, fr, reply))
	user, client, now := quotaUser(r), clientIDOf(r), time.Now().UnixMilli()
	ms := q.Record(user, client, size, now)
	if ms <= 0 {
		return resp
	}
	q.Unrecord(user, client, size, now)
	r.conn.mute(ms)
	b.quotas.FetchMs.Add(float64(ms))
	if reply != nil {
		reply.release()
	}
	fr.ThrottleMillis, fr.ErrorCode, fr.SessionID = ms, 0, 0
	fr.Topics = fr.Topics[:0]
	return resp
}

// fetchResponseSize is the size Kafka counts for a fetch response
// (FetchResponse.sizeOf): 4 bytes for the header and the body with its
// records, which reply holds apart from the encoding.
func fetchResponseSize(r *request, fr *kmsg.FetchResponse, reply *fetchReply) int {
	r.conn.out = fr.AppendTo(r.conn.out[:0])
	n := 4 + len(r.conn.out)
	if reply == nil {
		return n
	}
	flexible := fr.Version >= 12
	for i := range reply.records {
		if m := reply.records[i].Len(); m > 0 {
			// The encoding holds an empty records field in its place.
			n += int(m)
			if flexible {
				n += uvarintLen(uint64(m)+1) - 1
			}
		}
	}
	return n
}

func uvarintLen(v uint64) int { return (bits.Len64(v|1) + 6) / 7 }

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
	ms := b.quotas.Connections.Record(remoteAddr(nc), time.Now().UnixMilli())
	if ms <= 0 {
		return false
	}
	b.log.Debug("delaying the close of a connection over its IP's connection_creation_rate",
		"remote", nc.RemoteAddr().String(), "throttle_ms", ms)
	b.quotas.ConnectionMs.Add(float64(ms))
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
