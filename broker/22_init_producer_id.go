package broker

// InitProducerId (key 22), v0-v5, the range Kafka 4 serves. v2: flexible.
// v3 adds ProducerId and ProducerEpoch (KIP-360); v4 allows PRODUCER_FENCED
// and v5 TRANSACTION_ABORTABLE (which this coordinator never returns here).
//
// Idempotent (non-transactional) producers get a fresh producer id with
// epoch 0, whatever ProducerId and ProducerEpoch they send: Kafka's
// TransactionCoordinator.handleInitProducerId "blindly accepts" a request
// without a transactional id, so the KIP-360 epoch bump of an idempotent
// producer happens in the client (which bumps its epoch itself and asks for
// a new id only when the epoch is exhausted). As in KafkaApis, a request
// naming a producer id without an epoch, or an epoch without an id (one of
// them -1, the other not), is INVALID_REQUEST first. TransactionTimeoutMs
// is not looked at without a transactional id, as in Kafka.
//
// Producer ids are unique for the life of the data directory: they are
// reserved in blocks of 1000 (Kafka's ProducerIdsBlock.PRODUCER_ID_BLOCK_SIZE)
// whose end is written to gregor-topics.json before an id of the block is
// handed out. A restart, clean or not, continues after the last reserved
// block, skipping what was left of it, as Kafka does. If the catalogue
// cannot be written the answer is COORDINATOR_LOAD_IN_PROGRESS (retriable),
// what Kafka's broker answers while it waits for a new block.
//
// A transactional producer (a non-null TransactionalId) is served by the
// transaction coordinator (txns.go, coordinator/txn): an empty id is
// INVALID_REQUEST, a timeout not in (0, transaction.max.timeout.ms]
// INVALID_TRANSACTION_TIMEOUT; a new id gets a new producer id with epoch
// 0, a known one its epoch bumped, which fences the previous producer of
// the id; a transaction it left ongoing is aborted first, and the answer
// is CONCURRENT_TRANSACTIONS until the abort is complete. KIP-360 (v3+):
// ProducerId and ProducerEpoch name the producer that asks; another
// producer's id is PRODUCER_FENCED, and a retry of the last bump gets the
// same epoch again. An exhausted epoch gets a new producer id. The answer
// is given once the new state is in __transaction_state. PRODUCER_FENCED
// is INVALID_PRODUCER_EPOCH below v4, as in KafkaApis. In cluster mode a
// broker that does not lead the id's partition of __transaction_state
// answers NOT_COORDINATOR (after the id and timeout checks, as Kafka).

import (
	"errors"
	"math"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-broker/gregor/coordinator/txn"
)

func init() { register(22, 0, 5, handleInitProducerID) }

const (
	// producerIDBlockSize is how many producer ids one catalogue write
	// reserves.
	producerIDBlockSize = 1000
)

var errProducerIDsExhausted = errors.New("broker: every producer id has been handed out")

func handleInitProducerID(b *Broker, r *request, req *kmsg.InitProducerIDRequest) (kmsg.Response, error) {
	resp := newResponse[*kmsg.InitProducerIDResponse](req)
	fail := func(e *kerr.Error) (kmsg.Response, error) {
		resp.ErrorCode, resp.ProducerID, resp.ProducerEpoch = e.Code, -1, -1
		return resp, nil
	}
	if (req.ProducerID == -1) != (req.ProducerEpoch == -1) {
		return fail(kerr.InvalidRequest)
	}
	if id := req.TransactionalID; id != nil {
		var res txn.InitResult
		code, err := b.txns.call(r, func(c *txn.Coordinator, now int64) {
			res = c.InitProducerID(now, *id, req.TransactionTimeoutMillis, req.ProducerID, req.ProducerEpoch)
		})
		if err != nil {
			return nil, err
		}
		if code != 0 {
			res = txn.InitResult{ErrorCode: code, ProducerID: -1, ProducerEpoch: -1}
		}
		if res.ErrorCode == kerr.ProducerFenced.Code && req.Version < 4 {
			res.ErrorCode = kerr.InvalidProducerEpoch.Code
		}
		resp.ErrorCode, resp.ProducerID, resp.ProducerEpoch = res.ErrorCode, res.ProducerID, res.ProducerEpoch
		return resp, nil
	}
	pid, err := b.allocateProducerID()
	switch {
	case errors.Is(err, errProducerIDsExhausted):
		b.log.Error("cannot allocate a producer id", "err", err)
		return fail(kerr.UnknownServerError)
	case err != nil:
		b.log.Error("cannot reserve producer ids", "err", err)
		return fail(kerr.CoordinatorLoadInProgress)
	}
	resp.ProducerID, resp.ProducerEpoch = pid, 0
	return resp, nil
}

// allocateProducerID returns a producer id never handed out before from
// this data directory.
func (b *Broker) allocateProducerID() (int64, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.isCluster() {
		// Each node hands out its own range until producer id blocks come
		// from the controller (cluster.go).
		lo, hi := b.cluster.producerIDRange()
		if b.catalog.nextProducerID < lo {
			b.catalog.nextProducerID, b.catalog.producerIDBlockEnd = lo, lo
		}
		if b.catalog.nextProducerID >= hi {
			return -1, errProducerIDsExhausted
		}
	}
	return b.catalog.allocateProducerID()
}

// allocateProducerID takes the next producer id, first reserving a new
// block durably if the current one is used up. Broker.mu must be held for
// writing.
func (c *catalog) allocateProducerID() (int64, error) {
	if c.nextProducerID >= c.producerIDBlockEnd {
		if c.nextProducerID > math.MaxInt64-producerIDBlockSize {
			return -1, errProducerIDsExhausted
		}
		end := c.producerIDBlockEnd
		c.producerIDBlockEnd = c.nextProducerID + producerIDBlockSize
		if err := c.save(); err != nil {
			c.producerIDBlockEnd = end
			return -1, err
		}
	}
	id := c.nextProducerID
	c.nextProducerID++
	return id, nil
}
