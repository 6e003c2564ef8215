package main

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// The cluster mode runs three combined broker-and-controller nodes of each
// broker on this machine and replicates every topic to all three.
const (
	clusterNodes  = 3
	clusterRF     = 3
	clusterMinISR = "2"
)

// clusterServer is one three-node cluster under test, started fresh (empty
// data directories) for every instance.
type clusterServer interface {
	name() string
	// start launches the nodes and returns once the cluster has acknowledged
	// an acks=all produce to an RF=3 topic, with the time from the first
	// node's process start to that ack.
	start(ctx context.Context) (time.Duration, error)
	bootstrap() string // comma-separated, every node
	pids() []int
	stop() error
}

// clusterNode is one process of a cluster.
type clusterNode struct {
	id       int
	port     int // Kafka listener
	ctrlPort int // controller listener
	dir      string
	cmd      *exec.Cmd
	logFile  *os.File
	exited   chan struct{}
	started  time.Time
}

// clusterLayout makes a fresh directory under workDir for one cluster, with a
// sub-directory and two free loopback ports (Kafka and controller listener)
// per node.
func clusterLayout(workDir, prefix string) (string, []*clusterNode, error) {
	dir, err := os.MkdirTemp(workDir, prefix)
	if err != nil {
		return "", nil, err
	}
	ports, err := freePorts(2 * clusterNodes)
	if err != nil {
		os.RemoveAll(dir)
		return "", nil, err
	}
	nodes := make([]*clusterNode, clusterNodes)
	for i := range nodes {
		n := &clusterNode{id: i + 1, port: ports[2*i], ctrlPort: ports[2*i+1], dir: filepath.Join(dir, fmt.Sprintf("node-%d", i+1))}
		if err := os.MkdirAll(n.dir, 0o755); err != nil {
			os.RemoveAll(dir)
			return "", nil, err
		}
		nodes[i] = n
	}
	return dir, nodes, nil
}

