package clustertest

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The harness: a cluster of three `gregor serve` processes, each a
// combined broker and controller with its own data dir and log file. Nodes
// are killed with SIGKILL, paused with SIGSTOP, resumed, restarted on their
// data dir and stopped cleanly. Every process is killed when the test ends,
// passed or not; a failed test's logs are kept and their paths printed.

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

// gregorBinary builds cmd/gregor once per test binary.
func gregorBinary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "gregor-clustertest-bin-")
		if err != nil {
			buildErr = err
			return
		}
		binPath = filepath.Join(dir, "gregor")
		goCmd := filepath.Join(os.Getenv("GOROOT"), "bin", "go")
		if _, err := os.Stat(goCmd); err != nil {
			goCmd = "go"
		}
		out, err := exec.Command(goCmd, "build", "-o", binPath, "../cmd/gregor").CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build ../cmd/gregor: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binPath
}

// TestMain removes the binary gregorBinary built.
func TestMain(m *testing.M) {
	code := m.Run()
	if binPath != "" {
		os.RemoveAll(filepath.Dir(binPath))
	}
	os.Exit(code)
}

// A node is one gregor process of a cluster, and its place.
type node struct {
	id             int32
	addr           string   // Kafka listener, HOST:PORT, also advertised
	controllerAddr string   // controller listener
	dataDir        string   // kept across restarts
	logPath        string   // every start appends to it
	wrap           []string // prefix of the command line (ip netns exec NAME), if any

	mu      sync.Mutex
	cmd     *exec.Cmd
	exited  chan struct{} // closed when cmd has been waited for
	stopped bool          // SIGSTOPped
	starts  int
}

// A cluster is three nodes and the settings they all run with.
type cluster struct {
	t         *testing.T
	nodes     []*node
	quorum    string
	overrides []string // --override KEY=VALUE for every node
	logDir    string
}

// clusterConfig is where and how a cluster's nodes run.
type clusterConfig struct {
	hosts []string   // one per node: the address its listeners bind
	wraps [][]string // one per node: a command prefix (nil: none)
	ports func(i int) (kafka, controller int)
	// dataDirs, if set, are the nodes' data dirs (default: new temporary
	// directories).
	dataDirs []string
}

// loopbackConfig runs n nodes on 127.0.0.1 with free ports, all distinct:
// every port is held open until all are chosen. Another process may still
// take one before its node binds it; startCluster then fails with the
// node's log, which says so.
func loopbackConfig(t *testing.T, n int) clusterConfig {
	t.Helper()
	ports := make([][2]int, n)
	for i := range ports {
		for j := range ports[i] {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			defer ln.Close()
			ports[i][j] = ln.Addr().(*net.TCPAddr).Port
		}
	}
	hosts := make([]string, n)
	for i := range hosts {
		hosts[i] = "127.0.0.1"
	}
	return clusterConfig{hosts: hosts, wraps: make([][]string, n),
		ports: func(i int) (int, int) { return ports[i][0], ports[i][1] }}
}

// clusterOverrides are the settings every node runs with: a short broker
// session so that a dead or paused node is fenced and its partitions move
// within seconds, and short replica lag and fetch waits for the same reason.
var clusterOverrides = []string{
	"broker.session.timeout.ms=4000",
	"broker.heartbeat.interval.ms=400",
	"replica.lag.time.max.ms=6000",
	"replica.fetch.wait.max.ms=200",
	"auto.create.topics.enable=false",
	"group.initial.rebalance.delay.ms=0",
	"offsets.topic.num.partitions=3",
}

// logLevel is the nodes' --log-level: GREGOR_CLUSTER_LOG_LEVEL, or info
// (debug logs every request).
func logLevel() string {
	if l := os.Getenv("GREGOR_CLUSTER_LOG_LEVEL"); l != "" {
		return l
	}
	return "info"
}

