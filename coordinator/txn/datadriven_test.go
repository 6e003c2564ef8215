package txn

// TestDataDriven replays the transcripts in testdata/*.txt: each command is
// one request to the transaction coordinator (or a step of the clock, or
// the markers being written), and the expected output under it is the
// answer, the records and markers the request asked for, and the
// transaction's state afterwards. After every command the test also checks
// that the records written so far alone rebuild the same state. To
// regenerate the expected outputs after a deliberate change, run
//
//	go test ./coordinator/txn -run TestDataDriven -rewrite
//
// and review the diff. The command vocabulary is listed in
// docs/architecture.md (Tests) and described at each command below.

import (
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"
)

func TestDataDriven(t *testing.T) {
	datadriven.Walk(t, "testdata", func(t *testing.T, path string) {
		c, in := newTestTV(t, 0)
		d := &txnDriver{c: c, in: in}
		datadriven.RunTest(t, path, func(t *testing.T, td *datadriven.TestData) string {
			var out strings.Builder
			d.run(t, td, &out)
			return out.String()
		})
	})
}

// txnDriver interprets one transcript against one coordinator.
type txnDriver struct {
	c       *Coordinator
	in      Inputs // every id served, producer ids from 1000
	tv      int16  // the cluster's transaction.version
	now     int64
	records []Record
	markers []Marker // asked for and not yet reported written
}

func ddStr(td *datadriven.TestData, key, def string) string {
	for _, a := range td.CmdArgs {
		if a.Key == key && len(a.Vals) > 0 {
			return a.Vals[0]
		}
	}
	return def
}

func ddInt(t *testing.T, td *datadriven.TestData, key string, def int64) int64 {
	t.Helper()
	if !td.HasArg(key) {
		return def
	}
	n, err := strconv.ParseInt(ddStr(td, key, ""), 10, 64)
	if err != nil {
		t.Fatalf("%s: %s: %v", td.Pos, key, err)
	}
	return n
}

// ddPartitions reads partitions=(a-0,b-1).
func ddPartitions(t *testing.T, td *datadriven.TestData) []Partition {
	var ps []Partition
	for _, a := range td.CmdArgs {
		if a.Key != "partitions" {
			continue
		}
		for _, v := range a.Vals {
			i := strings.LastIndexByte(v, '-')
			n, err := strconv.ParseInt(v[i+1:], 10, 32)
			if i < 0 || err != nil {
				t.Fatalf("%s: partition %q: want topic-N", td.Pos, v)
			}
			ps = append(ps, Partition{v[:i], int32(n)})
		}
	}
	return ps
}

func partitionsString(ps []Partition) string {
	var s []string
	for _, p := range ps {
		s = append(s, fmt.Sprintf("%s-%d", p.Topic, p.Partition))
	}
	return "[" + strings.Join(s, " ") + "]"
}

// run executes one command. id defaults to "id", pid to 1000 (the first
// producer id), epoch to 0; tv (the client's transaction version: 2 for a
// transactions V2 client's produce and EndTxn v5) defaults to 0.
func (d *txnDriver) run(t *testing.T, td *datadriven.TestData, out *strings.Builder) {
	id := ddStr(td, "id", "id")
	pid := ddInt(t, td, "pid", 1000)
	epoch := int16(ddInt(t, td, "epoch", 0))
	tv := int16(ddInt(t, td, "tv", 0))
	in := d.in
	switch td.Cmd {
	case "config":
		tv := int16(ddInt(t, td, "transaction-version", 0))
		c, in := newTestTV(t, tv)
		*d = txnDriver{c: c, in: in, tv: tv}
		return
	case "advance":
		d.now += ddInt(t, td, "ms", 0)
		fmt.Fprintf(out, "t=%d\n", d.now)
		return
	case "init":
		// InitProducerId; pid and epoch given: KIP-360's expected producer
		// id and epoch, else none (-1).
		expPID, expEpoch := int64(-1), int16(-1)
		if td.HasArg("pid") {
			expPID, expEpoch = pid, epoch
		}
		r := d.c.InitProducerID(d.now, id, int32(ddInt(t, td, "timeout", 1000)), expPID, expEpoch, in)
		fmt.Fprintf(out, "%s pid=%d epoch=%d\n", errName(r.ErrorCode), r.ProducerID, r.ProducerEpoch)
	case "add":
		fmt.Fprintf(out, "%s\n", errName(d.c.AddPartitions(d.now, id, pid, epoch, ddPartitions(t, td), tv, in)))
	case "end":
		commit := td.HasArg("commit")
		if commit == td.HasArg("abort") {
			t.Fatalf("%s: end needs commit or abort", td.Pos)
		}
		r := d.c.EndTxn(d.now, id, pid, epoch, commit, tv, in)
		fmt.Fprintf(out, "%s pid=%d epoch=%d\n", errName(r.ErrorCode), r.ProducerID, r.ProducerEpoch)
	case "markers-written":
		// The driver reports every marker asked for so far as written.
		for _, m := range d.markers {
			d.c.MarkersWritten(d.now, m.TransactionalID, m.ProducerID, m.ProducerEpoch, m.Partitions)
		}
		d.markers = nil
	case "abort-timed-out":
		fmt.Fprintf(out, "aborted %v\n", d.c.AbortTimedOut(d.now, in))
	case "endtxn-table":
		// The table of EndTxn answers (see endTxnTable).
		d.endTxnTable(t, out, tv)
		return
	default:
		t.Fatalf("%s: unknown command %q", td.Pos, td.Cmd)
	}
	d.effects(t, out)
	d.state(t, out, id)
}

