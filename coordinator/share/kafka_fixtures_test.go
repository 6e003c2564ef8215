package share

import (
	"bufio"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The fixtures in testdata are written by Kafka 4.4.0's own classes
// (compat-tests/sharecoord/run.sh): records by its serde, combinations by
// its PersisterStateBatchCombiner, and operation sequences by its
// ShareCoordinatorShard.

func fixtureLines(t *testing.T, name string) [][]string {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out [][]string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		out = append(out, strings.Fields(line))
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(out) == 0 {
		t.Fatalf("%s is empty", name)
	}
	return out
}

func unhex(t *testing.T, s string) []byte {
	t.Helper()
	switch s {
	case "nil":
		return nil
	case "-":
		return []byte{}
	}
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatalf("bad hex %q: %v", s, err)
	}
	return b
}

func atoi[T int16 | int32 | int64](t *testing.T, s string) T {
	t.Helper()
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		t.Fatalf("bad number %q", s)
	}
	return T(v)
}

func parseBatches(t *testing.T, s string) []Batch {
	t.Helper()
	out := []Batch{}
	if s == "-" {
		return out
	}
	for _, b := range strings.Split(s, ",") {
		f := strings.Split(b, ":")
		if len(f) != 4 {
			t.Fatalf("bad batch %q", b)
		}
		out = append(out, Batch{atoi[int64](t, f[0]), atoi[int64](t, f[1]), int8(atoi[int16](t, f[2])), atoi[int16](t, f[3])})
	}
	return out
}

func formatBatches(bs []Batch) string {
	if len(bs) == 0 {
		return "-"
	}
	parts := make([]string, len(bs))
	for i, b := range bs {
		parts[i] = fmt.Sprintf("%d:%d:%d:%d", b.FirstOffset, b.LastOffset, b.DeliveryState, b.DeliveryCount)
	}
	return strings.Join(parts, ",")
}

// TestKafkaRecords: every record Kafka's serde wrote decodes, and our
// encoder writes the same bytes back.
func TestKafkaRecords(t *testing.T) {
	for _, f := range fixtureLines(t, "records.txt") {
		name, key, value := f[0], unhex(t, f[1]), unhex(t, f[2])
		t.Run(name, func(t *testing.T) {
			typ, k, o, err := DecodeRecord(key, value)
			if err != nil {
				t.Fatal(err)
			}
			var again Record
			switch {
			case o == nil:
				again = TombstoneRecord(k)
			case typ == SnapshotType:
				again = SnapshotRecord(k, o)
			default:
				again = UpdateRecord(k, o)
			}
			if hex.EncodeToString(again.Key) != f[1] {
				t.Errorf("key\n got %x\nwant %s", again.Key, f[1])
			}
			if (again.Value == nil) != (value == nil) || hex.EncodeToString(again.Value) != hex.EncodeToString(value) {
				t.Errorf("value\n got %x\nwant %x", again.Value, value)
			}
		})
	}
}

// TestKafkaPartitionFor: Kafka's partitionFor over random keys, unicode
// group ids included.
func TestKafkaPartitionFor(t *testing.T) {
	for _, f := range fixtureLines(t, "partitionfor.txt") {
		k := Key{GroupID: string(unhex(t, f[0])), Partition: atoi[int32](t, f[2])}
		copy(k.TopicID[:], unhex(t, f[1]))
		if got, want := PartitionFor(k, atoi[int32](t, f[3])), atoi[int32](t, f[4]); got != want {
			t.Errorf("PartitionFor(%q) = %d, want %d", k.CoordinatorKey(), got, want)
		}
	}
}

// TestKafkaCombine: PersisterStateBatchCombiner's results, its failures
// included.
func TestKafkaCombine(t *testing.T) {
	for i, f := range fixtureLines(t, "combine.txt") {
		got, err := Combine(parseBatches(t, f[0]), parseBatches(t, f[1]), atoi[int64](t, f[2]))
		want := f[3]
		if strings.HasPrefix(want, "!") {
			if err == nil || combineFailure != string(unhex(t, want[1:])) {
				t.Errorf("case %d (%v): got %s, %v; want the failure %q", i, f, formatBatches(got), err, unhex(t, want[1:]))
			}
			continue
		}
		if err != nil || formatBatches(got) != want {
			t.Errorf("case %d (%v): got %s, %v; want %s", i, f, formatBatches(got), err, want)
		}
	}
}

