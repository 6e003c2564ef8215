package main

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestMain lets a test run the real binary: the test executable re-runs
// itself with GREGOR_RUN_MAIN set and then behaves as gregor.
func TestMain(m *testing.M) {
	if os.Getenv("GREGOR_RUN_MAIN") != "" {
		os.Args = append([]string{"gregor"}, strings.Fields(os.Getenv("GREGOR_RUN_MAIN"))...)
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func freePort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// startGregor runs the binary with args and waits for its readiness line.
// Unless args choose an --http-listen, the HTTP listener gets a random port,
// so that tests never compete for the default one.
func startGregor(t *testing.T, args string) *exec.Cmd {
	t.Helper()
	if !strings.Contains(args, "--http-listen") {
		args += " --http-listen 127.0.0.1:0"
	}
	cmd, _ := startUntilReady(t, "gregor", args)
	return cmd
}

// startUntilReady runs the binary with args and returns it with the log
// lines it wrote up to and including its readiness line; its log is drained
// (and dropped) from then on. A child that exits before that line, or has
// not logged it within a minute, fails the test with its log, prefixed by
// label.
func startUntilReady(t *testing.T, label, args string) (*exec.Cmd, []string) {
	t.Helper()
	cmd, logs, err := startProcess(t, args)
	if err != nil {
		t.Fatalf("%s: gregor %v", label, err)
	}
	return cmd, logs
}

// startProcess runs the binary with args and waits for its readiness
// line: it returns the process and the lines logged until then, or why it
// is not ready (it exited, or a minute passed) with its log. It may be
// called from any goroutine; the process is killed with the test.
func startProcess(t *testing.T, args string) (*exec.Cmd, []string, error) {
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), "GREGOR_RUN_MAIN="+args)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, nil, err
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	var (
		mu   sync.Mutex
		logs []string
	)
	ready, ended := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(ended)
		sc := bufio.NewScanner(stderr)
		isReady := false
		for sc.Scan() {
			if isReady {
				continue
			}
			mu.Lock()
			logs = append(logs, sc.Text())
			mu.Unlock()
			if strings.Contains(sc.Text(), "gregor: ready") {
				isReady = true
				close(ready)
			}
		}
	}()
	var why string
	select {
	case <-ready:
	case <-ended:
		why = "exited without logging its readiness line"
	case <-time.After(60 * time.Second):
		why = "did not log its readiness line within a minute"
	}
	mu.Lock()
	defer mu.Unlock()
	if why != "" {
		return nil, nil, fmt.Errorf("%s; its log:\n%s", why, strings.Join(logs, "\n"))
	}
	return cmd, logs, nil
}

func TestServeStopsCleanlyOnSignalsAndRestartsWithItsData(t *testing.T) {
	dir := t.TempDir()
	for i, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		addr := freePort(t)
		cmd := startGregor(t, "serve --listen "+addr+" --data-dir "+dir)
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic("kept"))
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			if _, err := kadm.NewClient(cl).CreateTopic(ctx, 2, 1, nil, "kept"); err != nil {
				t.Fatal(err)
			}
		}
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte("v")}).FirstErr(); err != nil {
			t.Fatal(err)
		}
		offsets, err := kadm.NewClient(cl).ListEndOffsets(ctx, "kept")
		if err != nil {
			t.Fatal(err)
		}
		total := int64(0)
		offsets.Each(func(o kadm.ListedOffset) { total += o.Offset })
		if total != int64(i+1) {
			t.Fatalf("start %d: %d records in the topic, want %d", i+1, total, i+1)
		}
		cl.Close()
		cancel()
		if err := cmd.Process.Signal(sig); err != nil {
			t.Fatal(err)
		}
		if err := cmd.Wait(); err != nil {
			t.Fatalf("gregor did not exit cleanly on %v: %v", sig, err)
		}
	}
}

func TestServeRefusesBadFlags(t *testing.T) {
	for _, args := range []string{"serve --node-id -1", "serve --listen not-an-address", "serve --log-level loud"} {
		cmd := exec.Command(os.Args[0])
		cmd.Env = append(os.Environ(), "GREGOR_RUN_MAIN="+args+" --data-dir "+t.TempDir()+" --http-listen 127.0.0.1:0")
		out, err := cmd.CombinedOutput()
		if err == nil {
			t.Fatalf("%q started: %s", args, out)
		}
	}
}

// TestServeWaitsForItsQuorumAndStopsCleanly starts a cluster node whose
// quorum's other voter never comes: it is never unfenced, so it binds its
// listener but is not ready (/readyz 503, no readiness line), and a signal
// stops it cleanly.
func TestServeWaitsForItsQuorumAndStopsCleanly(t *testing.T) {
	ctrl, httpAddr := freePort(t), freePort(t)
	args := "serve --node-id 1 --listen 127.0.0.1:0 --data-dir " + t.TempDir() + " --http-listen " + httpAddr +
		" --controller-listen " + ctrl + " --controller-quorum 1@" + ctrl + ",2@" + freePort(t)
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), "GREGOR_RUN_MAIN="+args)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	lines := make(chan string, 1000)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	var logs []string
	deadline := time.After(60 * time.Second)
	for waiting := false; !waiting; {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatalf("gregor exited while waiting for its quorum; its log:\n%s", strings.Join(logs, "\n"))
			}
			logs = append(logs, l)
			waiting = strings.Contains(l, "waiting to be unfenced")
		case <-deadline:
			t.Fatalf("gregor did not log that it waits for its quorum; its log:\n%s", strings.Join(logs, "\n"))
		}
	}
	resp, err := http.Get("http://" + httpAddr + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("/readyz of a node its quorum has not unfenced: %s", resp.Status)
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	for l := range lines {
		logs = append(logs, l)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("gregor did not exit cleanly on SIGTERM while waiting for its quorum: %v; its log:\n%s", err, strings.Join(logs, "\n"))
	}
	all := strings.Join(logs, "\n")
	if strings.Contains(all, "gregor: ready") || !strings.Contains(all, "gregor: stopped before serving") {
		t.Fatalf("gregor's log while waiting for its quorum and stopped:\n%s", all)
	}
}
