// Command bench runs the same workloads against Gregor and Apache Kafka, each
// a single node on this machine, alternating the two over several rounds, and
// prints the medians, the ratio Gregor/Kafka and whether issue #6's targets
// are met. `make bench` runs it; bench/README.md says what it measures and
// docs/performance.md holds the latest table.
//
// Settings come from the environment: BENCH_ROUNDS (default 3), BENCH_QUICK=1
// (small sizes, one round), BENCH_CONSUME_BYTES (size of the consume test's
// topic, default 1 GiB), BENCH_MODES (default "default,flush,tls"; "tls" runs
// both brokers with an SSL listener; "cluster" adds the three-node replicated
// comparison), BENCH_OUT
// (where results go, default bench/results), BENCH_DIR (where the brokers'
// data directories go, default bench/.work), KAFKA_HEAP_OPTS (Kafka broker
// heap, default "-Xms1G -Xmx1G"), GREGOR_CACHE (where kafka.sh keeps Kafka).
package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// settings is one run's configuration.
type settings struct {
	rounds       int
	quick        bool
	modes        []string
	consumeBytes int64
	outDir       string
	workDir      string
	gregorBin    string
	kafkaScript  string
	kafkaHeap    string

	perf100Count  int // records per perf-test run with 100 B records
	perf1KCount   int // records per perf-test run with 1 KB records
	franzCount    int // records of 100 B for the franz-go producer
	e2eDuration   time.Duration
	e2eWarmup     time.Duration
	flushDivisor  int // the flush-every-message mode sends this many times fewer records
	idleSettle    time.Duration
	workloadLimit time.Duration

	clusterPerfCount  int // 1 KB records per perf-test run in the cluster mode
	clusterFranzCount int // 1 KB records for the franz-go producer in the cluster mode
	clusterE2ERate    int // records/s of the cluster mode's end-to-end latency run
}

func loadSettings() (settings, error) {
	s := settings{
		rounds: 3, modes: []string{"default", "flush", "tls"}, consumeBytes: 1 << 30,
		outDir: "bench/results", workDir: "bench/.work", kafkaHeap: "-Xms1G -Xmx1G",
		perf100Count: 1_000_000, perf1KCount: 250_000, franzCount: 2_000_000,
		e2eDuration: 15 * time.Second, e2eWarmup: 2 * time.Second, flushDivisor: 4,
		idleSettle: 2 * time.Second, workloadLimit: 15 * time.Minute,
		clusterPerfCount: 250_000, clusterFranzCount: 500_000, clusterE2ERate: 5_000,
	}
	flag.StringVar(&s.gregorBin, "gregor", "bin/gregor", "the Gregor binary")
	flag.StringVar(&s.kafkaScript, "kafka-sh", "compat-tests/kafka/kafka.sh", "the script that fetches, starts and stops Apache Kafka")
	flag.Parse()
	if v := os.Getenv("BENCH_QUICK"); v != "" && v != "0" {
		s.quick = true
		s.rounds = 1
		s.consumeBytes = 64 << 20
		s.perf100Count, s.perf1KCount, s.franzCount = 100_000, 25_000, 200_000
		s.clusterPerfCount, s.clusterFranzCount = 25_000, 50_000
		s.e2eDuration, s.e2eWarmup = 4*time.Second, time.Second
	}
	if v := os.Getenv("BENCH_ROUNDS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return s, fmt.Errorf("BENCH_ROUNDS=%q: want a positive number", v)
		}
		s.rounds = n
	}
	if v := os.Getenv("BENCH_CONSUME_BYTES"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 1<<20 {
			return s, fmt.Errorf("BENCH_CONSUME_BYTES=%q: want a number of bytes, at least 1 MiB", v)
		}
		s.consumeBytes = n
	}
	if v := os.Getenv("BENCH_MODES"); v != "" {
		s.modes = nil
		for m := range strings.SplitSeq(v, ",") {
			if m = strings.TrimSpace(m); m != "default" && m != "flush" && m != "tls" && m != "cluster" {
				return s, fmt.Errorf("BENCH_MODES: unknown mode %q (default, flush, tls, cluster)", m)
			}
			s.modes = append(s.modes, strings.TrimSpace(m))
		}
	}
	for env, dst := range map[string]*string{"BENCH_OUT": &s.outDir, "BENCH_DIR": &s.workDir, "KAFKA_HEAP_OPTS": &s.kafkaHeap} {
		if v := os.Getenv(env); v != "" {
			*dst = v
		}
	}
	return s, nil
}

