// Package group is Gregor's group coordinator for the classic consumer
// group protocol (JoinGroup, SyncGroup, Heartbeat, LeaveGroup), for KIP-848
// consumer groups (ConsumerGroupHeartbeat, ConsumerGroupDescribe; consumer.go,
// assignor.go), for KIP-932 share groups (ShareGroupHeartbeat,
// ShareGroupDescribe; share.go, share_assign.go with Kafka's SimpleAssignor,
// share_records.go; not yet driven by the broker) and for the committed
// offsets of every group, including transactional ones that wait for their
// transaction to end (TxnOffsetCommit; txn.go).
//
// It is a deterministic state machine without I/O, in the manner of etcd's
// raft: the driver (broker/groups.go) feeds it one event at a time — a
// request, a timer tick, a record replayed from __consumer_offsets — always
// with the current time as an argument, and then collects the effects with
// Ready: answers to requests (some of which were parked by earlier events,
// as a JoinGroup waits for the rebalance to complete) and records to append
// to __consumer_offsets. The driver must append the records before it sends
// the answers, so that an acknowledged commit is in the log. Nothing here
// reads a clock, starts a goroutine or takes a lock: a Coordinator is used
// by one goroutine.
//
// Records use Kafka's key and value schemas (OffsetCommitKey v1,
// OffsetCommitValue v3, GroupMetadataKey v2, GroupMetadataValue v3, the
// ConsumerGroup* records of consumer_records.go and the ShareGroup* records
// of share_records.go), so kafka-dump-log --offsets-decoder reads Gregor's
// __consumer_offsets.
//
// A share group's partitions become assignable only once the share
// coordinator initialized their state: the coordinator asks for it in
// Effects.ShareStateInits, and the driver reports success with
// InitializeShareGroupState.
//
// When the driver cannot write an event's records, it fails that event's
// answers and every parked request (Fail, AbortParked) and rebuilds the
// coordinator from the log (failure.go).
//
// Error codes are Kafka's (kerr) and each decision names the Kafka class
// and method it follows (GroupMetadataManager, ClassicGroup,
// OffsetMetadataManager in Kafka's group-coordinator module).
//
// Imports: kmsg and kerr from franz-go for record schemas and error codes;
// nothing of this project.
package group
