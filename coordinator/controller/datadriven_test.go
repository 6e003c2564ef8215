package controller

// TestDataDriven replays the transcripts in testdata/*.txt against a
// single-voter controller in-process (its broker-session clock is fake and
// never moves, so no session expires under a transcript). Each command is
// one request to the controller; the expected output under it is the
// answer and every partition whose state the request changed. To
// regenerate the expected outputs after a deliberate change, run
//
//	go test ./coordinator/controller -run TestDataDriven -rewrite
//
// and review the diff. The command vocabulary is listed in
// docs/architecture.md (Tests) and described at each command below.

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"
	"github.com/gregor-broker/gregor/coordinator/controller/metadata"
	"github.com/twmb/franz-go/pkg/kerr"
)

func TestDataDriven(t *testing.T) {
	datadriven.Walk(t, "testdata", func(t *testing.T, path string) {
		var d *ctlDriver
		datadriven.RunTest(t, path, func(t *testing.T, td *datadriven.TestData) string {
			if d == nil || td.Cmd == "config" {
				d = newCtlDriver(t, td)
				if td.Cmd == "config" {
					return ""
				}
			}
			var out strings.Builder
			d.run(t, td, &out)
			return out.String()
		})
	})
}

type ctlDriver struct {
	c *Controller
}

// newCtlDriver starts the controller; "config unclean" turns on
// unclean.leader.election.enable.
func newCtlDriver(t *testing.T, td *datadriven.TestData) *ctlDriver {
	unclean := td.Cmd == "config" && td.HasArg("unclean")
	return &ctlDriver{c: newQuorum(t, 1, func(c *Config) { c.UncleanLeaderElection = unclean }).active()}
}

type partitionKey struct {
	topic string
	id    int32
}

// partitions copies every partition's state, by topic name and id.
func (d *ctlDriver) partitions() map[partitionKey]metadata.Partition {
	out := map[partitionKey]metadata.Partition{}
	for _, tp := range d.c.Image().Topics {
		for id, p := range tp.Partitions {
			out[partitionKey{tp.Name, id}] = metadata.Partition{Replicas: slices.Clone(p.Replicas), ISR: slices.Clone(p.ISR),
				Leader: p.Leader, LeaderEpoch: p.LeaderEpoch, PartitionEpoch: p.PartitionEpoch,
				Adding: slices.Clone(p.Adding), Removing: slices.Clone(p.Removing)}
		}
	}
	return out
}

func partitionString(k partitionKey, p metadata.Partition) string {
	s := fmt.Sprintf("%s-%d leader=%d leader-epoch=%d partition-epoch=%d replicas=%v isr=%v", k.topic, k.id, p.Leader,
		p.LeaderEpoch, p.PartitionEpoch, p.Replicas, p.ISR)
	if p.Reassigning() {
		s += fmt.Sprintf(" adding=%v removing=%v", p.Adding, p.Removing)
	}
	return s
}

func partitionEqual(a, b metadata.Partition) bool {
	return slices.Equal(a.Replicas, b.Replicas) && slices.Equal(a.ISR, b.ISR) && a.Leader == b.Leader &&
		a.LeaderEpoch == b.LeaderEpoch && a.PartitionEpoch == b.PartitionEpoch &&
		slices.Equal(a.Adding, b.Adding) && slices.Equal(a.Removing, b.Removing)
}

// errString names err's Kafka error, or NONE.
func errString(err error) string {
	if err == nil {
		return "NONE"
	}
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return ke.Message
	}
	return err.Error()
}

func ctlStr(td *datadriven.TestData, key string) string {
	for _, a := range td.CmdArgs {
		if a.Key == key && len(a.Vals) > 0 {
			return a.Vals[0]
		}
	}
	return ""
}

func ctlInt(t *testing.T, td *datadriven.TestData, key string) int64 {
	t.Helper()
	n, err := strconv.ParseInt(ctlStr(td, key), 10, 64)
	if err != nil {
		t.Fatalf("%s: %s: %v", td.Pos, key, err)
	}
	return n
}

// ctlList reads key=(1,2,3) or key=1 as numbers; () is the empty list.
func ctlList(t *testing.T, td *datadriven.TestData, key string) []int32 {
	t.Helper()
	var out []int32
	for _, a := range td.CmdArgs {
		if a.Key != key {
			continue
		}
		for _, v := range a.Vals {
			for _, f := range strings.Fields(v) {
				n, err := strconv.ParseInt(f, 10, 32)
				if err != nil {
					t.Fatalf("%s: %s: %v", td.Pos, key, err)
				}
				out = append(out, int32(n))
			}
		}
	}
	return out
}