// startCluster starts the nodes of cfg and waits until each of them lists
// every broker and names an active controller.
func startCluster(t *testing.T, cfg clusterConfig) *cluster {
	t.Helper()
	gregorBinary(t)
	logDir, err := os.MkdirTemp("", "gregor-clustertest-"+strings.ReplaceAll(t.Name(), "/", "_")+"-")
	if err != nil {
		t.Fatal(err)
	}
	c := &cluster{t: t, logDir: logDir, overrides: clusterOverrides}
	var voters []string
	for i, host := range cfg.hosts {
		kp, cp := cfg.ports(i)
		n := &node{
			id:             int32(i + 1),
			addr:           net.JoinHostPort(host, strconv.Itoa(kp)),
			controllerAddr: net.JoinHostPort(host, strconv.Itoa(cp)),
			dataDir:        filepath.Join(t.TempDir(), "data"),
			logPath:        filepath.Join(logDir, fmt.Sprintf("node-%d.log", i+1)),
			wrap:           cfg.wraps[i],
		}
		if cfg.dataDirs != nil {
			n.dataDir = cfg.dataDirs[i]
		}
		c.nodes = append(c.nodes, n)
		voters = append(voters, fmt.Sprintf("%d@%s", n.id, n.controllerAddr))
	}
	c.quorum = strings.Join(voters, ",")
	t.Cleanup(func() {
		for _, n := range c.nodes {
			n.kill()
		}
		if os.Getenv("GREGOR_CLUSTER_KEEP_LOGS") != "" {
			t.Logf("the nodes' logs are kept in %s", logDir)
		}
		if t.Failed() {
			t.Logf("the nodes' logs are kept in %s", logDir)
			for _, n := range c.nodes {
				t.Logf("last lines of %s:\n%s", n.logPath, tail(n.logPath, 60))
			}
			return
		}
		if os.Getenv("GREGOR_CLUSTER_KEEP_LOGS") == "" {
			os.RemoveAll(logDir)
		}
	})
	for _, n := range c.nodes {
		c.start(n)
	}
	for _, n := range c.nodes {
		c.waitReady(n)
	}
	c.waitFor("every node to list 3 brokers and a controller", 90*time.Second, func() bool {
		for _, n := range c.nodes {
			m, err := c.metadata(n)
			if err != nil || len(m.Brokers) != len(c.nodes) || m.ControllerID < 0 {
				return false
			}
		}
		return true
	})
	return c
}

// start starts n's process, its output appended to its log file. It does
// not wait for readiness (waitReady does).
func (c *cluster) start(n *node) {
	c.t.Helper()
	n.mu.Lock()
	defer n.mu.Unlock()
	n.starts++
	args := []string{"serve", "--node-id", strconv.Itoa(int(n.id)), "--listen", n.addr,
		"--controller-listen", n.controllerAddr, "--controller-quorum", c.quorum,
		"--data-dir", n.dataDir, "--http-listen", "", "--log-level", logLevel()}
	for _, o := range c.overrides {
		args = append(args, "--override", o)
	}
	argv := append(append([]string{}, n.wrap...), append([]string{gregorBinary(c.t)}, args...)...)
	cmd := exec.Command(argv[0], argv[1:]...)
	// The process dies with the test binary, even when a panic (a test
	// timeout) skips the cleanups.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	f, err := os.OpenFile(n.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		c.t.Fatal(err)
	}
	fmt.Fprintf(f, "=== clustertest: start %d of node %d at %s: %s\n", n.starts, n.id, time.Now().Format(time.RFC3339Nano), strings.Join(argv, " "))
	cmd.Stdout, cmd.Stderr = f, f
	if err := cmd.Start(); err != nil {
		f.Close()
		c.t.Fatalf("starting node %d: %v", n.id, err)
	}
	n.cmd, n.stopped = cmd, false
	exited := make(chan struct{})
	n.exited = exited
	go func() {
		cmd.Wait()
		f.Close()
		close(exited)
	}()
}

// waitReady waits until n's log shows its readiness line since its last
// start, failing at once if the process exits first.
func (c *cluster) waitReady(n *node) {
	c.t.Helper()
	n.mu.Lock()
	exited, starts := n.exited, n.starts
	n.mu.Unlock()
	marker := fmt.Sprintf("=== clustertest: start %d of node %d ", starts, n.id)
	deadline := time.Now().Add(90 * time.Second)
	for {
		if since, ok := logSince(n.logPath, marker); ok && strings.Contains(since, "gregor: ready") {
			return
		}
		select {
		case <-exited:
			c.t.Fatalf("node %d exited before it was ready; its log:\n%s", n.id, tail(n.logPath, 60))
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("node %d was not ready within 90 s", n.id)
		}
	}
}

