package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// server is one broker under test: Gregor or Apache Kafka, a single node
// started fresh (empty data directory) for every instance.
type server interface {
	name() string
	// start launches the broker and returns once it has acknowledged its
	// first produce, with the time from process start to that ack.
	start(ctx context.Context) (time.Duration, error)
	addr() brokerAddr
	pid() int
	stop() error
}

// gregorServer runs bin/gregor serve.
type gregorServer struct {
	bin     string
	workDir string
	tls     *benchTLS // nil: a PLAINTEXT listener
	dir     string
	listen  string
	cmd     *exec.Cmd
	logFile *os.File
}

func (g *gregorServer) name() string     { return "gregor" }
func (g *gregorServer) addr() brokerAddr { return addrOf(g.tls, g.listen) }
func (g *gregorServer) pid() int         { return g.cmd.Process.Pid }

// addrOf is the address of a broker listening on listen, over TLS when t
// is set.
func addrOf(t *benchTLS, listen string) brokerAddr {
	if t != nil {
		return t.addr(listen)
	}
	return plain(listen)
}

func (g *gregorServer) start(ctx context.Context) (time.Duration, error) {
	dir, port, err := newServerDir(g.workDir, "gregor-")
	if err != nil {
		return 0, err
	}
	g.dir, g.listen = dir, loopback(port)
	if g.logFile, err = os.Create(filepath.Join(dir, "gregor.log")); err != nil {
		return 0, err
	}
	listener := []string{"--listen", g.listen}
	if g.tls != nil {
		// The same server.properties keys as Kafka's side (kafka.sh with
		// KAFKA_EXTRA_PROPERTIES).
		props := filepath.Join(dir, "server.properties")
		if err := writeProps(props, append([]string{"listeners=SSL://" + g.listen, "advertised.listeners=SSL://" + g.listen},
			g.tls.brokerProps()...)); err != nil {
			return 0, err
		}
		listener = []string{"--config", props}
	}
	// Kafka's side runs with group.initial.rebalance.delay.ms=0 (kafka.sh),
	// so the consumer perf test's join costs the same on both. No metrics
	// listener: Kafka serves none either, and its fixed default port could
	// be taken.
	args := append([]string{"serve"}, listener...)
	g.cmd = exec.Command(g.bin, append(args, "--data-dir", filepath.Join(dir, "data"),
		"--log-level", "warn", "--http-listen", "", "--override", "group.initial.rebalance.delay.ms=0")...)
	g.cmd.Stdout, g.cmd.Stderr = g.logFile, g.logFile
	began := time.Now()
	if err := g.cmd.Start(); err != nil {
		return 0, fmt.Errorf("start %s: %w", g.bin, err)
	}
	exited := make(chan struct{})
	go func() { _ = g.cmd.Wait(); close(exited) }()
	ackCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-exited:
			cancel()
		case <-ackCtx.Done():
		}
	}()
	acked, err := firstAck(ackCtx, g.addr())
	if err != nil {
		logged, _ := os.ReadFile(g.logFile.Name())
		return 0, fmt.Errorf("gregor: no acknowledged produce: %w\n%s", err, tail(string(logged), 20))
	}
	return acked.Sub(began), nil
}

func (g *gregorServer) stop() error {
	defer g.logFile.Close()
	if g.cmd == nil || g.cmd.Process == nil {
		return nil
	}
	_ = g.cmd.Process.Signal(syscall.SIGTERM)
	deadline := time.Now().Add(30 * time.Second)
	for processAlive(g.cmd.Process.Pid) && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if processAlive(g.cmd.Process.Pid) {
		_ = g.cmd.Process.Kill()
	}
	return os.RemoveAll(g.dir)
}

// processAlive reports whether pid is a running (not zombie) process. The
// Wait goroutine reaps Gregor, so an exited process disappears from /proc.
func processAlive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	i := bytes.LastIndexByte(b, ')')
	return i >= 0 && i+2 < len(b) && b[i+2] != 'Z'
}

// kafkaServer runs Apache Kafka through compat-tests/kafka/kafka.sh.
type kafkaServer struct {
	script  string
	heap    string
	workDir string
	tls     *benchTLS // nil: a PLAINTEXT listener
	dir     string
	listen  string
	jvmPID  int
}

func (k *kafkaServer) name() string     { return "kafka" }
func (k *kafkaServer) addr() brokerAddr { return addrOf(k.tls, k.listen) }
func (k *kafkaServer) pid() int         { return k.jvmPID }

