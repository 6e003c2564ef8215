// Package partition is one partition of a Gregor broker: Kafka's Partition
// with its producer state. A Partition owns the partition's log
// (storage.Log) and what must change in step with it:
//
//   - appends: Append takes a batch with the header its caller parsed
//     (a produced batch's, from batch.Validate; AppendBuilt parses that of
//     a batch the broker built), checks it against the producer state
//     (duplicates, producer epochs, sequences, and the guard of a
//     transaction verification) and stamps the leader epoch, as one step
//     with the log's append, which takes the batch's shape from the same
//     header (storage.Log.AppendValidated); WriteTxnMarker appends a
//     transaction marker and completes the producer's transaction
//     (txn_markers.go);
//   - the producer state and its snapshots (producer_state.go), rebuilt
//     when the partition opens (LoadProducers) and after a truncation;
//   - the leader epoch, stamped under appendMu on every batch it appends
//     as leader; the high watermark; the last stable offset;
//   - in cluster mode, the role the metadata image gives this broker
//     (BecomeLeader, BecomeFollower, BecomeNone), the leader's view of its
//     followers and the ISR changes it asks for (replica.go), and a
//     follower's appends of the leader's batches and its truncations
//     (follower.go);
//   - the fetches and acks=all produces waiting on the partition (Watch,
//     Unwatch, Wake).
//
// It does not see requests, topics and their configs, the metadata image
// as a whole, the coordinators, or the network: the broker package handles
// them and passes what a call needs as arguments (the image's State of the
// partition, an eligible func telling which brokers may join an ISR, the
// time), and it sends the AlterPartition an ISRChange describes.
//
// Imports: storage and protocol/batch of this project, and franz-go's kerr
// and kmsg; never broker.
//
// Lock order on a Partition: appendMu (an append with its producer-state
// check, a marker, a verification guard, a role change, a truncation)
// before replicaState.mu (the replication state: role, ISR, followers)
// before storage.Log's own locks. mu (the waiters) is a leaf: nothing is
// taken while it is held, and replicaState.mu is released before waiters
// are woken. No lock is taken while holding a later one. The leader epoch,
// the high watermark, the last stable offset and the image's State are
// atomics, read without a lock. A caller holds none of these across a
// call: methods take and release them, and a flush (storage.Log's
// FlushAfterAppend) is waited for outside them, so that appends from
// other connections join the same fsync.
package partition