func (d *ctlDriver) run(t *testing.T, td *datadriven.TestData, out *strings.Builder) {
	before := d.partitions()
	switch td.Cmd {
	case "register":
		// register broker=N: registration and a first heartbeat, which
		// unfences it.
		id := int32(ctlInt(t, td, "broker"))
		register(t, d.c, id, ctlStr(td, "rack"))
		fmt.Fprintf(out, "broker %d registered, unfenced\n", id)
	case "fence", "unfence", "shutdown":
		// A heartbeat asking to be fenced, a plain one, or one asking for
		// a controlled shutdown.
		id := int32(ctlInt(t, td, "broker"))
		b := d.c.Image().Brokers[id]
		res, err := d.c.Heartbeat(ctx(t), BrokerHeartbeat{BrokerID: id, BrokerEpoch: b.Epoch, CurrentMetadataOffset: b.Epoch,
			WantFence: td.Cmd == "fence", WantShutDown: td.Cmd == "shutdown"})
		if err != nil {
			fmt.Fprintf(out, "%s\n", errString(err))
			break
		}
		fmt.Fprintf(out, "broker %d fenced=%v should-shut-down=%v\n", id, res.IsFenced, res.ShouldShutDown)
	case "create-topic":
		// create-topic name=t assignments=(1 2 3, 2 3 1): partition i on
		// the i-th replica list, leader first.
		ct := CreateTopic{Name: ctlStr(td, "name"), NumPartitions: -1, ReplicationFactor: -1, Assignments: map[int32][]int32{}}
		for _, a := range td.CmdArgs {
			if a.Key != "assignments" {
				continue
			}
			for i, v := range a.Vals {
				var rs []int32
				for _, f := range strings.Fields(v) {
					n, err := strconv.ParseInt(f, 10, 32)
					if err != nil {
						t.Fatalf("%s: assignments: %v", td.Pos, err)
					}
					rs = append(rs, int32(n))
				}
				ct.Assignments[int32(i)] = rs
			}
		}
		res, err := d.c.CreateTopics(ctx(t), []CreateTopic{ct}, false)
		if err != nil {
			t.Fatalf("%s: %v", td.Pos, err)
		}
		fmt.Fprintf(out, "%s\n", errString(res[0].Err))
	case "alter-partition":
		// alter-partition broker=N topic=t partition=P leader-epoch=E
		// partition-epoch=E isr=(...), from the broker at its epoch (or,
		// with stale-broker-epoch, the one before).
		id := int32(ctlInt(t, td, "broker"))
		epoch := d.c.Image().Brokers[id].Epoch
		if td.HasArg("stale-broker-epoch") {
			epoch--
		}
		var tid metadata.UUID
		if tp := d.c.Image().TopicByName(ctlStr(td, "topic")); tp != nil {
			tid = tp.ID
		}
		res, err := d.c.AlterPartition(ctx(t), AlterPartitionRequest{BrokerID: id, BrokerEpoch: epoch, Partitions: []AlterPartitionItem{{
			TopicID: tid, Partition: int32(ctlInt(t, td, "partition")), LeaderEpoch: int32(ctlInt(t, td, "leader-epoch")),
			PartitionEpoch: int32(ctlInt(t, td, "partition-epoch")), NewISR: ctlList(t, td, "isr")}}})
		if err != nil {
			fmt.Fprintf(out, "%s\n", errString(err))
			break
		}
		r := res[0]
		if r.Err != nil {
			fmt.Fprintf(out, "%s\n", errString(r.Err))
			break
		}
		fmt.Fprintf(out, "NONE leader=%d leader-epoch=%d partition-epoch=%d isr=%v\n", r.Leader, r.LeaderEpoch, r.PartitionEpoch, r.ISR)
	case "elect":
		// elect type=preferred|unclean [topic=t partitions=(...)]: without
		// a topic, every partition.
		typ := ElectPreferred
		if ctlStr(td, "type") == "unclean" {
			typ = ElectUnclean
		}
		var topics []ElectionTopic
		if td.HasArg("topic") {
			topics = []ElectionTopic{{Topic: ctlStr(td, "topic"), Partitions: ctlList(t, td, "partitions")}}
		}
		res, err := d.c.ElectLeaders(ctx(t), typ, topics)
		if err != nil {
			fmt.Fprintf(out, "%s\n", errString(err))
			break
		}
		for _, tr := range res {
			if len(tr.Partitions) == 0 {
				fmt.Fprintf(out, "%s: nothing elected\n", tr.Topic)
			}
			for _, pr := range tr.Partitions {
				fmt.Fprintf(out, "%s-%d %s\n", tr.Topic, pr.Partition, errString(pr.Err))
			}
		}
	case "reassign":
		// reassign topic=t partition=P replicas=(...); replicas=() cancels.
		var rs []int32
		if ctlStr(td, "replicas") != "" {
			rs = ctlList(t, td, "replicas")
		}
		res, err := d.c.AlterPartitionReassignments(ctx(t), []Reassignment{{Topic: ctlStr(td, "topic"),
			Partition: int32(ctlInt(t, td, "partition")), Replicas: rs}}, false)
		if err != nil {
			fmt.Fprintf(out, "%s\n", errString(err))
			break
		}
		fmt.Fprintf(out, "%s\n", errString(res[0]))
	case "partitions":
		// Every partition's state.
		all := d.partitions()
		keys := slices.SortedFunc(maps.Keys(all), comparePartitionKeys)
		for _, k := range keys {
			fmt.Fprintf(out, "%s\n", partitionString(k, all[k]))
		}
		return
	default:
		t.Fatalf("%s: unknown command %q", td.Pos, td.Cmd)
	}
	after := d.partitions()
	keys := slices.SortedFunc(maps.Keys(after), comparePartitionKeys)
	for _, k := range keys {
		if old, ok := before[k]; !ok || !partitionEqual(old, after[k]) {
			fmt.Fprintf(out, "  %s\n", partitionString(k, after[k]))
		}
	}
}

func comparePartitionKeys(a, b partitionKey) int {
	if c := strings.Compare(a.topic, b.topic); c != 0 {
		return c
	}
	return int(a.id - b.id)
}
