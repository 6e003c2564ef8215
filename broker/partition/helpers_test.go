package partition

import (
	"strconv"
	"testing"
	"time"

	"github.com/gregor-broker/gregor/protocol/batch"
)

// testBatch is one uncompressed batch of n records without a producer id.
func testBatch(t testing.TB, n int) []byte {
	t.Helper()
	recs := make([]batch.Record, n)
	for i := range recs {
		recs[i] = batch.Record{OffsetDelta: int32(i), Key: []byte(strconv.Itoa(i)), Value: []byte("v" + strconv.Itoa(i))}
	}
	b, err := batch.AppendBatch(nil, batch.BuildOptions{BaseTimestamp: time.Now().UnixMilli(), ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1}, recs)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
