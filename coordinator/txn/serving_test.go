package txn

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

// TestServingIsAskedAfterTheRequestsOwnChecks checks that an id this
// coordinator does not serve is refused with Inputs.Serving's error at the
// point where Kafka's TransactionStateManager is asked: after the empty id
// and the timeout checks, before the id's metadata; and that timers,
// PendingMarkers and List pass over it.
func TestServingIsAskedAfterTheRequestsOwnChecks(t *testing.T) {
	refused := map[string]int16{}
	c := New(Config{MaxTimeoutMs: 60000, IDExpirationMs: 1000})
	in := counting(1000)
	in.Serving = func(id string) int16 { return refused[id] }

	r := c.InitProducerID(1, "moved", 1000, -1, -1, in)
	c.AddPartitions(1, "moved", r.ProducerID, r.ProducerEpoch, []Partition{tpA}, 0, in)
	c.EndTxn(2, "moved", r.ProducerID, r.ProducerEpoch, true, 0, in)
	c.InitProducerID(1, "idle", 1000, -1, -1, in)
	c.Ready()
	refused["moved"] = kerr.NotCoordinator.Code
	refused["idle"] = kerr.CoordinatorLoadInProgress.Code

	for _, tt := range []struct {
		name string
		got  int16
		want *kerr.Error
	}{
		{"init, empty id", c.InitProducerID(3, "", 1000, -1, -1, in).ErrorCode, kerr.InvalidRequest},
		{"init, bad timeout", c.InitProducerID(3, "moved", 0, -1, -1, in).ErrorCode, kerr.InvalidTransactionTimeout},
		{"init", c.InitProducerID(3, "moved", 1000, -1, -1, in).ErrorCode, kerr.NotCoordinator},
		{"init, loading", c.InitProducerID(3, "idle", 1000, -1, -1, in).ErrorCode, kerr.CoordinatorLoadInProgress},
		{"add, empty id", c.AddPartitions(3, "", 1, 0, []Partition{tpB}, 0, in), kerr.InvalidRequest},
		{"add", c.AddPartitions(3, "moved", r.ProducerID, r.ProducerEpoch, []Partition{tpB}, 0, in), kerr.NotCoordinator},
		{"add, unknown producer", c.AddPartitions(3, "moved", 7, 0, []Partition{tpB}, 0, in), kerr.NotCoordinator},
		{"end v1", c.EndTxn(3, "moved", r.ProducerID, r.ProducerEpoch, true, 0, in).ErrorCode, kerr.NotCoordinator},
		{"end v2", c.EndTxn(3, "moved", r.ProducerID, r.ProducerEpoch, true, 2, in).ErrorCode, kerr.NotCoordinator},
		{"end, empty id", c.EndTxn(3, "", r.ProducerID, r.ProducerEpoch, true, 2, in).ErrorCode, kerr.InvalidRequest},
	} {
		if tt.got != tt.want.Code {
			t.Errorf("%s: %s, want %s", tt.name, errName(tt.got), tt.want.Message)
		}
	}
	if top, _ := c.VerifyPartitions("moved", r.ProducerID, r.ProducerEpoch, []Partition{tpA}, in); top != kerr.NotCoordinator.Code {
		t.Errorf("verify: %s, want NOT_COORDINATOR", errName(top))
	}
	if _, code := c.Describe("idle", in); code != kerr.CoordinatorLoadInProgress.Code {
		t.Errorf("describe: %s, want COORDINATOR_LOAD_IN_PROGRESS", errName(code))
	}
	if got, _ := c.List(3, ListFilter{DurationMs: -1}, in); len(got) != 0 {
		t.Errorf("list shows ids served elsewhere: %+v", got)
	}
	if got := c.ExpireIDs(1<<40, in); len(got) != 0 {
		t.Errorf("expired ids served elsewhere: %v", got)
	}
	c.PendingMarkers(in)
	if eff := c.Ready(); len(eff.Records)+len(eff.Markers) != 0 {
		t.Errorf("refused requests and timers had effects: %+v", eff)
	}

	delete(refused, "moved")
	c.PendingMarkers(in)
	if eff := c.Ready(); len(eff.Markers) != 1 || eff.Markers[0].TransactionalID != "moved" {
		t.Errorf("markers once served again: %+v", eff.Markers)
	}
}
