package clustertest

import (
	"slices"
	"testing"
)

// acked and unacked build sends of producer "a" to partition 0.
func acked(seq int, offset int64) Send {
	return Send{Producer: "a", Seq: seq, Value: Value("a", seq), Acked: true, Offset: offset}
}

func unacked(seq int) Send {
	return Send{Producer: "a", Seq: seq, Value: Value("a", seq)}
}

func log0(values ...string) map[int32][]Entry {
	var es []Entry
	for i, v := range values {
		es = append(es, Entry{Offset: int64(i), Value: v})
	}
	return map[int32][]Entry{0: es}
}

func TestCheck(t *testing.T) {
	a := func(seq int) string { return Value("a", seq) }
	tests := []struct {
		name  string
		h     History
		kinds []string // the anomalies' kinds, sorted; none for a valid history
	}{
		{
			name: "valid: everything acknowledged, read and stored once",
			h: History{
				Sends: []Send{acked(0, 0), acked(1, 1), acked(2, 2)},
				Reads: []Read{{"c1", 0, 0, a(0)}, {"c1", 0, 1, a(1)}, {"c2", 0, 1, a(1)}},
				Final: log0(a(0), a(1), a(2)),
			},
		},
		{
			name: "valid: an unacknowledged record may be stored or not",
			h: History{
				Sends: []Send{acked(0, 0), unacked(1), unacked(2), acked(3, 2)},
				Final: log0(a(0), a(1), a(3)),
			},
		},
		{
			name: "valid: two producers interleaved, two partitions",
			h: History{
				Sends: []Send{
					{Producer: "a", Seq: 0, Value: a(0), Acked: true, Offset: 0},
					{Producer: "b", Seq: 0, Value: Value("b", 0), Acked: true, Offset: 1},
					{Producer: "a", Seq: 1, Partition: 1, Value: a(1), Acked: true, Offset: 0},
					{Producer: "a", Seq: 2, Value: a(2), Acked: true, Offset: 2},
				},
				Final: map[int32][]Entry{
					0: {{0, a(0)}, {1, Value("b", 0)}, {2, a(2)}},
					1: {{0, a(1)}},
				},
			},
		},
		{
			name:  "lost acknowledged record",
			h:     History{Sends: []Send{acked(0, 0), acked(1, 1)}, Final: log0(a(0))},
			kinds: []string{"lost"},
		},
		{
			name:  "acknowledged at another offset",
			h:     History{Sends: []Send{unacked(0), acked(1, 0)}, Final: log0(a(0), a(1))},
			kinds: []string{"wrong-offset"},
		},
		{
			name:  "duplicate",
			h:     History{Sends: []Send{acked(0, 0), acked(1, 1)}, Final: log0(a(0), a(1), a(1))},
			kinds: []string{"duplicate"},
		},
		{
			name:  "duplicate of an unacknowledged record",
			h:     History{Sends: []Send{unacked(0)}, Final: log0(a(0), a(0))},
			kinds: []string{"duplicate"},
		},
		{
			name:  "reorder",
			h:     History{Sends: []Send{acked(0, 1), acked(1, 0)}, Final: log0(a(1), a(0))},
			kinds: []string{"reorder"},
		},
		{
			name: "vanished read: a consumer saw a record the final log does not have",
			h: History{
				Sends: []Send{acked(0, 0), unacked(1)},
				Reads: []Read{{"c1", 0, 1, a(1)}},
				Final: log0(a(0)),
			},
			kinds: []string{"vanished"},
		},
		{
			name: "vanished read: the offset holds another record at the end",
			h: History{
				Sends: []Send{acked(0, 0), unacked(1), acked(2, 1)},
				Reads: []Read{{"c1", 0, 1, a(1)}},
				Final: log0(a(0), a(2)),
			},
			kinds: []string{"inconsistent-offset", "vanished"},
		},
		{
			name: "two consumers saw two values at one offset",
			h: History{
				Sends: []Send{unacked(0), unacked(1)},
				Reads: []Read{{"c1", 0, 0, a(0)}, {"c2", 0, 0, a(1)}},
				Final: log0(a(0)),
			},
			kinds: []string{"inconsistent-offset", "vanished"},
		},
		{
			name:  "two acknowledgements of one offset",
			h:     History{Sends: []Send{acked(0, 0), acked(1, 0)}, Final: log0(a(0), a(1))},
			kinds: []string{"inconsistent-offset", "wrong-offset"},
		},
		{
			name:  "a value no producer sent",
			h:     History{Sends: []Send{acked(0, 0)}, Final: log0(a(0), "x/1")},
			kinds: []string{"unknown-value"},
		},
		{
			name: "hole in the final log",
			h: History{Sends: []Send{acked(0, 0), acked(1, 2)},
				Final: map[int32][]Entry{0: {{0, a(0)}, {2, a(1)}}}},
			kinds: []string{"hole"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			anomalies, _ := Check(tt.h)
			var kinds []string
			for _, a := range anomalies {
				kinds = append(kinds, a.Kind)
			}
			kinds = slices.Compact(kinds)
			if !slices.Equal(kinds, tt.kinds) {
				t.Errorf("anomalies %v, want kinds %v", anomalies, tt.kinds)
			}
		})
	}
}

func TestCheckSummary(t *testing.T) {
	h := History{
		Sends: []Send{acked(0, 0), unacked(1), unacked(2), acked(3, 2)},
		Reads: []Read{{"c", 0, 0, Value("a", 0)}},
		Final: log0(Value("a", 0), Value("a", 1), Value("a", 3)),
	}
	anomalies, sum := Check(h)
	if len(anomalies) != 0 {
		t.Fatal(anomalies)
	}
	want := Summary{Sent: 4, Acked: 2, Unacked: 2, Reads: 1, Final: 3, UnackedPresent: 1}
	if sum != want {
		t.Errorf("summary %+v, want %+v", sum, want)
	}
}

func TestParseValue(t *testing.T) {
	for _, tt := range []struct {
		v        string
		producer string
		seq      int
		ok       bool
	}{
		{"a/0", "a", 0, true},
		{"run-1/p2/17", "run-1/p2", 17, true},
		{"a", "", 0, false},
		{"/3", "", 0, false},
		{"a/-1", "", 0, false},
		{"a/x", "", 0, false},
	} {
		p, s, ok := parseValue(tt.v)
		if p != tt.producer || s != tt.seq || ok != tt.ok {
			t.Errorf("parseValue(%q) = %q, %d, %v; want %q, %d, %v", tt.v, p, s, ok, tt.producer, tt.seq, tt.ok)
		}
	}
}
