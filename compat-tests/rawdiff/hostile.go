package main

// Requests a careless or hostile client sends, where Kafka closes the
// connection rather than answer: a failing acks=0 Produce (the producer
// reads no answers, so closing is how it learns), invalid isolation levels,
// and null or overflowing counts in non-nullable arrays.

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// sendOnly writes req on c without reading an answer.
func (c *conn) sendOnly(req kmsg.Request) error {
	if err := c.ensure(); err != nil {
		return err
	}
	c.corr++
	frame := header(req.Key(), req.GetVersion(), c.corr, req.IsFlexible())
	frame = req.AppendTo(frame)
	return c.writeFrame(frame)
}

// acksZeroThenListOffsets sends an acks=0 Produce, which gets no answer,
// and then on the same connection a ListOffsets of the topic's partition 0:
// its answer shows that the connection stayed open and what was appended,
// and a closed connection is the outcome where the produce failed.
func acksZeroThenListOffsets(req func(topic string) *kmsg.ProduceRequest) func(c *conn, topic string) (any, error) {
	return func(c *conn, topic string) (any, error) {
		if err := c.sendOnly(req(topic)); err != nil {
			return nil, err
		}
		return c.roundTrip(listOffsets(-1, "")(topic))
	}
}

func acksZero(partition int32, records func() []byte) func(string) *kmsg.ProduceRequest {
	return func(topic string) *kmsg.ProduceRequest { return produceReq(9, 0, topic, partition, records()) }
}

// transactionalBatch has the transactional attribute bit set (its CRC is
// not recomputed: Kafka refuses it before looking at the CRC).
func transactionalBatch() []byte {
	b := oneBatch()
	b[22] |= 0x10
	return b
}

var hostileEntries = []entry{
	{name: "Produce acks 0 valid, then ListOffsets", setup: setupTopic, raw: acksZeroThenListOffsets(acksZero(0, oneBatch))},
	{name: "Produce acks 0 unknown partition", setup: setupTopic, raw: acksZeroThenListOffsets(acksZero(5, oneBatch))},
	{name: "Produce acks 0 unknown topic", raw: acksZeroThenListOffsets(acksZero(0, oneBatch))},
	{name: "Produce acks 0 bad CRC", setup: setupTopic, raw: acksZeroThenListOffsets(acksZero(0, badCRC))},
	{name: "Produce acks 0 transactional batch without a transactional id", setup: setupTopic,
		raw: acksZeroThenListOffsets(acksZero(0, transactionalBatch))},
}

// fetchIsolation is a Fetch v12 of the topic's partition 0, or of no topic,
// at an isolation level of the client's choosing.
func fetchIsolation(level int8, withTopic bool) func(string) kmsg.Request {
	return func(topic string) kmsg.Request {
		req := fetchReq(topic, 0, 500, 0, -1)
		req.IsolationLevel = level
		if !withTopic {
			req.Topics = nil
		}
		return req
	}
}

func listOffsetsIsolation(level int8) func(string) kmsg.Request {
	return func(topic string) kmsg.Request {
		req := listOffsets(-1, "")(topic).(*kmsg.ListOffsetsRequest)
		req.IsolationLevel = level
		return req
	}
}

func init() {
	hostileEntries = append(hostileEntries,
		entry{name: "Fetch isolation level -5, no topics", req: fetchIsolation(-5, false)},
		entry{name: "Fetch isolation level 2", setup: setupTopic, req: fetchIsolation(2, true)},
		entry{name: "ListOffsets isolation level 7", setup: setupTopic, req: listOffsetsIsolation(7)},
	)
}

func fetchIsolationV(version int16, level int8, topic string) kmsg.Request {
	req := fetchIsolation(level, true)(topic).(*kmsg.FetchRequest)
	req.Version = version
	return req
}

