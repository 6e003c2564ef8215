package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// partitions is the partition count of every topic the bench creates, as in
// Kafka's classic single-producer benchmark.
const partitions = 6

// javaTool runs Kafka's command-line tools with the JVM settings
// kafka-producer-perf-test.sh and kafka-run-class.sh give them (512 MiB heap,
// G1, full JIT), not the start-up-tuned settings compat-tests uses: the
// client must not be what limits the broker.
type javaTool struct {
	java      string
	classpath string
	log4j     string
}

func (j javaTool) run(ctx context.Context, class string, args ...string) (string, error) {
	argv := []string{"-Xmx512M", "-XX:+UseG1GC", "-XX:MaxGCPauseMillis=20", "-XX:InitiatingHeapOccupancyPercent=35",
		"-Djava.awt.headless=true", "-Dlog4j2.configurationFile=" + j.log4j, "-cp", j.classpath, class}
	cmd := exec.CommandContext(ctx, j.java, append(argv, args...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String(), fmt.Errorf("%s: %w\n%s%s", class, err, tail(stdout.String(), 10), tail(stderr.String(), 20))
	}
	return stdout.String(), nil
}

func tail(s string, lines int) string {
	l := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(l) > lines {
		l = l[len(l)-lines:]
	}
	return strings.Join(l, "\n") + "\n"
}

// producerPerfRun is kafka-producer-perf-test with the settings.
func (j javaTool) producerPerfRun(ctx context.Context, addr brokerAddr, topic string, size, count int, codec string) (producerPerf, error) {
	props := append([]string{"bootstrap.servers=" + addr.bootstrap, "acks=all", "batch.size=65536", "linger.ms=5", "compression.type=" + codec},
		addr.clientProps...)
	out, err := j.run(ctx, "org.apache.kafka.tools.ProducerPerformance", append([]string{
		"--topic", topic, "--num-records", strconv.Itoa(count), "--record-size", strconv.Itoa(size), "--throughput", "-1",
		"--producer-props"}, props...)...)
	if err != nil {
		return producerPerf{}, err
	}
	return parseProducerPerf(out)
}

// consumerPerfRun is kafka-consumer-perf-test reading count records from
// the start of topic in a new group.
func (j javaTool) consumerPerfRun(ctx context.Context, addr brokerAddr, topic, group string, count int) (consumerPerf, error) {
	args := []string{"--bootstrap-server", addr.bootstrap, "--topic", topic, "--group", group, "--messages", strconv.Itoa(count),
		"--timeout", "60000"}
	if len(addr.clientProps) > 0 {
		f, err := os.CreateTemp("", "bench-consumer-*.properties")
		if err != nil {
			return consumerPerf{}, err
		}
		f.Close()
		defer os.Remove(f.Name())
		if err := writeProps(f.Name(), addr.clientProps); err != nil {
			return consumerPerf{}, err
		}
		args = append(args, "--command-config", f.Name())
	}
	out, err := j.run(ctx, "org.apache.kafka.tools.ConsumerPerformance", args...)
	if err != nil {
		return consumerPerf{}, err
	}
	return parseConsumerPerf(out)
}

// createTopic creates topic with the bench's partition count; flushEvery sets
// the topic config flush.messages=1 (an fsync after every append).
func createTopic(ctx context.Context, addr brokerAddr, topic string, flushEvery bool) error {
	configs := map[string]*string{}
	if flushEvery {
		one := "1"
		configs["flush.messages"] = &one
	}
	return createTopicWith(ctx, addr, topic, 1, configs)
}

// createTopicWith creates topic with the bench's partition count, the
// replication factor rf and the topic configs.
func createTopicWith(ctx context.Context, addr brokerAddr, topic string, rf int16, configs map[string]*string) error {
	cl, err := kgo.NewClient(addr.opts()...)
	if err != nil {
		return err
	}
	defer cl.Close()
	resp, err := kadm.NewClient(cl).CreateTopic(ctx, partitions, rf, configs, topic)
	if err != nil {
		return fmt.Errorf("create topic %s: %w", topic, err)
	}
	return resp.Err
}

// flushStoredOnly reports whether the broker documents flush.messages as a
// config it stores without acting on, which Gregor's DescribeConfigs does
// until its fsync policy lands.
func flushStoredOnly(ctx context.Context, addr brokerAddr, topic string) (bool, error) {
	cl, err := kgo.NewClient(addr.opts()...)
	if err != nil {
		return false, err
	}
	defer cl.Close()
	req := kmsg.NewPtrDescribeConfigsRequest()
	req.IncludeDocumentation = true
	res := kmsg.NewDescribeConfigsRequestResource()
	res.ResourceType, res.ResourceName, res.ConfigNames = kmsg.ConfigResourceTypeTopic, topic, []string{"flush.messages"}
	req.Resources = append(req.Resources, res)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return false, err
	}
	for _, r := range resp.Resources {
		for _, c := range r.Configs {
			if c.Documentation != nil && strings.Contains(*c.Documentation, "stored only") {
				return true, nil
			}
		}
	}
	return false, nil
}

