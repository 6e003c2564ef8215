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

