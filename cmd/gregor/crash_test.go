package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/gregor-broker/gregor/protocol/batch"
)

const (
	crashTopic      = "crash"
	crashPartitions = 2
	crashProducers  = 6
)

// crashCycles is how many kill -9 cycles TestCrashKill9KeepsAcknowledgedRecords
// runs: CRASH_CYCLES, or 50 (make crash-test runs 200).
func crashCycles(t *testing.T) int {
	if s := os.Getenv("CRASH_CYCLES"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			t.Fatalf("CRASH_CYCLES=%q is not a positive number", s)
		}
		return n
	}
	return 50
}

// TestCrashKill9KeepsAcknowledgedRecords runs gregor as a child process
// with log.flush.interval.messages=1 on a real data dir, has idempotent
// acks=all producers write to it, SIGKILLs it in the middle of their
// produces, restarts it, and checks through the Fetch API that every record
// acknowledged in any cycle so far is there, once, in its producer's order,
// in batches whose CRC-32C matches and whose offsets follow on. Records
// in flight at the kill may or may not be there. Each cycle kills after a
// random number of acknowledgements (seeded; the seed is logged).
func TestCrashKill9KeepsAcknowledgedRecords(t *testing.T) {
	if testing.Short() {
		t.Skip("starts and kills a child broker many times")
	}
	cycles := crashCycles(t)
	seed := time.Now().UnixNano()
	t.Logf("seed %d, %d cycles", seed, cycles)
	rng := rand.New(rand.NewPCG(uint64(seed), 0))
	dir := t.TempDir()
	acked := map[string]bool{} // every acknowledged value, all cycles
	started := time.Now()
	for cycle := range cycles {
		cmd, addr := startCrashChild(t, cycle, "serve --listen 127.0.0.1:0 --data-dir "+dir+
			" --override log.flush.interval.messages=1")
		if cycle == 0 {
			createCrashTopic(t, addr)
		} else {
			checkCrashLog(t, cycle, addr, acked)
		}
		killAfter := 20 + rng.IntN(300)
		produceUntilKilled(t, cycle, addr, killAfter, cmd.Process.Pid, acked)
		if err := cmd.Wait(); err == nil {
			t.Fatalf("cycle %d: gregor exited cleanly; it was to be killed", cycle)
		}
	}
	_, addr := startCrashChild(t, cycles, "serve --listen 127.0.0.1:0 --data-dir "+dir)
	// Records stored but never acknowledged: a kill caught them in flight.
	inFlight := checkCrashLog(t, cycles, addr, acked)
	t.Logf("%d kill -9 cycles in %v: %d acknowledged records all recovered; %d more were stored but never acknowledged (in flight at a kill)",
		cycles, time.Since(started).Round(time.Millisecond), len(acked), inFlight)
}

// startCrashChild starts a child as startGregor does (a child that exits
// before it is ready, a recovery that refuses the data dir say, is reported
// with its own log) and returns the address its readiness line names, so
// the child can listen on a port of its own choosing (no race for a port
// picked beforehand).
func startCrashChild(t *testing.T, cycle int, args string) (*exec.Cmd, string) {
	t.Helper()
	label := fmt.Sprintf("cycle %d", cycle)
	cmd, logs := startUntilReady(t, label, args)
	for _, field := range strings.Fields(logs[len(logs)-1]) {
		if addr, ok := strings.CutPrefix(field, "listen="); ok {
			return cmd, addr
		}
	}
	t.Fatalf("%s: gregor's readiness line names no listen= address; its log:\n%s", label, strings.Join(logs, "\n"))
	return nil, ""
}

func createCrashTopic(t *testing.T, addr string) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	adm := kadm.NewClient(cl)
	if _, err := adm.CreateTopic(ctx, crashPartitions, 1, nil, crashTopic); err != nil {
		t.Fatal(err)
	}
	// The policy under test must be the one in force.
	rcs, err := adm.DescribeTopicConfigs(ctx, crashTopic)
	if err != nil {
		t.Fatal(err)
	}
	rc, err := rcs.On(crashTopic, nil)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, c := range rc.Configs {
		if c.Key == "flush.messages" {
			found = true
			if c.MaybeValue() != "1" {
				t.Fatalf("flush.messages = %q, want 1 from log.flush.interval.messages", c.MaybeValue())
			}
		}
	}
	if !found {
		t.Fatal("DescribeConfigs does not report flush.messages")
	}
}