// start runs kafka.sh start, which formats the KRaft directory with a
// short-lived JVM and then launches the broker JVM. Start-up is measured from
// the broker JVM's own start (its /proc start time, to 10 ms), so the format
// step does not count against Kafka.
func (k *kafkaServer) start(ctx context.Context) (time.Duration, error) {
	dir, port, err := newServerDir(k.workDir, "kafka-")
	if err != nil {
		return 0, err
	}
	k.dir, k.listen = dir, loopback(port)
	cmd := exec.CommandContext(ctx, k.script, "start", dir)
	cmd.Env = append(os.Environ(), "KAFKA_PORT="+strconv.Itoa(port), "KAFKA_HEAP_OPTS="+k.heap)
	if k.tls != nil {
		props := filepath.Join(dir, "ssl.properties")
		if err := writeProps(props, k.tls.brokerProps()); err != nil {
			return 0, err
		}
		cmd.Env = append(cmd.Env, "KAFKA_LISTENER_PROTOCOL=SSL", "KAFKA_EXTRA_PROPERTIES="+props)
	}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out

	type ack struct {
		at  time.Time
		err error
	}
	ackCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	acks := make(chan ack, 1)
	go func() {
		at, err := firstAck(ackCtx, k.addr())
		acks <- ack{at, err}
	}()
	if err := cmd.Run(); err != nil {
		return 0, fmt.Errorf("kafka.sh start: %w\n%s", err, out.String())
	}
	pidText, err := os.ReadFile(filepath.Join(dir, "kafka.pid"))
	if err != nil {
		return 0, fmt.Errorf("kafka.sh start wrote no pid: %w", err)
	}
	if k.jvmPID, err = strconv.Atoi(strings.TrimSpace(string(pidText))); err != nil {
		return 0, fmt.Errorf("kafka.pid: %w", err)
	}
	began, err := processStart(k.jvmPID)
	if err != nil {
		return 0, err
	}
	a := <-acks
	if a.err != nil {
		return 0, fmt.Errorf("kafka: no acknowledged produce: %w", a.err)
	}
	return a.at.Sub(began), nil
}

func (k *kafkaServer) stop() error {
	if k.dir == "" {
		return nil
	}
	out, err := exec.Command(k.script, "stop", k.dir).CombinedOutput()
	if err != nil {
		return fmt.Errorf("kafka.sh stop: %w\n%s", err, out)
	}
	return os.RemoveAll(k.dir)
}

// firstAck produces one record to the topic bench-startup (auto-created)
// until a produce is acknowledged with acks=all, and returns when that was.
// It polls with millisecond backoffs so it adds little to what it measures.
func firstAck(ctx context.Context, addr brokerAddr) (time.Time, error) {
	for {
		if err := ctx.Err(); err != nil {
			return time.Time{}, err
		}
		c, err := net.DialTimeout("tcp", addr.bootstrap, 100*time.Millisecond)
		if err != nil {
			time.Sleep(2 * time.Millisecond)
			continue
		}
		c.Close()
		cl, err := kgo.NewClient(addr.opts(kgo.DefaultProduceTopic("bench-startup"),
			kgo.AllowAutoTopicCreation(), kgo.RequiredAcks(kgo.AllISRAcks()), kgo.ProducerLinger(0), kgo.MetadataMinAge(10*time.Millisecond),
			kgo.RetryBackoffFn(func(int) time.Duration { return 5 * time.Millisecond }))...)
		if err != nil {
			return time.Time{}, err
		}
		pctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		err = cl.ProduceSync(pctx, &kgo.Record{Value: []byte("ready?")}).FirstErr()
		at := time.Now()
		cancel()
		cl.Close()
		if err == nil {
			return at, nil
		}
		if errors.Is(err, context.Canceled) {
			return time.Time{}, err
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// newServerDir makes a fresh directory for one server's run under workDir,
// named with prefix, and picks a free loopback port for it to listen on.
func newServerDir(workDir, prefix string) (dir string, port int, err error) {
	if dir, err = os.MkdirTemp(workDir, prefix); err != nil {
		return "", 0, err
	}
	if port, err = freePort(); err != nil {
		os.RemoveAll(dir)
		return "", 0, err
	}
	return dir, port, nil
}

// loopback is the address of port on 127.0.0.1.
func loopback(port int) string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(port)) }

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// clockTicks is the kernel's USER_HZ, the unit of /proc/PID/stat times; it is
// 100 on every Linux architecture Go supports.
const clockTicks = 100

func readProcStat(pid int) (procStat, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return procStat{}, err
	}
	return parseProcStat(string(b))
}

// cpuSeconds is the user plus system CPU time pid has used.
func cpuSeconds(pid int) (float64, error) {
	st, err := readProcStat(pid)
	if err != nil {
		return 0, err
	}
	return float64(st.UtimeTicks+st.StimeTicks) / clockTicks, nil
}

// rssBytes is pid's resident set size now (VmRSS).
func rssBytes(pid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	return parseVmRSS(string(b))
}

// processStart is the wall-clock time pid started, to 10 ms: now minus the
// process's age, which is the uptime minus its start time after boot.
func processStart(pid int) (time.Time, error) {
	st, err := readProcStat(pid)
	if err != nil {
		return time.Time{}, err
	}
	now := time.Now()
	b, err := os.ReadFile("/proc/uptime")
	if err != nil {
		return time.Time{}, err
	}
	up, err := parseUptime(string(b))
	if err != nil {
		return time.Time{}, err
	}
	age := up - time.Duration(st.StartTimeTicks)*time.Second/clockTicks
	return now.Add(-age), nil
}
