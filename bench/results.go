package main

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"text/tabwriter"
)

// row is one measured quantity: every round's value for each broker.
type row struct {
	Workload string               `json:"workload"`
	Mode     string               `json:"mode"` // "default", "flush" or "" (independent of the mode)
	Metric   string               `json:"metric"`
	Unit     string               `json:"unit"`
	Higher   bool                 `json:"higher_is_better"`
	Values   map[string][]float64 `json:"values"` // by broker: "gregor", "kafka"
}

func (r *row) median(broker string) float64 { return median(r.Values[broker]) }

// results keeps rows in the order they were first measured.
type results struct {
	rows  []*row
	index map[string]*row
	// caveats qualifies every target judged in a mode, for example
	// "flush": "not durable-equivalent" while Gregor does not fsync there.
	caveats map[string]string
}

func newResults() *results { return &results{index: map[string]*row{}, caveats: map[string]string{}} }

func (rs *results) add(workload, mode, metric, unit string, higher bool, broker string, v float64) {
	k := workload + "\x00" + mode + "\x00" + metric
	r := rs.index[k]
	if r == nil {
		r = &row{Workload: workload, Mode: mode, Metric: metric, Unit: unit, Higher: higher, Values: map[string][]float64{}}
		rs.index[k] = r
		rs.rows = append(rs.rows, r)
	}
	r.Values[broker] = append(r.Values[broker], v)
}

func (rs *results) find(workload, mode, metric string) *row {
	return rs.index[workload+"\x00"+mode+"\x00"+metric]
}

// targetKind says how a target compares the medians.
type targetKind int

const (
	ratioAtLeast targetKind = iota // gregor/kafka >= bound
	ratioAtMost                    // gregor/kafka <= bound
	gregorBelow                    // gregor < bound, in the row's unit
)

// target is one of issue #6's goals, checked against one row.
type target struct {
	Goal     string
	Workload string
	Mode     string
	Metric   string
	Kind     targetKind
	Bound    float64
}

// targetResult is a target with the figure it was judged on.
type targetResult struct {
	Goal   string   `json:"goal"`
	Row    string   `json:"row"`
	Value  *float64 `json:"value"` // the ratio, or Gregor's median for absolute targets
	Status string   `json:"status"`
}

func (t target) check(rs *results) targetResult {
	tr := targetResult{Goal: t.Goal, Row: rowName(t.Workload, t.Mode, t.Metric), Status: "no data"}
	r := rs.find(t.Workload, t.Mode, t.Metric)
	if r == nil {
		return tr
	}
	var v float64
	var met bool
	switch t.Kind {
	case ratioAtLeast:
		v = ratio(r.median("gregor"), r.median("kafka"))
		met = v >= t.Bound
	case ratioAtMost:
		v = ratio(r.median("gregor"), r.median("kafka"))
		met = v <= t.Bound
	case gregorBelow:
		v = r.median("gregor")
		met = v < t.Bound
	}
	if math.IsNaN(v) {
		return tr
	}
	tr.Value = &v
	tr.Status = "NOT met"
	if met {
		tr.Status = "met"
	}
	if c := rs.caveats[t.Mode]; c != "" {
		tr.Status += " (" + c + ")"
	}
	return tr
}

func rowName(workload, mode, metric string) string {
	if mode == "" {
		return workload + " " + metric
	}
	return workload + " [" + mode + "] " + metric
}

// targets lists issue #6's goals for the modes that ran.
func targets(modes []string) []target {
	var ts []target
	for _, m := range modes {
		if m == "cluster" || m == "tls" {
			// Issue #6's targets are about a single PLAINTEXT node; the
			// cluster and tls modes report their ratios without judging
			// them.
			continue
		}
		// The flush mode runs the uncompressed produce tests only.
		for _, w := range []string{"perf-test 100 B none", "perf-test 100 B lz4", "franz-go 100 B"} {
			if m == "default" || !strings.HasSuffix(w, "lz4") {
				ts = append(ts, target{"produce 100 B >= 2x Kafka", w, m, "records/s", ratioAtLeast, 2})
			}
		}
		for _, w := range []string{"perf-test 1 KB none", "perf-test 1 KB lz4"} {
			if m == "default" || !strings.HasSuffix(w, "lz4") {
				ts = append(ts, target{"produce 1 KB >= 1.3x Kafka", w, m, "records/s", ratioAtLeast, 1.3})
			}
		}
		ts = append(ts, target{"p99 end-to-end <= 0.5x Kafka", "e2e 10k/s 1 KB", m, "p99", ratioAtMost, 0.5})
		if m == "default" {
			ts = append(ts, target{"consume >= 1.3x Kafka", "consume perf-test 1 KB", m, "MB/s", ratioAtLeast, 1.3})
		}
	}
	if slices.ContainsFunc(modes, func(m string) bool { return m != "cluster" }) {
		ts = append(ts,
			target{"start-up to first ack < 100 ms", "start-up", "", "to first ack", gregorBelow, 100},
			target{"idle RSS < 40 MB", "start-up", "", "idle RSS", gregorBelow, 40})
	}
	return ts
}

