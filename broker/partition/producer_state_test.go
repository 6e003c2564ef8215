package partition

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/gregor-broker/gregor/protocol/batch"
)

func TestIdempotentProducerExpires(t *testing.T) {
	var s producerStates
	now := time.Now().UnixMilli()
	s.lastSweep = now
	h := batch.Header{ProducerID: 1, ProducerEpoch: 0, BaseSequence: 0, LastOffsetDelta: 0, MaxTimestamp: now}
	s.update(&h, 0)
	later := batch.Header{ProducerID: 1, ProducerEpoch: 0, BaseSequence: 7}
	if e, _ := s.check(&later); e != kerr.OutOfOrderSequenceNumber {
		t.Fatalf("a known producer skipping sequences: %v", e)
	}
	s.maybeRemoveExpired(now + producerIDExpirationCheckMs - 1)
	s.maybeRemoveExpired(now + producerIDExpirationMs - 1)
	if len(s.byID) != 1 {
		t.Fatal("the producer expired early")
	}
	s.maybeRemoveExpired(now + producerIDExpirationMs + producerIDExpirationCheckMs)
	if len(s.byID) != 0 {
		t.Fatal("the producer did not expire")
	}
	if e, _ := s.check(&later); e != nil {
		t.Fatalf("an expired producer is unknown and may start anywhere: %v", e)
	}
}
