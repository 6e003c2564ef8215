package batch

import (
	"errors"
	"fmt"
)

// Sentinel errors. Every error this package returns wraps exactly one of them
// (ErrTruncated also wraps ErrCorrupt); test with errors.Is. Each comment names
// the Kafka error code the broker should answer and where Kafka decides it
// (files of the apache/kafka repository). The codes were checked against a
// real Apache Kafka 4.2.2 broker by TestErrorCodesMatchApacheKafka, which
// also records the two places where Kafka's answer is an accident and
// Gregor's deliberately is not.
var (
	// ErrCorrupt: CORRUPT_MESSAGE (2). Kafka throws CorruptRecordException
	// for an entry length below 14 or a magic byte outside 0..2
	// (ByteBufferLogInputStream.nextBatchSize), and for a batch shorter
	// than its 61-byte header or with a CRC mismatch (DefaultRecordBatch.isValid,
	// called from UnifiedLog.analyzeAndValidateRecords). Kafka 4.2.2 answers
	// UNKNOWN_SERVER_ERROR for a batch too short to hold the producer id
	// (under 51 bytes), which it reads before checking the size.
	ErrCorrupt = errors.New("batch: corrupt message")

	// ErrTruncated wraps ErrCorrupt: the bytes end inside an entry. Kafka
	// raises nothing: ByteBufferLogInputStream.nextBatch just stops, so a
	// truncated tail after a complete batch is ignored and a blob with no
	// complete batch is INVALID_RECORD (87) (ProduceRequest.validateRecords:
	// "must have at least one record batch").
	ErrTruncated = fmt.Errorf("%w: truncated", ErrCorrupt)

	// ErrInvalidRecord: INVALID_RECORD (87). Kafka throws
	// InvalidRecordException for a client batch whose baseOffset is not 0
	// (UnifiedLog.analyzeAndValidateRecords); whose lastOffsetDelta+1 or
	// record count is not positive, or differ; that is a control batch; or
	// that has a producer id with a negative base sequence
	// (LogValidator.validateBatch); whose offset deltas are not 0..n-1
	// (Kafka 4.x LogValidator); and for a record that does not decode
	// (DefaultRecord.readFrom: bad sizes, varints, negative header count or
	// header key length), too few records ("premature EOF") or bytes left
	// after the last ("records still remaining") (DefaultRecordBatch's
	// iterators). One accident: in an uncompressed batch a record-length
	// varint longer than 5 bytes escapes as UNKNOWN_SERVER_ERROR in Kafka.
	ErrInvalidRecord = errors.New("batch: invalid record")

	// ErrUnsupportedMagic: a v0/v1 message set where a v2 batch was
	// expected. For produce v3+ Kafka answers INVALID_RECORD (87)
	// (ProduceRequest.validateRecords: "only allowed to contain record
	// batches with magic version 2"). A magic byte outside 0..2 is
	// ErrCorrupt instead, as in Kafka.
	ErrUnsupportedMagic = errors.New("batch: unsupported magic")

	// ErrUnsupportedCompression: compression id 5, 6 or 7. Kafka's
	// CompressionType.forId throws IllegalArgumentException, which
	// ReplicaManager.appendToLocalLog turns into UNKNOWN_SERVER_ERROR (-1).
	// (UNSUPPORTED_COMPRESSION_TYPE (76) is Kafka's answer to zstd in
	// produce < v7, a version check left to the broker.)
	ErrUnsupportedCompression = errors.New("batch: unsupported compression")

	// ErrDecompress: the records section is not a valid stream of its codec
	// (for lz4, also a frame Kafka's Lz4BlockInputStream refuses: dependent
	// blocks, legacy or skippable frames). Kafka wraps the codec's failure
	// in a KafkaException ("Failed to decompress record stream",
	// DefaultRecordBatch.StreamRecordIterator, Compression.wrapForInput) or
	// lets a RuntimeException escape: UNKNOWN_SERVER_ERROR (-1).
	ErrDecompress = errors.New("batch: cannot decompress records")

	// ErrTooLarge: the records decompress to more than
	// Scratch.MaxUncompressed bytes (a decompression bomb, or a limit set
	// too low). Kafka has no such limit; MESSAGE_TOO_LARGE (10) is the
	// closest answer a client understands.
	ErrTooLarge = errors.New("batch: uncompressed records exceed the limit")
)

func corruptf(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrCorrupt}, args...)...)
}

func truncatedf(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrTruncated}, args...)...)
}

func invalidf(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrInvalidRecord}, args...)...)
}