// produceResult is what franzProduce measured.
type produceResult struct {
	RecordsSec float64
	MBSec      float64 // MiB/s of record values, as the perf tools count
}

// franzProduce sends count records of size bytes as fast as franz-go can
// (acks=all, idempotent, linger 5 ms, its sticky partitioner) and waits until
// all are acknowledged.
func franzProduce(ctx context.Context, addr brokerAddr, topic string, size, count int) (produceResult, error) {
	cl, err := kgo.NewClient(addr.opts(kgo.DefaultProduceTopic(topic),
		kgo.RequiredAcks(kgo.AllISRAcks()), kgo.ProducerLinger(5*time.Millisecond), kgo.MaxBufferedRecords(100_000),
		kgo.ProducerBatchCompression(kgo.NoCompression()))...)
	if err != nil {
		return produceResult{}, err
	}
	defer cl.Close()
	value := make([]byte, size)
	_, _ = rand.Read(value)
	var failed atomic.Pointer[error]
	done := func(_ *kgo.Record, err error) {
		if err != nil {
			failed.CompareAndSwap(nil, &err)
		}
	}
	began := time.Now()
	for range count {
		cl.Produce(ctx, &kgo.Record{Value: value}, done)
		if failed.Load() != nil {
			break
		}
	}
	if err := cl.Flush(ctx); err != nil {
		return produceResult{}, err
	}
	elapsed := time.Since(began).Seconds()
	if errp := failed.Load(); errp != nil {
		return produceResult{}, fmt.Errorf("produce: %w", *errp)
	}
	return produceResult{
		RecordsSec: float64(count) / elapsed,
		MBSec:      float64(count) * float64(size) / (1 << 20) / elapsed,
	}, nil
}

// latencyResult is what e2eLatency measured.
type latencyResult struct {
	P50, P99, P999 time.Duration
	AchievedRate   float64 // records/s the producer actually sent
	Samples        int
}