func formatValue(v float64) string {
	switch {
	case math.IsNaN(v):
		return "-"
	case math.Abs(v) >= 1000:
		return fmt.Sprintf("%.0f", v)
	case math.Abs(v) >= 10:
		return fmt.Sprintf("%.1f", v)
	default:
		return fmt.Sprintf("%.2f", v)
	}
}

func formatRatio(v float64) string {
	switch {
	case math.IsNaN(v):
		return "-"
	case v < 0.1:
		return fmt.Sprintf("%.3fx", v)
	default:
		return fmt.Sprintf("%.2fx", v)
	}
}

// cells is how both tables show r: workload, mode ("-" for none), metric,
// unit, each broker's median and their ratio.
func (r *row) cells() []string {
	mode := r.Mode
	if mode == "" {
		mode = "-"
	}
	g, k := r.median("gregor"), r.median("kafka")
	return []string{r.Workload, mode, r.Metric, r.Unit, formatValue(g), formatValue(k), formatRatio(ratio(g, k))}
}

// cells is how both tables show t: goal, row, value ("-" for none), status.
func (t targetResult) cells() []string {
	v := "-"
	if t.Value != nil {
		v = formatValue(*t.Value)
	}
	return []string{t.Goal, t.Row, v, t.Status}
}

// writeTable prints the medians as an aligned text table.
func writeTable(w io.Writer, rs *results, trs []targetResult, notes []string) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "workload\tmode\tmetric\tunit\tgregor\tkafka\tgregor/kafka\trounds\t")
	for _, r := range rs.rows {
		fmt.Fprintf(tw, "%s\t%d/%d\t\n", strings.Join(r.cells(), "\t"), len(r.Values["gregor"]), len(r.Values["kafka"]))
	}
	tw.Flush()
	if len(trs) > 0 {
		fmt.Fprintln(w)
		tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "target\tmeasured on\tvalue\tstatus")
		for _, t := range trs {
			fmt.Fprintln(tw, strings.Join(t.cells(), "\t"))
		}
		tw.Flush()
	}
	for _, n := range notes {
		fmt.Fprintln(w, "note:", n)
	}
}

// writeMarkdown writes the same tables in Markdown.
func writeMarkdown(w io.Writer, rs *results, trs []targetResult, notes []string, machine map[string]string) {
	fmt.Fprintln(w, "| workload | mode | metric | unit | Gregor | Kafka | Gregor/Kafka |")
	fmt.Fprintln(w, "| --- | --- | --- | --- | ---: | ---: | ---: |")
	for _, r := range rs.rows {
		fmt.Fprintf(w, "| %s |\n", strings.Join(r.cells(), " | "))
	}
	if len(trs) > 0 {
		fmt.Fprintln(w)
		fmt.Fprintln(w, "| target | measured on | value | status |")
		fmt.Fprintln(w, "| --- | --- | ---: | --- |")
		for _, t := range trs {
			fmt.Fprintf(w, "| %s |\n", strings.Join(t.cells(), " | "))
		}
	}
	if len(notes) > 0 {
		fmt.Fprintln(w)
		for _, n := range notes {
			fmt.Fprintln(w, "- "+n)
		}
	}
	if len(machine) > 0 {
		fmt.Fprintln(w)
		for _, k := range machineKeys {
			if v, ok := machine[k]; ok {
				fmt.Fprintf(w, "- %s: %s\n", k, strings.TrimSpace(v))
			}
		}
	}
}

// report is the JSON file a run writes.
type report struct {
	Started  string            `json:"started"`
	Finished string            `json:"finished"`
	Settings map[string]string `json:"settings"`
	Machine  map[string]string `json:"machine"`
	Rows     []jsonRow         `json:"rows"`
	Targets  []targetResult    `json:"targets"`
	Notes    []string          `json:"notes"`
}

type jsonRow struct {
	*row
	GregorMedian *float64 `json:"gregor_median"`
	KafkaMedian  *float64 `json:"kafka_median"`
	Ratio        *float64 `json:"ratio"`
}

// finite turns NaN (no data) into null, which JSON can carry.
func finite(v float64) *float64 {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return nil
	}
	return &v
}

func writeJSON(w io.Writer, rep report, rs *results) error {
	for _, r := range rs.rows {
		g, k := r.median("gregor"), r.median("kafka")
		rep.Rows = append(rep.Rows, jsonRow{row: r, GregorMedian: finite(g), KafkaMedian: finite(k), Ratio: finite(ratio(g, k))})
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(rep)
}
