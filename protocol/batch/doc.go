// Package batch is the Kafka record-batch codec (message format v2, magic 2):
// it frames the records blob of a produce request into batches, validates a
// batch the way Kafka's partition leader does before appending it, stamps the
// header fields the broker owns (base offset, partition leader epoch,
// log-append time), iterates records, and builds batches.
//
// The package imports nothing of the project and nothing of kmsg: it works on
// bytes, so the broker, storage tooling and tests can all use it. Its only
// dependencies are the compression libraries (klauspost/compress for gzip and
// zstd, pierrec/lz4/v4, golang/snappy) and hash/crc32 (Castagnoli).
//
// # Buffer ownership
//
// Functions never retain the batch they are given. Slices handed to callers
// (Record.Key, Record.Value, RecordHeader.Value, Record.Headers) alias either
// the batch itself (uncompressed) or the Scratch's buffers (compressed) and
// are valid only until the next call that uses the same Scratch, or until the
// callback returns where a callback is involved. Copy what must be kept.
//
// # Record batch, v2 (all integers big-endian)
//
//	offset  size  field                  covered by CRC
//	     0     8  baseOffset             no   (stamped by the leader)
//	     8     4  batchLength            no   (bytes after this field)
//	    12     4  partitionLeaderEpoch   no   (stamped by the leader)
//	    16     1  magic (= 2)            no
//	    17     4  crc (CRC-32C of bytes [21:])
//	    21     2  attributes             yes
//	    23     4  lastOffsetDelta        yes
//	    27     8  baseTimestamp          yes
//	    35     8  maxTimestamp           yes
//	    43     8  producerId             yes
//	    51     2  producerEpoch          yes
//	    53     4  baseSequence           yes
//	    57     4  recordCount            yes
//	    61     …  records                yes  (compressed as one stream if
//	                                           attributes say so)
//
//	attributes (only the low byte is used):
//	  bit  0-2  compression: 0 none, 1 gzip, 2 snappy, 3 lz4, 4 zstd
//	  bit    3  timestamp type: 0 CreateTime, 1 LogAppendTime
//	  bit    4  transactional
//	  bit    5  control batch
//	  bit    6  delete horizon set (baseTimestamp is the horizon)
//
// Magic sits at byte 16 in every format: in v0/v1 message sets it follows
// offset(8) size(4) crc(4), so one 12-byte prefix frames all of them.
//
// # Record (inside the records section; varints are zig-zag, as protobuf)
//
//	length          varint   bytes of the record after this field
//	attributes      int8     unused, 0
//	timestampDelta  varlong  from baseTimestamp
//	offsetDelta     varint   from baseOffset; 0,1,2… when produced
//	keyLength       varint   -1 = null key
//	key             bytes
//	valueLength     varint   -1 = null value
//	value           bytes
//	headerCount     varint
//	headers         headerCount × {
//	                  keyLength varint (never negative)  key bytes (UTF-8)
//	                  valueLength varint (-1 = null)      value bytes }
//
// A varint is at most 5 bytes and a varlong at most 10, as Kafka reads them.
//
// # Compression
//
// The records section is one compressed stream: gzip (RFC 1952, several
// members allowed), snappy (a raw block, or the xerial framing the Java
// client writes: 0x82 "SNAPPY" 0x00, two int32 versions, then
// [int32 length][snappy block]…), lz4 (the LZ4 frame format) or zstd (one or
// more zstd frames). Decompression is bounded by Scratch.MaxUncompressed.
// Validate and ForEachRecordMeta walk a compressed batch's records as they
// decompress (stream.go), through a window and a decoder set borrowed from
// a DecompressionPool (decoders.go), so that what they hold is the codec's
// state, never the records; ForEachRecord, which hands out records,
// decompresses them whole into its Scratch.
package batch
