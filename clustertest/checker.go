// Package clustertest holds the process-level fault tests of a Gregor
// cluster (issue #9): three `gregor serve` processes on loopback (or in
// network namespaces) under acks=all production, with partition leaders
// killed with SIGKILL, paused with SIGSTOP and cut off from their peers,
// and a checker of the recorded history.
//
// The package's code is the checker (this file); the harness and the
// scenarios are its tests. See docs/architecture.md, "Tests".
package clustertest

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// A Send is one record a producer sent, with its outcome. Value is unique
// across the history and names its producer and sequence (see Value).
type Send struct {
	Producer  string
	Seq       int
	Partition int32
	Value     string
	// Acked is true when the broker acknowledged the record (acks=all);
	// Offset is then the offset it was acknowledged at. A record that
	// failed, or whose outcome is unknown, may or may not be in the log.
	Acked  bool
	Offset int64
}

// A Read is one record a consumer saw: Value at Offset of Partition.
type Read struct {
	Reader    string
	Partition int32
	Offset    int64
	Value     string
}

// An Entry is one record of a partition's final log.
type Entry struct {
	Offset int64
	Value  string
}

// A History is everything producers and consumers saw during a run, and
// the partitions' final logs (read from the start to the high watermark once
// the cluster is healed and the producers have stopped).
type History struct {
	Sends []Send
	Reads []Read
	Final map[int32][]Entry
}

// Value is the record value of producer's record seq: "<producer>/<seq>".
func Value(producer string, seq int) string {
	return producer + "/" + strconv.Itoa(seq)
}

// parseValue splits a value made by Value.
func parseValue(v string) (producer string, seq int, ok bool) {
	i := strings.LastIndexByte(v, '/')
	if i <= 0 {
		return "", 0, false
	}
	seq, err := strconv.Atoi(v[i+1:])
	if err != nil || seq < 0 {
		return "", 0, false
	}
	return v[:i], seq, true
}

// An Anomaly is one violation the checker found.
type Anomaly struct {
	// Kind is one of: lost (an acknowledged record missing from the final
	// log), wrong-offset (an acknowledged record at another offset than
	// its acknowledgement said), duplicate (a value stored twice),
	// reorder (a producer's records out of its order within a partition),
	// vanished (a record a consumer saw that is not at its offset in the
	// final log), inconsistent-offset (one offset seen holding two
	// values), unknown-value (a final record no producer sent), hole (the
	// final log's offsets do not follow on).
	Kind   string
	Detail string
}

func (a Anomaly) String() string { return a.Kind + ": " + a.Detail }

// Summary counts what a checked history holds.
type Summary struct {
	Sent, Acked, Unacked, Reads, Final int
	// UnackedPresent counts sent records never acknowledged (failed or
	// unknown) that are in the final log.
	UnackedPresent int
}

func (s Summary) String() string {
	return fmt.Sprintf("%d records sent, %d acknowledged, %d failed or unknown (%d of them stored), %d consumer reads, %d records in the final logs",
		s.Sent, s.Acked, s.Unacked, s.UnackedPresent, s.Reads, s.Final)
}

type position struct {
	partition int32
	offset    int64
}