// diffImage is the harness's topic image: t1 with 3 partitions, t2 with 1.
func diffImage(id [16]byte) (int32, bool) {
	switch hex.EncodeToString(id[:]) {
	case "0102030405060708090a0b0c0d0e0f10":
		return 3, true
	case "7f00000000000001ff000000000000fe":
		return 1, true
	}
	return 0, false
}

// TestKafkaSequences feeds the operations Kafka's ShareCoordinatorShard
// was fed to a Coordinator and compares every answer and every record,
// byte for byte. A Kafka operation that threw is an UNKNOWN_SERVER_ERROR
// with the exception's message here, as Kafka's service answers it, and
// leaves no record.
func TestKafkaSequences(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "diff-*.txt"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no sequences: %v", err)
	}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) { runSequence(t, filepath.Base(file)) })
	}
}

func runSequence(t *testing.T, name string) {
	lines := fixtureLines(t, name)
	if lines[0][0] != "config" {
		t.Fatal("no config line")
	}
	cfg := DefaultConfig()
	cfg.UpdatesPerSnapshot = int(atoi[int32](t, lines[0][1]))
	c := New(cfg)
	in := Inputs{Partitions: diffImage, StatePartitions: 1}
	ops, crashes := 0, 0
	var log []Record
	for i := 1; i < len(lines); {
		op := lines[i]
		i++
		var want []string
		var wantRecs []string
		for ; lines[i][0] != "end"; i++ {
			switch lines[i][0] {
			case "resp", "crash":
				want = lines[i]
			case "rec":
				wantRecs = append(wantRecs, lines[i][1]+" "+lines[i][2])
			}
		}
		i++
		ops++
		got, prefix := applyOp(t, c, in, op)
		var gotRecs []string
		recs := c.Ready()
		log = append(log, recs...)
		for _, r := range recs {
			v := "nil"
			if r.Value != nil {
				v = hex.EncodeToString(r.Value)
			}
			gotRecs = append(gotRecs, hex.EncodeToString(r.Key)+" "+v)
		}
		if want[0] == "crash" {
			crashes++
			want = []string{"resp", strconv.Itoa(int(kerr.UnknownServerError.Code)), hex.EncodeToString([]byte(prefix + string(unhex(t, want[1]))))}
			if len(got) > 3 {
				got = got[:3]
			}
		}
		if op[1] == "cold" {
			// Kafka walks its hash map; the records are compared as a set.
			slices.Sort(gotRecs)
			slices.Sort(wantRecs)
		}
		if !slices.Equal(got, want) {
			t.Fatalf("%s op %d %v:\n got %v\nwant %v", name, ops, op, got, want)
		}
		if !slices.Equal(gotRecs, wantRecs) {
			t.Fatalf("%s op %d %v: records\n got %v\nwant %v", name, ops, op, gotRecs, wantRecs)
		}
		// The log alone rebuilds the same state, as a restart would.
		if ops%50 == 0 || i == len(lines) {
			if got, want := snapshotOf(rebuilt(t, cfg, log)), snapshotOf(c); !reflect.DeepEqual(got, want) {
				t.Fatalf("%s op %d: the log rebuilds\n%+v\nnot\n%+v", name, ops, got, want)
			}
		}
	}
	t.Logf("%d operations, %d of which Kafka failed", ops, crashes)
}

func msgHex(m *string) string {
	if m == nil {
		return "nil"
	}
	return hex.EncodeToString([]byte(*m))
}

