package broker

// InitProducerId (key 22), v0-v5, the range Kafka 4 serves.
//
// Behavior:
//   - without a transactional id: a fresh producer id at epoch 0, whatever
//     id and epoch the request names (the client bumps its own epoch);
//     one of ProducerId and ProducerEpoch -1 and not the other is
//     INVALID_REQUEST first;
//   - producer ids are reserved in blocks of 1000 whose end is saved in
//     gregor-topics.json before the first id is handed out, so no id is
//     handed out twice in a data directory's life; a failed save is
//     COORDINATOR_LOAD_IN_PROGRESS;
//   - with a transactional id, the transaction coordinator answers
//     (txns.go): an empty id is INVALID_REQUEST, a timeout outside
//     (0, transaction.max.timeout.ms] INVALID_TRANSACTION_TIMEOUT; a known
//     id's epoch is bumped, fencing its previous producer, after its open
//     transaction is aborted (CONCURRENT_TRANSACTIONS until then); an
//     exhausted epoch gets a new id; the answer waits for
//     __transaction_state;
//   - on a cluster, a broker not leading the id's partition answers
//     NOT_COORDINATOR, after the id and timeout checks.
//
// Version notes:
//   - v2 is flexible; v3 adds ProducerId and ProducerEpoch (KIP-360): a
//     retry of the last bump gets the same epoch, another producer's id is
//     PRODUCER_FENCED;
//   - below v4 PRODUCER_FENCED is INVALID_PRODUCER_EPOCH; v5 allows
//     TRANSACTION_ABORTABLE, which this coordinator never returns here.
//
// docs/apis.md#initproducerid has the details and where they match Kafka.

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
		code, err := b.txns.call(r, func(c *txn.Coordinator, now int64, in txn.Inputs) {
			res = c.InitProducerID(now, *id, req.TransactionTimeoutMillis, req.ProducerID, req.ProducerEpoch, in)
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