// logCount counts the lines of n's log since its last start that hold
// substr.
func (c *cluster) logCount(n *node, substr string) int {
	n.mu.Lock()
	marker := fmt.Sprintf("=== clustertest: start %d of node %d ", n.starts, n.id)
	n.mu.Unlock()
	since, _ := logSince(n.logPath, marker)
	return strings.Count(since, substr)
}

// logSince returns what n's log holds after the last occurrence of marker.
func logSince(path, marker string) (string, bool) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", false
	}
	i := strings.LastIndex(string(b), marker)
	if i < 0 {
		return "", false
	}
	return string(b[i:]), true
}

// tail returns the last n lines of the file at path.
func tail(path string, n int) string {
	f, err := os.Open(path)
	if err != nil {
		return err.Error()
	}
	defer f.Close()
	var lines []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		lines = append(lines, sc.Text())
		if len(lines) > 2*n {
			lines = append(lines[:0], lines[len(lines)-n:]...)
		}
	}
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// running reports whether n's process is alive (paused or not).
func (n *node) running() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.cmd == nil {
		return false
	}
	select {
	case <-n.exited:
		return false
	default:
		return true
	}
}

// answering reports whether n runs and is not paused.
func (n *node) answering() bool {
	if !n.running() {
		return false
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	return !n.stopped
}

// signal sends sig to n's process.
func (n *node) signal(sig syscall.Signal) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.cmd == nil {
		return fmt.Errorf("node %d was never started", n.id)
	}
	return n.cmd.Process.Signal(sig)
}

// kill SIGKILLs n's process, if it runs, and waits for it to be gone.
func (n *node) kill() {
	n.mu.Lock()
	cmd, exited := n.cmd, n.exited
	n.mu.Unlock()
	if cmd == nil {
		return
	}
	cmd.Process.Signal(syscall.SIGKILL)
	<-exited
}

// kill9 kills n with SIGKILL mid-flight.
func (c *cluster) kill9(n *node) {
	c.t.Helper()
	c.t.Logf("%s: kill -9 node %d", time.Now().Format("15:04:05.000"), n.id)
	n.kill()
}

// pause SIGSTOPs n; resume SIGCONTs it.
func (c *cluster) pause(n *node) {
	c.t.Helper()
	c.t.Logf("%s: SIGSTOP node %d", time.Now().Format("15:04:05.000"), n.id)
	if err := n.signal(syscall.SIGSTOP); err != nil {
		c.t.Fatal(err)
	}
	n.mu.Lock()
	n.stopped = true
	n.mu.Unlock()
}

func (c *cluster) resume(n *node) {
	c.t.Helper()
	c.t.Logf("%s: SIGCONT node %d", time.Now().Format("15:04:05.000"), n.id)
	if err := n.signal(syscall.SIGCONT); err != nil {
		c.t.Fatal(err)
	}
	n.mu.Lock()
	n.stopped = false
	n.mu.Unlock()
}

// restart starts a killed node again on its data dir and waits until it is
// ready.
func (c *cluster) restart(n *node) {
	c.t.Helper()
	c.t.Logf("%s: restart node %d", time.Now().Format("15:04:05.000"), n.id)
	c.start(n)
	c.waitReady(n)
}

// stopAll stops every node cleanly (SIGTERM) and waits for each to exit,
// failing if one does not within a minute or exits with an error.
func (c *cluster) stopAll() {
	c.t.Helper()
	for _, n := range c.nodes {
		if n.running() {
			if err := n.signal(syscall.SIGTERM); err != nil {
				c.t.Fatalf("SIGTERM node %d: %v", n.id, err)
			}
		}
	}
	for _, n := range c.nodes {
		n.mu.Lock()
		cmd, exited := n.cmd, n.exited
		n.mu.Unlock()
		select {
		case <-exited:
			if !cmd.ProcessState.Success() {
				c.t.Errorf("node %d stopped with %v", n.id, cmd.ProcessState)
			}
		case <-time.After(60 * time.Second):
			c.t.Fatalf("node %d did not stop within a minute of SIGTERM", n.id)
		}
	}
}