// applyOp runs one fixture operation and formats the answer as the
// harness does; prefix is the service's prefix for a failed operation.
func applyOp(t *testing.T, c *Coordinator, in Inputs, op []string) ([]string, string) {
	now := atoi[int64](t, op[2])
	if op[1] == "cold" {
		c.SnapshotColdPartitions(now, in)
		return []string{"resp", "0", "nil"}, ""
	}
	group := op[3]
	var tid [16]byte
	copy(tid[:], unhex(t, op[4]))
	part := atoi[int32](t, op[5])
	switch op[1] {
	case "init":
		req := kmsg.NewPtrInitializeShareGroupStateRequest()
		req.GroupID = group
		tp := kmsg.NewInitializeShareGroupStateRequestTopicPartition()
		tp.Partition, tp.StateEpoch, tp.StartOffset = part, atoi[int32](t, op[6]), atoi[int64](t, op[7])
		rt := kmsg.NewInitializeShareGroupStateRequestTopic()
		rt.TopicID, rt.Partitions = tid, append(rt.Partitions, tp)
		req.Topics = append(req.Topics, rt)
		r := c.InitializeShareGroupState(now, req, in).Topics[0].Partitions[0]
		return []string{"resp", strconv.Itoa(int(r.ErrorCode)), msgHex(r.ErrorMessage)}, opInitialize
	case "write":
		req := kmsg.NewPtrWriteShareGroupStateRequest()
		req.Version = 1
		req.GroupID = group
		tp := kmsg.NewWriteShareGroupStateRequestTopicPartition()
		tp.Partition, tp.StateEpoch, tp.LeaderEpoch = part, atoi[int32](t, op[6]), atoi[int32](t, op[7])
		tp.StartOffset, tp.DeliveryCompleteCount = atoi[int64](t, op[8]), atoi[int32](t, op[9])
		for _, b := range parseBatches(t, op[10]) {
			sb := kmsg.NewWriteShareGroupStateRequestTopicPartitionStateBatch()
			sb.FirstOffset, sb.LastOffset, sb.DeliveryState, sb.DeliveryCount = b.FirstOffset, b.LastOffset, b.DeliveryState, b.DeliveryCount
			tp.StateBatches = append(tp.StateBatches, sb)
		}
		rt := kmsg.NewWriteShareGroupStateRequestTopic()
		rt.TopicID, rt.Partitions = tid, append(rt.Partitions, tp)
		req.Topics = append(req.Topics, rt)
		r := c.WriteShareGroupState(now, req, in).Topics[0].Partitions[0]
		return []string{"resp", strconv.Itoa(int(r.ErrorCode)), msgHex(r.ErrorMessage)}, opWrite
	case "read":
		req := kmsg.NewPtrReadShareGroupStateRequest()
		req.GroupID = group
		tp := kmsg.NewReadShareGroupStateRequestTopicPartition()
		tp.Partition, tp.LeaderEpoch = part, atoi[int32](t, op[6])
		rt := kmsg.NewReadShareGroupStateRequestTopic()
		rt.TopicID, rt.Partitions = tid, append(rt.Partitions, tp)
		req.Topics = append(req.Topics, rt)
		r := c.ReadShareGroupState(now, req, in).Topics[0].Partitions[0]
		var bs []Batch
		for _, b := range r.StateBatches {
			bs = append(bs, Batch{b.FirstOffset, b.LastOffset, b.DeliveryState, b.DeliveryCount})
		}
		return []string{"resp", strconv.Itoa(int(r.ErrorCode)), msgHex(r.ErrorMessage), strconv.Itoa(int(r.StateEpoch)),
			strconv.FormatInt(r.StartOffset, 10), formatBatches(bs)}, opRead
	case "summary":
		req := kmsg.NewPtrReadShareGroupStateSummaryRequest()
		req.Version = 1
		req.GroupID = group
		tp := kmsg.NewReadShareGroupStateSummaryRequestTopicPartition()
		tp.Partition = part
		rt := kmsg.NewReadShareGroupStateSummaryRequestTopic()
		rt.TopicID, rt.Partitions = tid, append(rt.Partitions, tp)
		req.Topics = append(req.Topics, rt)
		r := c.ReadShareGroupStateSummary(now, req, in).Topics[0].Partitions[0]
		return []string{"resp", strconv.Itoa(int(r.ErrorCode)), msgHex(r.ErrorMessage), strconv.Itoa(int(r.StateEpoch)),
			strconv.Itoa(int(r.LeaderEpoch)), strconv.FormatInt(r.StartOffset, 10), strconv.Itoa(int(r.DeliveryCompleteCount))}, opSummary
	case "delete":
		req := kmsg.NewPtrDeleteShareGroupStateRequest()
		req.GroupID = group
		tp := kmsg.NewDeleteShareGroupStateRequestTopicPartition()
		tp.Partition = part
		rt := kmsg.NewDeleteShareGroupStateRequestTopic()
		rt.TopicID, rt.Partitions = tid, append(rt.Partitions, tp)
		req.Topics = append(req.Topics, rt)
		r := c.DeleteShareGroupState(now, req, in).Topics[0].Partitions[0]
		return []string{"resp", strconv.Itoa(int(r.ErrorCode)), msgHex(r.ErrorMessage)}, opDelete
	}
	t.Fatalf("unknown op %v", op)
	return nil, ""
}