// effects prints the records and markers the command asked for.
func (d *txnDriver) effects(t *testing.T, out *strings.Builder) {
	eff := d.c.Ready()
	for _, r := range eff.Records {
		d.records = append(d.records, r)
		k, err := decodeKey(r.Key)
		if err != nil {
			t.Fatalf("a record the coordinator wrote: %v", err)
		}
		if r.Value == nil {
			fmt.Fprintf(out, "record %s tombstone\n", k)
			continue
		}
		v, err := decodeValue(k, r.Value)
		if err != nil {
			t.Fatalf("a record the coordinator wrote: %v", err)
		}
		fmt.Fprintf(out, "record %s %s pid=%d epoch=%d partitions=%s\n", k, v.State, v.ProducerID, v.ProducerEpoch, partitionsString(v.SortedPartitions()))
	}
	for _, m := range eff.Markers {
		kind := "abort"
		if m.Commit {
			kind = "commit"
		}
		fmt.Fprintf(out, "marker %s %s pid=%d epoch=%d tv=%d %s\n", m.TransactionalID, kind, m.ProducerID, m.ProducerEpoch,
			m.TransactionVersion, partitionsString(m.Partitions))
	}
	d.markers = append(d.markers, eff.Markers...)
}

// state prints id's state, and fails if the log alone rebuilds another.
func (d *txnDriver) state(t *testing.T, out *strings.Builder, id string) {
	in := d.in
	got, code := d.c.Describe(id, in)
	if code != 0 {
		fmt.Fprintf(out, "%s: %s\n", id, errName(code))
		return
	}
	fmt.Fprintf(out, "%s: %s pid=%d epoch=%d partitions=%s\n", id, got.State, got.ProducerID, got.ProducerEpoch, partitionsString(got.SortedPartitions()))
	r, _ := replayed(t, d.records).Describe(id, in)
	r.LastProducerEpoch = got.LastProducerEpoch // not persisted, as in Kafka
	if !reflect.DeepEqual(r, got) {
		t.Fatalf("replayed %+v, in memory %+v", r, got)
	}
}

// endTxnTable prints what EndTxn answers from each state, with the cluster
// and the client at transaction version tv, with the transaction's epoch, the
// one before it and the one after it, and what state and epoch follow.
// Each row starts from a fresh coordinator brought to the state by a
// recipe: two InitProducerIds (so that there is an epoch before the
// current one), then as needed AddPartitions, EndTxn at the current epoch
// and the markers written (recipe letters i, a, c or x, m).
func (d *txnDriver) endTxnTable(t *testing.T, out *strings.Builder, tv int16) {
	recipes := []struct{ name, steps string }{
		{"Empty", "ii"}, {"Ongoing", "iia"}, {"PrepareCommit", "iiac"}, {"PrepareAbort", "iiax"},
		{"CompleteCommit", "iiacm"}, {"CompleteAbort", "iiaxm"},
	}
	fmt.Fprintf(out, "%-20s %-6s %-6s %-24s %s\n", "from", "end", "epoch", "answer", "then")
	for _, rc := range recipes {
		for _, commit := range []bool{true, false} {
			for _, rel := range []int16{0, -1, 1} {
				c, in := newTestTV(t, tv)
				var pending []Marker
				var cur int16
				for _, s := range rc.steps {
					switch s {
					case 'i':
						cur = c.InitProducerID(0, "id", 1000, -1, -1, in).ProducerEpoch
					case 'a':
						c.AddPartitions(0, "id", 1000, cur, []Partition{tpA}, tv, in)
					case 'c', 'x':
						c.EndTxn(0, "id", 1000, cur, s == 'c', tv, in)
					case 'm':
						for _, m := range pending {
							c.MarkersWritten(0, m.TransactionalID, m.ProducerID, m.ProducerEpoch, m.Partitions)
						}
					}
					pending = append(pending, c.Ready().Markers...)
					if tx, _ := c.Describe("id", in); tx.ProducerEpoch != cur {
						cur = tx.ProducerEpoch
					}
				}
				if tx, _ := c.Describe("id", in); tx.State.String() != rc.name {
					t.Fatalf("recipe %s reached %s", rc.steps, tx.State)
				}
				e := cur + rel
				if e < 0 {
					continue // no epoch before the first
				}
				r := c.EndTxn(0, "id", 1000, e, commit, tv, in)
				after, _ := c.Describe("id", in)
				kind := "abort"
				if commit {
					kind = "commit"
				}
				fmt.Fprintf(out, "%-20s %-6s %-6s %-24s %s e%d\n", fmt.Sprintf("%s(e%d)", rc.name, cur), kind, fmt.Sprintf("e%d", e),
					errName(r.ErrorCode), after.State, after.ProducerEpoch)
			}
		}
	}
}
