package main

import (
	"bytes"
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"
)

func TestMedian(t *testing.T) {
	tests := []struct {
		in   []float64
		want float64
	}{
		{in: nil, want: math.NaN()},
		{in: []float64{7}, want: 7},
		{in: []float64{3, 1, 2}, want: 2},
		{in: []float64{4, 1, 3, 2}, want: 2.5},
		{in: []float64{10, 10, 1000}, want: 10},
	}
	for _, tt := range tests {
		in := append([]float64(nil), tt.in...)
		got := median(tt.in)
		if !(got == tt.want || math.IsNaN(got) && math.IsNaN(tt.want)) {
			t.Errorf("median(%v) = %v, want %v", tt.in, got, tt.want)
		}
		for i := range in {
			if in[i] != tt.in[i] {
				t.Fatalf("median reordered its input: %v, was %v", tt.in, in)
			}
		}
	}
}

func TestRatio(t *testing.T) {
	tests := []struct {
		g, k, want float64
	}{
		{g: 200, k: 100, want: 2},
		{g: 50, k: 100, want: 0.5},
		{g: 1, k: 0, want: math.NaN()},
		{g: math.NaN(), k: 1, want: math.NaN()},
		{g: 1, k: math.NaN(), want: math.NaN()},
	}
	for _, tt := range tests {
		got := ratio(tt.g, tt.k)
		if !(got == tt.want || math.IsNaN(got) && math.IsNaN(tt.want)) {
			t.Errorf("ratio(%v, %v) = %v, want %v", tt.g, tt.k, got, tt.want)
		}
	}
}

func TestPercentile(t *testing.T) {
	var hundred []time.Duration
	for i := 1; i <= 100; i++ {
		hundred = append(hundred, time.Duration(i)*time.Millisecond)
	}
	tests := []struct {
		name   string
		sorted []time.Duration
		q      float64
		want   time.Duration
	}{
		{name: "empty", q: 0.5, want: 0},
		{name: "one", sorted: []time.Duration{3}, q: 0.999, want: 3},
		{name: "p50 of 100", sorted: hundred, q: 0.5, want: 50 * time.Millisecond},
		{name: "p99 of 100", sorted: hundred, q: 0.99, want: 99 * time.Millisecond},
		{name: "p99.9 of 100 is the maximum", sorted: hundred, q: 0.999, want: 100 * time.Millisecond},
		{name: "tiny q is the minimum", sorted: hundred, q: 0.0001, want: time.Millisecond},
	}
	for _, tt := range tests {
		if got := percentile(tt.sorted, tt.q); got != tt.want {
			t.Errorf("%s: percentile(q=%v) = %v, want %v", tt.name, tt.q, got, tt.want)
		}
	}
}

