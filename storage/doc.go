// Package storage is the on-disk partition log: record batches stored by
// offset in segment files with sparse offset and time indexes, written so
// that Apache Kafka's own kafka-dump-log tool can read them.
//
// storage imports nothing of the project but vfs, and not kmsg. It knows
// the 61-byte Kafka v2 record-batch header and nothing of records, requests
// or sockets; the broker validates batches before Append and finds records
// inside the batches it reads. A partition leader appends the one batch of
// a produce with AppendValidated, passing the BatchShape (last offset
// delta, max timestamp) its validation learned, so that storage parses no
// header of it; Append and AppendReplicated walk the headers of the
// batches they are given. All disk access goes through the
// file-system seam of package vfs (vfs.OSFS, vfs.MemFS, and vfs.FaultFS for
// fault injection).
//
// # On-disk layout
//
// One directory per partition (the broker names it <topic>-<partition>):
//
//	orders-0/
//	  00000000000000000000.log        segment: batches with offsets [0, 1200)
//	  00000000000000000000.index      its sparse offset index
//	  00000000000000000000.timeindex  its sparse time index
//	  00000000000000000000.txnindex   aborted transactions whose abort
//	                                  marker is in it (only if any)
//	  00000000000000001200.log        the active segment, base offset 1200
//	  00000000000000001200.index
//	  00000000000000001200.timeindex
//	  gregor.checkpoint               log start offset and recovery point
//	  leader-epoch-checkpoint         leader epochs and their start offsets
//	  00000000000000001200.snapshot   producer state of offsets [0, 1200)
//	  gregor.cleaner-checkpoint       first dirty offset (compacted logs)
//	  high-watermark.checkpoint       the high watermark the broker last
//	                                  checkpointed (replicas)
//	  .gregor_cleanshutdown           present only while closed cleanly
//
// Transient names: <segment file>.deleted (a segment retention or the
// cleaner took out of the log, removed after FileDeleteDelay), .cleaned
// (the cleaner's output being written) and .swap (cleaned output committed,
// being renamed into place); see retention.go and cleaner.go.
//
// A segment is named by its base offset in 20 digits: the offset of its
// first batch. Segments are contiguous: each starts where the previous one
// ends. Inside a cleaned segment offsets may skip (records the cleaner
// removed), and its first batch may start after its base.
//
// A .log file is record batches back to back, byte for byte as Kafka stores
// them (big-endian; the CRC-32C covers bytes 21 to the end, so the broker
// may set baseOffset and partitionLeaderEpoch without recomputing it):
//
//	+--------------------+ 0
//	| baseOffset   int64 |   rewritten by Append
//	| batchLength  int32 |   bytes after this field
//	| leaderEpoch  int32 |
//	| magic        int8  |   always 2
//	| crc          uint32|   CRC-32C of [21, end)
//	+--------------------+ 21
//	| attributes   int16 |
//	| lastOffsetDelta    |   int32: the batch holds baseOffset..+delta
//	| baseTimestamp int64|
//	| maxTimestamp int64 |   what the time index and BatchAtTimestamp use
//	| producerId   int64 |
//	| producerEpoch int16|
//	| baseSequence int32 |
//	| recordCount  int32 |
//	+--------------------+ 61
//	| records ...        |   never read by storage
//	+--------------------+ 12 + batchLength
//
// A .index file is 8-byte entries; a .timeindex file 12-byte entries, both
// Kafka's exact formats, offsets relative to the segment's base:
//
//	.index      | relOffset int32 | position int32 |
//	            offset of the LAST record of the batch starting at position
//
//	.timeindex  | timestamp int64 | relOffset int32 |
//	            the largest batch max timestamp up to and including the
//	            batch ending at relOffset; that batch is the first to reach it
//
// A .txnindex file is 34-byte entries, Kafka's AbortedTxn, in the order
// the abort markers were appended (txnindex.go):
//
//	.txnindex   | version int16 (0) | producerId int64 | firstOffset int64 |
//	            | lastOffset int64 | lastStableOffset int64 |
//	            lastOffset is the abort marker's offset
//
// It is truncated with its segment, deleted with it, and carried into a
// cleaned segment for each abort marker the cleaner keeps. Open cuts a
// torn last entry and entries past the recovered log. Unlike the offset
// and time indexes it cannot be rebuilt from the segment alone: after a
// crash Open empties it in each unflushed segment it recovers that holds
// a control batch and reports the first (RecoveryStats.TxnIndexRebuildFrom);
// the broker's producer-state replay indexes those aborts again.
//
// A batch gets an entry in both (the time entry only if the maximum grew)
// when more than IndexIntervalBytes were written since the last entry, as
// in Kafka's LogSegment.append and recover; a segment leaving the active
// state (roll, Close, recovery) gets a final time entry with its maximum.
// Appending several batches as one unit indexes each batch on its own, as
// Kafka's recovery does, so that kafka-dump-log's index check (the batch at
// each position ends at the entry's offset) holds.
//
// As in Kafka, the active segment's index files are preallocated: created
// (or, when a segment becomes active by Open or TruncateTo, extended) to
// SegmentIndexBytes rounded down to whole entries, zeros after the entries
// written so far (AbstractIndex does the same). When a segment stops being
// active (roll, Close) its files are trimmed to their entries, so the length
// of any file Open does not rebuild says how many entries it holds, which
// is how Kafka counts them too. A file ending in a zero slot was never
// trimmed (a crash, or damage) and is rebuilt from the log: no zero slot is
// ever taken for an entry. After an unclean shutdown the last segment is
// scanned and its indexes rebuilt anyway. SegmentIndexBytes bounds the
// entries a segment takes before it is rolled (the time index keeping one
// slot free for the final entry, as Kafka's does). A segment the cleaner
// writes is never active: its index files are written holding exactly their
// entries, the final time entry included, as a rolled segment's are
// trimmed, and are mapped on the segment's first lookup.
//
// kafka-dump-log (Kafka 4.2.2) reads all of it as it reads Kafka's own
// files: trimmed indexes pass --index-sanity-check and --verify-index-only.
// On the live active segment it counts the zero slots of the preallocated
// files as entries, as it does on a Kafka broker's active segment, so its
// time index sanity check fails there ("last timestamp is 0 which is less
// than the first timestamp") exactly as it does against Kafka.
//
// Lookups read the index files, not copies: on OSFS each index is mapped
// read-only and shared (entries are written with pwrite, which the mapping
// sees through the page cache) and binary-searched in place. The active
// segment's indexes are mapped whole; a closed segment's are mapped on its
// first lookup and unmapped when its files are closed. The heap holds no
// index entries, so memory does not grow with log size or partition count
// beyond the index pages lookups touch. MemFS files cannot be mapped: there
// the entries are kept in the heap and the files are not preallocated.
// A segment that retention or the cleaner takes out of the log is no longer
// in the segment list that reads search (under Log.mu), so no read reaches
// it; its files are renamed .deleted (a mapping survives the rename) and
// are unmapped, closed and removed after FileDeleteDelay, or at Close.
//
// A segment is rolled before an append when the append would take it past
// SegmentBytes, when either index is full, when an offset would not fit in
// 32 bits relative to its base, or when it is older than SegmentMs less a
// random jitter drawn per segment from SegmentJitterMs. Age is Kafka's:
// the appended batches' largest timestamp minus the max timestamp of the
// segment's first append (its first batch's, after a restart), or, when
// that has no timestamp, the wall clock time since the segment was
// created. Like Kafka, rolling happens only on append. An empty segment is
// never rolled.
//
// gregor.checkpoint is text, replaced atomically (temporary file, fsync,
// rename, directory fsync):
//
//	0                       version
//	log-start-offset 42     the start offset, moved by SetStartOffset
//	recovery-point 1200     offsets below it were fsynced
//
// Kafka keeps these two per log directory (log-start-offset-checkpoint,
// recovery-point-offset-checkpoint); storage keeps them per partition.
//
// leader-epoch-checkpoint is Kafka's file of that name, text, replaced
// atomically like gregor.checkpoint (epoch.go):
//
//	0                       version
//	2                       number of entries
//	0 0                     epoch 0 starts at offset 0
//	3 1200                  epoch 3 starts at offset 1200
//
// Append assigns an entry before writing the first batch stamped with a
// newer epoch; truncations and SetStartOffset trim the entries; Open trims
// them to the recovered log and rebuilds a missing file from the batch
// headers. Its lock (epochCache.mu) is a leaf, taken after any Log lock.
//
// <offset>.snapshot is Kafka's ProducerSnapshot v1 (producer_snapshot.go),
// the producer state of every batch below offset, written atomically:
//
//	+---------------------------+ 0
//	| version        int16 (1)  |
//	| crc            uint32     |   CRC-32C of bytes [6, end)
//	| count          int32      |
//	+---------------------------+ 10
//	| producerId     int64      |   count entries of 46 bytes; Gregor
//	| epoch          int16      |   writes one per retained batch (up to
//	| lastSequence   int32      |   five per producer), oldest first, so
//	| lastOffset     int64      |   that Kafka, keeping the last entry of a
//	| offsetDelta    int32      |   producer, reads what it writes itself
//	| timestamp      int64      |
//	| coordinatorEpoch int32    |   -1 until transactions
//	| currentTxnFirstOffset int64|  -1 when no transaction is open
//	+---------------------------+
//
// The latest two are kept; those past the log end after a truncation or a
// torn tail are deleted, and a corrupt one is deleted when read.
//
// high-watermark.checkpoint is text, replaced atomically
// (highwatermark.go), read at Open and clamped to the recovered log; a
// damaged one is ignored with a warning:
//
//	0                       version
//	high-watermark 1234
//
// # Replicas: AppendReplicated and truncation
//
// A follower appends the leader's batches with AppendReplicated, which is
// Append with the batches' own offsets kept (and their CRCs checked): the
// same roll, index and epoch maintenance, so a follower's files are what
// the leader's would be for the same appends. Offsets may skip where the
// leader's log was compacted; segments stay contiguous (a new segment
// starts at the log end, its first batch possibly after its base).
//
// TruncateTo and TruncateFullyAndStartAt write in an order that leaves,
// after a crash at any step, a log Open recovers as a prefix of the old
// one:
//
//	TruncateTo(offset), new end E:
//	  1. cleaner checkpoint and recovery point lowered to E (durable):
//	     from now on Open CRC-scans the segment being cut
//	  2. segments after the one holding E deleted, last first; directory
//	     fsynced (a cut segment followed by a later one would be a hole)
//	  3. that segment's .log cut at the batch boundary, its index, time
//	     index and .txnindex entries past E removed; fsynced
//	  4. leader-epoch entries from E on and snapshots past E removed
//	     (Open also drops those past whatever end it finds)
//	  5. only if the start offset comes down to E: the checkpoint (a
//	     crash before it leaves the start past the end: Open empties the
//	     log there rather than show deleted records again)
//
//	TruncateFullyAndStartAt(offset):
//	  1. cleaner checkpoint clamped; every producer snapshot and the
//	     leader-epoch checkpoint removed (Open rebuilds epochs from the
//	     batches a crash leaves)
//	  2. segments deleted, last first; directory fsynced
//	  3. checkpoint: start and recovery point = offset
//	  4. the new empty segment; the empty leader-epoch checkpoint
//
// Lock order (Log's doc comment has the details; take left before right):
//
//	hwMu -> cleanMu -> syncMu -> appendMu -> mu -> deleteMu
//
// Append and AppendReplicated take appendMu, and mu only to publish.
// Truncations, retention, SetStartOffset, Close and Delete take cleanMu,
// syncMu and appendMu (lockSegments), then mu to change the segment list,
// so a truncation waits for a cleaning round in progress, which holds
// cleanMu throughout, and the round, starting afterwards, sees only the
// truncated log; the cleaner checkpoint is clamped under cleanMu.
// WriteHighWatermark takes only hwMu (and mu briefly, to see Close), so
// it never waits for appends, reads or truncations; Close and Delete take
// hwMu first. The leader-epoch cache's lock is a leaf after all of these.
//
// # Reading without copying
//
// ReadSlice returns the batches a read would copy as ranges of the .log
// files (a Slice). The segment's file is reference-counted: removing the
// segment drops the segment's reference, and the file closes when the last
// Slice naming it is released, so a send in flight keeps reading the
// removed file's data.
//
// # Durability and recovery
//
// Append writes to the page cache only. Sync fsyncs the segments written
// since the last Sync, their indexes and, if segments were created, the
// directory; it rewrites the checkpoint when the recovery point crosses a
// segment boundary. Close syncs everything, writes the checkpoint and then
// the clean-shutdown marker. Open removes the marker (durably) and, after
// an unclean shutdown, CRC-scans the segments at or above the recovery
// point; see Open for the rules. In short, as Kafka's LogLoader: the log
// is cut at the first invalid batch in those segments and the segments
// after it are deleted. A segment below the recovery point (or any, after
// a clean shutdown) whose indexes fail the cheap checks is rebuilt from
// its log; damage found in its batches is ErrCorrupt unless it is the last.
//
// When Append's caller must wait for an fsync is the log's FlushPolicy
// (Kafka's flush.messages and flush.ms; flush.go): after Append, and
// outside its own locks, the caller calls FlushAfterAppend, which fsyncs
// once flush.messages offsets are unflushed (group commit: concurrent
// callers share one Sync) or schedules a background fsync within flush.ms.
// OSFlush, Kafka's default and a new Log's, never forces one.
package storage