// Check checks h: every acknowledged record is in the final log exactly once,
// at the offset it was acknowledged at; no value is stored twice; each
// producer's records are in its order within a partition; every record a
// consumer saw is at the same offset in the final log; no offset was seen
// (by consumers or acknowledgements) holding two values; the final log holds
// only sent values at contiguous offsets. It returns every anomaly found,
// sorted, with a summary.
func Check(h History) ([]Anomaly, Summary) {
	var (
		out []Anomaly
		sum Summary
	)
	add := func(kind, format string, args ...any) {
		out = append(out, Anomaly{Kind: kind, Detail: fmt.Sprintf(format, args...)})
	}
	sent := make(map[string]*Send, len(h.Sends))
	for i := range h.Sends {
		s := &h.Sends[i]
		sent[s.Value] = s
		sum.Sent++
		if s.Acked {
			sum.Acked++
		} else {
			sum.Unacked++
		}
	}
	sum.Reads = len(h.Reads)

	// The final logs: where each value is, holes, duplicates, unknown
	// values, and each producer's order.
	final := map[position]string{}
	where := map[string]position{}
	partitions := make([]int32, 0, len(h.Final))
	for p := range h.Final {
		partitions = append(partitions, p)
	}
	slices.Sort(partitions)
	for _, p := range partitions {
		entries := h.Final[p]
		lastSeq := map[string]Entry{}
		for i, e := range entries {
			sum.Final++
			if i > 0 && e.Offset != entries[i-1].Offset+1 {
				add("hole", "partition %d: offset %d follows %d", p, e.Offset, entries[i-1].Offset)
			}
			pos := position{p, e.Offset}
			final[pos] = e.Value
			if prev, dup := where[e.Value]; dup {
				add("duplicate", "%q stored at partition %d offset %d and at partition %d offset %d",
					e.Value, prev.partition, prev.offset, p, e.Offset)
				continue
			}
			where[e.Value] = pos
			s, ok := sent[e.Value]
			if !ok {
				add("unknown-value", "partition %d offset %d holds %q, which no producer sent", p, e.Offset, e.Value)
				continue
			}
			if !s.Acked {
				sum.UnackedPresent++
			}
			if prev, ok := lastSeq[s.Producer]; ok {
				_, prevSeq, _ := parseValue(prev.Value)
				if prevSeq > s.Seq {
					add("reorder", "partition %d: producer %s's record %d at offset %d comes after its record %d at offset %d",
						p, s.Producer, s.Seq, e.Offset, prevSeq, prev.Offset)
				}
			}
			lastSeq[s.Producer] = e
		}
	}

	// Acknowledged records.
	seen := map[position]string{} // the first value seen at each position, by acks and reads
	for _, s := range h.Sends {
		if !s.Acked {
			continue
		}
		seen[position{s.Partition, s.Offset}] = s.Value
		pos, ok := where[s.Value]
		switch {
		case !ok:
			add("lost", "%q acknowledged at partition %d offset %d is not in the final log", s.Value, s.Partition, s.Offset)
		case pos != (position{s.Partition, s.Offset}):
			add("wrong-offset", "%q acknowledged at partition %d offset %d is at partition %d offset %d",
				s.Value, s.Partition, s.Offset, pos.partition, pos.offset)
		}
	}
	// Two acknowledgements of one offset.
	ackedAt := map[position]string{}
	for _, s := range h.Sends {
		if !s.Acked {
			continue
		}
		pos := position{s.Partition, s.Offset}
		if v, ok := ackedAt[pos]; ok && v != s.Value {
			add("inconsistent-offset", "partition %d offset %d acknowledged for %q and for %q", s.Partition, s.Offset, v, s.Value)
		}
		ackedAt[pos] = s.Value
	}

	// Reads: nothing seen disappears or changes.
	for _, r := range h.Reads {
		pos := position{r.Partition, r.Offset}
		if v, ok := seen[pos]; ok && v != r.Value {
			add("inconsistent-offset", "partition %d offset %d seen holding %q and %q (%s)", r.Partition, r.Offset, v, r.Value, r.Reader)
		} else if !ok {
			seen[pos] = r.Value
		}
		if v, ok := final[pos]; !ok {
			add("vanished", "%s saw %q at partition %d offset %d; the final log has nothing there", r.Reader, r.Value, r.Partition, r.Offset)
		} else if v != r.Value {
			add("vanished", "%s saw %q at partition %d offset %d; the final log has %q there", r.Reader, r.Value, r.Partition, r.Offset, v)
		}
	}

	slices.SortFunc(out, func(a, b Anomaly) int {
		return cmp.Or(cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.Detail, b.Detail))
	})
	out = slices.CompactFunc(out, func(a, b Anomaly) bool { return a == b })
	return out, sum
}
