package share

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestKafkaTranscripts replays the scenarios of testdata/kafka, whose
// expected outputs Kafka 4.4's own SharePartition produced (the harness in
// compat-tests/share-partition), and compares every command's outcome:
// acquired ranges and counts, acknowledgement results with Kafka's error
// codes and messages, the writes to the share coordinator, lock timeouts,
// and the whole in-flight state.
func TestKafkaTranscripts(t *testing.T) {
	files, err := filepath.Glob("testdata/kafka/*.txt")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no transcripts in testdata/kafka")
	}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			data, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			r := &transcript{cfg: DefaultConfig(), now: t0}
			lines := strings.Split(string(data), "\n")
			for i := 0; i < len(lines); i++ {
				cmd := strings.TrimSpace(lines[i])
				if cmd == "" || strings.HasPrefix(cmd, "#") {
					continue
				}
				if i+1 >= len(lines) || lines[i+1] != "----" {
					t.Fatalf("%s:%d: command without ---- line", file, i+1)
				}
				var want []string
				j := i + 2
				for ; j < len(lines) && lines[j] != ""; j++ {
					want = append(want, lines[j])
				}
				got := r.run(t, cmd)
				if strings.Join(got, "\n") != strings.Join(want, "\n") {
					t.Errorf("%s:%d: %s\ngot:\n%s\nKafka:\n%s", file, i+1, cmd, strings.Join(got, "\n"), strings.Join(want, "\n"))
				}
				i = j
			}
		})
	}
}

type transcript struct {
	cfg Config
	now time.Time
	p   *Partition
	log []string // batch specs in offset order, for acquire fetch=next
}

func kvArgs(parts []string) map[string]string {
	m := map[string]string{}
	for _, p := range parts {
		k, v, _ := strings.Cut(p, "=")
		m[k] = v
	}
	return m
}

func atoi(t *testing.T, s string) int64 {
	t.Helper()
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		t.Fatalf("bad number %q", s)
	}
	return v
}

func rangeOf(t *testing.T, s string) (int64, int64) {
	t.Helper()
	a, b, ok := strings.Cut(s, "-")
	if !ok {
		t.Fatalf("bad range %q", s)
	}
	return atoi(t, a), atoi(t, b)
}

func fmtBatches(bs []StateBatch) string {
	var sb strings.Builder
	for _, b := range bs {
		fmt.Fprintf(&sb, " %d-%d:%d:%d", b.FirstOffset, b.LastOffset, b.DeliveryState, b.DeliveryCount)
	}
	return sb.String()
}

func (r *transcript) writeLine(head string, w Write) string {
	if w.Empty() {
		return head
	}
	return fmt.Sprintf("%s start=%d complete=%d epochs=%d/%d wrote%s", head, w.StartOffset, w.DeliveryCompleteCount,
		w.StateEpoch, w.LeaderEpoch, fmtBatches(w.Batches))
}