// seeds are every node's address.
func (c *cluster) seeds() []string {
	var s []string
	for _, n := range c.nodes {
		s = append(s, n.addr)
	}
	return s
}

func (c *cluster) node(id int32) *node { return c.nodes[id-1] }

// metadata asks n itself for the metadata of every topic.
func (c *cluster) metadata(n *node) (*kmsg.MetadataResponse, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(n.addr), kgo.DialTimeout(2*time.Second))
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req := kmsg.NewPtrMetadataRequest()
	resp, err := cl.SeedBrokers()[0].RetriableRequest(ctx, req)
	if err != nil {
		return nil, err
	}
	return resp.(*kmsg.MetadataResponse), nil
}

// topicID is the test topic's id, as any node knows it.
func (c *cluster) topicID() [16]byte {
	c.t.Helper()
	for _, n := range c.nodes {
		if !n.answering() {
			continue
		}
		if m, err := c.metadata(n); err == nil {
			for _, mt := range m.Topics {
				if mt.Topic != nil && *mt.Topic == topic && mt.TopicID != [16]byte{} {
					return mt.TopicID
				}
			}
		}
	}
	c.t.Fatalf("no node knows %s's topic id", topic)
	return [16]byte{}
}

// describe says who leads each partition of the test topic, under which
// epoch, with which ISR, as the newest metadata says.
func (c *cluster) describe() string {
	var b strings.Builder
	for p := range int32(partitions) {
		st, ok := c.partition(topic, p)
		if !ok {
			fmt.Fprintf(&b, "[%d: unknown] ", p)
			continue
		}
		fmt.Fprintf(&b, "[%d: leader %d epoch %d isr %v] ", p, st.leader, st.epoch, st.isr)
	}
	return strings.TrimSpace(b.String())
}

// partitionState is a partition as one node's metadata shows it.
type partitionState struct {
	leader, epoch int32
	replicas, isr []int32
}

// partition asks every answering node for topic's partition p and returns
// the state with the newest leader epoch, and whether any answered.
func (c *cluster) partition(topic string, p int32) (partitionState, bool) {
	best, found := partitionState{leader: -1, epoch: -1}, false
	for _, n := range c.nodes {
		if !n.answering() {
			continue
		}
		m, err := c.metadata(n)
		if err != nil {
			continue
		}
		for _, mt := range m.Topics {
			if mt.Topic == nil || *mt.Topic != topic {
				continue
			}
			for _, mp := range mt.Partitions {
				if mp.Partition == p && mp.ErrorCode == 0 && mp.LeaderEpoch > best.epoch {
					best = partitionState{leader: mp.Leader, epoch: mp.LeaderEpoch, replicas: mp.Replicas, isr: mp.ISR}
					found = true
				}
			}
		}
	}
	return best, found
}

// waitFor polls cond every 100 ms until it holds, failing after limit.
func (c *cluster) waitFor(what string, limit time.Duration, cond func() bool) {
	c.t.Helper()
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			c.t.Fatalf("%s: timed out after %v waiting for %s", time.Now().Format("15:04:05.000"), limit, what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// waitLeader waits until topic's partition p has a leader other than
// not (0: any) that every answering node agrees on, and returns it.
func (c *cluster) waitLeader(topic string, p int32, not int32) partitionState {
	c.t.Helper()
	var st partitionState
	c.waitFor(fmt.Sprintf("partition %d to have a leader other than %d", p, not), 90*time.Second, func() bool {
		var ok bool
		st, ok = c.partition(topic, p)
		return ok && st.leader >= 0 && st.leader != not && c.node(st.leader).answering()
	})
	return st
}

// waitFullISR waits until every partition of topic has all its replicas
// in sync, as the newest metadata says.
func (c *cluster) waitFullISR(topic string, partitions int32) {
	c.t.Helper()
	c.waitFor(fmt.Sprintf("every partition of %s to have its full ISR", topic), 120*time.Second, func() bool {
		for p := range partitions {
			st, ok := c.partition(topic, p)
			if !ok || st.leader < 0 || len(st.isr) != len(st.replicas) || len(st.replicas) == 0 {
				return false
			}
		}
		return true
	})
}
