package main

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/urfave/cli/v2"

	"github.com/gregor-broker/gregor/broker"
)

// startTestBroker starts an in-memory broker on a random loopback port and
// returns its address. Groups rebalance at once.
func startTestBroker(t *testing.T) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	zero := int64(0)
	b, err := broker.Start(ctx, broker.Config{
		GroupInitialRebalanceDelayMs: &zero,
		GroupMinSessionTimeoutMs:     100,
		Logger:                       slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		t.Fatalf("broker.Start: %v", err)
	}
	t.Cleanup(func() {
		if err := b.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return b.Addr()
}

// syncBuffer is a bytes.Buffer that a command may write while the test
// reads it.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// result is what one run of the app printed and returned.
type result struct {
	stdout, stderr string
	err            error
}

// runCLI runs the gregor app in-process with args against the broker at
// addr, reading stdin, and returns what it printed.
func runCLI(t *testing.T, addr string, stdin io.Reader, args ...string) result {
	t.Helper()
	var stdout, stderr syncBuffer
	return runCLIWith(t, addr, stdin, &stdout, &stderr, args...)
}

func runCLIWith(t *testing.T, addr string, stdin io.Reader, stdout, stderr *syncBuffer, args ...string) result {
	t.Helper()
	app := newApp()
	app.Reader = stdin
	if stdin == nil {
		app.Reader = strings.NewReader("")
	}
	app.Writer, app.ErrWriter = stdout, stderr
	app.ExitErrHandler = func(*cli.Context, error) {}
	full := append([]string{"gregor"}, args...)
	if addr != "" {
		// Before a "--", after which nothing is a flag.
		at := len(full)
		for i, a := range full {
			if a == "--" {
				at = i
				break
			}
		}
		full = append(full[:at:at], append([]string{"--bootstrap-server", addr}, full[at:]...)...)
	}
	err := app.Run(full)
	return result{stdout: stdout.String(), stderr: stderr.String(), err: err}
}

// mustRun is runCLI for a command that must succeed.
func mustRun(t *testing.T, addr string, stdin io.Reader, args ...string) result {
	t.Helper()
	r := runCLI(t, addr, stdin, args...)
	if r.err != nil {
		t.Fatalf("gregor %s: %v\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), r.err, r.stdout, r.stderr)
	}
	return r
}

// mustFail is runCLI for a command that must fail with an error (or an
// error stream) containing want.
func mustFail(t *testing.T, addr string, stdin io.Reader, want string, args ...string) result {
	t.Helper()
	r := runCLI(t, addr, stdin, args...)
	if r.err == nil {
		t.Fatalf("gregor %s succeeded, want an error with %q\nstdout:\n%s", strings.Join(args, " "), want, r.stdout)
	}
	if !strings.Contains(r.err.Error()+"\n"+r.stderr, want) {
		t.Fatalf("gregor %s: error %q, stderr %q; want %q", strings.Join(args, " "), r.err, r.stderr, want)
	}
	return r
}

// rows returns the lines of a table whose first column is first.
func rows(out, first string) [][]string {
	var found [][]string
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) > 0 && f[0] == first {
			found = append(found, f)
		}
	}
	return found
}

// waitFor polls cond until it holds or the deadline passes.
// newTestClient is a franz-go client of the broker at addr, closed when the
// test ends.
func newTestClient(t *testing.T, addr string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(addr)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