func TestTargetCheck(t *testing.T) {
	rs := newResults()
	for _, v := range []float64{300, 100, 200} { // median 200
		rs.add("perf-test 100 B none", "default", "records/s", "rec/s", true, "gregor", v)
	}
	for _, v := range []float64{100, 90, 110} { // median 100
		rs.add("perf-test 100 B none", "default", "records/s", "rec/s", true, "kafka", v)
	}
	rs.add("e2e 10k/s 1 KB", "default", "p99", "ms", false, "gregor", 6)
	rs.add("e2e 10k/s 1 KB", "default", "p99", "ms", false, "kafka", 10)
	rs.add("start-up", "", "to first ack", "ms", false, "gregor", 42)
	rs.add("start-up", "", "idle RSS", "MiB", false, "kafka", 400) // no Gregor value

	tests := []struct {
		t          target
		wantStatus string
		wantValue  float64
	}{
		{target{"2x", "perf-test 100 B none", "default", "records/s", ratioAtLeast, 2}, "met", 2},
		{target{"3x", "perf-test 100 B none", "default", "records/s", ratioAtLeast, 3}, "NOT met", 2},
		{target{"half latency", "e2e 10k/s 1 KB", "default", "p99", ratioAtMost, 0.5}, "NOT met", 0.6},
		{target{"startup", "start-up", "", "to first ack", gregorBelow, 100}, "met", 42},
		{target{"rss", "start-up", "", "idle RSS", gregorBelow, 40}, "no data", 0},
		{target{"missing row", "consume perf-test 1 KB", "default", "MB/s", ratioAtLeast, 1.3}, "no data", 0},
	}
	rs.add("e2e 10k/s 1 KB", "flush", "p99", "ms", false, "gregor", 1)
	rs.add("e2e 10k/s 1 KB", "flush", "p99", "ms", false, "kafka", 10)
	rs.caveats["flush"] = "not durable-equivalent"
	tests = append(tests, struct {
		t          target
		wantStatus string
		wantValue  float64
	}{target{"caveat", "e2e 10k/s 1 KB", "flush", "p99", ratioAtMost, 0.5}, "met (not durable-equivalent)", 0.1})
	for _, tt := range tests {
		got := tt.t.check(rs)
		if got.Status != tt.wantStatus {
			t.Errorf("%s: status %q, want %q", tt.t.Goal, got.Status, tt.wantStatus)
		}
		if tt.wantStatus == "no data" {
			if got.Value != nil {
				t.Errorf("%s: value %v with no data", tt.t.Goal, *got.Value)
			}
			continue
		}
		if got.Value == nil || math.Abs(*got.Value-tt.wantValue) > 1e-9 {
			t.Errorf("%s: value %v, want %v", tt.t.Goal, got.Value, tt.wantValue)
		}
	}
}

// TestReportsCarryMissingData writes a row with only one broker's values:
// the table shows "-" and the JSON null, never NaN (which encoding/json
// refuses).
func TestReportsCarryMissingData(t *testing.T) {
	rs := newResults()
	rs.add("consume perf-test 1 KB", "default", "MB/s", "MiB/s", true, "kafka", 512)
	var trs []targetResult
	for _, tg := range targets([]string{"default"}) {
		trs = append(trs, tg.check(rs))
	}
	var table, md, js bytes.Buffer
	writeTable(&table, rs, trs, []string{"a note"})
	writeMarkdown(&md, rs, trs, nil, map[string]string{"cpu": "test cpu"})
	if err := writeJSON(&js, report{}, rs); err != nil {
		t.Fatalf("writeJSON: %v", err)
	}
	for name, out := range map[string]string{"table": table.String(), "markdown": md.String()} {
		if !strings.Contains(out, "consume perf-test 1 KB") || !strings.Contains(out, "512") || strings.Contains(out, "NaN") {
			t.Errorf("%s:\n%s", name, out)
		}
	}
	if !strings.Contains(md.String(), "- cpu: test cpu") {
		t.Errorf("markdown lacks the machine:\n%s", md.String())
	}
	var decoded struct {
		Rows []struct {
			GregorMedian *float64 `json:"gregor_median"`
			KafkaMedian  *float64 `json:"kafka_median"`
			Ratio        *float64 `json:"ratio"`
		} `json:"rows"`
	}
	if err := json.Unmarshal(js.Bytes(), &decoded); err != nil {
		t.Fatalf("JSON: %v\n%s", err, js.String())
	}
	if len(decoded.Rows) != 1 || decoded.Rows[0].GregorMedian != nil || decoded.Rows[0].Ratio != nil ||
		decoded.Rows[0].KafkaMedian == nil || *decoded.Rows[0].KafkaMedian != 512 {
		t.Errorf("JSON rows: %s", js.String())
	}
}

func TestFormatRatio(t *testing.T) {
	tests := []struct {
		in   float64
		want string
	}{
		{math.NaN(), "-"},
		{12.5 / 5829, "0.002x"},
		{0.56, "0.56x"},
		{3.333, "3.33x"},
	}
	for _, tt := range tests {
		if got := formatRatio(tt.in); got != tt.want {
			t.Errorf("formatRatio(%v) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