// e2eLatency produces rate records/s of size bytes for duration and consumes
// them in the same process: each record carries its send time, and its
// latency is the time it comes out of a poll minus that. The producer sends
// with acks=all and no linger; the consumer reads the partitions directly
// (no group). Records sent in the first warmup are left out of the figures.
func e2eLatency(ctx context.Context, addr brokerAddr, topic string, rate, size int, duration, warmup time.Duration) (latencyResult, error) {
	total := int(float64(rate) * duration.Seconds())
	interval := time.Second / time.Duration(rate)
	prod, err := kgo.NewClient(addr.opts(kgo.DefaultProduceTopic(topic),
		kgo.RequiredAcks(kgo.AllISRAcks()), kgo.ProducerLinger(0))...)
	if err != nil {
		return latencyResult{}, err
	}
	defer prod.Close()
	cons, err := kgo.NewClient(addr.opts(kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))...)
	if err != nil {
		return latencyResult{}, err
	}
	defer cons.Close()

	base := time.Now()
	var (
		mu        sync.Mutex
		latencies = make([]time.Duration, 0, total)
	)
	consumed := make(chan error, 1)
	cctx, cancel := context.WithTimeout(ctx, duration+2*time.Minute)
	defer cancel()
	go func() {
		received := 0
		for received < total {
			fetches := cons.PollFetches(cctx)
			now := time.Since(base)
			if err := cctx.Err(); err != nil {
				consumed <- fmt.Errorf("received %d of %d records: %w", received, total, err)
				return
			}
			var ferr error
			fetches.EachError(func(_ string, _ int32, err error) { ferr = err })
			if ferr != nil {
				consumed <- ferr
				return
			}
			mu.Lock()
			fetches.EachRecord(func(r *kgo.Record) {
				received++
				if len(r.Value) < 8 {
					return
				}
				sent := time.Duration(binary.BigEndian.Uint64(r.Value))
				if sent >= warmup {
					latencies = append(latencies, now-sent)
				}
			})
			mu.Unlock()
		}
		consumed <- nil
	}()

	var failed atomic.Pointer[error]
	done := func(_ *kgo.Record, err error) {
		if err != nil {
			failed.CompareAndSwap(nil, &err)
		}
	}
	payload := make([]byte, size)
	_, _ = rand.Read(payload)
	sent := 0
	for sent < total && failed.Load() == nil && ctx.Err() == nil {
		due := min(int(time.Since(base)/interval)+1, total)
		for ; sent < due; sent++ {
			v := slices.Clone(payload)
			binary.BigEndian.PutUint64(v, uint64(time.Since(base)))
			prod.Produce(ctx, &kgo.Record{Value: v}, done)
		}
		time.Sleep(time.Millisecond)
	}
	sendTime := time.Since(base)
	if err := prod.Flush(ctx); err != nil {
		return latencyResult{}, err
	}
	if errp := failed.Load(); errp != nil {
		return latencyResult{}, fmt.Errorf("produce: %w", *errp)
	}
	if err := <-consumed; err != nil {
		return latencyResult{}, err
	}
	mu.Lock()
	defer mu.Unlock()
	if len(latencies) == 0 {
		return latencyResult{}, errors.New("no records after the warm-up")
	}
	slices.Sort(latencies)
	return latencyResult{
		P50: percentile(latencies, 0.50), P99: percentile(latencies, 0.99), P999: percentile(latencies, 0.999),
		AchievedRate: float64(total) / sendTime.Seconds(), Samples: len(latencies),
	}, nil
}

// seeds splits a comma-separated bootstrap list (a cluster's) for franz-go.
func seeds(bootstrap string) []string { return strings.Split(bootstrap, ",") }

// loadSampler records the CPU seconds of one or more broker processes (their
// sum) and the peak RSS of the largest of them over a workload, sampling RSS
// every 50 ms.
type loadSampler struct {
	pids     []int
	cpuStart float64
	peakRSS  atomic.Int64
	stop     chan struct{}
	done     chan struct{}
}

func startSampler(pids ...int) (*loadSampler, error) {
	cpu, err := cpuSecondsAll(pids)
	if err != nil {
		return nil, err
	}
	s := &loadSampler{pids: pids, cpuStart: cpu, stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(s.done)
		t := time.NewTicker(50 * time.Millisecond)
		defer t.Stop()
		for {
			for _, pid := range pids {
				if rss, err := rssBytes(pid); err == nil && rss > s.peakRSS.Load() {
					s.peakRSS.Store(rss)
				}
			}
			select {
			case <-s.stop:
				return
			case <-t.C:
			}
		}
	}()
	return s, nil
}

// finish returns the CPU seconds all the processes used since start and the
// peak RSS of the largest one, in bytes.
func (s *loadSampler) finish() (float64, int64, error) {
	close(s.stop)
	<-s.done
	cpu, err := cpuSecondsAll(s.pids)
	if err != nil {
		return 0, 0, err
	}
	return cpu - s.cpuStart, s.peakRSS.Load(), nil
}

// cpuSecondsAll is the user plus system CPU time of all pids together.
func cpuSecondsAll(pids []int) (float64, error) {
	var sum float64
	for _, pid := range pids {
		c, err := cpuSeconds(pid)
		if err != nil {
			return 0, err
		}
		sum += c
	}
	return sum, nil
}