func main() {
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	s, err := loadSettings()
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, s, log); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, s settings, log *slog.Logger) error {
	started := time.Now()
	if _, err := os.Stat(s.gregorBin); err != nil {
		return fmt.Errorf("%s: %w (run make build)", s.gregorBin, err)
	}
	if out, err := exec.CommandContext(ctx, s.kafkaScript, "fetch").CombinedOutput(); err != nil {
		return fmt.Errorf("kafka.sh fetch: %w\n%s", err, out)
	}
	cp, err := exec.CommandContext(ctx, s.kafkaScript, "classpath").Output()
	if err != nil {
		return fmt.Errorf("kafka.sh classpath: %w", err)
	}
	tool := javaTool{java: "java", classpath: strings.TrimSpace(string(cp)),
		log4j: filepath.Join(filepath.Dir(s.kafkaScript), "log4j2-tools.properties")}
	if err := os.MkdirAll(s.workDir, 0o755); err != nil {
		return err
	}
	machine := describeMachine(ctx)

	rs := newResults()
	var notes []string
	noted := map[string]bool{}
	note := func(n string) {
		if !noted[n] {
			noted[n] = true
			notes = append(notes, n)
		}
	}
	if slices.ContainsFunc(s.modes, func(m string) bool { return m != "cluster" }) {
		note(fmt.Sprintf("Kafka broker JVM: %s -XX:+UseG1GC -XX:MaxGCPauseMillis=20 (kafka.sh); perf-test clients: -Xmx512M G1, full JIT", s.kafkaHeap))
		note("Kafka start-up is measured from the broker JVM's start (after kafka.sh formats the log dir), to 10 ms; Gregor's from exec")
	}
	if slices.Contains(s.modes, "cluster") {
		note(fmt.Sprintf("cluster mode: 3 combined broker+controller nodes each, RF=3 topics with min.insync.replicas=2, acks=all; "+
			"each Kafka JVM gets %s -XX:+UseG1GC -XX:MaxGCPauseMillis=20; perf-test clients: -Xmx512M G1, full JIT; start-up counts from the first node's exec for both (Kafka's log-dir format is not counted)", s.kafkaHeap))
	}
	var certs *benchTLS
	if slices.Contains(s.modes, "tls") {
		if certs, err = newBenchTLS(s.workDir); err != nil {
			return fmt.Errorf("tls mode: %w", err)
		}
		note("tls mode: both brokers serve one SSL listener (TLS 1.3, an ECDSA P-256 certificate from a CA made for the run, PEM key and trust stores), every client connects over TLS; Kafka's default durability")
	}
	note(fmt.Sprintf("load average at start: %s", machine["load average at start"]))

	for round := 1; round <= s.rounds; round++ {
		for _, mode := range s.modes {
			// Alternate which broker goes first, so neither always runs on the
			// page cache and CPU state the other left behind.
			if mode == "cluster" {
				clusters := []clusterServer{
					&gregorCluster{bin: s.gregorBin, workDir: s.workDir},
					&kafkaCluster{script: s.kafkaScript, classpath: tool.classpath, heap: s.kafkaHeap, workDir: s.workDir},
				}
				if round%2 == 0 {
					clusters[0], clusters[1] = clusters[1], clusters[0]
				}
				for _, cl := range clusters {
					if err := ctx.Err(); err != nil {
						return err
					}
					log.Info("bench", "round", round, "mode", mode, "broker", cl.name())
					runClusterInstance(ctx, s, tool, cl, rs, note, log)
					status := fmt.Sprintf("partial results: the run has done round %d of %d up to %s in mode %s", round, s.rounds, cl.name(), mode)
					if _, err := save(s, started, rs, notes, machine, status); err != nil {
						return err
					}
				}
				continue
			}
			var modeTLS *benchTLS
			if mode == "tls" {
				modeTLS = certs
			}
			servers := []server{
				&gregorServer{bin: s.gregorBin, workDir: s.workDir, tls: modeTLS},
				&kafkaServer{script: s.kafkaScript, heap: s.kafkaHeap, workDir: s.workDir, tls: modeTLS},
			}
			if round%2 == 0 {
				servers[0], servers[1] = servers[1], servers[0]
			}
			for _, srv := range servers {
				if err := ctx.Err(); err != nil {
					return err
				}
				log.Info("bench", "round", round, "mode", mode, "broker", srv.name())
				runInstance(ctx, s, tool, srv, mode, rs, note, log)
				status := fmt.Sprintf("partial results: the run has done round %d of %d up to %s in mode %s", round, s.rounds, srv.name(), mode)
				if _, err := save(s, started, rs, notes, machine, status); err != nil {
					return err
				}
			}
		}
	}

	machine["load average at end"] = loadAverage()
	note(fmt.Sprintf("load average at end: %s", machine["load average at end"]))
	trs, err := save(s, started, rs, notes, machine, "")
	if err != nil {
		return err
	}
	writeTable(os.Stdout, rs, trs, notes)
	fmt.Printf("\nresults: %s/bench-%s.{json,md} (and latest.*)\n", s.outDir, started.UTC().Format("20060102T150405Z"))
	return nil
}

