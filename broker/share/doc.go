// Package share is the in-flight state of one share group on one
// topic-partition (KIP-932), as Kafka 4.4's SharePartition keeps it: the
// share-partition start and end offsets, which offsets are acquired by
// which member and until when, their delivery counts, acknowledgements
// (ACCEPT, RELEASE, REJECT, RENEW and gaps), acquisition lock timeouts,
// the delivery count limit, the in-flight record limit, the acquire modes
// of KIP-1206, read_committed filtering of aborted transactions, and what
// is written to and loaded from the share coordinator.
//
// It is a pure state machine: the caller passes time, the batches a log
// read returned and their aborted transactions, and persists the Write
// each change returns before answering the consumer. Nothing here runs a
// goroutine or does I/O, and a Partition is driven by one goroutine.
//
// The broker owns everything around it: ShareFetch and ShareAcknowledge,
// share sessions, group membership, the share coordinator and its
// records, reading the log, and arming a timer for NextDeadline.
//
// Imports: nothing of this project; of others only franz-go's kerr, for
// the error codes of refusals.
package share
