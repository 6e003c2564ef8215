package txn

import (
	"errors"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

// newTest returns a coordinator and the inputs to drive it with: every id
// served, producer ids counting up from 1000.
func newTest(t *testing.T) (*Coordinator, Inputs) { return newTestTV(t, 0) }

// newTestTV is newTest with the cluster's transaction.version at tv.
func newTestTV(t *testing.T, tv int16) (*Coordinator, Inputs) {
	t.Helper()
	return New(Config{MaxTimeoutMs: 60000, IDExpirationMs: 1000000, TransactionVersion: tv}), counting(1000)
}

// counting returns inputs that serve every id and hand out producer ids
// counting up from next.
func counting(next int64) Inputs {
	return Inputs{NewProducerID: func() (int64, int16) {
		next++
		return next - 1, 0
	}}
}

func errName(c int16) string {
	if c == 0 {
		return "NONE"
	}
	return kerr.ErrorForCode(c).(*kerr.Error).Message
}

// replayed returns a coordinator loaded from every record c wrote.
func replayed(t *testing.T, recs []Record) *Coordinator {
	t.Helper()
	r, _ := newTest(t)
	for _, rec := range recs {
		if err := r.Load(rec.Key, rec.Value); err != nil {
			t.Fatalf("Load of a record the coordinator wrote: %v", err)
		}
	}
	return r
}

var (
	tpA = Partition{"a", 0}
	tpB = Partition{"b", 1}
)

func isBadRecord(err error) bool { return errors.Is(err, ErrBadRecord) }