func init() {
	hostileEntries = append(hostileEntries,
		entry{name: "Fetch isolation level 3, unknown topic", req: fetchIsolation(3, true)},
		entry{name: "Fetch v4 isolation level -1", setup: setupTopic, req: func(topic string) kmsg.Request { return fetchIsolationV(4, -1, topic) }},
		entry{name: "ListOffsets isolation level 2, unknown topic", req: listOffsetsIsolation(2)},
		// Kafka answers a fetch of nothing at once, whatever its max wait.
		entry{name: "Fetch no topics, max wait 16 days", raw: func(c *conn, topic string) (any, error) {
			req := fetchIsolation(0, false)(topic).(*kmsg.FetchRequest)
			req.MaxWaitMillis = 16 * 24 * 3600 * 1000
			return c.roundTrip(req)
		}},
	)
}

// nullArray sends req with the count of one of its non-nullable arrays,
// empty in req, replaced by a null count (0, the compact encoding of -1)
// or one whose count plus one overflows to 0 as Kafka reads varints
// (2^32); at gives the count's offset in the body. Kafka's parser refuses
// both and closes the connection. A ListOffsets on the same connection
// shows it open when it is.
func nullArray(req func(topic string) kmsg.Request, at func(body []byte) int, count ...byte) func(c *conn, topic string) (any, error) {
	return func(c *conn, topic string) (any, error) {
		if err := c.ensure(); err != nil {
			return nil, err
		}
		r := req(topic)
		body := r.AppendTo(nil)
		off := at(body)
		if body[off] != 1 {
			return nil, fmt.Errorf("byte %d of the %s body is %#x, not an empty array's count", off, kmsg.NameForKey(r.Key()), body[off])
		}
		patched := append(append(append([]byte(nil), body[:off]...), count...), body[off+1:]...)
		c.corr++
		frame := append(header(r.Key(), r.GetVersion(), c.corr, r.IsFlexible()), patched...)
		if _, err := c.roundTripRaw(frame, c.corr); err != nil {
			return nil, err
		}
		return c.roundTrip(listOffsets(-1, "")(topic))
	}
}

func emptyProduce(version int16) func(string) kmsg.Request {
	return func(string) kmsg.Request {
		req := kmsg.NewPtrProduceRequest()
		req.Version, req.Acks, req.TimeoutMillis = version, -1, 1000
		return req
	}
}

func emptyOffsetCommit(string) kmsg.Request {
	req := kmsg.NewPtrOffsetCommitRequest()
	req.Version, req.Group, req.Generation, req.MemberID = 10, "rawdiff-null", -1, ""
	return req
}

func emptyCreateTopics(string) kmsg.Request {
	req := kmsg.NewPtrCreateTopicsRequest()
	req.Version, req.TimeoutMillis = 7, 1000
	return req
}

var (
	nullCount     = []byte{0x00}
	overflowCount = []byte{0x80, 0x80, 0x80, 0x80, 0x10}  // 2^32: 0 as Kafka reads it
	afterNullTxn  = func([]byte) int { return 1 + 2 + 4 } // null transactional id, acks, timeout
	beforeTags    = func(body []byte) int { return len(body) - 2 }
	atStart       = func([]byte) int { return 0 }
)

func init() {
	hostileEntries = append(hostileEntries,
		entry{name: "Produce v13 topics null", setup: setupTopic, raw: nullArray(emptyProduce(13), afterNullTxn, nullCount...)},
		entry{name: "Produce v13 topics count overflowing", setup: setupTopic, raw: nullArray(emptyProduce(13), afterNullTxn, overflowCount...)},
		entry{name: "OffsetCommit v10 topics null", setup: setupTopic, raw: nullArray(emptyOffsetCommit, beforeTags, nullCount...)},
		entry{name: "CreateTopics v7 topics null", setup: setupTopic, raw: nullArray(emptyCreateTopics, atStart, nullCount...)},
		entry{name: "CreateTopics v7 topics count overflowing", setup: setupTopic, raw: nullArray(emptyCreateTopics, atStart, overflowCount...)},
	)
}