// produceUntilKilled runs the producers, SIGKILLs pid once killAfter of
// their records are acknowledged, and adds every acknowledged value to
// acked. Producer w writes values "c<cycle>-p<w>-<i>" to partition
// w%crashPartitions.
func produceUntilKilled(t *testing.T, cycle int, addr string, killAfter int, pid int, acked map[string]bool) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var (
		mu     sync.Mutex
		count  int
		killed = make(chan struct{})
		once   sync.Once
		wg     sync.WaitGroup
	)
	kill := func() {
		once.Do(func() {
			if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
				t.Errorf("kill: %v", err)
			}
			close(killed)
		})
	}
	for w := range crashProducers {
		cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.RequiredAcks(kgo.AllISRAcks()),
			kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerLinger(0),
			kgo.MaxBufferedRecords(32))
		if err != nil {
			t.Fatal(err)
		}
		wg.Go(func() {
			var inflight sync.WaitGroup
			for i := 0; ctx.Err() == nil; i++ {
				v := fmt.Sprintf("c%d-p%d-%d", cycle, w, i)
				inflight.Add(1)
				cl.Produce(ctx, &kgo.Record{Topic: crashTopic, Partition: int32(w % crashPartitions), Value: []byte(v)},
					func(_ *kgo.Record, err error) {
						defer inflight.Done()
						if err != nil {
							return // failed or unknown: the broker is gone
						}
						mu.Lock()
						acked[v] = true
						count++
						if count >= killAfter {
							kill()
						}
						mu.Unlock()
					})
			}
			// The ctx bounds only the wait for buffer space: records the
			// client holds are retried until Close fails them.
			cl.Close()
			inflight.Wait()
		})
	}
	select {
	case <-killed:
	case <-time.After(60 * time.Second):
		kill()
		t.Errorf("cycle %d: only %d records acknowledged in 60 s", cycle, count)
	}
	cancel() // producers stop and their clients fail what is buffered
	wg.Wait()
}

// checkCrashLog fetches both partitions from offset 0 and checks acked
// against them (see the test's comment).
// It returns how many stored records were never acknowledged: those in
// flight at the kill.
func checkCrashLog(t *testing.T, cycle int, addr string, acked map[string]bool) (unacked int) {
	t.Helper()
	// Kafka 2.8's versions: Fetch v12 names topics, as the request below does.
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.MaxVersions(kversion.V2_8_0()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	seen := map[string]bool{}
	type producer struct{ cycle, w int }
	last := map[producer]int{}
	for p := int32(0); p < crashPartitions; p++ {
		var scratch batch.Scratch
		for off := int64(0); ; {
			req := kmsg.NewPtrFetchRequest()
			req.ReplicaID, req.MaxBytes, req.SessionEpoch = -1, 8<<20, -1
			rt := kmsg.NewFetchRequestTopic()
			rt.Topic = crashTopic
			rp := kmsg.NewFetchRequestTopicPartition()
			rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes, rp.CurrentLeaderEpoch = p, off, 4<<20, -1
			rt.Partitions = append(rt.Partitions, rp)
			req.Topics = append(req.Topics, rt)
			resp, err := req.RequestWith(ctx, cl)
			if err != nil {
				t.Fatalf("cycle %d: fetch: %v", cycle, err)
			}
			fp := resp.Topics[0].Partitions[0]
			if fp.ErrorCode != 0 {
				t.Fatalf("cycle %d: fetch partition %d at %d: %v", cycle, p, off, kerr.ErrorForCode(fp.ErrorCode))
			}
			if len(fp.RecordBatches) == 0 {
				if off != fp.HighWatermark {
					t.Fatalf("cycle %d: partition %d: nothing at %d below the high watermark %d", cycle, p, off, fp.HighWatermark)
				}
				break
			}
			err = batch.Split(fp.RecordBatches, func(b []byte) error {
				h, err := batch.Check(b) // framing and CRC-32C
				if err != nil {
					return err
				}
				if h.BaseOffset != off {
					return fmt.Errorf("batch at offset %d, want %d", h.BaseOffset, off)
				}
				off = h.LastOffset() + 1
				var bad error
				err = batch.ForEachRecord(b, &scratch, func(_ *batch.Header, r *batch.Record) bool {
					v := string(r.Value)
					var c, w, i int
					if _, err := fmt.Sscanf(v, "c%d-p%d-%d", &c, &w, &i); err != nil {
						bad = fmt.Errorf("unexpected record %q", v)
						return false
					}
					if seen[v] {
						bad = fmt.Errorf("record %q stored twice", v)
						return false
					}
					seen[v] = true
					k := producer{c, w}
					if prev, ok := last[k]; ok && i <= prev {
						bad = fmt.Errorf("producer %d of cycle %d: record %d after %d", w, c, i, prev)
						return false
					}
					last[k] = i
					return true
				})
				if err == nil {
					err = bad
				}
				return err
			})
			if err != nil {
				t.Fatalf("cycle %d: partition %d: %v", cycle, p, err)
			}
		}
	}
	for v := range acked {
		if !seen[v] {
			t.Fatalf("cycle %d: acknowledged record %q is lost (%d of %d acknowledged records found)", cycle, v, len(seen), len(acked))
		}
	}
	return len(seen) - len(acked)
}
