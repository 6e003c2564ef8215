package main

// Requests a careless or hostile client sends, where Kafka closes the
// connection rather than answer: a failing acks=0 Produce (the producer
// reads no answers, so closing is how it learns).

import (
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