// save checks the targets and writes the results so far to BENCH_OUT. It
// runs after every broker instance (with a status saying how far the run
// got), so an interrupted run leaves what it measured.
func save(s settings, started time.Time, rs *results, notes []string, machine map[string]string, status string) ([]targetResult, error) {
	var trs []targetResult
	for _, t := range targets(s.modes) {
		trs = append(trs, t.check(rs))
	}
	if err := os.MkdirAll(s.outDir, 0o755); err != nil {
		return nil, err
	}
	if status != "" {
		notes = append(slices.Clone(notes), status)
	}
	stamp := started.UTC().Format("20060102T150405Z")
	settingsMap := map[string]string{
		"rounds": strconv.Itoa(s.rounds), "quick": strconv.FormatBool(s.quick), "modes": strings.Join(s.modes, ","),
		"consume_bytes": strconv.FormatInt(s.consumeBytes, 10), "kafka_heap": s.kafkaHeap,
		"perf_100B_records": strconv.Itoa(s.perf100Count), "perf_1KB_records": strconv.Itoa(s.perf1KCount),
		"franz_go_records": strconv.Itoa(s.franzCount), "e2e_duration": s.e2eDuration.String(),
		"flush_mode_divisor": strconv.Itoa(s.flushDivisor),
	}
	if slices.Contains(s.modes, "cluster") {
		settingsMap["cluster_perf_1KB_records"] = strconv.Itoa(s.clusterPerfCount)
		settingsMap["cluster_franz_go_1KB_records"] = strconv.Itoa(s.clusterFranzCount)
		settingsMap["cluster_e2e_rate"] = strconv.Itoa(s.clusterE2ERate)
	}
	var js, md bytes.Buffer
	if err := writeJSON(&js, report{Started: started.UTC().Format(time.RFC3339), Finished: time.Now().UTC().Format(time.RFC3339),
		Settings: settingsMap, Machine: machine, Targets: trs, Notes: notes}, rs); err != nil {
		return nil, err
	}
	writeMarkdown(&md, rs, trs, notes, machine)
	for name, b := range map[string][]byte{"bench-" + stamp + ".json": js.Bytes(), "bench-" + stamp + ".md": md.Bytes(),
		"latest.json": js.Bytes(), "latest.md": md.Bytes()} {
		if err := os.WriteFile(filepath.Join(s.outDir, name), b, 0o644); err != nil {
			return nil, err
		}
	}
	return trs, nil
}

