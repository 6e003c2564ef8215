package storage

import (
	"encoding/binary"
	"fmt"
	"sort"
)

// Control record types, the int16 after the version in a control record's
// key (Kafka's ControlRecordType).
const (
	controlAbort  = 0
	controlCommit = 1
)

// txnTracker is Kafka's CleanedTransactionMetadata: walking batches in
// offset order, it tells the cleaner which data batches belong to aborted
// transactions (their records can all go) and which transaction markers
// may be dropped (an abort marker once no batch of its transaction is
// left, a commit marker once no batch of its transaction was seen). With
// no aborted transactions listed, no data batch is ever discarded and a
// marker may go only when its transaction's data is gone.
type txnTracker struct {
	aborted          []AbortedTxn // not yet reached, by first offset
	ongoingAborted   map[int64]*abortedTxnState
	ongoingCommitted map[int64]bool
}

type abortedTxnState struct {
	txn AbortedTxn
	// lastObserved is the last offset of the last batch of the transaction
	// seen, -1 if none.
	lastObserved int64
}

func newTxnTracker(aborted []AbortedTxn) *txnTracker {
	a := append([]AbortedTxn(nil), aborted...)
	sort.Slice(a, func(i, j int) bool { return a[i].FirstOffset < a[j].FirstOffset })
	return &txnTracker{aborted: a, ongoingAborted: map[int64]*abortedTxnState{}, ongoingCommitted: map[int64]bool{}}
}

func (t *txnTracker) consumeUpTo(offset int64) {
	for len(t.aborted) > 0 && t.aborted[0].FirstOffset <= offset {
		a := t.aborted[0]
		t.ongoingAborted[a.ProducerID] = &abortedTxnState{txn: a, lastObserved: -1}
		t.aborted = t.aborted[1:]
	}
}

// onBatch reports whether a data batch belongs to an aborted transaction.
func (t *txnTracker) onBatch(h cleanerHeader) bool {
	t.consumeUpTo(h.lastOffset())
	if !h.transactional() {
		return false
	}
	if a, ok := t.ongoingAborted[h.producerID]; ok {
		a.lastObserved = h.lastOffset()
		return true
	}
	t.ongoingCommitted[h.producerID] = true
	return false
}

// onControlBatch reports whether a control batch may be discarded (once its
// delete horizon has passed).
func (t *txnTracker) onControlBatch(h cleanerHeader, b []byte, codec RecordCodec) (bool, error) {
	t.consumeUpTo(h.lastOffset())
	var key []byte
	found := false
	err := codec.Records(b, func(_ int64, k []byte, _ bool) bool {
		key, found = append([]byte(nil), k...), true
		return false
	})
	if err != nil {
		return false, fmt.Errorf("storage: control batch at offset %d: %w", h.baseOffset, err)
	}
	if !found {
		return true, nil // an emptied marker was cleaned already
	}
	if len(key) < 4 {
		return false, fmt.Errorf("storage: control batch at offset %d: control key of %d bytes", h.baseOffset, len(key))
	}
	switch binary.BigEndian.Uint16(key[2:]) {
	case controlAbort:
		a, ok := t.ongoingAborted[h.producerID]
		delete(t.ongoingAborted, h.producerID)
		return !(ok && a.lastObserved >= 0), nil
	case controlCommit:
		seen := t.ongoingCommitted[h.producerID]
		delete(t.ongoingCommitted, h.producerID)
		return !seen, nil
	}
	return false, nil
}
