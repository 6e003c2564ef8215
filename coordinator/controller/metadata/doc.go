// Package metadata is the cluster metadata of Gregor's controller quorum:
// the records the replicated log carries and the Image they build when
// applied in order.
//
// The records are modelled on Kafka's metadata records
// (metadata/src/main/resources/common/metadata in Kafka): RegisterBroker,
// UnregisterBroker, FenceBroker, UnfenceBroker, Topic, Partition, PartitionChange, Config,
// RemoveTopic and FeatureLevel, with Kafka's apiKeys as type numbers and Kafka's field
// meanings (a PartitionChangeRecord's nil ISR or Leader of -2 means
// unchanged; applying it bumps the partition epoch, and the leader epoch
// whenever a leader is given, as Kafka's PartitionRegistration.merge).
// ClusterRecord is ours: it names the cluster. ClientQuota (Kafka's
// ClientQuotaRecord, apiKey 14, client_quotas.go) sets or removes one key
// of a client quota entity; the image keeps the quotas by entity, and an
// entity without keys is gone, as Kafka's ClientQuotaControlManager.replay.
// UserScramCredential and RemoveUserScramCredential (apiKeys 11 and 22,
// scram.go) set and delete a user's SCRAM credential for one mechanism:
// the salt, stored key, server key and iterations, never a password.
// FeatureLevel records finalize Kafka's features (Image.Features; level 0
// unfinalizes); the levels Gregor supports and a new log starts with are
// in Features (features.go), with the reasoning behind metadata.version's.
// The encoding is our own. Every record kind starts at version 0; a newer
// version appends fields, and a record is written at the oldest version
// that holds what it carries. Partition and PartitionChange have version 1,
// which adds a reassignment's adding and removing replicas (Kafka's
// addingReplicas and removingReplicas); a record without a reassignment is
// still written, byte for byte, at version 0. The layout:
//
//	records  = count:uvarint record*
//	record   = length:uvarint type:uvarint version:uvarint fields
//
// integers as varints (signed ones zig-zag), strings, byte strings and arrays as a length
// and the items, nullable ones with length+1 (0 for null), UUIDs as 16
// bytes, float64s as their IEEE 754 bits in 8 bytes big-endian. DecodeRecords checks every length against the bytes that remain
// before allocating and refuses unknown types, versions and trailing bytes.
//
// A raft entry carries a Batch: the proposing controller's node id and a
// sequence number (so it can find its waiting caller when the entry is
// applied) and the records of one operation. A snapshot is the image's
// offset and Image.Records, which rebuild it.
//
// Applying is deterministic: the same records in the same order give the
// same image on every node, and a record that does not fit
// (ErrInconsistent) fails the same way everywhere.
//
// Imports: nothing of the project.
package metadata
