// Package share is Gregor's share coordinator (KIP-932): the durable state
// of every share-partition - a share group's progress through one
// partition: its start offset, the state batches of the offsets in flight
// (available, acknowledged or archived, with their delivery counts), and
// the leader and state epochs that fence stale writers - kept in
// __share_group_state, after Kafka 4.4.0's ShareCoordinatorShard.
//
// It serves Kafka's persister RPCs, which a share-partition leader sends
// to the share coordinator: InitializeShareGroupState (83),
// ReadShareGroupState (84), WriteShareGroupState (85),
// DeleteShareGroupState (86) and ReadShareGroupStateSummary (87), taking
// kmsg's request structs and answering kmsg's responses with Kafka's
// checks, error codes and messages (the ShareCoordinatorService's as well
// as the shard's). A write's state batches are combined with those so far
// as Kafka's PersisterStateBatchCombiner does (Combine): overlapping
// batches resolved by delivery count, then state, and adjacent equal ones
// coalesced.
//
// It is a deterministic state machine without I/O, like coordinator/txn:
// the driver calls one method at a time with the current time, each
// returning its answer at once, and then collects the records to append
// with Ready; it must append them before it sends the answers, and if an
// append fails it discards the coordinator and rebuilds it from the log
// (Load), since a call applies its records at once (as Kafka's runtime
// replays a write operation's records before it appends them). Under
// coordinator/runtime the broker wraps it in a State as it wraps
// coordinator/txn: Replay parses the batches and calls Load for each
// record, Ready hands out the records with the answers, and Abort has
// nothing to answer (no request is ever parked). What a call needs of the
// world outside comes with it (Inputs): which share-partitions are served
// here (the runtime's Serving for the key's __share_group_state partition,
// PartitionFor), and the topic image.
//
// Records use Kafka's schemas, written byte for byte as Kafka writes them:
// ShareSnapshotKey and ShareUpdateKey (record types 0 and 1), ShareSnapshotValue
// and ShareUpdateValue v0 with DeliveryCompleteCount as tagged field 0
// (KIP-1226). A ShareSnapshot is the whole state; a ShareUpdate carries a
// write's batches, merged on replay; every
// share.coordinator.snapshot.update.records.per.snapshot updates (500) a
// write snapshots instead, and SnapshotColdPartitions snapshots the
// share-partitions not written for a while, so that Kafka can prune the
// log below the oldest snapshot still needed.
//
// Imports: kmsg and kerr from franz-go for the RPC structs and error
// codes; nothing of this project.
package share
