// Package raftnode is one member of Gregor's controller quorum, a voter or a
// learner (Kafka's observer, learners.go): the part of
// a Raft replica that go.etcd.io/raft/v3 leaves to the application. Raft
// itself (elections, log agreement, commitment) is etcd's; this package
// drives it and gives it a disk and a network.
//
// The Ready loop (node.go) follows the contract of etcd raft's README: a
// received snapshot, new entries and the hard state are written to the WAL
// and fsynced (when raft says MustSync) before any message of the same
// Ready is handed to the transport; then snapshots and committed entries
// are applied to the StateMachine in log order, conf changes are applied
// to raft, and Advance is called. Every SnapshotEntries applied entries the
// state machine is snapshotted and the log compacted.
//
// On disk, in Config.Dir (e.g. <data>/__cluster_metadata):
//
//	wal-<snapshot index, 20 digits>.log   the write-ahead log
//	snap-<index, 20 digits>.snap          the newest two snapshots
//
// A WAL file is a sequence of records:
//
//	+----------------+----------------+------+---------------------+
//	| length uint32  | CRC-32C uint32 | type | payload             |
//	| little endian  | of type+payload| byte | (length-1 bytes)    |
//	+----------------+----------------+------+---------------------+
//
// type 1 is a raftpb.Entry, 2 a raftpb.HardState, 3 the raftpb.SnapshotMetadata
// the file starts after (its first record once compacted); payloads are
// protobuf, as raftpb defines them. Recovery reads records in order: an
// entry at index i replaces every entry at i or later, as raft rewrites an
// uncommitted suffix. A record cut short at the end of the file, or a last
// record whose CRC fails, is a torn write and is cut off; a bad record with
// more bytes after it is ErrCorrupt and the node refuses to start.
// Compaction writes a whole new file (snapshot marker, hard state, kept
// entries) under a temporary name, fsyncs it, renames it into place,
// fsyncs the directory and only then removes the old file.
//
// A snapshot file is an 8-byte magic ("GRGRSNP" and version 1), the CRC-32C
// (uint32 LE) and length (uint64 LE) of the payload, and the payload: a
// marshalled raftpb.Snapshot, the state machine's bytes with the raft
// metadata (index, term, voters, learners). Format version 2 (the magic's
// last byte) prefixes the state machine's bytes in the snapshot's data with
// the learners' raft addresses (encodeSnapshotData), which raft's ConfState
// does not keep; version 1 files are read as naming no learner. It is
// written as a temporary file, fsynced, renamed and the directory fsynced.
//
// The transport (transport.go) listens on the node's voter address: after
// the hello (below), each raft message is a frame of a 4-byte big-endian length and a marshalled
// raftpb.Message, the length checked against MaxFrameBytes before anything
// is allocated. Each peer has one outbound queue of 1024 frames and one
// goroutine that dials it (with backoff from 50ms to 1s) and writes; a full
// queue or a failed write drops the message, and raft is told the peer is
// unreachable (and, for a snapshot, that it failed; a snapshot written whole
// is reported finished), so raft sends again. Messages are marshalled on
// the Ready goroutine, as raft requires.
//
// Every connection starts with a hello frame (hello.go; transport version
// 2, version 1 having had none), framed like the others (a 4-byte length,
// checked against the hello's 273-byte limit before anything is read):
//
//	+-----------+---------+----------------+-----------------+------------+
//	| "GRGRHLO" | version | sender raft id | cluster id len  | cluster id |
//	| 7 bytes   | uint8 2 | uint64 BE      | uint16 BE <=255 | UTF-8      |
//	+-----------+---------+----------------+-----------------+------------+
//
// The cluster id is empty until the node knows it (Config.ClusterID, or
// SetClusterID, which the controller calls when its applied image names
// the cluster); a sender that learns it gives up its connections on their
// next frame (dropped, raft told) and dials again, saying it. A receiver
// that knows its id refuses a connection whose hello (checked again at
// every message, as the receiver may learn its id later) names another
// cluster: it closes the connection unread, counts it, and logs at error
// once per peer and foreign id: Kafka's INCONSISTENT_CLUSTER_ID, so a
// node whose directory holds another cluster's log never mixes its terms
// and entries into this quorum. An empty id is let in (a new node). A
// missing hello or an unknown version closes the connection, logged.
//
// The voters are static (Kafka's controller.quorum.voters syntax,
// ParseVoters); a single voter needs no peers. Learners are added and
// removed at run time by the leader (AddLearner, RemoveLearner) with conf
// changes whose context is the learner's raft address; every member that
// applies one adds the learner to its transport's peers (the peer set is
// copy-on-write), and a snapshot is taken right after a learner is added,
// because etcd raft ignores a snapshot whose configuration does not hold
// the receiving node. A new learner starts with no configuration and
// waits for the leader's first message. Raft ids are Kafka node ids
// plus one, since raft reserves 0. The controller listener is trusted, as
// Kafka's is: etcd raft panics on messages that contradict its invariants,
// which only a broken or malicious peer sends.
//
// Imports: vfs (for the FS seam) and etcd raft; nothing else of the
// project.
package raftnode