// runInstance starts srv, runs the workloads of mode against it and stops it.
// A failed workload is logged and leaves its rows without that sample; the
// bench goes on with the next.
func runInstance(ctx context.Context, s settings, tool javaTool, srv server, mode string, rs *results,
	note func(string), log *slog.Logger) {
	b := srv.name()
	startCtx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	startup, err := srv.start(startCtx)
	cancel()
	defer func() {
		if err := srv.stop(); err != nil {
			log.Error("stop", "broker", b, "err", err)
		}
	}()
	if err != nil {
		log.Error("start", "broker", b, "err", err)
		return
	}
	rs.add("start-up", "", "to first ack", "ms", false, b, float64(startup.Microseconds())/1000)
	time.Sleep(s.idleSettle) // let start-up work (JIT, background tasks) settle before "idle"
	if rss, err := rssBytes(srv.pid()); err == nil {
		rs.add("start-up", "", "idle RSS", "MiB", false, b, float64(rss)/(1<<20))
	}

	flush := mode == "flush"
	div := 1
	if flush {
		div = s.flushDivisor
	}
	boot := srv.addr()
	topicN := 0
	newTopic := func(prefix string) (string, error) {
		topicN++
		t := fmt.Sprintf("%s-%d", prefix, topicN)
		return t, createTopic(ctx, boot, t, flush)
	}
	step := func(what string, f func(ctx context.Context) error) {
		s.runWorkload(ctx, log, b, mode, what, f)
	}

	if flush && b == "gregor" {
		step("flush.messages check", func(ctx context.Context) error {
			t, err := newTopic("flushcheck")
			if err != nil {
				return err
			}
			storedOnly, err := flushStoredOnly(ctx, boot, t)
			if err == nil && storedOnly {
				rs.caveats[mode] = "not durable-equivalent"
				note("this Gregor build stores flush.messages without acting on it (DescribeConfigs says \"stored only\"): " +
					"its [flush] rows are NOT durable-equivalent to Kafka's")
			}
			return err
		})
	}

	type perfCase struct {
		size  int
		count int
		codec string
	}
	cases := []perfCase{{100, s.perf100Count, "none"}, {100, s.perf100Count, "lz4"}, {1024, s.perf1KCount, "none"}, {1024, s.perf1KCount, "lz4"}}
	for _, c := range cases {
		if flush && c.codec != "none" {
			continue
		}
		if mode == "tls" && (c.codec != "none" || c.size != 1024) {
			continue // TLS costs per byte: the 1 KB uncompressed row says it
		}
		w := fmt.Sprintf("perf-test %s %s", sizeName(c.size), c.codec)
		step(w, func(ctx context.Context) error {
			t, err := newTopic("perf")
			if err != nil {
				return err
			}
			p, err := tool.producerPerfRun(ctx, boot, t, c.size, c.count/div, c.codec)
			if err != nil {
				return err
			}
			rs.add(w, mode, "records/s", "rec/s", true, b, p.RecordsSec)
			rs.add(w, mode, "MB/s", "MiB/s", true, b, p.MBSec)
			rs.add(w, mode, "p99 send-to-ack", "ms", false, b, p.P99Ms)
			return nil
		})
	}

	step("franz-go 100 B", func(ctx context.Context) error {
		t, err := newTopic("franz")
		if err != nil {
			return err
		}
		smp, err := startSampler(srv.pid())
		if err != nil {
			return err
		}
		p, err := franzProduce(ctx, boot, t, 100, s.franzCount/div)
		cpu, peak, serr := smp.finish()
		if err != nil {
			return err
		}
		rs.add("franz-go 100 B", mode, "records/s", "rec/s", true, b, p.RecordsSec)
		rs.add("franz-go 100 B", mode, "MB/s", "MiB/s", true, b, p.MBSec)
		if serr == nil {
			rs.add("franz-go 100 B", mode, "broker CPU", "s", false, b, cpu)
			rs.add("franz-go 100 B", mode, "broker peak RSS", "MiB", false, b, float64(peak)/(1<<20))
		}
		return serr
	})

	step("e2e latency", func(ctx context.Context) error {
		t, err := newTopic("e2e")
		if err != nil {
			return err
		}
		l, err := e2eLatency(ctx, boot, t, 10_000, 1024, s.e2eDuration, s.e2eWarmup)
		if err != nil {
			return err
		}
		const w = "e2e 10k/s 1 KB"
		rs.add(w, mode, "p50", "ms", false, b, ms(l.P50))
		rs.add(w, mode, "p99", "ms", false, b, ms(l.P99))
		rs.add(w, mode, "p99.9", "ms", false, b, ms(l.P999))
		rs.add(w, mode, "achieved rate", "rec/s", true, b, l.AchievedRate)
		if l.AchievedRate < 9_000 {
			note(fmt.Sprintf("e2e producer fell behind its 10k/s schedule (%s, %s, %.0f rec/s): its latencies understate", b, mode, l.AchievedRate))
		}
		return nil
	})

	if !flush {
		step("consume", func(ctx context.Context) error {
			t, err := newTopic("consume")
			if err != nil {
				return err
			}
			count := int(s.consumeBytes / 1024)
			if _, err := franzProduce(ctx, boot, t, 1024, count); err != nil {
				return fmt.Errorf("filling %s: %w", t, err)
			}
			c, err := tool.consumerPerfRun(ctx, boot, t, "bench-"+t, count)
			if err != nil {
				return err
			}
			if c.Records < int64(count) {
				return fmt.Errorf("consumed %d of %d records", c.Records, count)
			}
			const w = "consume perf-test 1 KB"
			rs.add(w, mode, "MB/s", "MiB/s", true, b, c.FetchMBSec)
			rs.add(w, mode, "records/s", "rec/s", true, b, c.FetchRecSec)
			return nil
		})
	}
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func sizeName(n int) string {
	if n >= 1024 {
		return fmt.Sprintf("%d KB", n/1024)
	}
	return fmt.Sprintf("%d B", n)
}

// machineKeys orders the machine description.
var machineKeys = []string{"cpu", "cpus", "memory", "kernel", "disk", "go", "java", "load average at start", "load average at end"}

// describeMachine gathers what docs/performance.md reports about the machine.
func describeMachine(ctx context.Context) map[string]string {
	m := map[string]string{"go": runtime.Version(), "cpus": strconv.Itoa(runtime.NumCPU()), "load average at start": loadAverage()}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for line := range strings.SplitSeq(string(b), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				m["cpu"] = strings.TrimSpace(v)
				break
			}
		}
	}
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		if line, _, ok := strings.Cut(string(b), "\n"); ok {
			m["memory"] = strings.Join(strings.Fields(line)[1:], " ")
		}
	}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m["kernel"] = strings.TrimSpace(string(b))
	}
	if out, err := exec.CommandContext(ctx, "java", "-version").CombinedOutput(); err == nil {
		m["java"] = strings.SplitN(strings.TrimSpace(string(out)), "\n", 2)[0]
	}
	if out, err := exec.CommandContext(ctx, "df", "--output=source,fstype", ".").Output(); err == nil {
		lines := strings.Split(strings.TrimSpace(string(out)), "\n")
		m["disk"] = strings.Join(strings.Fields(lines[len(lines)-1]), " ")
	}
	return m
}

func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}

// runWorkload runs one workload f within the workload time limit, logging
// its start and any failure (a failed workload leaves its rows out; the
// run goes on). It does nothing once ctx is done.
func (s settings) runWorkload(ctx context.Context, log *slog.Logger, b, mode, what string, f func(ctx context.Context) error) {
	if ctx.Err() != nil {
		return
	}
	wctx, cancel := context.WithTimeout(ctx, s.workloadLimit)
	defer cancel()
	log.Info("workload", "broker", b, "mode", mode, "workload", what)
	if err := f(wctx); err != nil {
		log.Error("workload failed", "broker", b, "mode", mode, "workload", what, "err", err)
	}
}