// freePorts picks n distinct free loopback ports, holding all of them open
// until each is known, so none is picked twice.
func freePorts(n int) ([]int, error) {
	var ports []int
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		defer l.Close()
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

func quorumVoters(nodes []*clusterNode) string {
	var v []string
	for _, n := range nodes {
		v = append(v, fmt.Sprintf("%d@%s", n.id, loopback(n.ctrlPort)))
	}
	return strings.Join(v, ",")
}

func clusterBootstrap(nodes []*clusterNode) string {
	var b []string
	for _, n := range nodes {
		b = append(b, loopback(n.port))
	}
	return strings.Join(b, ",")
}

// launch starts every node's command (made by mk), each logging to its own
// file, and records when each began. It returns the earliest start.
func launch(nodes []*clusterNode, logName string, mk func(n *clusterNode) *exec.Cmd) (time.Time, error) {
	var first time.Time
	for _, n := range nodes {
		f, err := os.Create(filepath.Join(n.dir, logName))
		if err != nil {
			return first, err
		}
		n.logFile = f
		n.cmd = mk(n)
		n.cmd.Stdout, n.cmd.Stderr = f, f
		n.started = time.Now()
		if first.IsZero() {
			first = n.started
		}
		if err := n.cmd.Start(); err != nil {
			return first, fmt.Errorf("node %d: %w", n.id, err)
		}
		n.exited = make(chan struct{})
		go func(n *clusterNode) { _ = n.cmd.Wait(); close(n.exited) }(n)
	}
	return first, nil
}

// awaitClusterAck waits for firstClusterAck while every node is running: a
// node that exits ends the wait with an error that quotes its log.
func awaitClusterAck(ctx context.Context, nodes []*clusterNode, bootstrap string) (time.Time, error) {
	ackCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	for _, n := range nodes {
		go func(n *clusterNode) {
			select {
			case <-n.exited:
				cancel(fmt.Errorf("node %d exited during start-up (%v):\n%s", n.id, n.cmd.ProcessState, nodeLogTail(n)))
			case <-ackCtx.Done():
			}
		}(n)
	}
	at, err := firstClusterAck(ackCtx, bootstrap)
	if err != nil {
		if cause := context.Cause(ackCtx); cause != nil && !errors.Is(cause, context.Canceled) {
			return at, cause
		}
	}
	return at, err
}

// stopNodes sends SIGTERM to every node at once, waits up to 60 s for all to
// exit (Kafka's controlled shutdown of the last nodes can take a while),
// kills what is left, closes the logs and removes dir.
func stopNodes(nodes []*clusterNode, dir string) error {
	for _, n := range nodes {
		if n.cmd != nil && n.cmd.Process != nil && n.exited != nil {
			_ = n.cmd.Process.Signal(syscall.SIGTERM)
		}
	}
	deadline := time.After(60 * time.Second)
	var stuck []string
	for _, n := range nodes {
		if n.exited == nil {
			continue
		}
		select {
		case <-n.exited:
		case <-deadline:
			stuck = append(stuck, strconv.Itoa(n.id))
			_ = n.cmd.Process.Kill()
			<-n.exited
		}
	}
	for _, n := range nodes {
		if n.logFile != nil {
			n.logFile.Close()
		}
	}
	err := os.RemoveAll(dir)
	if len(stuck) > 0 {
		return errors.Join(fmt.Errorf("nodes %s did not stop within 60 s of SIGTERM and were killed", strings.Join(stuck, ",")), err)
	}
	return err
}

// nodeLogTail is the end of what node n logged: its stdout and stderr and,
// for Kafka, the server.log its log4j configuration writes next to them.
func nodeLogTail(n *clusterNode) string {
	var b strings.Builder
	for _, name := range []string{n.logFile.Name(), filepath.Join(n.dir, "server.log")} {
		if logged, err := os.ReadFile(name); err == nil && len(logged) > 0 {
			fmt.Fprintf(&b, "%s:\n%s", name, tail(string(logged), 20))
		}
	}
	return b.String()
}

func nodePIDs(nodes []*clusterNode) []int {
	var p []int
	for _, n := range nodes {
		if n.cmd != nil && n.cmd.Process != nil {
			p = append(p, n.cmd.Process.Pid)
		}
	}
	return p
}

// gregorCluster runs three bin/gregor serve nodes with a static controller
// quorum, as scripts/run-cluster.sh does, on free ports.
type gregorCluster struct {
	bin     string
	workDir string
	dir     string
	nodes   []*clusterNode
}

func (g *gregorCluster) name() string      { return "gregor" }
func (g *gregorCluster) bootstrap() string { return clusterBootstrap(g.nodes) }
func (g *gregorCluster) pids() []int       { return nodePIDs(g.nodes) }
func (g *gregorCluster) stop() error       { return stopNodes(g.nodes, g.dir) }

func (g *gregorCluster) start(ctx context.Context) (time.Duration, error) {
	var err error
	if g.dir, g.nodes, err = clusterLayout(g.workDir, "gregor-cluster-"); err != nil {
		return 0, err
	}
	voters := quorumVoters(g.nodes)
	began, err := launch(g.nodes, "gregor.log", func(n *clusterNode) *exec.Cmd {
		return exec.Command(g.bin, "serve", "--node-id", strconv.Itoa(n.id), "--listen", loopback(n.port),
			"--controller-listen", loopback(n.ctrlPort), "--controller-quorum", voters,
			"--data-dir", filepath.Join(n.dir, "data"), "--log-level", "warn", "--http-listen", "",
			"--override", "group.initial.rebalance.delay.ms=0")
	})
	if err != nil {
		return 0, err
	}
	acked, err := awaitClusterAck(ctx, g.nodes, g.bootstrap())
	if err != nil {
		return 0, fmt.Errorf("gregor cluster: no acknowledged produce: %w", err)
	}
	return acked.Sub(began), nil
}

// kafkaCluster runs three Apache Kafka combined KRaft nodes with a static
// controller quorum (controller.quorum.voters), formatted with one cluster
// id. The JVMs get the options kafka.sh gives its single node: the heap
// (KAFKA_HEAP_OPTS), G1 with MaxGCPauseMillis=20.
type kafkaCluster struct {
	script    string // compat-tests/kafka/kafka.sh: its run, classpath and log4j configuration
	classpath string
	heap      string
	workDir   string
	dir       string
	nodes     []*clusterNode
}

func (k *kafkaCluster) name() string      { return "kafka" }
func (k *kafkaCluster) bootstrap() string { return clusterBootstrap(k.nodes) }
func (k *kafkaCluster) pids() []int       { return nodePIDs(k.nodes) }
func (k *kafkaCluster) stop() error       { return stopNodes(k.nodes, k.dir) }

// kafkaNodeProperties is node n's server.properties.
func kafkaNodeProperties(n *clusterNode, voters string) string {
	return fmt.Sprintf(`# written by gregor-bench: one node of a three-node combined KRaft cluster
process.roles=broker,controller
node.id=%d
controller.quorum.voters=%s
listeners=PLAINTEXT://127.0.0.1:%d,CONTROLLER://127.0.0.1:%d
advertised.listeners=PLAINTEXT://127.0.0.1:%d
controller.listener.names=CONTROLLER
inter.broker.listener.name=PLAINTEXT
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT
log.dirs=%s
num.partitions=1
default.replication.factor=%d
offsets.topic.replication.factor=%d
transaction.state.log.replication.factor=%d
transaction.state.log.min.isr=%s
group.initial.rebalance.delay.ms=0
`, n.id, voters, n.port, n.ctrlPort, n.port, filepath.Join(n.dir, "data"), clusterRF, clusterRF, clusterRF, clusterMinISR)
}

// start formats the three log directories (one short-lived JVM each, run in
// parallel and not counted), then launches the three broker JVMs. Start-up
// counts from the first JVM's exec.
func (k *kafkaCluster) start(ctx context.Context) (time.Duration, error) {
	var err error
	if k.dir, k.nodes, err = clusterLayout(k.workDir, "kafka-cluster-"); err != nil {
		return 0, err
	}
	voters := quorumVoters(k.nodes)
	clusterID := kafkaClusterID()
	var wg sync.WaitGroup
	errs := make([]error, len(k.nodes))
	for i, n := range k.nodes {
		props := filepath.Join(n.dir, "server.properties")
		if err := os.WriteFile(props, []byte(kafkaNodeProperties(n, voters)), 0o644); err != nil {
			return 0, err
		}
		wg.Go(func() {
			out, err := exec.CommandContext(ctx, k.script, "run", "kafka.tools.StorageTool", "format",
				"--cluster-id="+clusterID, "-c", props).CombinedOutput()
			if err != nil {
				errs[i] = fmt.Errorf("node %d: format: %w\n%s", n.id, err, out)
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return 0, err
	}
	heap := strings.Fields(k.heap)
	log4j := filepath.Join(filepath.Dir(k.script), "log4j2-server.properties")
	began, err := launch(k.nodes, "kafka.out", func(n *clusterNode) *exec.Cmd {
		args := slices.Concat(heap, []string{"-XX:+UseG1GC", "-XX:MaxGCPauseMillis=20", "-Djava.awt.headless=true",
			"-Dkafka.logs.dir=" + n.dir, "-Dlog4j2.configurationFile=" + log4j,
			"-cp", k.classpath, "kafka.Kafka", filepath.Join(n.dir, "server.properties")})
		return exec.Command("java", args...)
	})
	if err != nil {
		return 0, err
	}
	acked, err := awaitClusterAck(ctx, k.nodes, k.bootstrap())
	if err != nil {
		return 0, fmt.Errorf("kafka cluster: no acknowledged produce: %w", err)
	}
	return acked.Sub(began), nil
}

// kafkaClusterID is a random cluster id in the form of Kafka's Uuid.toString:
// 16 bytes, URL-safe base64 without padding.
func kafkaClusterID() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

// firstClusterAck creates the topic bench-startup (one partition, RF=3,
// min.insync.replicas=2) and produces one record to it with acks=all, in a
// loop, until a produce is acknowledged; it returns when that was. Creation
// fails until enough brokers have registered, and the produce waits for the
// partition's leader and ISR; both are retried every few milliseconds.
func firstClusterAck(ctx context.Context, bootstrap string) (time.Time, error) {
	minISR := clusterMinISR
	created := false
	for {
		if err := ctx.Err(); err != nil {
			return time.Time{}, err
		}
		c, err := net.DialTimeout("tcp", seeds(bootstrap)[0], 100*time.Millisecond)
		if err != nil {
			time.Sleep(2 * time.Millisecond)
			continue
		}
		c.Close()
		cl, err := kgo.NewClient(kgo.SeedBrokers(seeds(bootstrap)...), kgo.DefaultProduceTopic("bench-startup"),
			kgo.RequiredAcks(kgo.AllISRAcks()), kgo.ProducerLinger(0), kgo.MetadataMinAge(10*time.Millisecond),
			kgo.RetryBackoffFn(func(int) time.Duration { return 5 * time.Millisecond }))
		if err != nil {
			return time.Time{}, err
		}
		pctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		if !created {
			resp, cerr := kadm.NewClient(cl).CreateTopic(pctx, 1, clusterRF, map[string]*string{"min.insync.replicas": &minISR}, "bench-startup")
			if cerr == nil {
				cerr = resp.Err
			}
			created = cerr == nil || errors.Is(cerr, kerr.TopicAlreadyExists)
		}
		if created {
			err = cl.ProduceSync(pctx, &kgo.Record{Value: []byte("ready?")}).FirstErr()
		}
		at := time.Now()
		cancel()
		cl.Close()
		if created && err == nil {
			return at, nil
		}
		if errors.Is(err, context.Canceled) {
			return time.Time{}, err
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// startCluster starts cl, giving it at most four minutes.
func startCluster(ctx context.Context, cl clusterServer) (time.Duration, error) {
	ctx, cancel := context.WithTimeout(ctx, 4*time.Minute)
	defer cancel()
	return cl.start(ctx)
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

// runClusterInstance starts cl, runs the cluster workloads against it and
// stops it. As runInstance, a failed workload is logged and leaves its rows
// without that sample.
func runClusterInstance(ctx context.Context, s settings, tool javaTool, cl clusterServer, rs *results,
	note func(string), log *slog.Logger) {
	const mode = "cluster"
	b := cl.name()
	startup, err := startCluster(ctx, cl)
	if err != nil && ctx.Err() == nil {
		// A node can lose its port to another process between freePorts and
		// its bind (the machine is shared); once, start afresh on new ports.
		log.Error("start failed; retrying once on new ports", "broker", b, "err", err)
		note(fmt.Sprintf("%s cluster: a start-up failed and was retried on new ports: %s", b, firstLine(err.Error())))
		if err := cl.stop(); err != nil {
			log.Error("stop", "broker", b, "err", err)
		}
		startup, err = startCluster(ctx, cl)
	}
	defer func() {
		// The nodes are fresh processes: their CPU time is the whole
		// instance's, start-up and every workload.
		pids := cl.pids()
		if cpu, err := cpuSecondsAll(pids); err == nil && len(pids) == clusterNodes {
			rs.add("cluster instance", mode, "all brokers CPU", "s", false, b, cpu)
		}
		if err := cl.stop(); err != nil {
			log.Error("stop", "broker", b, "err", err)
		}
	}()
	if err != nil {
		log.Error("start", "broker", b, "err", err)
		return
	}
	rs.add("start-up", mode, "to first RF=3 ack", "ms", false, b, float64(startup.Microseconds())/1000)
	time.Sleep(s.idleSettle)
	var largest int64
	for _, pid := range cl.pids() {
		if rss, err := rssBytes(pid); err == nil {
			largest = max(largest, rss)
		}
	}
	if largest > 0 {
		rs.add("start-up", mode, "idle RSS, largest node", "MiB", false, b, float64(largest)/(1<<20))
	}

	boot := plain(cl.bootstrap())
	minISR := clusterMinISR
	topicN := 0
	newTopic := func(prefix string) (string, error) {
		topicN++
		t := fmt.Sprintf("%s-%d", prefix, topicN)
		return t, createTopicWith(ctx, boot, t, clusterRF, map[string]*string{"min.insync.replicas": &minISR})
	}
	step := func(what string, f func(ctx context.Context) error) {
		s.runWorkload(ctx, log, b, mode, what, f)
	}

	const perfW = "perf-test 1 KB none RF=3"
	step(perfW, func(ctx context.Context) error {
		t, err := newTopic("perf")
		if err != nil {
			return err
		}
		p, err := tool.producerPerfRun(ctx, boot, t, 1024, s.clusterPerfCount, "none")
		if err != nil {
			return err
		}
		rs.add(perfW, mode, "records/s", "rec/s", true, b, p.RecordsSec)
		rs.add(perfW, mode, "MB/s", "MiB/s", true, b, p.MBSec)
		rs.add(perfW, mode, "p99 send-to-ack", "ms", false, b, p.P99Ms)
		return nil
	})

	const franzW = "franz-go 1 KB RF=3"
	step(franzW, func(ctx context.Context) error {
		t, err := newTopic("franz")
		if err != nil {
			return err
		}
		smp, err := startSampler(cl.pids()...)
		if err != nil {
			return err
		}
		p, err := franzProduce(ctx, boot, t, 1024, s.clusterFranzCount)
		cpu, peak, serr := smp.finish()
		if err != nil {
			return err
		}
		rs.add(franzW, mode, "records/s", "rec/s", true, b, p.RecordsSec)
		rs.add(franzW, mode, "MB/s", "MiB/s", true, b, p.MBSec)
		if serr == nil {
			rs.add(franzW, mode, "all brokers CPU", "s", false, b, cpu)
			rs.add(franzW, mode, "peak RSS, largest node", "MiB", false, b, float64(peak)/(1<<20))
		}
		if err := checkReplicated(ctx, boot, t); err != nil {
			note(fmt.Sprintf("%s cluster: after %s: %v", b, franzW, err))
		}
		return serr
	})

	e2eW := fmt.Sprintf("e2e %dk/s 1 KB RF=3", s.clusterE2ERate/1000)
	step(e2eW, func(ctx context.Context) error {
		t, err := newTopic("e2e")
		if err != nil {
			return err
		}
		l, err := e2eLatency(ctx, boot, t, s.clusterE2ERate, 1024, s.e2eDuration, s.e2eWarmup)
		if err != nil {
			return err
		}
		rs.add(e2eW, mode, "p50", "ms", false, b, ms(l.P50))
		rs.add(e2eW, mode, "p99", "ms", false, b, ms(l.P99))
		rs.add(e2eW, mode, "p99.9", "ms", false, b, ms(l.P999))
		rs.add(e2eW, mode, "achieved rate", "rec/s", true, b, l.AchievedRate)
		if l.AchievedRate < 0.9*float64(s.clusterE2ERate) {
			note(fmt.Sprintf("cluster e2e producer fell behind its %d/s schedule (%s, %.0f rec/s): its latencies understate",
				s.clusterE2ERate, b, l.AchievedRate))
		}
		return nil
	})
}

// checkReplicated says, as an error, how topic's partitions fall short of
// what the cluster mode claims to measure: three replicas each, all of them
// in sync once the produce is done. It catches a broker that acknowledged
// acks=all without replicating.
func checkReplicated(ctx context.Context, addr brokerAddr, topic string) error {
	cl, err := kgo.NewClient(addr.opts()...)
	if err != nil {
		return err
	}
	defer cl.Close()
	tds, err := kadm.NewClient(cl).ListTopics(ctx, topic)
	if err != nil {
		return fmt.Errorf("replication check: %w", err)
	}
	td, ok := tds[topic]
	if !ok || td.Err != nil {
		return fmt.Errorf("replication check: topic %s not described: %v", topic, td.Err)
	}
	return replicationShortfall(td)
}

// replicationShortfall lists the partitions of td with fewer than clusterRF
// replicas or fewer than clusterRF in sync, nil when there are none.
func replicationShortfall(td kadm.TopicDetail) error {
	var short []string
	for _, p := range td.Partitions.Sorted() {
		if p.Err != nil || len(p.Replicas) < clusterRF || len(p.ISR) < clusterRF {
			short = append(short, fmt.Sprintf("partition %d replicas %v isr %v err %v", p.Partition, p.Replicas, p.ISR, p.Err))
		}
	}
	if len(td.Partitions) != partitions {
		short = append(short, fmt.Sprintf("%d partitions, want %d", len(td.Partitions), partitions))
	}
	if len(short) > 0 {
		return fmt.Errorf("replication check: %s", strings.Join(short, "; "))
	}
	return nil
}
