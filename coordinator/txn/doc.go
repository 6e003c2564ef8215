// Package txn is Gregor's transaction coordinator: the state of every
// transactional id (its producer id and epoch, its timeout, the partitions
// its ongoing transaction added, its state among Kafka's Empty, Ongoing,
// PrepareCommit, PrepareAbort, CompleteCommit, CompleteAbort,
// PrepareEpochFence and Dead) and the transitions InitProducerId,
// AddPartitionsToTxn, AddOffsetsToTxn, EndTxn and the timers make, as
// Kafka's TransactionCoordinator and TransactionMetadata decide them, for
// transactions V1 and V2 (KIP-890 part 2: the partition added by the
// produce itself, an epoch bump at every end), picked per request as Kafka
// picks them.
//
// It is a deterministic state machine without I/O, like coordinator/group:
// the driver (broker/txns.go) calls one method at a time with the current
// time, each returning its answer at once, and then collects the effects
// with Ready: records to append to __transaction_state and transaction
// markers to write. The driver must append the records before it sends the
// answer, so that an acknowledged transition is in the log, and must write
// the markers only after their records are appended (a PrepareCommit is
// durable before any commit marker exists). When it has written a
// transaction's markers it reports them with MarkersWritten, which makes
// the CompleteCommit or CompleteAbort transition and its record. If an
// append fails, the driver discards the coordinator and rebuilds it from
// the log (Load), since the in-memory transitions are applied at once.
//
// Differences from Kafka's structure, not its behaviour: Kafka keeps a
// transition pending until its append completes, so a concurrent request
// sees CONCURRENT_TRANSACTIONS; here one goroutine runs each event to the
// end of its append, so no other event ever sees a pending transition. A
// transaction whose markers are not all written stays in PrepareCommit or
// PrepareAbort, as in Kafka, and requests meanwhile get
// CONCURRENT_TRANSACTIONS. PrepareEpochFence, Kafka's pending state of a
// fence, is therefore never seen: a fence goes straight to PrepareAbort
// with the bumped epoch, as Kafka's does once its append completes; and
// Kafka's hasFailedEpochFence is not needed, since a failed append leaves
// no bumped epoch behind in memory.
//
// Records use Kafka's schemas (TransactionLogKey v0, TransactionLogValue
// v1 with its tagged fields), encoded by kmsg's TxnMetadataKey and
// TxnMetadataValue, so Kafka's tools read Gregor's __transaction_state.
//
// What a call needs of the world outside, besides its request and the
// time, comes with the call as an argument (Inputs), as coordinator/group
// is given its topic image: which transactional ids this coordinator
// serves (in cluster mode, the broker asks coordinator/runtime whether the
// id's __transaction_state partition is led here and loaded), and a
// producer id allocator, the one thing the coordinator cannot do itself,
// called only when a transition needs a new producer id. The coordinator
// keeps neither, so its tests give plain values: every id served, producer
// ids counting up.
//
// Imports: kmsg and kerr from franz-go; nothing of this project.
package txn
