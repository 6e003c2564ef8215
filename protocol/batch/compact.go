package batch

import "errors"

// CleanerCodec is the record codec the log cleaner works through
// (storage.RecordCodec, which storage defines without importing this
// package): it lists a stored batch's records and rebuilds a batch with
// some of them, as Kafka's MemoryRecords.filterTo does. The zero value is
// ready; it is not safe for concurrent use (it keeps one Scratch).
type CleanerCodec struct {
	scratch Scratch
	records []Record
	arena   []byte
}

// Records calls fn with the absolute offset, the key (nil when null) and
// whether the value is null of every record of the v2 batch b, until fn
// returns false. The key is valid only during the call.
func (c *CleanerCodec) Records(b []byte, fn func(offset int64, key []byte, nullValue bool) bool) error {
	return ForEachRecord(b, &c.scratch, func(h *Header, r *Record) bool {
		return fn(h.BaseOffset+int64(r.OffsetDelta), r.Key, r.Value == nil)
	})
}

// Rebuild appends to dst the batch b holding only the records whose offsets
// keep accepts, built as Kafka's MemoryRecords.buildRetainedRecordsInto
// builds it: base offset, last offset delta, codec (recompressed at its
// default level), timestamp type, producer id, epoch and base sequence,
// transactional and control flags and leader epoch are the original's;
// each record keeps its offset, timestamp, key, value and headers. The
// base timestamp is deleteHorizonMs with the delete-horizon attribute when
// deleteHorizonMs >= 0, else the first retained record's timestamp. A
// LogAppendTime batch keeps its max timestamp as every record's time.
func (c *CleanerCodec) Rebuild(dst, b []byte, keep func(offset int64) bool, deleteHorizonMs int64) ([]byte, error) {
	c.records, c.arena = c.records[:0], c.arena[:0]
	var h Header
	var timestamps []int64
	// Copy what is kept: the records alias the Scratch, which decoding
	// reuses. Slices are rebased onto the arena after it stops growing.
	type span struct {
		key, value [2]int
		null       [2]bool
		headers    []RecordHeader
	}
	var spans []span
	put := func(x []byte) (int, int) {
		c.arena = append(c.arena, x...)
		return len(c.arena) - len(x), len(c.arena)
	}
	err := ForEachRecord(b, &c.scratch, func(hh *Header, r *Record) bool {
		h = *hh
		off := hh.BaseOffset + int64(r.OffsetDelta)
		if !keep(off) {
			return true
		}
		var s span
		s.key[0], s.key[1] = put(r.Key)
		s.value[0], s.value[1] = put(r.Value)
		s.null = [2]bool{r.Key == nil, r.Value == nil}
		for _, rh := range r.Headers {
			var v []byte
			if rh.Value != nil {
				v = append([]byte{}, rh.Value...)
			}
			s.headers = append(s.headers, RecordHeader{Key: rh.Key, Value: v})
		}
		spans = append(spans, s)
		c.records = append(c.records, Record{Attributes: r.Attributes, OffsetDelta: r.OffsetDelta})
		timestamps = append(timestamps, hh.RecordTimestamp(r))
		return true
	})
	if err != nil {
		return dst, err
	}
	if len(c.records) == 0 {
		return dst, errors.New("batch: rebuild: no record is kept")
	}
	slice := func(sp [2]int, null bool) []byte {
		if null {
			return nil
		}
		return c.arena[sp[0]:sp[1]:sp[1]]
	}
	base := timestamps[0]
	if deleteHorizonMs >= 0 {
		base = deleteHorizonMs
	}
	for i := range c.records {
		r := &c.records[i]
		r.Key = slice(spans[i].key, spans[i].null[0])
		r.Value = slice(spans[i].value, spans[i].null[1])
		r.Headers = spans[i].headers
		r.TimestampDelta = timestamps[i] - base
	}
	start := len(dst)
	dst, err = AppendBatch(dst, BuildOptions{
		Compression:          h.Compression(),
		BaseOffset:           h.BaseOffset,
		BaseTimestamp:        base,
		ProducerID:           h.ProducerID,
		ProducerEpoch:        h.ProducerEpoch,
		BaseSequence:         h.BaseSequence,
		Transactional:        h.Transactional(),
		Control:              h.Control(),
		PartitionLeaderEpoch: h.PartitionLeaderEpoch,
		DeleteHorizon:        deleteHorizonMs >= 0,
		LastOffsetDelta:      h.LastOffsetDelta,
	}, c.records)
	if err != nil {
		return dst, err
	}
	if h.LogAppendTime() {
		SetLogAppendTime(dst[start:], h.MaxTimestamp)
	}
	return dst, nil
}