func (r *transcript) run(t *testing.T, cmd string) []string {
	parts := strings.Fields(cmd)
	a := kvArgs(parts[1:])
	get := func(k, def string) string {
		if v, ok := a[k]; ok {
			return v
		}
		return def
	}
	switch parts[0] {
	case "config":
		r.cfg = Config{
			MaxDeliveryCount:   int(atoi(t, get("delivery", "5"))),
			MaxInFlightRecords: int(atoi(t, get("locks", "2000"))),
			LockDuration:       time.Duration(atoi(t, get("lock", "30000"))) * time.Millisecond,
			RenewEnabled:       get("renew", "true") == "true",
		}
		return []string{"ok"}
	case "load":
		st := PersistedState{StateEpoch: int32(atoi(t, get("epoch", "1"))), StartOffset: atoi(t, a["start"])}
		if b := a["batches"]; b != "" {
			for _, s := range strings.Split(b, ",") {
				f := strings.Split(s, ":")
				first, last := rangeOf(t, f[0])
				st.Batches = append(st.Batches, StateBatch{first, last, RecordState(atoi(t, f[1])), int16(atoi(t, f[2]))})
			}
		}
		p, err := Load(r.cfg, 3, st, AutoOffsetReset{}, LogOffsets{}, r.now)
		if err != nil {
			return []string{"error"}
		}
		r.p = p
		return []string{"ok"}
	case "log":
		r.log = strings.Split(a["batches"], ",")
		return []string{"ok"}
	case "acquire":
		var out []string
		if a["fetch"] == "next" {
			off := r.p.NextFetchOffset()
			n := int(atoi(t, get("n", "1")))
			var picked []string
			for _, b := range r.log {
				rng, _, _ := strings.Cut(b, "/")
				if _, last := rangeOf(t, rng); last < off || len(picked) >= n {
					continue
				}
				picked = append(picked, b)
			}
			if len(picked) == 0 {
				return []string{fmt.Sprintf("fetch %d nothing", off)}
			}
			a["fetch"] = strconv.FormatInt(off, 10)
			a["batches"] = strings.Join(picked, ",")
			out = append(out, fmt.Sprintf("fetch %d %s", off, a["batches"]))
		}
		req := AcquireRequest{Member: a["m"], BatchSize: int(atoi(t, get("size", "500"))), MaxRecords: int(atoi(t, a["max"])),
			FetchOffset: atoi(t, a["fetch"]), Now: r.now}
		if a["mode"] == "record_limit" {
			req.Mode = RecordLimit
		}
		_, req.ReadCommitted = a["committed"]
		for _, s := range strings.Split(a["batches"], ",") {
			rng, kind, _ := strings.Cut(s, "/")
			first, last := rangeOf(t, rng)
			b := FetchedBatch{BaseOffset: first, LastOffset: last, ProducerID: -1}
			if kind != "" {
				b.ProducerID = atoi(t, kind[1:])
				b.Transactional = true
				b.Control = kind[0] != 't'
				b.AbortMarker = kind[0] == 'a'
			}
			req.Batches = append(req.Batches, b)
		}
		if ab := a["aborted"]; ab != "" {
			for _, s := range strings.Split(ab, ",") {
				pid, first, _ := strings.Cut(s, "@")
				req.Aborted = append(req.Aborted, AbortedTxn{ProducerID: atoi(t, pid), FirstOffset: atoi(t, first)})
			}
		}
		got, n := r.p.Acquire(req)
		var sb strings.Builder
		sb.WriteString("acquired")
		if len(got) == 0 {
			sb.WriteString(" none")
		}
		for _, g := range got {
			fmt.Fprintf(&sb, " %d-%d:%d", g.FirstOffset, g.LastOffset, g.DeliveryCount)
		}
		fmt.Fprintf(&sb, " count=%d", n)
		return append(out, sb.String())
	case "ack":
		var acks []AckBatch
		for _, s := range parts[2:] {
			rng, types, _ := strings.Cut(s, ":")
			first, last := rangeOf(t, rng)
			b := AckBatch{FirstOffset: first, LastOffset: last}
			for _, ty := range strings.Split(types, ".") {
				b.Types = append(b.Types, AckType(atoi(t, ty)))
			}
			acks = append(acks, b)
		}
		w, err := r.p.Acknowledge(a["m"], acks, r.now)
		if err != nil {
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("error %v is not a share.Error", err)
			}
			return []string{fmt.Sprintf("error %s: %s", e.Code.Message, e.Message)}
		}
		return []string{r.writeLine("ok", w)}
	case "ackheld":
		// The member's acquired runs, each one batch of type t, up to k.
		k := int(atoi(t, get("k", "1000")))
		ty := AckType(atoi(t, a["t"]))
		var acks []AckBatch
		held := func(b *inFlightBatch, off int64) bool {
			s := b.state(off)
			return s.state == Acquired && s.member == a["m"]
		}
		for _, b := range r.p.cache {
			for off := b.first; off <= b.last; off++ {
				if !held(b, off) {
					continue
				}
				if n := len(acks); n > 0 && acks[n-1].LastOffset == off-1 {
					acks[n-1].LastOffset = off
					continue
				}
				acks = append(acks, AckBatch{FirstOffset: off, LastOffset: off, Types: []AckType{ty}})
			}
		}
		if len(acks) > k {
			acks = acks[:k]
		}
		line := "batches"
		for _, b := range acks {
			line += fmt.Sprintf(" %d-%d", b.FirstOffset, b.LastOffset)
		}
		w, err := r.p.Acknowledge(a["m"], acks, r.now)
		if err != nil {
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("error %v is not a share.Error", err)
			}
			return []string{line, fmt.Sprintf("error %s: %s", e.Code.Message, e.Message)}
		}
		return []string{line, r.writeLine("ok", w)}
	case "release":
		return []string{r.writeLine("released", r.p.ReleaseMember(a["m"]))}
	case "tick":
		r.now = r.now.Add(time.Duration(atoi(t, parts[1])) * time.Millisecond)
		w := r.p.Tick(r.now)
		if w.Empty() {
			return []string{"timeout none"}
		}
		return []string{"timeout" + fmtBatches(w.Batches)}
	case "logstart":
		r.p.AdvanceLogStart(atoi(t, parts[1]))
		return []string{"ok"}
	case "state":
		out := []string{fmt.Sprintf("start=%d end=%d next=%d", r.p.StartOffset(), r.p.EndOffset(), r.p.NextFetchOffset())}
		runKey := ""
		var runFirst, runLast int64
		flush := func() {
			if runKey != "" {
				out = append(out, fmt.Sprintf("%d-%d %s", runFirst, runLast, runKey))
			}
		}
		for _, b := range r.p.cache {
			for off := b.first; off <= b.last; off++ {
				s := b.state(off)
				member := s.member
				if member == "" {
					member = "-"
				}
				key := fmt.Sprintf("%v %d %s", s.state, s.count, member)
				if key == runKey && off == runLast+1 {
					runLast = off
					continue
				}
				flush()
				runKey, runFirst, runLast = key, off, off
			}
		}
		flush()
		return out
	}
	t.Fatalf("unknown command %q", cmd)
	return nil
}
